#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The gate from the two places an attacker holds on this host.
#
# A compromised gate: squid is reached by every sandbox's traffic, and writes the directory
# mounted read-write into it. What it can plant there (symlinks to a file of the user's at
# every name the host writes, a FIFO at the access log) is planted here, in the directory
# podman says the gate writes; the host must neither write through a symlink nor hang.
#
# Another local user: listens on the port the user's gate container claims (a stand-in gate,
# as when the gate died and its port was taken); aisb must not take that listener for the
# gate, and the sandbox must send it nothing.
#
# Run as root: the other user is made here and removed at the end; the rest runs as the aisb
# user, through lib.sh.
set -euo pipefail
: "${AISB_SRC:?AISB_SRC must point at the source tree}"
: "${AISB_BUILD:?AISB_BUILD must point at the build tree}"

if [ "${1:-}" != --as-user ]; then
  . "$(dirname "$0")/assert.sh"
  [ "$(id -u)" -eq 0 ] || cannot_run "needs root, to act as another local user"
  evil=aisbevil
  id "$evil" >/dev/null 2>&1 || useradd -M -r -s /usr/sbin/nologin "$evil"
  work=$(mktemp -d /var/tmp/aisb-e2e-gate.XXXXXX)
  chmod 755 "$work"
  install -d -o "$evil" -m 755 "$work/evil"
  cp "$AISB_SRC/tests/e2e/evil-listener.py" "$work/listener.py"
  install -o "$evil" -m 644 /dev/null "$work/evil/log"
  runuser -u "$evil" -- python3 "$work/listener.py" 0 "$work/evil/log" > "$work/ready" &
  listener=$!
  cleanup() {
    [ -s "$work/ready" ] && kill "$(awk '{print $3}' "$work/ready")" 2>/dev/null
    kill "$listener" 2>/dev/null
    wait 2>/dev/null || true
    userdel "$evil" 2>/dev/null || true
    rm -rf "$work"
  }
  trap cleanup EXIT
  for _ in $(seq 50); do grep -q ready "$work/ready" 2>/dev/null && break; sleep 0.1; done
  port=$(awk '{print $2}' "$work/ready")
  [ -n "$port" ] || { echo "FAIL: the other user's listener did not start" >&2; exit 1; }
  set +e
  "$AISB_SRC/scripts/as-user" env AISB_SRC="$AISB_SRC" AISB_BUILD="$AISB_BUILD" \
    AISB_ENTRYPOINT="${AISB_ENTRYPOINT:-$AISB_BUILD/entrypoint/aisb-entrypoint}" \
    EVIL_PORT="$port" EVIL_LOG="$work/evil/log" EVIL_UID="$(id -u "$evil")" \
    bash "$0" --as-user
  rc=$?
  set -e
  exit $rc
fi

. "$(dirname "$0")/lib.sh"
: "${EVIL_PORT:?}" "${EVIL_LOG:?}"

openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=allowed.test -days 1 \
  -keyout "$E2E_TMP/key.pem" -out "$E2E_TMP/cert.pem" 2>/dev/null
python3 "$AISB_SRC/tests/e2e/servers.py" "$E2E_TMP/cert.pem" "$E2E_TMP/key.pem" > "$E2E_TMP/ports" &
servers=$!
gate=
trap 'kill $servers 2>/dev/null; [ -n "$gate" ] && podman rm -f "$gate" >/dev/null 2>&1; cleanup' EXIT
for _ in $(seq 50); do grep -q '^http ' "$E2E_TMP/ports" 2>/dev/null && break; sleep 0.1; done
HTTP=$(awk '$1=="http"{print $2}' "$E2E_TMP/ports")
[ -n "$HTTP" ] || cannot_run "the test server did not start"

# An allowlist of this test's own, so the gate is this test's.
allow="--net allow --allow allowed.test:$HTTP --gate-add-host allowed.test:127.0.0.1
  --gate-add-host gate-state-$$.test:127.0.0.1"
hash=$("$AISB" run $allow --print-policy | sed -n 's/^gate=//p')
gate=aisb-gate-$hash
fetch() { timeout -k 5 120 "$AISB" run $allow -- curl -s -m 5 "http://allowed.test:$HTTP/"; }

out=$(fetch 2>"$E2E_TMP/err") || { cat "$E2E_TMP/err" >&2; fail "the first run"; }
expect_eq "the gate serves the allowlisted name" server:http "$out"
# The directories the gate can write, as podman mounts them: its logs and its tls/ (the CA it
# makes at each start); nothing else of the host.
rws=$(podman inspect "$gate" --format '{{range .Mounts}}{{if .RW}}{{.Source}}{{"\n"}}{{end}}{{end}}' | grep . | sort)
rw=$(printf '%s\n' "$rws" | grep '/logs$' || true)
[ "$(printf '%s\n' "$rws" | wc -l)" -eq 2 ] && [ -d "$rw" ] && [ -d "$(dirname "$rw")/tls" ] \
        && [ "$rws" = "$(printf '%s\n%s' "$rw" "$(dirname "$rw")/tls")" ] \
        || fail "the gate writes more or other than its logs and tls/: $rws"
