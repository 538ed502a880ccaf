#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Secretless runs, and rules the gate reads requests for: a --secret's value reaches its
# host (and only over HTTPS) while the sandbox holds a placeholder; nothing of the sandbox
# holds the value (files, environments, podman's view, argv, logs, a dry run); a forged header
# is replaced, never appended; the run's gate goes with the run; methods and paths are
# enforced on HTTP and HTTPS with a reason the agent can read; a rotated gate CA is no longer
# trusted; pi talks to an HTTPS provider with the key held by the gate; aisb allow proposes
# what a run was refused; a shared gate stops when idle, but not while a run holds it. All
# against stand-ins on the host's loopback (tests/e2e/https-stub.py, stub-openai.py).
. "$(dirname "$0")/lib.sh"

https_stub_start
ca=$AISB_SRC/tests/e2e/tls/ca.pem
names="--gate-add-host api.stub.test:127.0.0.1 --gate-add-host other.stub.test:127.0.0.2
  --gate-add-host rules.stub.test:127.0.0.1 --gate-add-host denied.stub.test:127.0.0.1"
export STUB_KEY=real-secret-e2e-$$
real=$STUB_KEY
secret="--ca-cert $ca --net allow --secret STUB_KEY@api.stub.test --allow api.stub.test:$TLS
  --allow api.stub.test:$PLAIN --allow other.stub.test:$TLS $names"
