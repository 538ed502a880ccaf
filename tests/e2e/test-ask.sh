#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Ask, don't only refuse: a request for a name no allowlist entry lists, in real sandboxes
# through their real gates.
# - On a terminal (a pty, read through a terminal emulator): the question shows, "y" lets
#   both requests through with one question, the screen is put back; the next run asks again,
#   "n" refuses; "p" writes the project's allowlist; aisb ask answers while the question
#   shows; a harness on its alternate screen redraws after it.
# - Without a terminal: refused at once (ask auto); with --ask tty, held until aisb ask from
#   another process answers, or until it times out (refused).
# - Every decision on record: aisb log --egress --json.
# - The name is not resolved before it is allowed: the real gate image, its resolver a logger.
source "$(dirname "$0")/lib.sh"

/usr/bin/python3 -c 'import pyte' 2>/dev/null || cannot_run "python3-pyte is not installed (run scripts/setup)"

python3 -u -m http.server 0 --bind 127.0.0.1 > "$E2E_TMP/http.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; cleanup' EXIT
PORT=
for _ in $(seq 50); do
  PORT=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$E2E_TMP/http.log" | head -n 1)
  [ -n "$PORT" ] && break
  sleep 0.1
done
[ -n "$PORT" ] || cannot_run "the test's HTTP server did not start"
echo "# ask" > "$E2E_TMP/project/README"
# What the server serves (from the project, where the test runs).
for f in first second held again late listed; do echo "$f" > "$E2E_TMP/project/$f"; done
NAME=asked-$$.test

# 1. On a terminal.
/usr/bin/python3 "$AISB_SRC/tests/e2e/ask-tty.py" "$AISB" "$NAME" "$PORT" y 200 || fail "asking on the terminal, y"
/usr/bin/python3 "$AISB_SRC/tests/e2e/ask-tty.py" "$AISB" "$NAME" "$PORT" n 403 || fail "the next run asks again; n"
expect_absent "nothing was written to the project's allowlist" "$NAME" "$(cat .ai-sandbox/allow 2>/dev/null || true)"
/usr/bin/python3 "$AISB_SRC/tests/e2e/ask-tty.py" "$AISB" "$NAME" "$PORT" p 200 || fail "asking on the terminal, p"
expect_eq "p wrote the name and port to the project's allowlist" "$NAME:$PORT" "$(grep -F "$NAME" .ai-sandbox/allow)"
rm -rf .ai-sandbox
# While the question shows, the run serves aisb ask: an answer from there takes it down.
/usr/bin/python3 "$AISB_SRC/tests/e2e/ask-tty.py" "$AISB" "$NAME" "$PORT" @ask 200 || fail "aisb ask while the question showed"
expect_contains "the answer from elsewhere is on record as aisb ask's" '"answered_by":"command"' \
  "$("$AISB" log --egress --json | grep -F "/first")"
# A harness on its alternate screen is made to redraw after the question.
/usr/bin/python3 "$AISB_SRC/tests/e2e/ask-tty.py" "$AISB" "$NAME" "$PORT" y 200 alt || fail "a harness on its alternate screen"

# 2. No terminal: refused at once, as before (ask auto).
start=$(date +%s)
code=$("$AISB" run --net allow --allow "listed-$$.test" --gate-add-host "$NAME:127.0.0.1" -- \
  curl -s -o /dev/null -w '%{http_code}' -m 30 "http://$NAME:$PORT/" 2>"$E2E_TMP/err" </dev/null)
expect_eq "without a terminal the name is refused" 403 "$code"
[ $(( $(date +%s) - start )) -lt 25 ] || fail "the refusal waited"
expect_absent "and nothing asked" "asks to reach" "$(cat "$E2E_TMP/err")"
headers=$("$AISB" run --net allow --allow "listed-$$.test" --gate-add-host "$NAME:127.0.0.1" -- \
  curl -s -D - -o /dev/null -m 30 "http://$NAME:$PORT/" 2>/dev/null </dev/null | tr -d '\r')
# squid names the page it refused with (its own kind for a name no entry lists).
expect_contains "the refusal says so in a header" "X-Squid-Error: ERR_ACCESS_DENIED" "$headers"

