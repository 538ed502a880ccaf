#!/usr/bin/env bash
# A full disk during an image build: one clear error, a non-zero exit, and no image tagged
# with a half-built tag. The store is a small tmpfs, served by a podman service of its own.
. "$(dirname "$0")/lib.sh"

# A 400 MiB filesystem in podman's own user and mount namespace (podman unshare), where the
# user may mount a tmpfs and where the podman service for it will look.
small=$HOME/.cache/aisb-e2e-small-disk
mkdir -p "$small"
podman unshare sh -c "mountpoint -q '$small' || mount -t tmpfs -o size=400m tmpfs '$small'" ||
  cannot_run "cannot mount a small tmpfs in podman's namespace"

root=$small/storage
sock=$XDG_RUNTIME_DIR/aisb-e2e-small.sock
# A socket left by a run that was cut short exists but answers nobody: wait for this
# service's own, answering.
rm -f "$sock"
podman --root "$root" --runroot "$XDG_RUNTIME_DIR/aisb-e2e-small" --storage-driver overlay \
  system service --time=0 "unix://$sock" >/dev/null 2>&1 &
service=$!
trap 'kill $service 2>/dev/null; wait $service 2>/dev/null || true; podman unshare umount "$small" 2>/dev/null || true; cleanup' EXIT
for _ in $(seq 100); do
  curl -sf --unix-socket "$sock" http://d/_ping >/dev/null 2>&1 && break
  sleep 0.1
done
curl -sf --unix-socket "$sock" http://d/_ping >/dev/null 2>&1 || cannot_run "the small store's podman service does not answer"

set +e
"$AISB" build --socket "$sock" >"$E2E_TMP/out" 2>"$E2E_TMP/err"
rc=$?
set -e
expect_eq "a build that runs out of disk fails with aisb's own status" 125 "$rc"
last=$(grep '^aisb: ' "$E2E_TMP/err" | grep -v warning | tail -1)
expect_contains "with a clear error" "no space left on device" "$(printf '%s' "$last" | tr 'A-Z' 'a-z')"
tag=$("$AISB" run --print-policy | sed -n 's/^image=//p')
if podman --root "$root" --runroot "$XDG_RUNTIME_DIR/aisb-e2e-small" image exists "$tag" 2>/dev/null; then
  fail "the half-built image $tag is tagged"
fi
pass "no image is tagged $tag"
