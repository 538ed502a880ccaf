#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The one escape hatch, --unsafe-create-patch, and the first-class --device: the patch
# applies (a label in podman's inspect, a hostname inside), every changed field is named on
# every run with what it gives up, the session log keeps the names and never the values, a
# patch in the project is refused; a device node works end to end.
. "$(dirname "$0")/lib.sh"

"$AISB" build --quiet >/dev/null
patch=$XDG_CONFIG_HOME/ai-sandbox/patch-$$.json
# cap_add is replaced whole (a merge patch replaces arrays): the entrypoint's four must stay.
printf '{"labels":{"team":"e2e-%s"},"hostname":"patched","cap_add":["CAP_NET_ADMIN","CAP_SETUID","CAP_SETGID","CAP_SETPCAP","CAP_NET_RAW"],"annotations":{"note":"s3cr3t-%s"}}\n' $$ $$ > "$patch"
chmod 600 "$patch"
"$AISB" run --unsafe-create-patch "$patch" -- sh -c 'hostname; sleep 4' > "$E2E_TMP/out" 2> "$E2E_TMP/err" &
run=$!
for _ in $(seq 80); do
  name=$(podman ps --filter "label=team=e2e-$$" --format '{{.Names}}')
  [ -n "$name" ] && break
  sleep 0.1
done
expect_contains "the patch's label is in podman's inspect" "e2e-$$" \
  "$(podman inspect "$name" --format '{{index .Config.Labels "team"}}' 2>/dev/null)"
wait "$run"
expect_eq "and its hostname inside" patched "$(cat "$E2E_TMP/out")"
err=$(cat "$E2E_TMP/err")
expect_contains "every changed field is named" "--unsafe-create-patch changes labels.team, hostname, cap_add, annotations.note" "$err"
expect_contains "with the rows a capability gives up" "gives up T3: no capabilities" "$err"
expect_absent "never the values" "s3cr3t-$$" "$err"
expect_contains "the session log names the fields" '"create_patch":["labels.team","hostname","cap_add","annotations.note"]' \
  "$(tail -1 "$HOME/.local/state/ai-sandbox/sessions.log")"
expect_absent "without the values" "s3cr3t-$$" "$(tail -1 "$HOME/.local/state/ai-sandbox/sessions.log")"
out=$("$AISB" run --unsafe-create-patch "$patch" --dry-run -- true 2>/dev/null)
expect_contains "a dry run shows the patched request" '"hostname": "patched"' "$out"

# A patch that takes what the entrypoint needs fails closed: nothing runs.
printf '{"cap_add":["CAP_NET_RAW"]}\n' > "$patch"
set +e
err=$("$AISB" run --unsafe-create-patch "$patch" -- echo ran 2>&1); rc=$?
set -e
expect_eq "a patch that drops the entrypoint's capabilities runs nothing" 77 "$rc"
expect_absent "the command did not run" ran "$(printf '%s\n' "$err" | grep -v '^aisb')"

# A patch the sandbox could have written is refused.
cp "$patch" "$E2E_TMP/project/patch.json"
set +e
err=$("$AISB" run --unsafe-create-patch "$E2E_TMP/project/patch.json" -- true 2>&1); rc=$?
set -e
expect_eq "a patch inside the project is refused" 2 "$rc"
expect_contains "saying why" "is inside the project, which the sandbox can write" "$err"
chmod 666 "$patch"
set +e
err=$(cd / && "$AISB" run --no-cwd --unsafe-create-patch "$patch" -- true 2>&1); rc=$?
set -e
expect_eq "a patch others can write is refused" 2 "$rc"
chmod 600 "$patch"

# podman reads field names without regard to case: "Entrypoint" would replace the
# entrypoint (the ruleset, the drop, seccomp) while the warning named a field aisb does not
# know. Such a patch is refused; nothing runs (red team round three).
printf '{"Entrypoint":["/bin/sh","-c","echo escaped; id -u","sh"]}\n' > "$patch"
set +e
err=$("$AISB" run --unsafe-create-patch "$patch" -- echo ran 2>&1); rc=$?
set -e
expect_eq "a field in another case is refused" 2 "$rc"
expect_contains "saying why" "field 'Entrypoint': podman reads field names without regard to case" "$err"
expect_absent "the patched entrypoint never ran" escaped "$err"
printf '{"\u017Feccomp_policy":"","\u212Aeep":1}\n' > "$patch"
set +e
err=$("$AISB" run --unsafe-create-patch "$patch" -- true 2>&1); rc=$?
set -e
expect_eq "and in Go's folded letters" 2 "$rc"

# A patch where the sandbox can write is refused when the run starts, however the policy was
# put together: here, under a read-write --mount (the sandbox could rewrite it for the next run).
mkdir -p "$E2E_TMP/shared"
printf '{"hostname":"patched"}\n' > "$E2E_TMP/shared/p.json"
chmod 600 "$E2E_TMP/shared/p.json"
set +e
err=$("$AISB" run --unsafe-create-patch "$E2E_TMP/shared/p.json" --mount "$E2E_TMP/shared:/shared" -- true 2>&1); rc=$?
set -e
expect_eq "a patch under a read-write mount is refused" 2 "$rc"
expect_contains "naming the place" "is inside $E2E_TMP/shared, which the sandbox can write" "$err"
out=$("$AISB" run --unsafe-create-patch "$E2E_TMP/shared/p.json" --mount "$E2E_TMP/shared:/shared:ro" -- hostname 2>/dev/null)
expect_eq "read-only, it applies" patched "$out"
rm -f "$patch"

# --device: a host device node, under another name, works end to end.
out=$("$AISB" run --device /dev/null:/dev/aisb-null -- sh -c 'echo data > /dev/aisb-null && test -c /dev/aisb-null && echo ok')
expect_eq "--device /dev/null:/dev/aisb-null works inside" ok "$out"
set +e
err=$("$AISB" run --device /etc/passwd -- true 2>&1); rc=$?
set -e
expect_eq "a device outside /dev is refused" 2 "$rc"
expect_contains "naming the form" "is not /dev/NAME[:DEST[:rwm]] or a CDI name" "$err"
# A link the service would resolve in its own process (/dev/stdin: its own stdin), or a
# directory (every device below it): refused (red team round three).
for dev in /dev/stdin /dev/fd/2; do
        set +e
        err=$("$AISB" run --device "$dev" -- true 2>&1); rc=$?
        set -e
        expect_eq "--device $dev is refused" 2 "$rc"
        expect_contains "as a link" "is a symbolic link, not a device node" "$err"
done
set +e
err=$("$AISB" run --device /dev/net -- true 2>&1); rc=$?
set -e
expect_eq "--device /dev/net is refused" 2 "$rc"
expect_contains "as a directory" "is a directory, not a device node" "$err"
