#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# aisb kube --target podman, played for real with "podman kube play": the gate comes up from
# the emitted Deployment (on the internal network at its fixed address and on one that reaches
# out), the sandbox from the emitted Pod (on the internal network only); an allowlisted
# stand-in is reached through the gate, a name not listed is refused, a direct connection has
# no route; inside, no capability, no-new-privileges, seccomp; a harness's quiet variables,
# bridged settings and level arrive; "podman kube down" removes the pods. The same emitter
# writes the cluster's objects (golden files in tests/unit/kube).
. "$(dirname "$0")/lib.sh"

command -v catatonit >/dev/null || [ -x /usr/libexec/podman/catatonit ] ||
  cannot_run "catatonit is not installed: podman plays no pod without it (run scripts/setup)"
# The backend the recipe (docs/kubernetes.md) is for, and the one tested: netavark, podman 5's
# only one, which scripts/setup also gives podman 4 (CNI's allocator refuses the gate's address
# below the range handed out). Another backend is a machine setup did not make: a failure.
backend=$(podman info --format '{{.Host.NetworkBackend}}')
[ "$backend" = netavark ] ||
  fail "podman's network backend is '$backend', not netavark: run scripts/setup (network_backend = \"netavark\" in containers.conf, with netavark and aardvark-dns installed)"
pass "podman's network backend is netavark"

internal=aisb-kube-internal
egress=aisb-kube-egress-$$
stub=aisb-kube-stub-$$
files=()
# The names of a file's objects.
names_of() { python3 -c 'import json,sys; [print(json.loads(d)["metadata"]["name"]) for d in open(sys.argv[1]).read().split("---\n")[1:]]' "$1"; }
# podman kube down, and what it leaves: the volumes it made of the ConfigMap and emptyDirs
# (named after their pods).
kube_down() {
  podman kube down "$1" >/dev/null 2>&1 || true
  for n in $(names_of "$1"); do
    podman volume ls -q | grep -E "^$n(-|\$)" | xargs -r podman volume rm -f >/dev/null 2>&1 || true
  done
}
kube_cleanup() {
  for f in "${files[@]}"; do kube_down "$f"; done
  podman rm -f "$stub" >/dev/null 2>&1 || true
  podman network rm -f "$egress" >/dev/null 2>&1 || true
  cleanup
}
trap kube_cleanup EXIT

tag=$("$AISB" build --quiet)
# The gate's address (.10) below the range the network hands out, so no sandbox can get it.
podman network exists "$internal" ||
  podman network create --internal --subnet 10.89.78.0/24 --ip-range 10.89.78.128/25 "$internal" >/dev/null
podman network create --subnet 10.89.79.0/24 "$egress" >/dev/null
# The stand-in the allowlist names: a server on the outside network only.
podman run -d --name "$stub" --network "$egress:ip=10.89.79.20" --entrypoint python3 "$tag" \
  -m http.server --directory /etc 8080 >/dev/null

