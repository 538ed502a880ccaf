#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Hostile files in the agents directory (a skill cloned from anyone). Every run and doctor
# scan it for credentials before the sandbox starts, a run with SIGINT, SIGTERM and SIGHUP
# held until it notices them. Lines built to make the scanner read the same bytes again for
# each of their positions ("token:" a MiB long: each ':' after a secret-looking key started
# a value read to the end of the line, some twenty minutes a file) must not hang either:
#  - SIGTERM while a run reads such files ends it with 143 within seconds: the scan stops
#    at the next file, caches nothing, and no sandbox is made;
#  - a run with them completes and warns about what they hold; doctor too.
. "$(dirname "$0")/lib.sh"

# The cache of runs and doctor: the test's own, empty, so every scan below reads the files.
export XDG_STATE_HOME=$E2E_TMP/state
cache=$XDG_STATE_HOME/ai-sandbox/skills
"$AISB" build --quiet >/dev/null

# plant DIR: 30 one-line files of 1 MiB (a run reads 32 MiB at most), each quadratic for a
# rule of the old scanner, 6 of each kind. Those of "token:" and "password=" hold a finding
# each (the value after the first separator): 12 in all. The rest hold none: references,
# "eyJ" runs that are no JWT, BEGIN lines whose next line is an example.
plant() {
  mkdir -p "$1/skill"
  python3 - "$1/skill" <<'EOF'
import sys
d, mib = sys.argv[1], 1024 * 1024
def line(unit, n=mib):  # n bytes at most, its newline included
    return unit * ((n - 1) // len(unit)) + "\n"
kinds = [
    ("env", line("token:")),
    ("env", line("password=")),
    ("env", line("token=$")),
    ("md", line("eyJ-")),
    ("md", line("-----BEGIN PRIVATE KEY-----", mib // 2) + line("abcdefghij", mib // 2)),
]
for i in range(30):
    suffix, text = kinds[i % len(kinds)]
    with open(f"{d}/{i:02d}.{suffix}", "w") as f:
        f.write(text)
EOF
}
agents=$E2E_TMP/agents
plant "$agents"

# ---- SIGTERM while the run reads the files: 143, promptly, nothing cached ----
# The moment a file of the directory is opened (the scan: listing it opens none), told by
# inotify: aisb is not dumpable, its /proc/PID/fd is not ours to look at.
python3 "$AISB_SRC/tests/e2e/watch-open.py" "$agents/skill" > "$E2E_TMP/opened" &
watcher=$!
for _ in $(seq 100); do grep -q watching "$E2E_TMP/opened" 2>/dev/null && break; sleep 0.05; done
grep -q watching "$E2E_TMP/opened" || cannot_run "the inotify watch did not start"
"$AISB" run --quiet --agents-dir "$agents" -- true </dev/null >/dev/null 2>"$E2E_TMP/stop.err" &
pid=$!
if ! wait "$watcher"; then
  kill -9 "$pid" 2>/dev/null || true
  fail "the run was never seen reading the agents directory's files: $(cat "$E2E_TMP/stop.err")"
fi
pass "the run reads the agents directory's files"
kill -TERM "$pid"
# The safety net: a run that holds the signal off is killed, and the test fails.
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
  kill -9 "$pid"
  wait "$pid" || true
  fail "SIGTERM was held off for 10 s while the run scanned the agents directory"
fi
set +e
wait "$pid"
rc=$?
set -e
expect_eq "SIGTERM during the scan ends the run with 143" 143 "$rc"
expect_eq "the stopped scan cached nothing" "" "$(ls "$cache" 2>/dev/null || true)"
expect_eq "no sandbox is left" "" "$(our_containers)"

# ---- a run with the files completes, warning about them ----
set +e
err=$(timeout -k 5 120 "$AISB" run --quiet --agents-dir "$agents" -- true 2>&1 >/dev/null)
rc=$?
set -e
case $rc in 124 | 137) fail "a run with hostile files in the agents directory did not finish in 120 s" ;; esac
expect_eq "the run completes" 0 "$rc"
expect_contains "warning about what the files hold" \
  "$agents, mounted read-only in every sandbox, holds 12 possible credentials in its files" "$err"
[ -n "$(ls "$cache")" ] || fail "the finished scan cached nothing"
pass "the finished scan is cached"

# ---- doctor scans them too, the cache gone ----
rm -rf "$cache"
set +e
doc=$(timeout -k 5 120 "$AISB" doctor --agents-dir "$agents" 2>&1)
rc=$?
set -e
case $rc in 124 | 137) fail "doctor with hostile files in the agents directory did not finish in 120 s" ;; esac
expect_contains "doctor reports them" \
  "$agents, mounted read-only in every sandbox, holds 12 possible credentials in its files" "$doc"
