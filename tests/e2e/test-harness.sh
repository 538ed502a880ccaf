#!/usr/bin/env bash
# pi, the default harness, for real: it runs in the sandbox as the user, talks to a stub
# chat-completions server through the gate with the token and the secret headers bridged from
# the host's models.json (as variables the run passes, never as literals in the sandbox's
# home), and its settings are merged across runs with the reasoning level as policy; its start
# downloads nothing and asks nothing of the network on its own.
. "$(dirname "$0")/lib.sh"

out=$("$AISB" run --no-pi-config -- sh -c 'id -u; pi --version 2>&1' 2>/dev/null)
expect_eq "pi runs as the invoking user" "$(id -u)" "${out%%$'\n'*}"
printf '%s\n' "$out" | tail -1 | grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+' || fail "pi --version printed '$out'"
pass "pi --version answers ($(printf '%s\n' "$out" | tail -1))"

answer=STUB-ANSWER-$$
python3 "$AISB_SRC/tests/e2e/stub-openai.py" "$E2E_TMP/stub.log" "$answer" > "$E2E_TMP/stub.port" &
stub=$!
trap 'kill $stub 2>/dev/null; cleanup' EXIT
for _ in $(seq 50); do [ -s "$E2E_TMP/stub.port" ] && break; sleep 0.1; done
port=$(cat "$E2E_TMP/stub.port")
[ -n "$port" ] || cannot_run "the stub server did not start"