policy=(--net allow --allow stub.test:8080 --gate-add-host stub.test:10.89.79.20)
# The gate's image, built as a run would build it.
"$AISB" gate up "${policy[@]}" >/dev/null
"$AISB" gate down "${policy[@]}" >/dev/null
"$AISB" kube --target podman --part gate "${policy[@]}" > "$E2E_TMP/gate.json"
# A protected directory of the project, and one that is not: both writable by anyone, so only
# the pod's read-only mount can keep a write out.
mkdir -p "$E2E_TMP/project/.vscode" "$E2E_TMP/project/open"
chmod 0777 "$E2E_TMP/project/.vscode" "$E2E_TMP/project/open"
"$AISB" kube --target podman --part sandbox "${policy[@]}" -- sh -c '
  echo x > /project/.vscode/probe 2>/dev/null; echo "vscode=$?"
  echo x > /project/open/probe 2>/dev/null; echo "open=$?"
  for _ in $(seq 40); do
    code=$(curl -s -o /dev/null -w "%{http_code}" http://stub.test:8080/hostname) && [ "$code" = 200 ] && break
    sleep 0.5
  done
  echo "listed=$code"
  echo "denied=$(curl -s -o /dev/null -w "%{http_code}" http://denied.test/)"
  curl -s --noproxy "*" --max-time 5 -o /dev/null http://10.89.79.20:8080/hostname; echo "direct=$?"
  grep -E "^(CapEff|CapBnd|NoNewPrivs|Seccomp):" /proc/self/status; echo "uid=$(id -u)"' > "$E2E_TMP/sandbox.json"
files=("$E2E_TMP/sandbox.json" "$E2E_TMP/gate.json")
expect_contains "the sandbox's pod has no NetworkPolicy or Service here" '"kind": "Pod"' "$(cat "$E2E_TMP/sandbox.json")"
expect_absent "(none emitted for podman)" '"kind": "Service"' "$(cat "$E2E_TMP/gate.json" "$E2E_TMP/sandbox.json")"
expect_contains "the pod checks the project is what aisb chose, as a run does" '"--expect-mount",
          "/project:' "$(cat "$E2E_TMP/sandbox.json")"

# --push: the images the objects name, pushed through the podman service to a registry (a
# stand-in on 127.0.0.1 that checks each blob against its digest), under exactly those names.
python3 "$AISB_SRC/tests/e2e/registry-stub.py" > "$E2E_TMP/registry.port" 2> "$E2E_TMP/registry.log" &
registry=$!
for _ in $(seq 50); do [ -s "$E2E_TMP/registry.port" ] && break; sleep 0.1; done
repo=127.0.0.1:$(cat "$E2E_TMP/registry.port")/team
# For a cluster: its workspace claim is not this project's tree, whose protected paths (the
# .vscode above) a cluster's pod cannot have (aisb kube refuses them, saying so).
set +e
"$AISB" kube "${policy[@]}" > /dev/null 2> "$E2E_TMP/cluster.err"
rc=$?
set -e
expect_eq "for a cluster, the project's protected paths are refused" 2 "$rc"
expect_contains "(naming them and what to do)" "/project/.vscode is protected" "$(cat "$E2E_TMP/cluster.err")"
set +e
"$AISB" kube --image-repo "$repo" --push --protect none "${policy[@]}" > /dev/null 2> "$E2E_TMP/push.err"
rc=$?
set -e
expect_eq "a push to a registry speaking plain HTTP, without --insecure-registry, fails" 125 "$rc"
"$AISB" kube --image-repo "$repo" --push --insecure-registry --protect none "${policy[@]}" > "$E2E_TMP/pushed.json" \
  2> "$E2E_TMP/push.err" || { cat "$E2E_TMP/push.err" >&2; fail "aisb kube --push"; }
kill "$registry" 2>/dev/null || true
named=$(grep -o "\"$repo/aisb[-a-z]*:[0-9a-f]*\"" "$E2E_TMP/pushed.json" | tr -d '"' | sort -u)
pushed=$(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    if not line.startswith("{"):
        continue  # the stub'"'"'s stderr: a traceback of a connection a client dropped, say
    r = json.loads(line)
    print(sys.argv[2] + "/" + r["repository"].split("/", 1)[1] + ":" + r["reference"], "missing=%d" % len(r["missing"]))' \
  "$E2E_TMP/registry.log" "$repo" | sort -u)
expect_eq "the objects name two images in the repository" 2 "$(printf '%s\n' "$named" | grep -c .)"
expect_eq "both were pushed there under those names, every blob with them" \
  "$(printf '%s missing=0\n' $named)" "$pushed"

podman kube play --network "$internal:ip=10.89.78.10" --network "$egress" "$E2E_TMP/gate.json" >/dev/null ||
  fail "podman kube play of the gate"
gate_pod=$(podman pod ps --filter label=aisb.gate --format '{{.Name}}' | grep -- '^aisb-gate-' | sed -n 1p)
[ -n "$gate_pod" ] || fail "no gate pod from the Deployment"
pass "the gate's pod comes up from the emitted Deployment ($gate_pod)"

podman kube play --network "$internal" "$E2E_TMP/sandbox.json" >/dev/null || fail "podman kube play of the sandbox"
pod=$(python3 -c 'import json,sys; t=open(sys.argv[1]).read(); print(json.loads(t.split("---\n")[-1])["metadata"]["name"])' \
  "$E2E_TMP/sandbox.json")
ctr=$pod-sandbox
rc=$(timeout 120 podman wait "$ctr" || echo timeout)
out=$(podman logs "$ctr" 2>&1)
[ "$rc" = 0 ] || { printf '%s\n' "$out" >&2; fail "the sandbox's command ended with $rc"; }
expect_contains "an allowlisted name is reached through the gate" "listed=200" "$out"
expect_contains "a name not listed is refused by the gate" "denied=403" "$out"
expect_contains "a direct connection was tried" "direct=" "$out"
expect_absent "and has no route" "direct=0" "$out"
expect_contains "no capability" "CapEff:	0000000000000000" "$out"
expect_contains "not even in the bounding set" "CapBnd:	0000000000000000" "$out"
expect_contains "no-new-privileges" "NoNewPrivs:	1" "$out"
expect_contains "seccomp in filter mode" "Seccomp:	2" "$out"
expect_contains "as the pod's uid" "uid=1000" "$out"
expect_contains "a directory of the project not protected takes the pod's write (the control)" "open=0" "$out"
expect_absent "a protected one does not: read-only in the pod too" "vscode=0" "$out"
[ ! -e "$E2E_TMP/project/.vscode/probe" ] || fail "the pod wrote into the protected .vscode"

# podman makes a named volume of each emptyDir: the sandbox's must be none of the gate's.
vols() { podman ps -a --filter "pod=$1" --format '{{.Names}}' | xargs -r podman inspect --format '{{range .Mounts}}{{.Name}}{{"\n"}}{{end}}' | grep . | sort -u; }
shared=$(comm -12 <(vols "$pod") <(vols "$gate_pod"))
[ -n "$(vols "$pod")" ] || fail "the sandbox's pod shows no volumes"
expect_eq "the sandbox's pod shares no volume with the gate's" "" "$shared"
kube_down "$E2E_TMP/sandbox.json"

# The pod is the run's plan: a harness's quiet variables, its bridged settings (the host's
# with policy on top, from a ConfigMap the entrypoint's seed copies into the fresh home) and
# the reasoning level reach it; the project's settings are the run's read-only copy. The
# harnesses are stand-ins in the project, named as the harness (the bridge follows the
# command's name), which print what they were given.
mkdir -p "$E2E_TMP/project/bin" "$E2E_TMP/pi-host" "$E2E_TMP/claude-host"
cat > "$E2E_TMP/project/bin/pi" <<'SH'
#!/bin/sh
echo "quiet=$PI_SKIP_VERSION_CHECK/$PI_TELEMETRY/$CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"
echo "settings=$(tr -d ' \n' < "$HOME/.pi/agent/settings.json")"
touch /project/.ai-sandbox/probe 2>/dev/null; echo "project-settings-write=$?"
SH
cat > "$E2E_TMP/project/bin/claude" <<'SH'
#!/bin/sh
echo "effort=$CLAUDE_CODE_EFFORT_LEVEL"
echo "settings=$(tr -d ' \n' < "$HOME/.claude/settings.json")"
SH
chmod 0755 "$E2E_TMP/project/bin" "$E2E_TMP/project/bin/pi" "$E2E_TMP/project/bin/claude"
echo '{"theme": "dark", "defaultThinkingLevel": "low"}' > "$E2E_TMP/pi-host/settings.json"
echo '{"model": "opus", "effortLevel": "low"}' > "$E2E_TMP/claude-host/settings.json"
harness_play() {
  local file=$E2E_TMP/$1.json c
  c=$(names_of "$file" | tail -1)-sandbox
  files=("$file" "$E2E_TMP/gate.json")
  podman kube play --network "$internal" "$file" >/dev/null || fail "podman kube play of $1"
  [ "$(timeout 120 podman wait "$c" || echo timeout)" = 0 ] || { podman logs "$c" >&2; fail "the $1 pod's command"; }
  podman logs "$c" 2>&1
  kube_down "$file"
}
PI_CODING_AGENT_DIR=$E2E_TMP/pi-host "$AISB" kube --target podman --part sandbox --net none --no-agents \
  --thinking high -- /project/bin/pi > "$E2E_TMP/pi.json"
expect_contains "the bridged settings are a ConfigMap" '"settings.json": "{\n  \"theme\"' "$(cat "$E2E_TMP/pi.json")"
out=$(harness_play pi)
expect_contains "pi's quiet variables reach the pod" "quiet=1/0/1" "$out"
expect_contains "the host's settings are in the fresh home, the level as policy over the host's" \
  'settings={"theme":"dark","defaultThinkingLevel":"high"}' "$out"
expect_contains "the project's settings are the run's read-only copy" "project-settings-write=1" "$out"
[ ! -e "$E2E_TMP/project/.ai-sandbox/probe" ] || fail "the pod wrote the project's .ai-sandbox"
CLAUDE_CONFIG_DIR=$E2E_TMP/claude-host "$AISB" kube --target podman --part sandbox --net none --no-agents \
  --thinking high -- /project/bin/claude > "$E2E_TMP/claude.json"
out=$(harness_play claude)
expect_contains "claude's level reaches it in its environment" "effort=high" "$out"
expect_contains "and in its bridged settings, over the host's" '"model":"opus"' "$out"
expect_contains "(the level there)" '"CLAUDE_CODE_EFFORT_LEVEL":"high"' "$out"
expect_absent "(the host's own level is not kept)" '"effortLevel":"low"' "$out"

# --netfilter init: the sandbox played on the outside network too, where only the ruleset its
# init container installs stands between it and the stand-in. First without it (control: the
# direct connection succeeds), then with it (refused), the gate still reached.
probe='code=$(curl -s -o /dev/null -w "%{http_code}" http://stub.test:8080/hostname); echo "listed=$code"
  curl -s --noproxy "*" --max-time 5 -o /dev/null http://10.89.79.20:8080/hostname; echo "direct=$?"'
play_both() {
  local c
  c=$(names_of "$1" | tail -1)-sandbox
  podman kube play --network "$internal" --network "$egress" "$1" >/dev/null || fail "podman kube play of $1"
  [ "$(timeout 120 podman wait "$c" || echo timeout)" = 0 ] || { podman logs "$c" >&2; fail "the sandbox of $1"; }
  podman logs "$c" 2>&1
  kube_down "$1"
}
"$AISB" kube --target podman --part sandbox "${policy[@]}" -- sh -c "$probe" > "$E2E_TMP/open.json"
files=("$E2E_TMP/open.json" "$E2E_TMP/gate.json")
out=$(play_both "$E2E_TMP/open.json")
expect_contains "control: on the outside network, without the ruleset, the stand-in is reached directly" "direct=0" "$out"
"$AISB" kube --target podman --part sandbox --netfilter init "${policy[@]}" -- sh -c "$probe" > "$E2E_TMP/nf.json"
expect_contains "the init container installs the ruleset with NET_ADMIN alone" '"NET_ADMIN"' "$(cat "$E2E_TMP/nf.json")"
files=("$E2E_TMP/nf.json" "$E2E_TMP/gate.json")
out=$(play_both "$E2E_TMP/nf.json")
expect_contains "with --netfilter init the gate is still reached" "listed=200" "$out"
expect_contains "(a direct connection was tried)" "direct=" "$out"
expect_absent "and the direct connection is refused by the ruleset" "direct=0" "$out"

kube_down "$E2E_TMP/gate.json"
files=()
expect_eq "podman kube down removes the pods" "" \
  "$(podman pod ps -a --format '{{.Name}}' | grep -E -- "^($pod|$gate_pod)\$" || true)"
expect_eq "and their containers" "" \
  "$(podman ps -a --format '{{.Names}}' | grep -E -- "^($pod|$gate_pod)" || true)"
