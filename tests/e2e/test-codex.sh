#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# codex, for real: an agent loop against a stand-in for the OpenAI Responses API (HTTPS on the
# host's loopback, streaming chunked server-sent events as the API does), reached through the
# gate. The user's config.toml ($CODEX_HOME) names the provider, its env_key and a sandbox
# mode that cannot work inside aisb's container; the bridge carries the provider over (by
# codex's carry-list: nothing else crosses) and sets the mode, the update check, the plugins'
# sync and the reasoning level by policy; the
# key is held by the gate on its own (no --secret): the sandbox gets a placeholder, the
# provider the key. The model asks for codex's shell tool; codex runs it in the sandbox and
# the result comes back in the final answer; the tool's file is the user's; auth.json stays
# on the host; the run's summary refuses nothing.
source "$(dirname "$0")/lib.sh"

ca=$AISB_SRC/tests/e2e/tls/ca.pem
answer=CODEX-ANSWER-$$
STUB_TLS=1 python3 "$AISB_SRC/tests/e2e/stub-openai.py" "$E2E_TMP/codex.log" "$answer" \
  'printf %s "$STUB_OPENAI_KEY" > made-by-codex.txt; test -e ~/.codex/auth.json && echo AUTH-COPIED; echo uid=$(id -u)' \
  > "$E2E_TMP/codex.port" &
stub=$!
trap 'kill $stub 2>/dev/null; cleanup' EXIT
for _ in $(seq 50); do [ -s "$E2E_TMP/codex.port" ] && break; sleep 0.1; done
port=$(cat "$E2E_TMP/codex.port")
[ -n "$port" ] || cannot_run "the stub server did not start"

version=$("$AISB" run --harness codex --net none -- codex --version 2>/dev/null </dev/null)
expect_contains "codex runs in the sandbox" "codex-cli" "$version"

export CODEX_HOME=$E2E_TMP/codex-home
mkdir -p "$CODEX_HOME"
cat > "$CODEX_HOME/config.toml" <<TOML
model = "stub-model"
model_provider = "stub"
sandbox_mode = "workspace-write"
model_reasoning_effort = "low"

[model_providers.stub]
name = "stub"
base_url = "https://api.stub.test:$port/v1"
env_key = "STUB_OPENAI_KEY"
wire_api = "responses"
http_headers = { "X-Auth" = "hdr-e2e-$$-0123456789", "X-Team" = "t" }

[shell_environment_policy.set]
PGPASSWORD = "pg-e2e-$$-Winter2024"
TOML
echo '{"OPENAI_API_KEY":"sk-never-copied"}' > "$CODEX_HOME/auth.json"
export STUB_OPENAI_KEY=sk-real-e2e-$$
args=(--harness codex --ca-cert "$ca" --net allow --allow "api.stub.test:$port" --gate-add-host api.stub.test:127.0.0.1
      --ask deny)
out=$("$AISB" run "${args[@]}" -- codex exec --skip-git-repo-check "make the file" 2>"$E2E_TMP/err" </dev/null) ||
  { cat "$E2E_TMP/err" >&2; fail "codex exec failed: $out"; }
expect_contains "codex prints the final answer, with the tool's result the model got back" \
  "$answer tool said: uid=$(id -u)" "$out"
expect_eq "the model asked for a shell tool, and got its result" "asked result" \
  "$(python3 - "$E2E_TMP/codex.log" <<'PY'
import json, sys
r = [json.loads(l)["body"] for l in open(sys.argv[1]) if json.loads(l)["path"].endswith("/responses")]
def has_output(b):
    return any(isinstance(i, dict) and i.get("type") in ("function_call_output", "custom_tool_call_output")
               for i in b.get("input", []))
print("asked" if r and not has_output(r[0]) else "?", "result" if any(has_output(b) for b in r[1:]) else "none")
PY
)"
expect_eq "the provider got the key from the gate, on every request" "Bearer $STUB_OPENAI_KEY" \
  "$(python3 -c 'import json,sys; print(*sorted({json.loads(l)["authorization"] for l in open(sys.argv[1])}))' "$E2E_TMP/codex.log")"
