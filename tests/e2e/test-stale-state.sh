#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Processes killed behind podman's back (a logout, a session's end, the OOM killer) leave
# rootless podman's database naming running containers that have no process, and then
# every podman command, "podman system service" included, refuses to start. Reproduced
# here for real with a user of its own (so the suite's own podman is untouched): aisb must
# say in one line what podman said and how to fix it, and scripts/setup must fix it.
set -euo pipefail
: "${AISB_SRC:?AISB_SRC must point at the source tree}"
: "${AISB_BUILD:?AISB_BUILD must point at the build tree}"

. "$(dirname "$0")/assert.sh"

[ "$(id -u)" -eq 0 ] || cannot_run "needs root, to make a user of its own and kill its processes"
command -v podman >/dev/null || cannot_run "podman is not installed (run scripts/setup)"
command -v cc >/dev/null || cannot_run "no C compiler (run scripts/setup)"

user=aisbstale
"$AISB_SRC/scripts/host-fixes" "$user" >/dev/null
as_stale() { AISB_USER=$user "$AISB_SRC/scripts/as-user" "$@"; }
runuser -u "$user" -- test -x "$AISB_BUILD/cli/aisb" ||
  cannot_run "$user cannot run $AISB_BUILD/cli/aisb (the build tree must be world-readable)"

work=$(mktemp -d /var/tmp/aisb-e2e-stale.XXXXXX)
cleanup() {
  pkill -9 -u "$user" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
pkill -9 -u "$user" 2>/dev/null || true

# A container needs no image here: a static program that waits, as its whole root.
mkdir -p "$work/rootfs"
printf '#include <unistd.h>\nint main(void) { for (;;) pause(); }\n' |
  cc -static -O2 -x c -o "$work/rootfs/wait" - || cannot_run "cannot link a static program (libc6-dev)"
chmod a+rx "$work" && chown -R "$user:" "$work/rootfs"
as_stale podman run -d --replace --name stale --net none --rootfs "$work/rootfs" /wait >/dev/null ||
  fail "podman run as $user"
state=$(as_stale podman inspect stale --format '{{.State.Status}}' 2>/dev/null)
[ "$state" = running ] || fail "the container is $state, not running"

# Everything of the user's dies at once, podman's pause process and conmon included.
pkill -9 -u "$user"
for _ in $(seq 50); do pgrep -u "$user" >/dev/null || break; sleep 0.1; done
pgrep -u "$user" >/dev/null && fail "$user still has processes"
if as_stale podman info >/dev/null 2>&1; then
  # Then the refusal this test is about cannot be made here: say so, never pass.
  cannot_run "podman $(podman --version | awk '{print $3}') recovered by itself from its killed processes," \
    "so the stale state whose report this test checks could not be produced"
fi

status=0
out=$(as_stale "$AISB_BUILD/cli/aisb" ps 2>&1) || status=$?
[ "$status" -eq 125 ] || fail "aisb ps on a broken podman: exit $status, expected 125: $out"
pass "aisb ps fails with 125"
expect_contains "podman's own reason is named" "invalid internal status" "$out"
expect_contains "the fix is named" 'podman system migrate' "$out"
[ "$(printf '%s\n' "$out" | grep -vc 'starting a transient podman service')" -eq 1 ] ||
  fail "more than one line of error: $out"
pass "one line"

status=0
out=$(as_stale "$AISB_BUILD/cli/aisb" doctor 2>&1) || status=$?
[ "$status" -ne 0 ] || fail "aisb doctor passed a podman that cannot start: $out"
expect_contains "doctor names the fix" 'run "podman system migrate"' "$out"

out=$("$AISB_SRC/scripts/host-fixes" "$user")
expect_contains "setup repairs it" "running podman system migrate" "$out"
out=$(as_stale "$AISB_BUILD/cli/aisb" ps 2>&1) || fail "aisb ps after setup: $out"
pass "aisb works again after setup"
