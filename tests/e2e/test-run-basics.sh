#!/usr/bin/env bash
# Output, exit code and stdin come back through the attach stream.
. "$(dirname "$0")/lib.sh"

set +e
out=$("$AISB" run -- sh -c 'echo to-stdout; echo to-stderr >&2; exit 7' 2>"$E2E_TMP/err")
rc=$?
set -e
expect_eq "exit code passes through" 7 "$rc"
expect_eq "stdout comes back" "to-stdout" "$out"
expect_contains "stderr comes back" "to-stderr" "$(cat "$E2E_TMP/err")"
expect_absent "stderr stays off stdout" "to-stderr" "$out"

out=$(printf 'line one\nline two\n' | "$AISB" run -- cat)
expect_eq "stdin reaches the command" "line one
line two" "$out"

# Big in both directions at once: nothing lost, nothing deadlocked.
head -c 8388608 /dev/urandom > "$E2E_TMP/blob"
want=$(sha256sum < "$E2E_TMP/blob" | cut -d' ' -f1)
got=$("$AISB" run -- cat < "$E2E_TMP/blob" | sha256sum | cut -d' ' -f1)
expect_eq "8 MiB through stdin and back is intact" "$want" "$got"

out=$("$AISB" run -- sh -c 'cat; echo after-eof' < /dev/null)
expect_eq "stdin at EOF when ours is /dev/null" "after-eof" "$out"

set +e
err=$("$AISB" run -- /no/such/command 2>&1)
rc=$?
set -e
expect_eq "a missing command exits 127" 127 "$rc"
expect_contains "and the entrypoint says so" "/no/such/command: command not found" "$err"

leftover=$(our_containers)
expect_eq "no container is left after the runs" "" "$leftover"