[ -f made-by-codex.txt ] && [ ! -L made-by-codex.txt ] || fail "the tool's file is not in the project"
expect_eq "the file the tool wrote is the user's" "$(id -u)" "$(stat -c %u made-by-codex.txt)"
seen=$(cat made-by-codex.txt)
[ -n "$seen" ] || fail "the sandbox's STUB_OPENAI_KEY was empty"
expect_absent "the sandbox saw only a placeholder, never the key" "$STUB_OPENAI_KEY" "$seen"
expect_absent "auth.json stays on the host" "AUTH-COPIED" "$out"
# What of the user's config.toml is on no carry-list stays on the host, counted: the table of
# variables set for every command (shell_environment_policy.set: any name, the values
# themselves). Of what is carried, a credential stays on the host too, said by name.
expect_contains "the variables' table stays on the host, counted" \
  "1 key of $CODEX_HOME/config.toml stays on the host (on no carry-list: aisb inspect names them; carry one with bridge-carry = codex:KEY)" \
  "$(cat "$E2E_TMP/err")"
expect_contains "a header's secret is withheld, by name" \
  "; $CODEX_HOME/config.toml: model_providers.stub.http_headers.X-Auth not bridged" "$(cat "$E2E_TMP/err")"
expect_absent "never by value" "e2e-$$-" "$(cat "$E2E_TMP/err")"
expect_eq "the provider got the header that routes, not the one that authenticates" "t None" \
  "$(python3 -c 'import json,sys; r=[json.loads(l)["headers"] for l in open(sys.argv[1])]; print(r[0].get("x-team"), r[0].get("x-auth"))' "$E2E_TMP/codex.log")"
expect_eq "no file of the sandbox's home holds either value" "" \
  "$("$AISB" run --harness codex --net none -- sh -c "grep -rlaE '(hdr|pg)-e2e-$$' ~ 2>/dev/null; true" </dev/null)"
expect_contains "control: the search does see the bridged file" "/home/sandbox/.codex/config.toml" \
  "$("$AISB" run --harness codex --net none -- sh -c "grep -rla X-Team ~ 2>/dev/null; true" </dev/null)"
# "0 denied": nothing refused. Not "0 failed": codex closes its connection on the last event,
# and the gate may log that request as cut short when the close beats the stream's end.
expect_contains "codex's own traffic is off: the run's summary refuses nothing" "allowed, 0 denied," \
  "$(grep '^aisb: egress:' "$E2E_TMP/err")"

effort() { python3 -c 'import json,sys; print(*sorted({(json.loads(l)["body"].get("reasoning") or {}).get("effort") or "none" for l in open(sys.argv[1]) if json.loads(l)["path"].endswith("/responses")}))' "$1"; }
expect_eq "the model was asked at the policy's level (xhigh), not the config's" xhigh "$(effort "$E2E_TMP/codex.log")"
: > "$E2E_TMP/codex.log"
rm -f made-by-codex.txt
"$AISB" run "${args[@]}" --thinking minimal -- codex exec --skip-git-repo-check "make the file" \
  >/dev/null 2>"$E2E_TMP/err" </dev/null || { cat "$E2E_TMP/err" >&2; fail "codex exec --thinking minimal failed"; }
expect_eq "--thinking minimal reaches codex as its reasoning effort" minimal "$(effort "$E2E_TMP/codex.log")"
# What the agent leaves where codex reads it at start: an AGENTS.override.md (it wins over the
# bridged AGENTS.md), a notify command in its config: the next run's requests carry neither.
"$AISB" run --harness codex --net none -- sh -c '
  echo PLANTED-OVERRIDE > ~/.codex/AGENTS.override.md
  { printf "notify = [\"touch\", \"/project/notify-ran\"]\n"; cat ~/.codex/config.toml; } > ~/.codex/new.toml &&
  mv ~/.codex/new.toml ~/.codex/config.toml' </dev/null ||
  fail "the agent's run could not plant its instructions"
: > "$E2E_TMP/codex.log"
"$AISB" run "${args[@]}" -- codex exec --skip-git-repo-check "make the file" >/dev/null 2>"$E2E_TMP/err" </dev/null ||
  { cat "$E2E_TMP/err" >&2; fail "codex exec after the plant failed"; }
