#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/e2e/lane-lock.sh shared|alone TEST.sh: run one e2e test under the lock that the e2e
# tests of every lane take when scripts/test runs lanes side by side (AISB_E2E_LOCK, a file
# all lanes see): "shared" beside the others, "alone" with no other e2e test running. With
# no AISB_E2E_LOCK set (a plain meson test) the test just runs.
#
# A turnstile comes first: once an alone test waits for the lock, no new test passes it, so
# the tests running finish and it gets its turn. flock -o closes the lock's descriptor in
# the test: what the test leaves running (a podman service) must not hold the lock.
set -euo pipefail
mode=$1 test=$2
shift 2
lock=${AISB_E2E_LOCK:-}
[ -n "$lock" ] || exec bash "$test" "$@"
if [ "$mode" = alone ]; then
  exec flock -o -x "$lock.turn" flock -o -x "$lock" bash "$test" "$@"
fi
flock -x "$lock.turn" true
exec flock -o -s "$lock" bash "$test" "$@"