# The host's pi configuration, as a user would have it: a literal key in models.json, and
# literal secrets in headers at provider and at model level (a gateway's key, as pi's own
# docs/models.md shows them).
export PI_CODING_AGENT_DIR=$E2E_TMP/pi-agent
mkdir -p "$PI_CODING_AGENT_DIR"
cat > "$PI_CODING_AGENT_DIR/models.json" <<JSON
{"providers": {"stub": {"baseUrl": "http://stub.test:$port/v1", "api": "openai-completions",
  "apiKey": "sk-literal-e2e-$$",
  "headers": {"x-portkey-api-key": "pk-literal-e2e-$$"},
  "models": [{"id": "stub-model", "name": "Stub", "reasoning": true, "input": ["text"],
              "contextWindow": 8192, "maxTokens": 1024,
              "headers": {"X-Model-Secret": "ms-literal-e2e-$$"},
              "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}]}}}
JSON
provider_header=AISB_PI_HEADER_STUB_X_PORTKEY_API_KEY
model_header=AISB_PI_HEADER_STUB_STUB_MODEL_X_MODEL_SECRET
cat > "$PI_CODING_AGENT_DIR/settings.json" <<JSON
{"defaultProvider": "stub", "defaultModel": "stub-model", "defaultThinkingLevel": "low",
 "theme": "dark", "quietStartup": false}
JSON
echo '{"stub": {"type": "api_key", "key": "sk-from-auth-json"}}' > "$PI_CODING_AGENT_DIR/auth.json"
net="--net allow --allow stub.test:$port --gate-add-host stub.test:127.0.0.1"

set +e
err=$("$AISB" run $net -- pi -p "say hi" 2>&1); rc=$?
set -e
expect_eq "a bridged run without its token variable is refused" 2 "$rc"
expect_contains "naming the --env to add" "--env AISB_PI_KEY_STUB" "$err"
expect_contains "and the provider's literal header" \
  "--env $provider_header=<value> (header 'x-portkey-api-key' of provider 'stub' is a literal, which aisb does not copy into the sandbox)" "$err"
expect_contains "and the model's literal header" \
  "--env $model_header=<value> (header 'X-Model-Secret' of model 'stub-model' of provider 'stub' is a literal" "$err"
expect_absent "the refusal does not echo the header's value" "literal-e2e" "$err"

export AISB_PI_KEY_STUB=sk-literal-e2e-$$
set +e
err=$("$AISB" run $net --env AISB_PI_KEY_STUB -- pi -p "say hi" 2>&1); rc=$?
set -e
expect_eq "the token alone is not enough: the headers' variables are missing" 2 "$rc"
expect_contains "refused for the headers" "add: --env $provider_header=<value>" "$err"
expect_absent "not for the token it has" "--env AISB_PI_KEY_STUB" "$err"

out=$("$AISB" inspect $net --env AISB_PI_KEY_STUB)
expect_contains "inspect lists the token's variable" \
  "bridge-key=AISB_PI_KEY_STUB for the apiKey of provider 'stub' (passed)" "$out"
expect_contains "and each header's, with what is missing" \
  "bridge-key=$provider_header for header 'x-portkey-api-key' of provider 'stub' (missing: add --env)" "$out"
expect_contains "at model level too" \
  "bridge-key=$model_header for header 'X-Model-Secret' of model 'stub-model' of provider 'stub' (missing: add --env)" "$out"
expect_absent "inspect names variables, never values" "literal-e2e" "$out"

export $provider_header=pk-literal-e2e-$$ $model_header=ms-literal-e2e-$$
keys="--env AISB_PI_KEY_STUB --env $provider_header --env $model_header"
out=$("$AISB" run $net $keys -- pi -p "say hi" 2>"$E2E_TMP/err") ||
  { cat "$E2E_TMP/err" >&2; fail "pi -p failed"; }
expect_contains "pi prints the stub's answer" "$answer" "$out"
expect_contains "the run's summary has no refusal of pi's own (its update check is off)" "allowed, 0 denied, 0 failed" \
  "$(cat "$E2E_TMP/err")"
expect_absent "node does not warn about its proxy agent on every run" "UNDICI-EHPA" "$(cat "$E2E_TMP/err")"
expect_absent "nor does podman say its host facts unasked" "Resource limits are not supported" "$(cat "$E2E_TMP/err")"
request=$(tail -1 "$E2E_TMP/stub.log")
auth=$(printf '%s' "$request" | python3 -c 'import json,sys; print(json.load(sys.stdin)["authorization"])')
expect_eq "the stub saw the bridged token" "Bearer sk-literal-e2e-$$" "$auth"
header() { printf '%s' "$request" | python3 -c 'import json,sys; print(json.load(sys.stdin)["headers"].get(sys.argv[1]))' "$1"; }
expect_eq "the stub saw the provider's header, resolved by pi from its variable" "pk-literal-e2e-$$" "$(header x-portkey-api-key)"
expect_eq "and the model's" "ms-literal-e2e-$$" "$(header x-model-secret)"
effort=$(printf '%s' "$request" | python3 -c 'import json,sys; print(json.load(sys.stdin)["body"].get("reasoning_effort"))')
# xhigh is the policy; pi sends it as "high" to models without an xhigh tier.
expect_eq "the forced thinking level reached the request" high "$effort"

# One run cannot weaken the next through the home: the agent leaves a pi extension that
# lowers the level to minimal and marks the request, a settings key loading another one, and a
# SYSTEM.md. The next run's request carries the run's level and no mark, and the run says what
# it moved aside.
"$AISB" run --net none -- sh -c '
  ext="export default function (pi) { pi.on(\"before_provider_request\", (event) => ({ ...event.payload, reasoning_effort: \"minimal\", planted: 1 })); }"
  mkdir -p ~/.pi/agent/extensions && echo "$ext" > ~/.pi/agent/extensions/lower.js
  echo "$ext" > ~/lower.js
  echo "PLANTED-SYSTEM-PROMPT" > ~/.pi/agent/SYSTEM.md
  python3 -c "import json,os; p=os.path.expanduser(\"~/.pi/agent/settings.json\"); s=json.load(open(p)); s[\"extensions\"]=[\"/home/sandbox/lower.js\"]; json.dump(s, open(p, \"w\"))"' \
  || fail "the plant"
seen=$(wc -l < "$E2E_TMP/stub.log")
out=$("$AISB" run $net $keys -- pi -p "say hi" 2>"$E2E_TMP/err") ||
  { cat "$E2E_TMP/err" >&2; fail "pi -p after the plant failed"; }
# Every request of that run (pi may also summarize its session).
requests=$(tail -n +$((seen + 1)) "$E2E_TMP/stub.log")
[ -n "$requests" ] || fail "pi sent no request after the plant"
efforts=$(printf '%s\n' "$requests" | python3 -c 'import json,sys; print(" ".join(sorted({str(json.loads(l)["body"].get("reasoning_effort")) for l in sys.stdin if l.strip()})))')
expect_eq "after an extension planted in the home, the run's level reached every request" high "$efforts"
expect_absent "the planted extension did not run" '"planted"' "$requests"
expect_absent "nor did the planted SYSTEM.md reach the model" "PLANTED-SYSTEM-PROMPT" "$requests"
expect_contains "the run said what it moved aside" "~/.pi/agent/SYSTEM.md ~/.pi/agent/extensions moved to ~/.aisb-moved/" \
  "$(cat "$E2E_TMP/err")"
# And with the home reset off the path (the proof's control): a planted extension runs when
# pi loads it, so the check above could fail.
seen=$(wc -l < "$E2E_TMP/stub.log")
control=$("$AISB" run $net $keys -- sh -c 'mkdir -p /tmp/x && cat ~/lower.js > /tmp/x/lower.js && pi -e /tmp/x/lower.js -p "say hi"' 2>&1) ||
  fail "the control run: $control"
expect_contains "control: an extension pi is told to load does rewrite the request" '"reasoning_effort": "minimal"' \
  "$(tail -n +$((seen + 1)) "$E2E_TMP/stub.log")"

# pi's interactive start: its file search finds fd and rg in the image (no download), and it
# asks nothing of the network on its own (update check, install telemetry).
expect_eq "rg and fd are in the image" "/usr/bin/rg /usr/local/bin/fd" \
  "$("$AISB" run --net none -- sh -c 'command -v rg; command -v fd' | tr '\n' ' ' | sed 's/ $//')"
start=$(python3 "$AISB_SRC/tests/e2e/pi-start.py" "$AISB" run $net $keys --ask deny) || fail "pi's interactive start: $start"
expect_contains "pi's interactive start shows its model" "stub-model" "$start"
expect_absent "pi downloads nothing at its start" "Downloading" "$start"
expect_absent "nor misses a tool" "not found" "$start"
expect_contains "and the run's summary has no refusal" "egress: 0 allowed, 0 denied, 0 failed" "$start"
# The control: with the update check on again, the same start is refused its request.
start=$(python3 "$AISB_SRC/tests/e2e/pi-start.py" "$AISB" run $net $keys --ask deny --env PI_SKIP_VERSION_CHECK=) ||
  fail "pi's interactive start: $start"
expect_contains "control: pi's own update check is what the summary would show" "1 denied, 0 failed (denied: pi.dev)" "$start"

inside=$("$AISB" run -- sh -c 'cat ~/.pi/agent/models.json; cat ~/.pi/agent/auth.json 2>/dev/null')
expect_absent "the literal key is not in the sandbox" "sk-literal-e2e" "$inside"
expect_absent "nor the provider's literal header" "pk-literal-e2e" "$inside"
expect_absent "nor the model's" "ms-literal-e2e" "$inside"
expect_contains "models.json references the variable" '"AISB_PI_KEY_STUB"' "$inside"
headers=$("$AISB" run -- sh -c 'cat ~/.pi/agent/models.json' | python3 -c '
import json, sys
stub = json.load(sys.stdin)["providers"]["stub"]
print(stub["headers"]["x-portkey-api-key"], stub["models"][0]["headers"]["X-Model-Secret"])')
expect_eq "models.json names the headers' variables in their place" "$provider_header $model_header" "$headers"
# Anywhere in the home volume, after pi ran there with the values in its environment (the
# control: the same search finds the variable's name where it is).
expect_eq "no file of the home holds a literal" "" \
  "$("$AISB" run -- sh -c 'grep -rlaE "(sk|pk|ms)-literal-e2e" ~ 2>/dev/null; true')"
expect_eq "control: the search does see the home" /home/sandbox/.pi/agent/models.json \
  "$("$AISB" run -- sh -c "grep -rla $provider_header ~ 2>/dev/null; true")"
# pi makes its own auth.json; the host's key must not be in it.
expect_absent "the host's auth.json is never copied" "sk-from-auth-json" "$inside"

# Headers pi would refuse, one of them perhaps the secret itself: refused before the run,
# saying where, echoing nothing, writing nothing.
bad=$E2E_TMP/pi-agent-bad
mkdir -p "$bad" && cp "$PI_CODING_AGENT_DIR/settings.json" "$bad/"
echo "{\"providers\": {\"stub\": {\"apiKey\": \"STUB_KEY\", \"headers\": \"x-portkey-api-key: pk-bad-e2e-$$\"}}}" > "$bad/models.json"
set +e
err=$(PI_CODING_AGENT_DIR=$bad "$AISB" run $net $keys -- pi --version 2>&1); rc=$?
set -e
expect_eq "headers that are not an object are refused" 2 "$rc"
expect_contains "saying where" "models.json: the headers of provider 'stub' are string; pi needs an object of strings" "$err"
expect_absent "without the value" "pk-bad-e2e" "$err"
expect_contains "inspect says so too" "bridge-models=refused: models.json: the headers of provider 'stub' are string" \
  "$(PI_CODING_AGENT_DIR=$bad "$AISB" inspect $net)"
expect_absent "and the sandbox's models.json is not replaced by it" "pk-bad-e2e" \
  "$("$AISB" run -- sh -c 'cat ~/.pi/agent/models.json')"

setting() { "$AISB" run -- python3 -c "import json,os; print(json.load(open(os.path.expanduser('~/.pi/agent/settings.json'))).get('$1'))"; }
edit() { "$AISB" run -- python3 -c "import json,os; p=os.path.expanduser('~/.pi/agent/settings.json'); d=json.load(open(p)); d['$1']=$2; json.dump(d,open(p,'w'))"; }
bridge() { "$AISB" run $net $keys -- pi --version >/dev/null 2>&1; }

expect_eq "the thinking level is forced to xhigh" xhigh "$(setting defaultThinkingLevel)"
edit theme '"light"'
bridge
expect_eq "a setting changed in the sandbox persists" light "$(setting theme)"
bridge
expect_eq "and keeps persisting, run after run" light "$(setting theme)"
python3 - "$PI_CODING_AGENT_DIR/settings.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["quietStartup"] = True; json.dump(d, open(sys.argv[1], "w"))
PY
bridge
expect_eq "a host change to an untouched key arrives" True "$(setting quietStartup)"
edit defaultThinkingLevel '"off"'
bridge
expect_eq "a run that set thinking off gets xhigh back" xhigh "$(setting defaultThinkingLevel)"
"$AISB" run $net $keys --thinking medium -- pi --version >/dev/null 2>&1
expect_eq "--thinking sets the level" medium "$(setting defaultThinkingLevel)"
# Carry, don't scrub: the host's settings cross only by pi's carry-list. A setting under an
# innocent name holding a random value (no scan of values would catch it) stays on the host,
# and the run says so in one line, never with the value; bridge-carry carries it. The model,
# the provider and the level still arrive.
random=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
python3 - "$PI_CODING_AGENT_DIR/settings.json" "$random" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["colorScheme2"] = sys.argv[2]; json.dump(d, open(sys.argv[1], "w"))
PY
err=$("$AISB" run $net $keys --thinking host -- pi --version 2>&1 >/dev/null) || fail "pi --version with the host's settings: $err"
expect_absent "a host setting on no carry-list stays on the host" "$random" \
  "$("$AISB" run -- cat /home/sandbox/.pi/agent/settings.json)"
expect_contains "the run says how many stayed, and how to carry one" \
  "1 key of $PI_CODING_AGENT_DIR/settings.json stays on the host (on no carry-list: aisb inspect names them; carry one with bridge-carry = pi:KEY)" "$err"
expect_absent "never its value" "$random" "$err"
expect_eq "the model arrives" stub-model "$(setting defaultModel)"
expect_eq "the provider arrives" stub "$(setting defaultProvider)"
expect_eq "the level arrives (--thinking host: the host's)" low "$(setting defaultThinkingLevel)"
expect_contains "inspect names what stays" "bridge-held=settings.json: 1 (colorScheme2; on no carry-list: bridge-carry = pi:KEY carries one)" \
  "$("$AISB" inspect $net $keys)"
err=$("$AISB" run $net $keys --bridge-carry pi:colorScheme2 -- pi --version 2>&1 >/dev/null) || fail "pi --version with bridge-carry: $err"
expect_eq "bridge-carry carries it" "$random" "$(setting colorScheme2)"
expect_absent "and nothing then stays on the host to say" "on the host (on no carry-list" "$err"
bridge
expect_eq "named no more, it goes from the sandbox" None "$(setting colorScheme2)"
set +e
err=$("$AISB" run --thinking extreme -- true 2>&1); rc=$?
set -e
expect_eq "an unknown level is refused" 2 "$rc"
expect_contains "with the list to pick from" "xhigh" "$err"

# What the agent leaves to make every later run fail: a directory where settings.json goes,
# its pi directory without permissions. The next run puts it right, says so, and runs.
"$AISB" run -- sh -c 'rm -f ~/.pi/agent/settings.json; mkdir -p ~/.pi/agent/settings.json/x; chmod 0 ~/.pi/agent' ||
  fail "the agent's run could not plant its obstacles"
err=$("$AISB" run $net $keys -- pi --version 2>&1) || fail "a run after the agent's obstacles failed: $err"
expect_contains "the agent's directory is moved aside, and said" \
  "settings.json in the sandbox's home was not what aisb writes there: moved to settings.json.aisb-moved-" "$err"
expect_eq "and the bridge wrote its settings" xhigh "$(setting defaultThinkingLevel)"

export AISB_HOME_VOLUME=aisb-e2e-home-fresh-$$
"$AISB" run --no-pi-config $net -- pi --version >/dev/null 2>&1
out=$("$AISB" run -- sh -c 'ls -A ~/.pi/agent 2>/dev/null | wc -l')
podman volume rm -f "$AISB_HOME_VOLUME" >/dev/null
expect_eq "--no-pi-config writes nothing" 0 "$out"

# Skills: read-only, or absent.
mkdir -p "$E2E_TMP/agents/skills" && echo "skill text" > "$E2E_TMP/agents/skills/one.md"
out=$("$AISB" run --agents-dir "$E2E_TMP/agents" -- sh -c \
  'cat ~/.agents/skills/one.md; touch ~/.agents/new 2>/dev/null && echo writable || echo read-only; rm ~/.agents/skills/one.md 2>/dev/null && echo deleted || echo kept')
expect_eq "~/.agents is mounted read-only" "skill text
read-only
kept" "$out"
out=$("$AISB" run --agents-dir "$E2E_TMP/agents" --insecure-keep-root -- sh -c \
  'touch ~/.agents/new 2>/dev/null && echo writable || echo read-only')
expect_eq "read-only even under --insecure-keep-root" read-only "$out"
# (An earlier run's mount point may linger in the home volume as an empty directory.)
out=$("$AISB" run --agents-dir "$E2E_TMP/agents" --no-agents -- sh -c 'test -e ~/.agents/skills/one.md && echo present || echo absent')
expect_eq "--no-agents leaves it out" absent "$out"
podman rm -f "aisb-gate-$("$AISB" run $net --print-policy | sed -n 's/^gate=//p')" >/dev/null 2>&1 || true