[ -s "$E2E_TMP/codex.log" ] || fail "codex sent no request after the plant"
expect_absent "the planted override did not reach the model" "PLANTED-OVERRIDE" "$(cat "$E2E_TMP/codex.log")"
[ ! -e notify-ran ] || fail "the planted notify command ran"
pass "nor did the planted notify command run"
expect_contains "the run said what it moved aside" "~/.codex/AGENTS.override.md" "$(cat "$E2E_TMP/err")"

# Carry, don't scrub: a setting under an innocent name holding a random value (no scan of
# values would catch it) stays on the host, said in the run's one line, never by value;
# bridge-carry carries it. The model, the provider and the level still arrive, and reach the
# model's request.
random=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
{ echo "colorScheme2 = \"$random\""; cat "$CODEX_HOME/config.toml"; } > "$E2E_TMP/config.toml" &&
  mv "$E2E_TMP/config.toml" "$CODEX_HOME/config.toml"
: > "$E2E_TMP/codex.log"
out=$("$AISB" run "${args[@]}" --thinking host -- codex exec --skip-git-repo-check "make the file" 2>"$E2E_TMP/err" </dev/null) ||
  { cat "$E2E_TMP/err" >&2; fail "codex exec with the host's level failed: $out"; }
inside=$("$AISB" run --harness codex --net none -- cat /home/sandbox/.codex/config.toml </dev/null)
expect_absent "a host setting on no carry-list stays on the host" "$random" "$inside"
expect_contains "the run says how many stayed, and how to carry one" \
  "2 keys of $CODEX_HOME/config.toml stay on the host (on no carry-list: aisb inspect names them; carry one with bridge-carry = codex:KEY)" \
  "$(cat "$E2E_TMP/err")"
expect_absent "never its value" "$random" "$(cat "$E2E_TMP/err")"
expect_contains "the model arrives" 'model = "stub-model"' "$inside"
expect_contains "the provider arrives" 'model_provider = "stub"' "$inside"
expect_contains "with its URL" "base_url = \"https://api.stub.test:$port/v1\"" "$inside"
expect_contains "the level arrives (--thinking host: the host's)" 'model_reasoning_effort = "low"' "$inside"
expect_eq "and the model was asked with them, at the stub provider" "stub-model" \
  "$(python3 -c 'import json,sys; print(*sorted({json.loads(l)["body"].get("model") for l in open(sys.argv[1]) if json.loads(l)["path"].endswith("/responses")}))' "$E2E_TMP/codex.log")"
expect_eq "at the host's level" low "$(effort "$E2E_TMP/codex.log")"
expect_contains "inspect names what stays" \
  "bridge-held=config.toml: 2 (colorScheme2, shell_environment_policy.set; on no carry-list: bridge-carry = codex:KEY carries one)" \
  "$("$AISB" inspect "${args[@]}" -- codex exec x 2>&1)"
"$AISB" run "${args[@]}" --bridge-carry codex:colorScheme2 -- codex --version >/dev/null 2>"$E2E_TMP/err" </dev/null ||
  { cat "$E2E_TMP/err" >&2; fail "codex --version with bridge-carry failed"; }
expect_contains "bridge-carry carries it" "colorScheme2 = \"$random\"" \
  "$("$AISB" run --harness codex --net none -- cat /home/sandbox/.codex/config.toml </dev/null)"
expect_contains "and only the variables' table then stays on the host" "1 key of $CODEX_HOME/config.toml stays on the host" \
  "$(cat "$E2E_TMP/err")"
sed -i '/^colorScheme2 = /d' "$CODEX_HOME/config.toml"

set +e
err=$("$AISB" run "${args[@]}" --thinking max -- codex exec --skip-git-repo-check "make the file" 2>&1 </dev/null); rc=$?
set -e
expect_eq "a level codex lacks is refused before the run" 2 "$rc"
expect_contains "with codex's list" "thinking: codex has no level 'max' (use one of: none, minimal, low, medium, high, xhigh, host)" "$err"

# What inspect says: the provider bridged, the policy, the key held; names, never a value.
desc=$("$AISB" inspect "${args[@]}" -- codex exec x 2>&1)
expect_contains "inspect names the bridge" "bridge=codex from $CODEX_HOME" "$desc"
expect_contains "and what policy sets" "bridge-policy=sandbox_mode danger-full-access" "$desc"
expect_absent "and no value of the key" "$STUB_OPENAI_KEY" "$desc"
