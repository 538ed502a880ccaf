#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# claude, for real: an agent loop against a stand-in for the Anthropic Messages API (HTTPS on
# the host's loopback, streaming chunked server-sent events as the API does), reached through
# the gate with the key held there. The model asks for the Bash tool; claude runs it in the
# sandbox and sends the result back; the final answer carries it. The file the tool wrote is
# the user's, and holds the placeholder the sandbox was given, never the key; the provider got
# the key on every request. claude's own traffic (autoupdater, telemetry) is off, so the
# run's summary refuses nothing. The reasoning level is policy: claude's effort, xhigh unless
# --thinking says otherwise, and a level claude lacks is refused with its list.
source "$(dirname "$0")/lib.sh"

ca=$AISB_SRC/tests/e2e/tls/ca.pem
answer=CLAUDE-ANSWER-$$
STUB_TLS=1 python3 "$AISB_SRC/tests/e2e/stub-anthropic.py" "$E2E_TMP/claude.log" "$answer" \
  'printf %s "$ANTHROPIC_API_KEY" > made-by-claude.txt; echo uid=$(id -u)' > "$E2E_TMP/claude.port" &
stub=$!
trap 'kill $stub 2>/dev/null; cleanup' EXIT
for _ in $(seq 50); do [ -s "$E2E_TMP/claude.port" ] && break; sleep 0.1; done
port=$(cat "$E2E_TMP/claude.port")
[ -n "$port" ] || cannot_run "the stub server did not start"

version=$("$AISB" run --harness claude --ca-cert "$ca" --net none -- claude --version 2>/dev/null)
expect_contains "claude runs in the sandbox" "(Claude Code)" "$version"

export ANTHROPIC_API_KEY=sk-ant-real-e2e-$$ ANTHROPIC_BASE_URL=https://api.stub.test:$port
args=(--harness claude --ca-cert "$ca" --net allow --allow "api.stub.test:$port" --gate-add-host api.stub.test:127.0.0.1
      --secret "ANTHROPIC_API_KEY@api.stub.test/x-api-key" --env ANTHROPIC_BASE_URL --ask deny)
out=$("$AISB" run "${args[@]}" -- claude -p "make the file" --dangerously-skip-permissions \
  2>"$E2E_TMP/err" </dev/null) || { cat "$E2E_TMP/err" >&2; fail "claude -p failed: $out"; }
expect_contains "claude prints the final answer, with the tool's result the model got back" \
  "$answer tool said: uid=$(id -u)" "$out"
expect_eq "the model was offered Bash, asked for it, and got its result" "asked result" \
  "$(python3 - "$E2E_TMP/claude.log" <<'PY'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
loop = [x["body"] for x in r if x["path"].startswith("/v1/messages") and "count_tokens" not in x["path"]
        and any(t.get("name") == "Bash" for t in x["body"].get("tools", []) or [])]
def has_result(b):
    return any(isinstance(m.get("content"), list) and any(p.get("type") == "tool_result" for p in m["content"])
               for m in b.get("messages", []))
print("asked" if loop and not has_result(loop[0]) else "?", "result" if any(has_result(b) for b in loop[1:]) else "none")
PY
)"
expect_eq "the provider got the key from the gate, on every request" "$ANTHROPIC_API_KEY" \
  "$(python3 -c 'import json,sys; print(*sorted({json.loads(l)["x-api-key"] for l in open(sys.argv[1])}))' "$E2E_TMP/claude.log")"
[ -f made-by-claude.txt ] && [ ! -L made-by-claude.txt ] || fail "the tool's file is not in the project"
expect_eq "the file the tool wrote is the user's" "$(id -u)" "$(stat -c %u made-by-claude.txt)"
seen=$(cat made-by-claude.txt)
[ -n "$seen" ] || fail "the sandbox's ANTHROPIC_API_KEY was empty"
expect_absent "the sandbox saw only a placeholder, never the key" "$ANTHROPIC_API_KEY" "$seen"
expect_contains "claude's own traffic is off: the run's summary refuses nothing" "allowed, 0 denied, 0 failed" \
  "$(cat "$E2E_TMP/err")"

effort() { python3 -c 'import json,sys; print(*sorted({(json.loads(l)["body"].get("output_config") or {}).get("effort") or "none" for l in open(sys.argv[1]) if json.loads(l)["path"].startswith("/v1/messages")}))' "$1"; }
expect_eq "the model was asked at the policy's level (xhigh)" xhigh "$(effort "$E2E_TMP/claude.log")"
: > "$E2E_TMP/claude.log"
"$AISB" run "${args[@]}" --thinking low -- claude -p "make the file" --dangerously-skip-permissions \
  >/dev/null 2>"$E2E_TMP/err" </dev/null || { cat "$E2E_TMP/err" >&2; fail "claude -p --thinking low failed"; }
