#!/usr/bin/env bash
# No environment variable passes in unless named; values never show in argv or a dry run.
. "$(dirname "$0")/lib.sh"

secret=value-$RANDOM-$RANDOM-secret
export AISB_E2E_TOKEN=$secret
export AISB_E2E_AMBIENT=ambient-should-not-pass

out=$("$AISB" run --env AISB_E2E_TOKEN -- sh -c 'echo "$AISB_E2E_TOKEN"')
expect_eq "--env NAME passes the value" "$secret" "$out"
out=$("$AISB" run --env LITERAL=abc -- sh -c 'echo "$LITERAL"')
expect_eq "--env NAME=VALUE passes the value" "abc" "$out"
out=$("$AISB" run -- env)
expect_absent "an unnamed variable does not pass" "AISB_E2E_AMBIENT" "$out"
expect_absent "nor does PATH's host value" "$AISB_SRC" "$out"

# While a run holds the secret, no process on the host shows it in its argv.
"$AISB" run --env AISB_E2E_TOKEN -- sh -c 'sleep 3' &
pid=$!
sleep 1.5
procs=$(ps -eo args)
wait "$pid"
expect_absent "the value is not in any host process's argv" "$secret" "$procs"

dry=$("$AISB" run --dry-run --env AISB_E2E_TOKEN -- true)
expect_absent "the dry run does not show the value" "$secret" "$dry"
expect_contains "the dry run shows the name redacted" '"AISB_E2E_TOKEN": "<redacted>"' "$dry"
expect_contains "the dry run shows the create request" "POST /v4.0.0/libpod/containers/create" "$dry"

# An env file: only yours and 0600.
printf 'FROM_FILE=filevalue\n' > "$E2E_TMP/env"
chmod 644 "$E2E_TMP/env"
set +e
err=$("$AISB" run --env-file "$E2E_TMP/env" -- true 2>&1)
rc=$?
set -e
expect_eq "a world-readable env file is refused" 2 "$rc"
expect_contains "with the fix" "chmod 600" "$err"
chmod 600 "$E2E_TMP/env"
out=$("$AISB" run --env-file "$E2E_TMP/env" -- sh -c 'echo "$FROM_FILE"')
expect_eq "an env file's values pass" "filevalue" "$out"
# What the agent leaves at the name a later run is given (.env in the project): a link to
# another 0600 file of the user's, a FIFO.
proj=$E2E_TMP/env-project
mkdir -p "$proj"
printf 'ELSEWHERE=%s\n' "$secret" > "$E2E_TMP/other-env"
chmod 600 "$E2E_TMP/other-env"
(cd "$proj" && "$AISB" run --net none -- sh -c "ln -s '$E2E_TMP/other-env' /project/.env && mkfifo -m 600 /project/fifo-env")
[ -L "$proj/.env" ] && [ -p "$proj/fifo-env" ] || fail "the agent's link and FIFO are not in the project"
set +e
err=$(cd "$proj" && "$AISB" run --env-file .env -- sh -c 'echo "$ELSEWHERE"' 2>&1)
rc=$?
err_fifo=$(cd "$proj" && timeout 30 "$AISB" run --env-file fifo-env -- true 2>&1)
rc_fifo=$?
set -e
expect_eq "an env file the agent made a link is refused" 2 "$rc"
expect_contains "saying so" "is a symbolic link" "$err"
expect_absent "and the file it names reached nothing" "$secret" "$err"
expect_eq "an env file the agent made a FIFO is refused, not waited on" 2 "$rc_fifo"
expect_contains "saying so" "not a regular file" "$err_fifo"

# Naming an unset variable fails before anything starts.
unset AISB_E2E_UNSET || true
before=$(podman ps -a -q | wc -l)
set +e
err=$("$AISB" run --env AISB_E2E_UNSET -- true 2>&1)
rc=$?
set -e
expect_eq "an unset --env fails the run" 2 "$rc"
expect_contains "saying which" "AISB_E2E_UNSET is not set" "$err"
expect_eq "and nothing was created" "$before" "$(podman ps -a -q | wc -l)"