pass "the gate writes two directories of its own: logs and tls"
ro=$(podman inspect "$gate" --format '{{range .Mounts}}{{if not .RW}}{{.Source}}{{"\n"}}{{end}}{{end}}' | grep . || true)
expect_contains "its configuration is mounted read-only" "/config" "$ro"

# A FIFO at the access log while the gate runs (squid writes on to the file it opened): the
# next run reuses the gate, and its egress summary must not wait for a writer.
rm -f "$rw/access.log"
mkfifo "$rw/access.log"
set +e
out=$(fetch 2>"$E2E_TMP/err")
rc=$?
set -e
case $rc in 124|137) fail "aisb hung on a FIFO at the gate's access log" ;; esac
expect_eq "a FIFO at the access log: the run ends" 0 "$rc"
expect_eq "and works" server:http "$out"
expect_contains "saying there is no summary" "egress: no summary: the gate's access log is not a regular file" "$(cat "$E2E_TMP/err")"
set +e
err=$(timeout -k 5 30 "$AISB" gate logs $allow 2>&1 >/dev/null)
rc=$?
set -e
case $rc in 124|137) fail "aisb gate logs hung on the FIFO" ;; esac
expect_eq "aisb gate logs refuses the FIFO" 125 "$rc"
expect_contains "saying why" "not a regular file" "$err"

# Symlinks to a file of the user's at every name the host writes or truncates there, then a
# run that starts the gate again.
sentinel=$E2E_TMP/sentinel
echo "sentinel $$" > "$sentinel"
podman rm -f "$gate" >/dev/null
for name in squid.conf .squid.conf.tmp hosts .hosts.tmp cache.log access.log; do
  rm -f "$rw/$name"
  ln -s "$sentinel" "$rw/$name"
done
tls=$(dirname "$rw")/tls
for name in ca.pem ca.pem.new ca.key serving; do
  rm -f "$tls/$name"
  ln -s "$sentinel" "$tls/$name"
done
set +e
out=$(fetch 2>"$E2E_TMP/err")
rc=$?
set -e
expect_eq "the file the symlinks point at is untouched" "sentinel $$" "$(cat "$sentinel")"
[ "$rc" -eq 0 ] || { cat "$E2E_TMP/err" >&2; fail "the run after planting symlinks: exit $rc"; }
expect_eq "the gate starts again and works" server:http "$out"
expect_eq "the planted cache.log symlink is gone, not followed" "" "$(find "$rw" -maxdepth 1 -name cache.log -type l)"
expect_eq "the links planted in tls/ are gone, not followed" "" "$(find "$tls" -maxdepth 1 -type l)"

# Another local user listens on a port; the user's gate container claims that port (a
# stand-in: any container named and labelled as the gate).
image=$(podman images --format '{{.Repository}}:{{.Tag}}' --filter reference=localhost/aisb-gate | sed -n 1p)
podman rm -f "$gate" >/dev/null
podman run -d --name "$gate" --label aisb.managed=true --label "aisb.gate=$hash" \
  --label "aisb.gate.port=$EVIL_PORT" --net none --entrypoint sleep "$image" 600 >/dev/null
status=$("$AISB" gate status | grep "$gate" || true)
set +e
out=$(fetch 2>"$E2E_TMP/err")
rc=$?
set -e
expect_eq "the other user's listener got no connection" "" "$(cat "$EVIL_LOG")"
expect_contains "gate status lists the stand-in on the other user's port" "127.0.0.1:$EVIL_PORT" "$status"
expect_contains "as down: another user's listener is not the gate" " down" "$status"
[ "$rc" -eq 0 ] || { cat "$E2E_TMP/err" >&2; fail "the run with a squatted port: exit $rc"; }
expect_eq "the run goes through a real gate" server:http "$out"
expect_contains "which it started afresh" "restarting the gate" "$(cat "$E2E_TMP/err")"
new_port=$(podman inspect "$gate" --format '{{index .Config.Labels "aisb.gate.port"}}')
[ "$new_port" != "$EVIL_PORT" ] || fail "the gate still claims the other user's port"
pass "on a port of its own ($new_port)"

# Control: the listener does record a connection, so its empty record above means something.
echo probe > /dev/tcp/127.0.0.1/"$EVIL_PORT"
for _ in $(seq 30); do [ -s "$EVIL_LOG" ] && break; sleep 0.1; done
expect_contains "control: the other user's listener records a connection" "connection probe" "$(cat "$EVIL_LOG")"