# A flood of names: at most 8 questions wait; the rest are refused at once and counted.
out=$("$AISB" run --net allow --allow "listed-$$.test" --ask tty --ask-timeout 3 -- sh -c \
  'for i in $(seq 20); do curl -s -o /dev/null -w "%{http_code}\n" -m 30 "http://flood$i.test/" & done; wait' \
  2>"$E2E_TMP/err" </dev/null | sort | uniq -c | tr -s ' ')
expect_eq "twenty names, every request refused" " 20 403" "$out"
expect_eq "eight questions asked" 8 "$(grep -c 'asks to reach' "$E2E_TMP/err")"
expect_contains "the rest refused unasked, in one line" "12 more requests for names no entry lists were refused without asking" \
  "$(cat "$E2E_TMP/err")"

# --ask tty without a terminal: held until aisb ask answers from another process.
"$AISB" run --net allow --allow "listed-$$.test" --gate-add-host "$NAME:127.0.0.1" --ask tty --ask-timeout 60 -- sh -c \
  "curl -s -o /dev/null -w '%{http_code}' -m 60 http://$NAME:$PORT/held; echo; curl -s -o /dev/null -w '%{http_code}' -m 60 http://$NAME:$PORT/again" \
  > "$E2E_TMP/out" 2>"$E2E_TMP/err" </dev/null &
run=$!
listed=
for _ in $(seq 120); do
  listed=$("$AISB" ask 2>/dev/null || true)
  case "$listed" in *"$NAME"*) break ;; esac
  sleep 0.5
done
expect_contains "aisb ask lists the held request" "$NAME:$PORT (GET /held)" "$listed"
expect_contains "the run says how to answer" "aisb ask " "$(cat "$E2E_TMP/err")"
json=$("$AISB" ask --json)
expect_contains "aisb ask --json too" "\"name\":\"$NAME\",\"port\":$PORT,\"method\":\"GET\",\"path\":\"/held\"" "$json"
read -r qrun qid _ <<< "$listed"
if "$AISB" ask "$qrun" 999 allow 2>"$E2E_TMP/ask-err"; then fail "an answer to no question succeeded"; fi
expect_contains "an answer to no question says so" "no question 999 waits" "$(cat "$E2E_TMP/ask-err")"
"$AISB" ask "$qrun" "$qid" allow || fail "aisb ask could not answer"
wait $run || fail "the run failed: $(cat "$E2E_TMP/err")"
expect_eq "the answer let both requests through" "200
200" "$(cat "$E2E_TMP/out")"
if "$AISB" ask "$qrun" "$qid" allow 2>/dev/null; then fail "a run that ended still answered"; fi

# Every decision of that run, on record.
record=$("$AISB" log --egress --json)
expect_contains "the record has the held request, allowed on the answer" \
  "\"name\":\"$NAME\",\"port\":$PORT,\"method\":\"GET\",\"url\":\"http://$NAME:$PORT/held\",\"status\":200,\"decision\":\"allowed\",\"by\":\"asked\",\"asked\":\"run\",\"answered_by\":\"command\"" \
  "$record"
expect_contains "and the second one" "\"url\":\"http://$NAME:$PORT/again\",\"status\":200" "$record"
/usr/bin/python3 - "$record" <<'PY' || fail "a record line lacks a field"
import json, sys
for line in sys.argv[1].splitlines():
    r = json.loads(line)
    for k in ("time", "run", "name", "port", "method", "url", "status", "decision", "by", "bytes_out", "bytes_in"):
        assert k in r, (k, r)
    assert r["bytes_in"] > 0 and r["bytes_out"] > 0, r
PY
pass "every record line has time, run, name, port, method, url, status, decision, by and bytes each way"
expect_contains "aisb log --egress shows it as text" "allowed $NAME:$PORT GET http://$NAME:$PORT/held by asked (asked: run)" \
  "$("$AISB" log --egress)"

# A question nobody answers is refused when its time is up.
start=$(date +%s)
code=$("$AISB" run --net allow --allow "listed-$$.test" --gate-add-host "$NAME:127.0.0.1" --ask tty --ask-timeout 3 -- \
  curl -s -o /dev/null -w '%{http_code}' -m 60 "http://$NAME:$PORT/late" 2>"$E2E_TMP/err" </dev/null)
