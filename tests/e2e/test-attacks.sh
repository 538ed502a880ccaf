#!/usr/bin/env bash
# The attack corpus (tests/e2e/attacks.py): a hostile agent's attempts inside a real
# sandbox, each named by its row of docs/threat-model.md, and the host's side of each:
# nothing of it reached the host.
. "$(dirname "$0")/lib.sh"

openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=allowed.test -days 1 \
  -keyout "$E2E_TMP/key.pem" -out "$E2E_TMP/cert.pem" 2>/dev/null
python3 "$AISB_SRC/tests/e2e/servers.py" "$E2E_TMP/cert.pem" "$E2E_TMP/key.pem" > "$E2E_TMP/ports" &
servers=$!
trap 'kill $servers 2>/dev/null; rm -rf "$HOME/.ssh/$sentinel" "$HOME/.aws/$sentinel"; cleanup' EXIT
for _ in $(seq 50); do grep -q '^ready' "$E2E_TMP/ports" 2>/dev/null && break; sleep 0.1; done
ports=$(awk '$1!="ready"{printf "%s\"%s\": %s", (n++ ? ", " : "{"), $1, $2} END {print "}"}' "$E2E_TMP/ports")
http=$(awk '$1=="http"{print $2}' "$E2E_TMP/ports")

# Things of the host's the sandbox must not see or change.
sentinel=aisb-attack-sentinel-$$
mkdir -p "$HOME/.ssh" "$HOME/.aws"
echo "PRIVATE KEY" > "$HOME/.ssh/$sentinel" && echo "aws secret" > "$HOME/.aws/$sentinel"
touch "$E2E_TMP/$sentinel-parent"
export AISB_E2E_HOSTSECRET=host-secret-$RANDOM
mkdir -p .ai-sandbox && echo "allowed.test:$http" > .ai-sandbox/allow
mkdir -p "$E2E_TMP/agents/skills" && echo "skill" > "$E2E_TMP/agents/skills/one.md"
cp "$AISB_SRC/tests/e2e/attacks.py" "$E2E_TMP/project/attacks.py"

out=$("$AISB" run --net allow --gate-add-host allowed.test:127.0.0.1 --gate-add-host denied.test:127.0.0.1 \
  --gate-add-host badallowed.test:127.0.0.1 --agents-dir "$E2E_TMP/agents" --tmp-size 64m \
  -- python3 /project/attacks.py "$ports" "$HOST_INSIDE" "$sentinel" AISB_E2E_HOSTSECRET 2>"$E2E_TMP/err") || true
count=0
while read -r id verdict rest; do
  [ -n "$id" ] || continue
  count=$((count + 1))
  [ "$verdict" = blocked ] || fail "$id: $verdict $rest"
  pass "$id held"
done <<< "$out"
[ "$count" -ge 47 ] || { cat "$E2E_TMP/err" >&2; fail "only $count attacks reported (the probe died?)"; }
pass "$count attacks tried, all held"

# A control: the same probe in a sandbox with --net full reaches the host's address, so the
# probes can see a breach when there is one.
control=$("$AISB" run --net full -- python3 /project/attacks.py "$ports" "$HOST_INSIDE" "$sentinel" AISB_E2E_HOSTSECRET 2>/dev/null || true)
expect_contains "control: the probe reports a breach when the network is open" "A38 BREACH" "$control"

# The host's side: nothing changed, nothing was read out.
expect_eq "the project's allowlist is unchanged" "allowed.test:$http" "$(cat .ai-sandbox/allow)"
expect_eq "the host's skills are unchanged" skill "$(cat "$E2E_TMP/agents/skills/one.md")"
[ -f "$HOME/.ssh/$sentinel" ] && [ "$(cat "$HOME/.ssh/$sentinel")" = "PRIVATE KEY" ] || fail "~/.ssh changed"
pass "~/.ssh is untouched"
expect_contains "the gate refused the listed-out names" "denied" "$(cat "$E2E_TMP/err")"

# A planted symlink in the sandbox's pi config must not make the host read or write through
# it on the next bridge: the host file stays as it was and does not reach the sandbox.
echo "host only" > "$E2E_TMP/host-file"
"$AISB" run -- sh -c "mkdir -p ~/.pi/agent && rm -f ~/.pi/agent/settings.json && ln -s '$E2E_TMP/host-file' ~/.pi/agent/settings.json"
"$AISB" run -- pi --version >/dev/null 2>&1 || true
expect_eq "a planted symlink is not written through" "host only" "$(cat "$E2E_TMP/host-file")"
expect_absent "nor read into the sandbox" "host only" "$("$AISB" run -- cat /home/sandbox/.pi/agent/settings.json 2>/dev/null || true)"

# Fork and memory bombs are held only where the host enforces caps.
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  # Count the forks the kernel granted: under a 64-process cap, far fewer than asked.
  forks=$("$AISB" run --pids-limit 64 -- python3 -c '
import os, time
n = 0
for _ in range(200):
    try:
        if os.fork() == 0:
            time.sleep(5); os._exit(0)
        n += 1
    except OSError:
        break
print(n)')
  [ "$forks" -lt 64 ] 2>/dev/null || fail "a fork bomb got $forks processes past a 64-process cap"
  pass "a fork bomb is held at $forks processes by the 64-process cap"
else
  echo "e2e: T7 fork and memory bombs: not enforceable on this host (cgroup v1 ignores the caps);" \
       "aisb doctor says so; not run, so as not to harm the host"
fi
podman rm -f "aisb-gate-$("$AISB" run --net allow --gate-add-host allowed.test:127.0.0.1 --gate-add-host denied.test:127.0.0.1 --gate-add-host badallowed.test:127.0.0.1 --print-policy | sed -n 's/^gate=//p')" >/dev/null 2>&1 || true
