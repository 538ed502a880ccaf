# SPDX-License-Identifier: MIT
# What every e2e test says with: sourced by lib.sh, and by the phase a test runs as root
# before lib.sh (another local user made, a user of its own). A test that cannot run here
# exits 77 (skip) with the reason, except under CI=true, where it fails: an e2e test that did
# not run proves nothing.
cannot_run() {
  echo "e2e: cannot run: $*" >&2
  if [ "${CI:-}" = true ]; then exit 1; fi
  exit 77
}

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

# expect_eq WHAT EXPECTED ACTUAL
expect_eq() { [ "$2" = "$3" ] || fail "$1: expected '$2', got '$3'"; pass "$1"; }
expect_contains() { case "$3" in *"$2"*) pass "$1" ;; *) fail "$1: '$2' not in: $3" ;; esac; }
expect_absent() { case "$3" in *"$2"*) fail "$1: '$2' found in: $3" ;; *) pass "$1" ;; esac; }
