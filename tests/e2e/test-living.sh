#!/usr/bin/env bash
# doctor, inspect and alias on this host.
. "$(dirname "$0")/lib.sh"

set +e
out=$("$AISB" doctor); rc=$?
set -e
expect_eq "doctor finds nothing that blocks a run here" 0 "$rc"
expect_contains "it names the podman service" "podman $(podman version --format '{{.Server.Version}}' 2>/dev/null || podman --version | awk '{print $3}')" "$out"
if [ ! -f /sys/fs/cgroup/cgroup.controllers ]; then
  expect_contains "it warns that caps are ignored on cgroup v1" "caps are accepted and not enforced" "$out"
  expect_contains "with the fix" "systemd.unified_cgroup_hierarchy=1" "$out"
fi
json=$("$AISB" doctor --json)
printf '%s\n' "$json" | python3 -c 'import json,sys; [json.loads(l) for l in sys.stdin]' || fail "doctor --json is not JSON lines"
pass "doctor --json is one JSON object a line"

# A project with uncommitted changes is reported, with the fix.
git init -q . && echo change > uncommitted.txt
expect_contains "uncommitted changes are reported" "uncommitted changes" "$("$AISB" doctor)"

out=$("$AISB" doctor --deep --json)
expect_contains "--deep: the ruleset is installed in a real sandbox" '"check":"nftables","status":"ok"' "$out"
expect_contains "--deep: allowlisted passes, listed-out is refused" '"check":"egress","status":"ok"' "$out"

secret=inspect-secret-$RANDOM
out=$(AISB_E2E_SECRET=$secret "$AISB" inspect --net allow --allow example.org --env AISB_E2E_SECRET)
expect_contains "inspect lists env names" "env=AISB_E2E_SECRET" "$out"
expect_absent "never values" "$secret" "$out"
expect_contains "inspect shows each allowlist entry's origin" "allow=example.org # --allow" "$out"
expect_contains "and what would be bridged" "bridge=pi from" "$out"
expect_contains "auth.json never" "bridge-auth=never copied" "$out"

expect_eq "alias prints the line" "alias pi='aisb run'" "$("$AISB" alias)"
HOME=$E2E_TMP "$AISB" alias --shell bash --install >/dev/null
HOME=$E2E_TMP "$AISB" alias --shell bash --install >/dev/null
expect_eq "alias --install adds it once" 1 "$(grep -c "alias pi='aisb run'" "$E2E_TMP/.bashrc")"
