#!/usr/bin/env bash
# Only the current directory is mounted; files land owned by the invoking user.
. "$(dirname "$0")/lib.sh"

"$AISB" run -- sh -c 'echo hi > /project/made-inside; mkdir -p /project/d/e; touch /project/d/e/f'
[ -f made-inside ] || fail "file written in /project is not on the host"
expect_eq "a file written in /project is owned by the user" "$(id -u)" "$(stat -c %u made-inside)"
expect_eq "a nested file too" "$(id -u)" "$(stat -c %u d/e/f)"

# A sentinel outside the project, in the user's home: the sandbox must not find it anywhere.
sentinel=aisb-sentinel-$$-$RANDOM
touch "$HOME/$sentinel" "$E2E_TMP/$sentinel"
out=$("$AISB" run -- sh -c "find / -xdev -name '$sentinel' 2>/dev/null; find /project /home /tmp /mnt /srv /opt /root -name '$sentinel' 2>/dev/null; echo done")
rm -f "$HOME/$sentinel"
expect_eq "host paths outside the project are absent" "done" "$out"
out=$("$AISB" run -- sh -c "test -e '$HOME' && echo present || echo absent")
expect_eq "the host home path does not exist inside" "absent" "$out"
out=$("$AISB" run -- sh -c "test -e '$AISB_SRC' && echo present || echo absent")
expect_eq "the source tree path does not exist inside" "absent" "$out"

set +e
err=$("$AISB" run -- sh -c 'touch /usr/evil || exit 42' 2>&1)
rc=$?
set -e
expect_eq "the root filesystem is read-only" 42 "$rc"
expect_contains "the kernel says why" "Read-only file system" "$err"

# Shared memory works under the read-only root (podman 5 makes /dev/shm read-only with it
# unless told otherwise).
out=$("$AISB" run -- sh -c 'echo x > /dev/shm/probe && cat /dev/shm/probe && python3 -c "
from multiprocessing import shared_memory as s; m = s.SharedMemory(create=True, size=64); m.close(); m.unlink(); print(\"shm ok\")"')
expect_eq "/dev/shm is writable and POSIX shared memory works" "x
shm ok" "$out"

# The home volume persists across runs; --ephemeral-home does not touch it.
"$AISB" run -- sh -c 'echo kept > ~/note'
expect_eq "home persists across runs" "kept" "$("$AISB" run -- cat /home/sandbox/note)"
out=$("$AISB" run --ephemeral-home -- sh -c 'test -e ~/note && echo seen || echo fresh; echo x > ~/eph')
expect_eq "--ephemeral-home starts empty" "fresh" "$out"
out=$("$AISB" run -- sh -c 'test -e ~/eph && echo leaked || echo clean')
expect_eq "--ephemeral-home leaves nothing behind" "clean" "$out"

# An ephemeral home with the pi bridge: the bridged files are there, what the sandbox writes
# into ~/.pi/agent is capped by the home's size and lands nowhere on the host, and nothing of
# the run is left in the runtime directory. (The bridge applies to a command named pi.)
mkdir -p "$E2E_TMP/project/bin"
cat > "$E2E_TMP/project/bin/pi" <<'SH'
#!/bin/sh
grep -o '"defaultThinkingLevel": *"[a-z]*"' ~/.pi/agent/settings.json | tr -d ' '
dd if=/dev/zero of="$HOME/.pi/agent/big" bs=1M count=200 2>&1 | grep -m1 -o 'No space left on device'
touch ~/.pi/agent/sessions-written && echo writable
SH
chmod +x "$E2E_TMP/project/bin/pi"
before=$(ls "$XDG_RUNTIME_DIR")
out=$(PI_CODING_AGENT_DIR=$E2E_TMP/no-pi-config "$AISB" run --ephemeral-home --tmp-size 64m -- /project/bin/pi)
expect_contains "the bridged settings are in the ephemeral home" '"defaultThinkingLevel":"xhigh"' "$out"
expect_contains "writing into ~/.pi/agent is capped by the home's size" "No space left on device" "$out"
expect_contains "and pi can write there" "writable" "$out"
expect_eq "nothing of the run is left in the runtime directory" "$before" "$(ls "$XDG_RUNTIME_DIR")"

# --mount: opt-in, read-only honoured, missing source refused before anything starts.
mkdir -p "$E2E_TMP/data" && echo payload > "$E2E_TMP/data/file"
out=$("$AISB" run --mount "$E2E_TMP/data:/data:ro" -- sh -c 'cat /data/file; touch /data/x 2>/dev/null && echo writable || echo readonly')
expect_eq "--mount :ro is visible and read-only" "payload
readonly" "$out"
set +e
err=$("$AISB" run --mount "$E2E_TMP/missing:/data" -- true 2>&1)
rc=$?
set -e
expect_eq "a missing mount source is a usage error" 2 "$rc"
expect_contains "and says which" "missing" "$err"

out=$("$AISB" run --no-cwd -- sh -c 'pwd; test -e /project/made-inside && echo mounted || echo scratch')
expect_eq "--no-cwd is a scratch sandbox" "/home/sandbox
scratch" "$out"
