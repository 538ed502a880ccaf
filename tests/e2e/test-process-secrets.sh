#!/usr/bin/env bash
# Secrets in the aisb process itself, seen from another process of the same user (anything
# the agent's output makes the user run, or any program of theirs): a value given on the
# command line is in every local user's ps, so aisb says so (without the value); a value
# exported for --env NAME is in aisb's environment and memory, so aisb is not dumpable: its
# /proc/PID/environ is closed to the user's other processes and it writes no core file.
. "$(dirname "$0")/lib.sh"

secret=value-$RANDOM-$RANDOM-secret
err=$("$AISB" run --env "AISB_E2E_LIT=$secret" --env "AISB_E2E_LIT2=$secret" -- true 2>&1 >/dev/null)
expect_contains "--env NAME=VALUE warns, steering to --env NAME or --env-file" \
  "warning: --env AISB_E2E_LIT=... shows the value to every local user (ps): export AISB_E2E_LIT and pass --env AISB_E2E_LIT, or use --env-file" "$err"
expect_absent "the warning does not show the value" "$secret" "$err"
expect_eq "one warning line for the run" 1 "$(printf '%s\n' "$err" | grep -c 'warning: --env')"

export AISB_E2E_TOKEN=$secret
printf 'AISB_E2E_FILE=%s\n' "$secret" > "$E2E_TMP/env" && chmod 600 "$E2E_TMP/env"
err=$("$AISB" run --env AISB_E2E_TOKEN --env-file "$E2E_TMP/env" -- true 2>&1 >/dev/null)
expect_absent "no warning for --env NAME and --env-file" "warning: --env" "$err"

# A run that waits, holding the exported value.
"$AISB" run --env AISB_E2E_TOKEN -- sleep 60 </dev/null >/dev/null 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; cleanup' EXIT
for _ in $(seq 150); do
  [ -n "$(podman ps --filter "label=aisb.pid=$pid" -q)" ] && break
  sleep 0.1
done
[ -n "$(podman ps --filter "label=aisb.pid=$pid" -q)" ] || fail "the sandbox of $pid never started"
# Control: an ordinary process of the user holding the same variable is readable.
sleep 60 &
ordinary=$!
for _ in $(seq 50); do [ "$(cat "/proc/$ordinary/comm")" = sleep ] && break; sleep 0.05; done
expect_contains "control: another process's environ is readable" "AISB_E2E_TOKEN=$secret" \
  "$(tr '\0' '\n' < "/proc/$ordinary/environ")"
kill "$ordinary"
set +e
environ=$(cat "/proc/$pid/environ" 2>&1)
rc=$?
set -e
expect_absent "another process of the user cannot read aisb's environment" "$secret" "$environ"
expect_contains "it is refused" "Permission denied" "$environ"
[ "$rc" -ne 0 ] || fail "cat /proc/$pid/environ succeeded"
core=$(awk '/^Max core file size/ {print $5}' "/proc/$pid/limits")
expect_eq "aisb's core file size limit is 0" 0 "$core"
kill -TERM "$pid"
set +e
wait "$pid"
rc=$?
set -e
expect_eq "SIGTERM still ends the run" 143 "$rc"
expect_eq "and leaves no container" "" "$(podman ps -a --filter "label=aisb.pid=$pid" -q)"