expect_eq "--thinking low reaches claude as its effort" low "$(effort "$E2E_TMP/claude.log")"
# The agent lowers the level of later runs in the home's settings (claude copies their env over
# its environment, and maxEffortLevel clamps any level): the next run's is the policy's still.
"$AISB" run "${args[@]}" -- sh -c 'printf %s "{\"effortLevel\":\"low\",\"maxEffortLevel\":\"low\",
  \"modelSettings\":{\"sonnet\":{\"maxEffortLevel\":\"low\"},\"opus\":{\"maxEffortLevel\":\"low\"}},
  \"env\":{\"CLAUDE_CODE_EFFORT_LEVEL\":\"low\",
  \"CLAUDE_CODE_EXTRA_BODY\":\"{\\\"output_config\\\":{\\\"effort\\\":\\\"low\\\"}}\"}}" > ~/.claude/settings.json
  python3 -c "import json,os; json.load(open(os.path.expanduser(\"~/.claude/settings.json\")))"' </dev/null 2>/dev/null ||
  fail "the agent's run could not write its settings"
: > "$E2E_TMP/claude.log"
"$AISB" run "${args[@]}" --thinking medium -- claude -p "make the file" --dangerously-skip-permissions \
  >/dev/null 2>"$E2E_TMP/err" </dev/null || { cat "$E2E_TMP/err" >&2; fail "claude -p --thinking medium failed"; }
expect_eq "an agent's lower level in the home's settings does not outlive its run" medium \
  "$(effort "$E2E_TMP/claude.log")"
# Instructions the agent leaves where claude reads them at start and the user has none (rules,
# a CLAUDE.md, its auto memory), and a SessionStart hook in its settings: the next run's
# requests carry none of them, and no hook ran.
"$AISB" run "${args[@]}" -- sh -c '
  mkdir -p ~/.claude/rules ~/.claude/projects/-project/memory
  echo PLANTED-RULE > ~/.claude/rules/r.md
  echo PLANTED-CLAUDE-MD > ~/.claude/CLAUDE.md
  echo PLANTED-MEMORY > ~/.claude/projects/-project/memory/MEMORY.md
  python3 -c "import json,os; p=os.path.expanduser(\"~/.claude/settings.json\"); s=json.load(open(p)); s[\"hooks\"]={\"SessionStart\":[{\"hooks\":[{\"type\":\"command\",\"command\":\"touch /project/hook-ran\"}]}]}; json.dump(s, open(p, \"w\"))"' \
  </dev/null 2>/dev/null || fail "the agent's run could not plant its instructions"
: > "$E2E_TMP/claude.log"
"$AISB" run "${args[@]}" -- claude -p "make the file" --dangerously-skip-permissions \
  >/dev/null 2>"$E2E_TMP/err" </dev/null || { cat "$E2E_TMP/err" >&2; fail "claude -p after the plant failed"; }
[ -s "$E2E_TMP/claude.log" ] || fail "claude sent no request after the plant"
expect_absent "the planted instructions did not reach the model" "PLANTED-" "$(cat "$E2E_TMP/claude.log")"
[ ! -e hook-ran ] || fail "the planted SessionStart hook ran"
pass "nor did the planted hook run"
expect_contains "the run said what it moved aside" "~/.claude/CLAUDE.md" "$(cat "$E2E_TMP/err")"
rm -f made-by-claude.txt
set +e
err=$("$AISB" run "${args[@]}" --thinking off -- claude -p "make the file" 2>&1 </dev/null); rc=$?
set -e
expect_eq "a level claude lacks is refused before the run" 2 "$rc"
expect_contains "with claude's list" "thinking: claude has no level 'off' (use one of: low, medium, high, xhigh, max, host)" "$err"
[ ! -e made-by-claude.txt ] || fail "the refused run ran"

# The key held by the gate on its own: no --secret, ANTHROPIC_API_KEY only in aisb's
# environment, held at ANTHROPIC_BASE_URL's host. --no-harness-keys: not held, not passed.
: > "$E2E_TMP/claude.log"
auto=(--harness claude --ca-cert "$ca" --net allow --allow "api.stub.test:$port" --gate-add-host api.stub.test:127.0.0.1
      --env ANTHROPIC_BASE_URL --ask deny)
expect_contains "the policy holds the key at the provider's host" "secret=ANTHROPIC_API_KEY@api.stub.test/x-api-key" \
  "$("$AISB" run "${auto[@]}" --print-policy -- claude -p x)"