# What the stand-in received: the credential headers of each request to PATH; and where the
# value itself went (address, Host, path of each request that carried it).
seen() { python3 -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["path"] == sys.argv[2]:
        print(r["scheme"], " ".join(r["authorization"] + r["x-api-key"]))' "$E2E_TMP/requests" "$1"; }
carried_by() { python3 -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if any(sys.argv[2] in v for v in r["authorization"] + r["x-api-key"]):
        print(r["addr"], r["host"], r["path"])' "$E2E_TMP/requests" "$1"; }

"$AISB" build --quiet --ca-cert "$ca" >/dev/null

# The gates of a run's own there are before (another user of this podman may have some).
run_gates() { podman ps -a --filter label=aisb.gate.run=true --format '{{.Names}}' | sort; }
gates_before=$(run_gates)

# The value goes where it is meant to, the placeholder everywhere else.
out=$("$AISB" run $secret -- sh -c "
  printf 'inside=%s\n' \"\$STUB_KEY\"
  curl -sS -o /dev/null https://api.stub.test:$TLS/to-its-host -H \"Authorization: Bearer \$STUB_KEY\"
  curl -sS -o /dev/null https://other.stub.test:$TLS/elsewhere -H \"Authorization: Bearer \$STUB_KEY\"
  curl -sS -o /dev/null https://api.stub.test:$TLS/forged -H 'Authorization: Bearer forged-by-the-agent'
  curl -sS -o /dev/null http://api.stub.test:$PLAIN/downgraded -H \"Authorization: Bearer \$STUB_KEY\"
  curl -sS -o /dev/null https://api.stub.test:$TLS/host-mismatch -H 'Host: other.stub.test:$TLS' \
    -H \"Authorization: Bearer \$STUB_KEY\"; echo mismatch=\$?
  cat /proc/*/environ 2>/dev/null | tr '\0' '\n' | grep -c '$real' || true
  grep -rsl '$real' /etc /home /run /tmp /var/tmp /project /usr/local 2>/dev/null | head -3
  ls /aisb-gate 2>&1 | head -1
  python3 -c \"import urllib.request; print('py=%d' % urllib.request.urlopen('https://api.stub.test:$TLS/py').status)\" 2>&1 | tail -1
  git ls-remote https://api.stub.test:$TLS/repo.git >/dev/null 2>&1; echo git=\$?" 2>"$E2E_TMP/err") ||
  { cat "$E2E_TMP/err" >&2; fail "the secret run: $out"; }
placeholder=$(printf '%s\n' "$out" | sed -n 's/^inside=//p')
case "$placeholder" in aisb-secret-????????????????????????????????) pass "the sandbox holds a placeholder" ;;
  *) fail "the sandbox's STUB_KEY is '$placeholder'" ;; esac
expect_eq "its host gets the value" "https Bearer $real" "$(seen /to-its-host)"
expect_contains "Python 3.13 (strict verification) accepts the gate's certificates" "py=200" "$out"
expect_eq "(and its request carried the value)" "https Bearer $real" "$(seen /py)"
expect_contains "git reaches the host through a gate that asks for its key" "https Bearer $real" \
  "$(seen '/repo.git/info/refs?service=git-upload-pack')"
expect_eq "another host gets only the placeholder" "https Bearer $placeholder" "$(seen /elsewhere)"
expect_eq "a forged header is replaced, not added to" "https Bearer $real" "$(seen /forged)"
expect_eq "plain HTTP to its host carries no credential at all" "http " "$(seen /downgraded)"
expect_absent "a Host header naming another host never carries the value there" "$real" "$(seen /host-mismatch)"
expect_absent "no environment in the sandbox holds the value" "$real" "$(printf '%s\n' "$out" | sed -n '/^mismatch/,$p')"
expect_contains "no process environment counted it" "
0" "$(printf '%s\n' "$out" | sed -n '/^mismatch/,$p')"
expect_contains "the gate's state is not in the sandbox" "No such file" "$out"
expect_absent "nor in what aisb printed" "$real" "$(cat "$E2E_TMP/err")"
expect_absent "nor in the session log" "$real" "$(cat "$HOME/.local/state/ai-sandbox/sessions.log")"
expect_eq "the run's gate went with the run" "" \
  "$(run_gates | comm -13 <(printf '%s\n' "$gates_before") - | grep . || true)"
expect_eq "and nothing of it stays in the state directory" "" \
  "$(grep -rsl "$real" "$HOME/.local/state/ai-sandbox" || true)"

# The agent asks the gate to send the value elsewhere: a redirect it follows with the
# header, an absolute-form URI naming another host inside the intercepted connection, HTTP/2
# (whose connection reuse could carry a request for another name), the gate's cache manager
# (whose configuration dump would hold the value), its CA key.
out=$("$AISB" run $secret -- sh -c "
  auth=\"Authorization: Bearer \$STUB_KEY\"
  curl -sS -o /dev/null --location-trusted -H \"\$auth\" \
    'https://api.stub.test:$TLS/redirect?to=https://other.stub.test:$TLS/after-redirect'
  curl -sS -o /dev/null -H \"\$auth\" --request-target https://other.stub.test:$TLS/absolute-form \
    https://api.stub.test:$TLS/
  curl -sS -H \"\$auth\" --http2 -w 'http/%{http_version}\n' -o /dev/null -o /dev/null \
    https://api.stub.test:$TLS/h2-first https://other.stub.test:$TLS/h2-second
  gate=\${http_proxy#http://}; gate=\${gate%/}
  for u in http://\$gate/squid-internal-mgr/config http://localhost/squid-internal-mgr/config \
      http://127.0.0.1:\${gate##*:}/squid-internal-mgr/config; do
    curl -s --noproxy '*' \$u; curl -s \$u
  done
  curl -s --noproxy '*' --request-target cache_object://localhost/config http://\$gate/
  curl -s --noproxy '*' -H 'Host: localhost' http://\$gate/squid-internal-mgr/config
  echo keys:; grep -rls 'PRIVATE KEY' /run /tmp /home /project /etc/ssl /usr/local/share | head -3
  " 2>"$E2E_TMP/err") || { cat "$E2E_TMP/err" >&2; fail "the attack run: $out"; }
expect_contains "a redirect to another host carries only the placeholder" "https Bearer " "$(seen /after-redirect)"
expect_absent "(not the value)" "$real" "$(seen /after-redirect)"
expect_eq "the value reached api.stub.test's address only, and its name" "" \
  "$(carried_by "$real" | grep -v '^127\.0\.0\.1 api\.stub\.test:' || true)"
expect_contains "HTTP/2 is not spoken to the sandbox: no connection is shared between names" "http/1.1
http/1.1" "$out"
expect_contains "the second name of that command got the placeholder" "https Bearer " "$(seen /h2-second)"
expect_absent "the cache manager shows nothing of the configuration" "request_header_add" "$out"
expect_absent "nor the value" "$real" "$out"
expect_eq "no file in the sandbox holds a private key (the gate CA's included)" "" \
  "$(printf '%s\n' "$out" | sed -n '/^keys:$/,$p' | sed 1d)"

# podman's view of a running sandbox, its argv and a dry run: the placeholder, never the value.
"$AISB" run $secret -- sleep 30 >/dev/null 2>&1 &
sleeper=$!
for _ in $(seq 100); do
  id=$(podman ps --filter "label=aisb.project=$E2E_TMP/project" --format '{{.ID}}' | sed -n 1p)
  [ -n "$id" ] && break; sleep 0.2
done
[ -n "$id" ] || fail "the sandbox did not start"
# The plan shown is the plan applied: inspect --json names the running sandbox's variables
# (the gate's key in its proxy URL, the trust of the gate's CA), mounts (that CA's) and the
# entrypoint's argv, all but the gate's port.
"$AISB" inspect --json $secret -- sleep 30 > "$E2E_TMP/plan.json"
podman inspect "$id" > "$E2E_TMP/inspect.json"
shape=$(python3 "$AISB_SRC/tests/e2e/plan-shape.py" "$E2E_TMP/plan.json" "$E2E_TMP/inspect.json") ||
  fail "inspect --json is not the running sandbox's plan: $shape"
pass "inspect --json shows the running sandbox's environment, mounts and entrypoint"
expect_absent "inspect --json holds no value of the secret" "$real" "$(cat "$E2E_TMP/plan.json")"
expect_absent "podman inspect of the sandbox" "$real" "$(podman inspect "$id")"
expect_contains "(which shows the placeholder)" "aisb-secret-" "$(podman inspect "$id")"
expect_absent "aisb's argv" "$real" "$(tr '\0' ' ' < /proc/$sleeper/cmdline)"
# The run's gate listens on the host's loopback, where every local user can connect: without
# the key the sandbox's proxy URL holds, it serves nothing (a CONNECT, a plain request naming
# an https URL, a wrong key), so nobody else's request gets the value.
proxy=$(podman inspect "$id" --format '{{range .Config.Env}}{{println .}}{{end}}' | sed -n 's/^http_proxy=//p')
case "$proxy" in http://aisb:????????????????????????????????@10.0.2.2:*) pass "the sandbox's proxy URL holds a key" ;;
  *) fail "the sandbox's proxy URL: '$proxy'" ;; esac
gate_port=${proxy##*:}
for attempt in "-x http://127.0.0.1:$gate_port https://api.stub.test:$TLS/stranger-connect" \
    "-x http://aisb:0123456789abcdef0123456789abcdef@127.0.0.1:$gate_port https://api.stub.test:$TLS/stranger-key"; do
  code=$(curl -sk -o /dev/null -w '%{http_code}' $attempt || true)
  [ "$code" != 200 ] || fail "the gate served a client without the run's key: $attempt"
done
exec 3<>/dev/tcp/127.0.0.1/"$gate_port"
printf 'GET https://api.stub.test:%s/stranger-plain HTTP/1.1\r\nHost: api.stub.test:%s\r\nConnection: close\r\n\r\n' \
  "$TLS" "$TLS" >&3
status=$(head -c 12 <&3 || true); exec 3>&-
expect_contains "a plain request for an https URL without the key is refused" "403" "$status"
expect_eq "nothing of a client without the key reached the host" "" \
  "$(seen /stranger-connect)$(seen /stranger-key)$(seen /stranger-plain)"
# Control: the same from the host with the sandbox's key does reach it, with the value.
key=$(printf '%s' "$proxy" | sed -n 's|^http://aisb:\([0-9a-f]*\)@.*|\1|p')
curl -sk -o /dev/null -x "http://aisb:$key@127.0.0.1:$gate_port" https://api.stub.test:$TLS/keyed || true
expect_eq "control: with the key, the gate serves it" "https Bearer $real" "$(seen /keyed)"
kill -TERM $sleeper; wait $sleeper || true
allow_out=$("$AISB" allow 2>&1)
expect_absent "a stranger's refused requests are not the run's to learn from" "stranger" "$allow_out"
expect_absent "nor is aisb's own request to its gate" "aisb-gate-probe" "$allow_out"

# aisb killed outright (no cleanup of its own): once the run's lease is gone its gate serves
# nothing, to the sandbox left behind or anyone else, and keeps its port (a port let go could
# be taken by another local user, whom the sandbox would then reach); the next run with
# secrets removes the gate, value and all.
before=$(run_gates)
"$AISB" run $secret -- sleep 120 >/dev/null 2>&1 &
victim=$!
for _ in $(seq 150); do
  orphan=$(run_gates | comm -13 <(printf '%s\n' "$before") - | grep . || true)
  [ -n "$orphan" ] && podman ps --filter "label=aisb.project=$E2E_TMP/project" --format '{{.ID}}' | grep -q . && break
  sleep 0.2
done
[ -n "$orphan" ] || fail "the run's gate did not start"
left=$(podman ps --filter "label=aisb.project=$E2E_TMP/project" --format '{{.ID}}' | sed -n 1p)
probe() { podman exec "$left" curl -s -o /dev/null -w '%{http_code}' "https://api.stub.test:$TLS/$1" 2>/dev/null || true; }
expect_eq "control: before, the sandbox is served" 200 "$(probe before-kill)"
expect_contains "aisb had the run's gate answer a request before the sandbox started" \
  "aisb-gate-probe.invalid" "$(cat "$HOME/.local/state/ai-sandbox/gates/${orphan#aisb-gate-}/logs/access.log")"
# squid asks the held helper about every request, 32 at a time: many more at once are all
# served (squid refuses what its helper's queue cannot take).
burst=$(podman exec "$left" sh -c "for i in \$(seq 100); do curl -s -o /dev/null -w '%{http_code}\n' \
  https://api.stub.test:$TLS/burst & done; wait" 2>/dev/null | sort | uniq -c)
expect_eq "100 requests at once through the run's gate are all served" "100 200" "$(echo $burst)"
# Another local user tries to take the gate's port, every millisecond, from before the kill
# until the gate refuses: a moment with the port let go is a bind that succeeds.
orphan_port=$(podman inspect "$orphan" --format '{{index .Config.Labels "aisb.gate.port"}}')
squat() { # PORT STOPFILE [TRIES]: "bound" for every bind that succeeded, then how many were tried
  python3 - "$@" <<'PY'
import os, socket, sys, time
port, stop = int(sys.argv[1]), sys.argv[2]
most = int(sys.argv[3]) if len(sys.argv) > 3 else 60000
tries = 0
while not os.path.exists(stop) and tries < most:
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", port)); s.listen(1); print("bound", flush=True)
    except OSError:
        pass
    s.close(); tries += 1; time.sleep(0.001)
print("tries", tries)
PY
}
squat "$orphan_port" "$E2E_TMP/squat-stop" > "$E2E_TMP/squat" &
squatter=$!
kill -KILL $victim; wait $victim 2>/dev/null || true
# Until the gate has taken in the change: served (200); never no answer (000).
code=200 codes=
for _ in $(seq 40); do
  code=$(probe after-kill); codes="$codes $code"
  [ "$code" = 200 ] || break; sleep 0.5
done
expect_eq "a killed run's gate serves the sandbox left behind nothing" 403 "$code"
expect_eq "and keeps refusing" 403 "$(probe after-kill-again)"
page=$(podman exec "$left" curl -s -D - "http://api.stub.test:$PLAIN/after-kill-page" 2>/dev/null || true)
expect_contains "saying why, to the sandbox left behind" "the run this sandbox belongs to has ended" "$page"
expect_contains "(the page aisb's request at a gate's start must not get)" "X-Squid-Error: ERR_AISB_HELD" "$page"
touch "$E2E_TMP/squat-stop"; wait $squatter
expect_absent "the gate answered throughout (codes:$codes)" " 000" "$codes"
expect_eq "nobody else could bind its port meanwhile" "" "$(grep bound "$E2E_TMP/squat" || true)"
case "$(cat "$E2E_TMP/squat")" in "tries "[1-9]*) pass "(the squatter tried: $(cat "$E2E_TMP/squat"))" ;;
  *) fail "the squatter did not run: $(cat "$E2E_TMP/squat")" ;; esac
expect_eq "(nothing reached the host)" "" "$(seen /after-kill-again)"
expect_eq "and keeps running, holding its port" running "$(podman inspect -f '{{.State.Status}}' "$orphan" 2>/dev/null)"
podman ps -q --filter "label=aisb.project=$E2E_TMP/project" | xargs -r podman rm -f >/dev/null
"$AISB" run $secret -- true >/dev/null 2>&1 || fail "the run after the killed one"
expect_eq "the next run with secrets removes it" gone "$(podman inspect -f '{{.State.Status}}' "$orphan" 2>/dev/null || echo gone)"
expect_contains "control: with the gate gone, the squatter binds its port" bound \
  "$(squat "$orphan_port" /nonexistent 50)"
expect_eq "and the value with it" "" "$(grep -rsl "$real" "$HOME/.local/state/ai-sandbox" || true)"
expect_absent "a dry run" "$real" "$("$AISB" run $secret --dry-run -- true 2>&1)"

# Rules: methods and path prefixes, over HTTPS (intercepted) and plain HTTP, with a reason.
# A CONNECT to the host with rules whose TLS hello names another server: intercepted all the
# same (a tunnel spliced for the other name would carry any request unread).
cat > "$E2E_TMP/project/sni.py" <<'PY'
import os, socket, ssl, sys, urllib.parse
host, port, sni, method, path = sys.argv[1:6]
proxy = urllib.parse.urlsplit(os.environ["https_proxy"])
s = socket.create_connection((proxy.hostname, proxy.port), timeout=10)
s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
s.recv(4096)
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
try:
    t = ctx.wrap_socket(s, server_hostname=sni)
    t.sendall(f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode())
    print("sni", sni, method, t.recv(64).split(b"\r\n")[0].decode())
except (ssl.SSLError, OSError) as e:
    print("sni", sni, "refused", type(e).__name__)
PY
rules_args=(--ca-cert "$ca" --net allow --allow "rules.stub.test:$TLS GET,HEAD /allowed/" --allow "other.stub.test:$TLS"
  --allow "rules.stub.test:$PLAIN GET,HEAD /allowed/" $names)
out=$("$AISB" run "${rules_args[@]}" -- sh -c "
  for u in https://rules.stub.test:$TLS http://rules.stub.test:$PLAIN; do
    printf '%s ' \$(curl -s -o /dev/null -w '%{http_code}' \$u/allowed/x)
    printf '%s ' \$(curl -s -o /dev/null -w '%{http_code}' \$u/other)
    printf '%s\n' \$(curl -s -o /dev/null -w '%{http_code}' -X POST \$u/allowed/x)
  done
  for p in /allowed/../other /allowed/%2e%2e/other /allowed/.%2E/other /allowed/x%3f/../../other \
      /allowed/%252e%252e/other /allowed/a%5cb /allowed/./x; do
    printf 'odd %s %s\n' \$p \$(curl -s --path-as-is -o /dev/null -w '%{http_code}' https://rules.stub.test:$TLS\$p)
  done
  python3 /project/sni.py rules.stub.test $TLS rules.stub.test GET /allowed/sni-control 2>&1
  python3 /project/sni.py rules.stub.test $TLS other.invalid DELETE /sni-other
  python3 /project/sni.py rules.stub.test $TLS rules.stub.test. DELETE /sni-dot
  python3 /project/sni.py other.stub.test $TLS rules.stub.test DELETE /sni-alias
  python3 /project/sni.py other.stub.test $TLS other.stub.test GET /sni-plain
  curl -s https://rules.stub.test:$TLS/other; curl -s http://denied.stub.test:$PLAIN/
  cp /run/aisb/gate-ca.pem /project/old-ca.pem" 2>"$E2E_TMP/err") || true
expect_contains "HTTPS: an allowed path passes, another path and another method do not" "200 403 403
200 403 403" "$out"
expect_eq "a path the server could resolve past the prefix is refused" \
  "odd /allowed/../other 403 odd /allowed/%2e%2e/other 403 odd /allowed/.%2E/other 403 odd /allowed/x%3f/../../other 403 odd /allowed/%252e%252e/other 403 odd /allowed/a%5cb 403 odd /allowed/./x 403" \
  "$(printf '%s\n' "$out" | grep '^odd ' | tr '\n' ' ' | sed 's/ $//')"
expect_contains "control: a raw CONNECT and TLS hello pass for an allowed request" \
  "sni rules.stub.test GET HTTP/1.1 200" "$out"
expect_absent "a TLS hello naming another server is intercepted all the same" "DELETE HTTP/1.1 200" "$out"
expect_eq "and nothing reached the host that way" "" "$(seen /sni-other)$(seen /sni-dot)"
expect_absent "a hello naming the host with rules through a CONNECT to another listed name is ended" \
  "sni rules.stub.test DELETE HTTP/1.1 200" "$out"
expect_eq "(and reached nothing)" "" "$(seen /sni-alias)"
expect_contains "control: a plain name's own tunnel passes" "sni other.stub.test GET HTTP/1.1 200" "$out"
expect_eq "and reached nothing" "" "$(grep -i -E '"path": "[^"]*(\.\./|%2e|%25|%5c|/\./)' "$E2E_TMP/requests" || true)"
expect_contains "the agent reads why" \
  "aisb gate: GET https://rules.stub.test:$TLS/other is outside the rules the allowlist gives rules.stub.test" "$out"
expect_contains "and how the user allows a name" \
  "aisb gate: denied.stub.test is not in this sandbox allowlist, so the request was refused. To allow it, run with --allow denied.stub.test" "$out"
expect_contains "the summary names the refused requests" "refused: GET https://rules.stub.test:$TLS/other" \
  "$(cat "$E2E_TMP/err")"

# Learn, then lock: what the run was refused, proposed, written into the project's list.
out=$("$AISB" allow 2>&1)
expect_contains "aisb allow proposes the refused request" "rules.stub.test:$TLS GET /other" "$out"
expect_contains "and the refused name" "denied.stub.test:$PLAIN" "$out"
"$AISB" allow --write project >/dev/null 2>&1
expect_contains "written to the project's allowlist" "denied.stub.test:$PLAIN" "$(cat "$E2E_TMP/project/.ai-sandbox/allow")"
code=$("$AISB" run "${rules_args[@]}" -- curl -s -o /dev/null -w '%{http_code}' http://denied.stub.test:$PLAIN/ 2>/dev/null)
expect_eq "the next run is allowed it" 200 "$code"
rm -f "$E2E_TMP/project/.ai-sandbox/allow"

# A gate restarted makes a new CA: what an earlier sandbox was given no longer verifies.
"$AISB" gate down "${rules_args[@]}" >/dev/null 2>&1 || true
out=$("$AISB" run "${rules_args[@]}" -- sh -c "
  curl -s -o /dev/null -w 'own=%{http_code}\n' https://rules.stub.test:$TLS/allowed/x
  curl -s -o /dev/null --cacert /project/old-ca.pem https://rules.stub.test:$TLS/allowed/x; echo old=\$?" 2>/dev/null)
expect_contains "the run's own CA verifies" "own=200" "$out"
expect_contains "the earlier gate's CA does not (curl: certificate problem)" "old=60" "$out"
"$AISB" gate down "${rules_args[@]}" >/dev/null 2>&1 || true

# pi, through the bridge, with its provider key held by the gate: an agent loop. The model
# (the stub, streaming chunked SSE as the API does) asks for a shell command; pi runs it in
# the sandbox and sends its result back; the final answer carries it.
STUB_TLS=1 python3 "$AISB_SRC/tests/e2e/stub-openai.py" "$E2E_TMP/pi.log" PI-ANSWER-$$ \
  'printf %s "$PI_KEY$AISB_PI_KEY_STUB" > made-by-tool.txt; echo uid=$(id -u)' > "$E2E_TMP/pi.port" &
pi_stub=$!
for _ in $(seq 50); do [ -s "$E2E_TMP/pi.port" ] && break; sleep 0.1; done
pi_port=$(cat "$E2E_TMP/pi.port")
export PI_CODING_AGENT_DIR=$E2E_TMP/pi-agent PI_KEY=pi-real-key-$$
mkdir -p "$PI_CODING_AGENT_DIR"
cat > "$PI_CODING_AGENT_DIR/models.json" <<JSON
{"providers": {"stub": {"baseUrl": "https://api.stub.test:$pi_port/v1", "api": "openai-completions",
  "apiKey": "PI_KEY", "models": [{"id": "stub-model", "name": "Stub", "reasoning": false, "input": ["text"],
  "contextWindow": 8192, "maxTokens": 256, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}]}}}
JSON
echo '{"defaultProvider": "stub", "defaultModel": "stub-model"}' > "$PI_CODING_AGENT_DIR/settings.json"
out=$("$AISB" run --ca-cert "$ca" --net allow --secret PI_KEY@api.stub.test --allow "api.stub.test:$pi_port" \
  --gate-add-host api.stub.test:127.0.0.1 --ephemeral-home -- pi -p "say hi" 2>"$E2E_TMP/err") ||
  { cat "$E2E_TMP/err" >&2; fail "pi -p failed: $out"; }
expect_contains "pi prints the final answer, with the tool's result the model got back" \
  "PI-ANSWER-$$ tool said: uid=$(id -u)" "$out"
expect_eq "the model got the prompt, then the tool's result" "prompt result" \
  "$(python3 -c 'import json,sys
r = [json.loads(l)["body"] for l in open(sys.argv[1])]
tool = [any(m.get("role") == "tool" for m in b.get("messages", [])) for b in r]
print("prompt" if not tool[0] else "?", "result" if any(tool[1:]) else "none")' "$E2E_TMP/pi.log")"
expect_eq "the provider got the key from the gate, each time" "Bearer $PI_KEY" \
  "$(python3 -c 'import json,sys; print(*sorted({json.loads(l)["authorization"] for l in open(sys.argv[1])}))' "$E2E_TMP/pi.log")"
[ -f made-by-tool.txt ] && [ ! -L made-by-tool.txt ] || fail "the tool's file is not in the project"
expect_eq "the file the tool wrote is the user's" "$(id -u)" "$(stat -c %u made-by-tool.txt)"
seen=$(cat made-by-tool.txt)
[ -n "$seen" ] || fail "the sandbox's PI_KEY was empty"
expect_absent "the sandbox saw only a placeholder, never the key" "$PI_KEY" "$seen"
rm -f made-by-tool.txt

# A literal key in the user's models.json, and no --secret: the run holds it at the gate by
# itself, at the provider's https host, in the header its api sends.
: > "$E2E_TMP/pi.log"
sed -i "s/\"apiKey\": \"PI_KEY\"/\"apiKey\": \"pi-literal-$$\"/" "$PI_CODING_AGENT_DIR/models.json"
grep -q "pi-literal-$$" "$PI_CODING_AGENT_DIR/models.json" || fail "models.json was not given its literal"
out=$("$AISB" run --ca-cert "$ca" --net allow --allow "api.stub.test:$pi_port" \
  --gate-add-host api.stub.test:127.0.0.1 --ephemeral-home -- pi -p "say hi" 2>"$E2E_TMP/err") ||
  { cat "$E2E_TMP/err" >&2; fail "pi -p with a literal key failed: $out"; }
kill $pi_stub 2>/dev/null || true
expect_contains "with the literal held, pi's loop completes" "PI-ANSWER-$$ tool said: uid=$(id -u)" "$out"
expect_eq "the provider got the literal from the gate, each time" "Bearer pi-literal-$$" \
  "$(python3 -c 'import json,sys; print(*sorted({json.loads(l)["authorization"] for l in open(sys.argv[1])}))' "$E2E_TMP/pi.log")"
seen=$(cat made-by-tool.txt)
expect_contains "the sandbox's variable for it holds a placeholder" "aisb-secret-" "$seen"
expect_absent "never the literal" "pi-literal-$$" "$seen"
rm -f made-by-tool.txt
# What follows is no pi run: the user's pi configuration (and its held key) stays out of it.
unset PI_CODING_AGENT_DIR PI_KEY

# A shared gate stops by itself once idle, but never while a run holds it. The gate looks
# every 15 s: idle for 2 s, it would stop at its first look, 15 s after it started.
idle=(--net allow --allow "other.stub.test:$TLS" $names --gate-idle-stop 2)
gate=$("$AISB" run "${idle[@]}" --print-policy | sed -n 's/^gate=//p')
podman rm -f "aisb-gate-$gate" >/dev/null 2>&1 || true
"$AISB" run "${idle[@]}" -- sleep 40 >/dev/null 2>&1 &
holder=$!
up=0
for _ in $(seq 60); do
  started=$(podman inspect -f '{{.State.StartedAt.Unix}}' "aisb-gate-$gate" 2>/dev/null || echo 0)
  [ "$started" -gt 0 ] && up=$(( $(date +%s) - started ))
  [ "$up" -ge 18 ] && break
  sleep 1
done
[ "$up" -ge 18 ] || fail "the gate did not stay up 18 s (up ${up}s): its first look went unseen"
kill -0 $holder 2>/dev/null || fail "the holding run ended before the gate's first look"
expect_eq "held by a run, an idle gate keeps running past its first look" running \
  "$(podman inspect -f '{{.State.Status}}' "aisb-gate-$gate" 2>/dev/null)"
kill -TERM $holder 2>/dev/null || true
wait $holder || true
state=running
for _ in $(seq 60); do
  state=$(podman inspect -f '{{.State.Status}}' "aisb-gate-$gate" 2>/dev/null || echo gone)
  # "stopping" and "stopped" come before "exited", once podman has seen the process go.
  case $state in running|stopping|stopped) sleep 1 ;; *) break ;; esac
done
expect_eq "once no run holds it, it stops" exited "$state"
code=$("$AISB" run "${idle[@]}" -- curl -s -o /dev/null -w '%{http_code}' -k \
  https://other.stub.test:$TLS/again 2>/dev/null || true)
expect_eq "and the next run starts it again" 200 "$code"
podman rm -f "aisb-gate-$gate" >/dev/null 2>&1 || true