expect_eq "an unanswered question is refused" 403 "$code"
took=$(( $(date +%s) - start ))
[ "$took" -ge 3 ] || fail "refused before its time ($took s)"
expect_contains "on record as timed out" "\"decision\":\"refused\",\"by\":\"asked\",\"asked\":\"deny\",\"answered_by\":\"timeout\"" \
  "$("$AISB" log --egress --json)"

# A listed name never waits for a question, and is recorded with its entry.
code=$("$AISB" run --net allow --allow "$NAME:$PORT" --gate-add-host "$NAME:127.0.0.1" --ask tty --ask-timeout 60 -- \
  curl -s -o /dev/null -w '%{http_code}' -m 20 "http://$NAME:$PORT/listed" 2>"$E2E_TMP/err" </dev/null)
expect_eq "a listed name passes with asking on" 200 "$code"
expect_absent "without a question" "asks to reach" "$(cat "$E2E_TMP/err")"
expect_contains "its record names the entry" "\"decision\":\"allowed\",\"by\":\"$NAME:$PORT (--allow)\"" \
  "$("$AISB" log --egress --json)"

# 3. The name is not resolved before it is allowed: the gate image's squid with the ask
#    helper, alone in a network namespace, its resolver a logger of every query; the stand-in
#    for the run answers each question only after it found the name absent from the log.
# The whole list first: grep -m1 leaving early would fail the pipe (SIGPIPE, pipefail).
images=$(podman images --format '{{.Repository}}:{{.Tag}}')
image=$(grep '^localhost/aisb-gate:' <<< "$images" | head -n 1)
[ -n "$image" ] || fail "no gate image, though the runs above used one"
dir=$E2E_TMP/dns
mkdir -p "$dir"
"$AISB_BUILD/tests/e2e/aisb-test-squid-config" --port 3128 --allow example.test --access-log /tmp/access.log \
  --cache-log /tmp/cache.log --ask-helper /aisb-gate/ask.sh > "$dir/squid.conf" 2> "$dir/ask.sh"
sed -i 's|/aisb-gate/ask/|/tmp/ask/|g' "$dir/ask.sh"
logging_resolver "$dir"
cat > "$dir/dns.sh" <<'SH'
. /aisb-gate/resolver.sh
mkdir -p /tmp/ask && mkfifo -m 666 /tmp/ask/questions /tmp/ask/answers
# The run's part: each question, then whether the resolver saw the name by then, then allow.
(exec 3<>/tmp/ask/answers
 while read -r gen ch method name port path; do
   if grep -q "$(echo "$name" | cut -d. -f1)" /aisb-gate/dns.log; then echo "$name resolved-before" >> /aisb-gate/seen
   else echo "$name not-resolved-before" >> /aisb-gate/seen; fi
   echo "$gen $ch OK aisb_ask=allow" >&3
 done < /tmp/ask/questions) &
exec 4<>/tmp/ask/questions
squid -N -f /aisb-gate/squid.conf & sleep 2
for req in "GET http://dW5saXN0ZWQ.asked-a.test/ HTTP/1.1" "CONNECT dGhlLXRva2Vu.asked-b.test:443 HTTP/1.1"; do
  exec 3<>/dev/tcp/127.0.0.1/3128
  printf '%s\r\nHost: x\r\nConnection: close\r\n\r\n' "$req" >&3
  timeout 10 head -c 12 <&3 >/dev/null
  exec 3>&-
done
sleep 1
SH
: > "$dir/dns.log"; : > "$dir/seen"
podman run --rm --network none --user 0 --cap-drop ALL --cap-add NET_BIND_SERVICE,SETUID,SETGID,CHOWN \
  -v "$dir:/aisb-gate:rw" "$image" bash /aisb-gate/dns.sh >/dev/null 2>&1 || true
expect_eq "both names were asked about, neither resolved before the answer" "2 0" \
  "$(grep -c ' not-resolved-before$' "$dir/seen") $(grep -vc ' not-resolved-before$' "$dir/seen")"
expect_contains "control: once allowed, the name is looked up (plain HTTP)" "asked-a" "$(cat "$dir/dns.log")"
expect_contains "(and over CONNECT)" "asked-b" "$(cat "$dir/dns.log")"