out=$("$AISB" run "${auto[@]}" -- claude -p "make the file" --dangerously-skip-permissions 2>"$E2E_TMP/err" </dev/null) ||
  { cat "$E2E_TMP/err" >&2; fail "claude -p with the key held on its own failed: $out"; }
expect_contains "the loop runs with the key held on its own" "$answer tool said: uid=$(id -u)" "$out"
expect_eq "the provider got the key, on every request" "$ANTHROPIC_API_KEY" \
  "$(python3 -c 'import json,sys; print(*sorted({json.loads(l)["x-api-key"] for l in open(sys.argv[1])}))' "$E2E_TMP/claude.log")"
seen=$(cat made-by-claude.txt)
case $seen in aisb-secret-*) pass "the sandbox held a placeholder" ;; *) fail "the sandbox held '$seen', not a placeholder" ;; esac
expect_absent "the policy names no secret with --no-harness-keys" "secret=ANTHROPIC_API_KEY" \
  "$("$AISB" run "${auto[@]}" --no-harness-keys --print-policy -- claude -p x)"

# Carry, don't scrub: the host's settings cross only by claude's carry-list. A setting under an
# innocent name holding a random value (no scan of values would catch it) stays on the host,
# and the run says so in one line, never with the value; bridge-carry carries it. The model,
# the provider's URL and the level still arrive, and reach the model's request.
export CLAUDE_CONFIG_DIR=$E2E_TMP/claude-home
mkdir -p "$CLAUDE_CONFIG_DIR"
random=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
cat > "$CLAUDE_CONFIG_DIR/settings.json" <<JSON
{"model": "claude-carry-e2e-model", "effortLevel": "low", "colorScheme2": "$random",
 "env": {"ANTHROPIC_BASE_URL": "$ANTHROPIC_BASE_URL", "CLAUDE_CODE_EFFORT_LEVEL": "low",
         "CLAUDE_CODE_ALWAYS_ENABLE_EFFORT": "1"}}
JSON
: > "$E2E_TMP/claude.log"
"$AISB" run "${args[@]}" --thinking host -- claude -p "make the file" --dangerously-skip-permissions \
  >/dev/null 2>"$E2E_TMP/err" </dev/null || { cat "$E2E_TMP/err" >&2; fail "claude -p with the host's settings failed"; }
inside=$("$AISB" run --harness claude -- cat /home/sandbox/.claude/settings.json)
expect_absent "a host setting on no carry-list stays on the host" "$random" "$inside"
expect_contains "the run says how many stayed, and how to carry one" \
  "1 key of $CLAUDE_CONFIG_DIR/settings.json stays on the host (on no carry-list: aisb inspect names them; carry one with bridge-carry = claude:KEY)" \
  "$(cat "$E2E_TMP/err")"
expect_absent "never its value" "$random" "$(cat "$E2E_TMP/err")"
carried() { printf '%s' "$inside" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
expect_eq "the model arrives" claude-carry-e2e-model "$(carried 'd["model"]')"
expect_eq "the provider's URL arrives" "$ANTHROPIC_BASE_URL" "$(carried 'd["env"]["ANTHROPIC_BASE_URL"]')"
expect_eq "the level arrives" "low low" "$(carried 'd["effortLevel"] + " " + d["env"]["CLAUDE_CODE_EFFORT_LEVEL"]')"
expect_eq "and the model was asked with them" "claude-carry-e2e-model" \
  "$(python3 -c 'import json,sys; print(*sorted({json.loads(l)["body"].get("model") for l in open(sys.argv[1]) if json.loads(l)["path"].startswith("/v1/messages") and "count_tokens" not in json.loads(l)["path"]}))' "$E2E_TMP/claude.log")"
expect_eq "at the host's level" low "$(effort "$E2E_TMP/claude.log")"
expect_contains "inspect names what stays" "bridge-held=settings.json: 1 (colorScheme2; on no carry-list: bridge-carry = claude:KEY carries one)" \
  "$("$AISB" inspect "${args[@]}" -- claude -p x)"
"$AISB" run "${args[@]}" --bridge-carry claude:colorScheme2 -- claude --version >/dev/null 2>"$E2E_TMP/err" </dev/null ||
  { cat "$E2E_TMP/err" >&2; fail "claude --version with bridge-carry failed"; }
expect_eq "bridge-carry carries it" "$random" \
  "$("$AISB" run --harness claude -- cat /home/sandbox/.claude/settings.json | python3 -c 'import json,sys; print(json.load(sys.stdin).get("colorScheme2"))')"
expect_absent "and nothing then stays on the host to say" "on the host (on no carry-list" "$(cat "$E2E_TMP/err")"
