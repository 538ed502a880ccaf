#!/usr/bin/env bash
# Before the sandbox exists, aisb does host-side work (the podman requests, the gate, pi's
# settings from the home volume) with SIGINT, SIGTERM and SIGHUP held for the run. Nothing
# there may hang it, and a signal must still end it promptly:
#  - the agent, from inside a real sandbox, makes ~/.pi/agent/settings.json of its home
#    volume a FIFO; the next run of pi must go on (the host's settings taken afresh), not
#    wait for a writer;
#  - the podman service stops answering a request made once the run has begun (a relay in
#    front of the real service holds it): SIGTERM ends aisb within seconds, 143, no sandbox.
. "$(dirname "$0")/lib.sh"

"$AISB" run -- true >/dev/null 2>&1 || fail "a plain run"

export PI_CODING_AGENT_DIR=$E2E_TMP/pi-agent
mkdir -p "$PI_CODING_AGENT_DIR"
echo '{"theme": "dark-e2e"}' > "$PI_CODING_AGENT_DIR/settings.json"

"$AISB" run -- sh -c 'mkdir -p ~/.pi/agent && rm -f ~/.pi/agent/settings.json && mkfifo ~/.pi/agent/settings.json'
expect_eq "the agent made a FIFO in its home" fifo \
  "$("$AISB" run -- sh -c 'test -p ~/.pi/agent/settings.json && echo fifo')"
set +e
out=$(timeout -k 5 60 "$AISB" run -- pi --version 2>"$E2E_TMP/err")
rc=$?
set -e
case $rc in 124|137) fail "aisb hung on a FIFO in the home volume" ;; esac
expect_eq "the run of pi goes on" 0 "$rc"
expect_contains "saying why the sandbox's settings were not merged" \
  "warning: the sandbox's settings.json is not a regular file: taking the host's settings afresh" "$(cat "$E2E_TMP/err")"
expect_eq "the FIFO is replaced by the host's settings" dark-e2e \
  "$("$AISB" run -- python3 -c "import json,os; print(json.load(open(os.path.expanduser('~/.pi/agent/settings.json')))['theme'])")"

# The host's own settings.json a FIFO (not the agent's doing, but no reason to hang): refused.
rm "$PI_CODING_AGENT_DIR/settings.json"
mkfifo "$PI_CODING_AGENT_DIR/settings.json"
set +e
err=$(timeout -k 5 60 "$AISB" run -- pi --version 2>&1 >/dev/null)
rc=$?
set -e
case $rc in 124|137) fail "aisb hung on a FIFO at the host's settings.json" ;; esac
expect_eq "a FIFO at the host's settings.json is refused" 2 "$rc"
expect_contains "saying so" "$PI_CODING_AGENT_DIR/settings.json is not a regular file" "$err"
rm "$PI_CODING_AGENT_DIR/settings.json"

# A service that stops answering once the run has begun: the first request of the run
# proper (its home volume) is held forever.
python3 "$AISB_SRC/tests/e2e/stall-podman.py" "$XDG_RUNTIME_DIR/podman/podman.sock" \
  "$E2E_TMP/stall.sock" /volumes/ "$E2E_TMP/stall.log" > "$E2E_TMP/stall.ready" &
relay=$!
trap 'kill $relay 2>/dev/null || true; cleanup' EXIT
for _ in $(seq 50); do grep -q ready "$E2E_TMP/stall.ready" 2>/dev/null && break; sleep 0.1; done
[ -S "$E2E_TMP/stall.sock" ] || cannot_run "the relay did not start"
"$AISB" run --socket "$E2E_TMP/stall.sock" -- true </dev/null >/dev/null 2>"$E2E_TMP/stall.err" &
pid=$!
for _ in $(seq 300); do grep -q stalled "$E2E_TMP/stall.log" 2>/dev/null && break; sleep 0.1; done
grep -q "stalled GET .*/volumes/" "$E2E_TMP/stall.log" || { kill -9 "$pid"; fail "the run never reached the held request"; }
pass "the run waits on a request the service never answers"
kill -TERM "$pid"
for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
  kill -9 "$pid"
  fail "SIGTERM did not end aisb within 5 seconds"
fi
set +e
wait "$pid"
rc=$?
set -e
expect_eq "SIGTERM ends aisb with 143" 143 "$rc"
expect_eq "no sandbox is left" "" "$(podman ps -a --filter "label=aisb.pid=$pid" -q)"
expect_eq "and nothing is printed about it" "" "$(cat "$E2E_TMP/stall.err")"
