#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What the agent writes in the project and its home cannot make the host follow a path,
# widen the next run, or reach into another project: .ai-sandbox swapped for a link (also
# while runs start, from a concurrent sandbox), created where there was none, a --mount
# source through a planted link, and one project's home planting for another's.
. "$(dirname "$0")/lib.sh"

secret=$E2E_TMP/host-secret
mkdir -p "$secret" && echo "HOST-SECRET-$$" > "$secret/token"
mkdir -p .ai-sandbox && echo legit > .ai-sandbox/token

# A .ai-sandbox that is a link is refused before anything starts.
mv .ai-sandbox .ai-sandbox.real && ln -s "$secret" .ai-sandbox
set +e
out=$("$AISB" run -- cat /project/.ai-sandbox/token 2>"$E2E_TMP/err"); rc=$?
set -e
rm .ai-sandbox && mv .ai-sandbox.real .ai-sandbox
expect_eq "a symlinked .ai-sandbox refuses the run" 2 "$rc"
expect_contains "and says why" ".ai-sandbox is not a directory" "$(cat "$E2E_TMP/err")"
expect_absent "nothing of the link's target was read" "HOST-SECRET" "$out"

# The sandbox sees the settings read-only, and cannot create them where there were none.
expect_eq "the settings are visible inside" legit "$("$AISB" run -- cat /project/.ai-sandbox/token)"
mkdir -p "$E2E_TMP/bare" && cd "$E2E_TMP/bare"
out=$("$AISB" run -- sh -c 'mkdir -p /project/.ai-sandbox 2>/dev/null; echo evil.test > /project/.ai-sandbox/allow 2>/dev/null && echo written || echo refused')
expect_eq "a sandbox cannot create the project's allowlist" refused "$out"
[ -d .ai-sandbox ] && [ ! -L .ai-sandbox ] && [ -z "$(ls -A .ai-sandbox)" ] && [ "$(stat -c %u .ai-sandbox)" = "$(id -u)" ] ||
  fail "the project got no empty .ai-sandbox of the user's: $(ls -la .ai-sandbox 2>&1)"
pass "aisb made an empty .ai-sandbox of the user's where there was none"

# Two runs of such a project overlapping: when the first ends, the second's read-only copy
# must stay (removing the directory the first run made would detach it in the second).
mkdir -p "$E2E_TMP/bare2" && cd "$E2E_TMP/bare2"
"$AISB" run -- sleep 6 &
first=$!
sleep 2
out=$("$AISB" run -- sh -c 'for i in $(seq 12); do echo evil.test > /project/.ai-sandbox/allow 2>/dev/null && { echo written; break; }; sleep 1; done; echo tried')
wait "$first"
expect_eq "a run that outlives another of the same project still cannot write the settings" tried "$out"
[ ! -e .ai-sandbox/allow ] || fail "the second run created .ai-sandbox/allow: $(cat .ai-sandbox/allow)"
pass "and nothing reached the host"
cd "$E2E_TMP/project"

# The race: a sandbox that can write the project's parent swaps .ai-sandbox with a link to a
# host directory as fast as it can, while runs on the project start one after the other.
cat > "$E2E_TMP/swap.py" <<PY
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
d = b"/parent/project/"
os.symlink("$secret", d + b".ai-sandbox.link")
open("/parent/swapping", "w").close()
n, end = 0, time.time() + 25
while time.time() < end and not os.path.exists("/parent/stop"):
    if libc.renameat2(AT_FDCWD, d + b".ai-sandbox", AT_FDCWD, d + b".ai-sandbox.link", RENAME_EXCHANGE) == 0:
        n += 1
if os.path.islink(d + b".ai-sandbox"):
    libc.renameat2(AT_FDCWD, d + b".ai-sandbox", AT_FDCWD, d + b".ai-sandbox.link", RENAME_EXCHANGE)
os.unlink(d + b".ai-sandbox.link")
print(n)
PY
"$AISB" run --no-cwd --mount "$E2E_TMP:/parent" -- python3 /parent/swap.py > "$E2E_TMP/swaps" 2>&1 &
swapper=$!
for _ in $(seq 100); do [ -e "$E2E_TMP/swapping" ] && break; sleep 0.1; done
[ -e "$E2E_TMP/swapping" ] || fail "the swapping sandbox did not start: $(cat "$E2E_TMP/swaps")"
# Whatever a run sees of its settings while the link changes under it (the real ones, a
# refusal, the runtime giving up mounting the copy, nothing), it must never see the link's
# target.
seen=0 other=0
for i in $(seq 14); do
  set +e
  out=$("$AISB" run -- cat /project/.ai-sandbox/token 2>"$E2E_TMP/err.$i"); rc=$?
  set -e
  case "$out $(cat "$E2E_TMP/err.$i")" in *HOST-SECRET*) fail "run $i read the host directory the link points at" ;; esac
  if [ "$rc" -eq 0 ] && [ "$out" = legit ]; then seen=$((seen + 1)); else other=$((other + 1)); fi
done
touch "$E2E_TMP/stop"
wait "$swapper" || fail "the swapping sandbox failed: $(cat "$E2E_TMP/swaps")"
swaps=$(tail -1 "$E2E_TMP/swaps")
[ "$swaps" -gt 100 ] 2>/dev/null || fail "the swapper swapped only '$swaps' times: no race was tried"
pass "14 runs during $swaps swaps: $seen saw the real settings, $other did not; none read the host"
[ -d .ai-sandbox ] && [ ! -L .ai-sandbox ] || fail "the settings directory was not restored"

# A directory inside a project that a sandbox replaced with a link to a host directory: the
# user who cd's into it (the shell shows the project's path) must not get the link's target
# mounted as the project.
mkdir -p "$E2E_TMP/victim" && echo VICTIM > "$E2E_TMP/victim/marker"
"$AISB" run -- sh -c "ln -s '$E2E_TMP/victim' /project/packages-web"
set +e
out=$(cd "$E2E_TMP/project/packages-web" && "$AISB" run -- cat /project/marker 2>"$E2E_TMP/err"); rc=$?
set -e
expect_eq "a project reached through a link a sandbox planted is refused" 2 "$rc"
expect_contains "naming the link" "symbolic link $E2E_TMP/project/packages-web" "$(cat "$E2E_TMP/err")"
expect_absent "and mounting nothing of its target" VICTIM "$out"
rm "$E2E_TMP/project/packages-web"

# A sandbox of $E2E_TMP (at /parent) swapping $E2E_TMP/PARENT/pkg with a link to TARGET as
# fast as it can, for at most 25 s; with PLANT (TARGET then below $E2E_TMP), it also
# hard-links pkg/PLANT into TARGET and removes it again, every 10 swaps. Then 14 runs of
# `aisb run ARGS...` in pkg while it swaps: none may print FORBIDDEN; each either prints a
# line "legit" (it ran in pkg) or exits 77 or 2 with a line matching REFUSED. Sets swaps,
# legit, refused, other.
race() {  # NAME PARENT TARGET PLANT FORBIDDEN REFUSED ARGS...
  local name=$1 parent=$2 target=$3 plant=$4 forbidden=$5 refused_re=$6
  shift 6
  cat > "$E2E_TMP/$name.py" <<PY
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
d, plant = b"/parent/$parent/", b"$plant"
planted = b"/parent/${target#"$E2E_TMP"/}/" + plant
os.symlink("$target", d + b"pkg.link")
open("/parent/$name.swapping", "w").close()
n, linked, end = 0, False, time.time() + 25
while time.time() < end and not os.path.exists("/parent/$name.stop"):
    if plant:
        try:
            os.unlink(planted) if linked else os.link(d + b"pkg/" + plant, planted)
        except OSError:
            pass
        linked = not linked
    for _ in range(10):
        n += libc.renameat2(AT_FDCWD, d + b"pkg", AT_FDCWD, d + b"pkg.link", RENAME_EXCHANGE) == 0
if os.path.islink(d + b"pkg"):
    libc.renameat2(AT_FDCWD, d + b"pkg", AT_FDCWD, d + b"pkg.link", RENAME_EXCHANGE)
os.unlink(d + b"pkg.link")
print(n)
PY
  # The runs start in the real directory: the shell is there before the swapping starts.
  cd "$E2E_TMP/$parent/pkg"
  "$AISB" run --no-cwd --mount "$E2E_TMP:/parent" -- python3 "/parent/$name.py" > "$E2E_TMP/$name.out" 2>&1 &
  local swapper=$!
  for _ in $(seq 100); do [ -e "$E2E_TMP/$name.swapping" ] && break; sleep 0.1; done
  [ -e "$E2E_TMP/$name.swapping" ] || fail "the swapping sandbox did not start: $(cat "$E2E_TMP/$name.out")"
  legit=0 refused=0 other=0
  local i out rc
  for i in $(seq 14); do
    set +e
    out=$("$AISB" run "$@" 2>"$E2E_TMP/$name.err"); rc=$?
    set -e
    case "$out" in *"$forbidden"*) fail "$name: run $i got the link's target as its project" ;; esac
    if printf '%s\n' "$out" | grep -qx legit; then legit=$((legit + 1))
    elif { [ "$rc" -eq 77 ] || [ "$rc" -eq 2 ]; } && grep -Eq "$refused_re" "$E2E_TMP/$name.err"; then refused=$((refused + 1))
    else other=$((other + 1)); echo "rc $rc: $(tail -1 "$E2E_TMP/$name.err")" >> "$E2E_TMP/$name.others"; fi
  done
  touch "$E2E_TMP/$name.stop"
  wait "$swapper" || fail "the swapping sandbox failed: $(cat "$E2E_TMP/$name.out")"
  cd "$E2E_TMP/project"
  swaps=$(tail -1 "$E2E_TMP/$name.out")
  [ "$swaps" -gt 100 ] 2>/dev/null || fail "$name: the swapper swapped only '$swaps' times: no race was tried"
  [ ! -e "$E2E_TMP/$name.others" ] || echo "$name: failed otherwise: $(sort "$E2E_TMP/$name.others" | uniq -c | head -3)" >&2
}

# The same swap while runs start, from a sandbox of the parent: the runs start in the real
# directory (their working directory never moves), and must never get the link's target as
# /project: the entrypoint checks /project is the directory aisb started in.
mkdir -p "$E2E_TMP/parent2/pkg" && echo legit > "$E2E_TMP/parent2/pkg/marker"
race swap2 parent2 "$E2E_TMP/victim" "" VICTIM "/project is not what aisb chose to mount" -- cat /project/marker
pass "14 runs in a directory swapped $swaps times: $legit ran in it, $refused were refused by the entrypoint, $other failed otherwise; none got the target"

# The same swap while review runs start: a review run's /project is an overlay whose lower
# directory podman opens by its path, so the entrypoint checks a file at the project's top by
# its inode, change time and single link (the overlay shows a file's own): the link's target,
# mounted instead, has no such file, and the run is refused.
mkdir -p "$E2E_TMP/parent3/pkg" && echo legit > "$E2E_TMP/parent3/pkg/marker"
race swap3 parent3 "$E2E_TMP/victim" "" VICTIM "/project/marker is not what aisb chose to mount" \
  --review -- cat /project/marker
[ "$refused" -gt 0 ] || fail "no review run was refused in $swaps swaps: the race was not met (legit $legit, other $other)"
pass "14 review runs in a directory swapped $swaps times: $legit ran in it, $refused were refused by the entrypoint, $other failed otherwise; none got the target"

# Again, the swapping sandbox planting a hard link of the project's top file in the link's
# target (which it can write): the target then holds a file with the inode the entrypoint
# looks for, but of two links, its change time moved. The link comes and goes, so some runs
# start while the project's file has one link.
mkdir -p "$E2E_TMP/parent4/pkg" "$E2E_TMP/parent4/decoy"
echo legit > "$E2E_TMP/parent4/pkg/README" && echo DECOY > "$E2E_TMP/parent4/decoy/marker"
race swap4 parent4 "$E2E_TMP/parent4/decoy" README DECOY \
  "/project/README is not what aisb chose to mount|needs a file at the project's top" \
  --review -- cat /project/README /project/marker
[ "$refused" -gt 0 ] || fail "no review run was refused: the race was not met (legit $legit, other $other)"
pass "14 review runs against a swapped path and a planted hard link: $legit ran in the project, $refused were refused, $other failed otherwise; none got the target"

# --mount through a link the agent planted in the project, or of a path inside it: refused.
"$AISB" run -- sh -c "ln -s '$secret' /project/data; mkdir -p /project/sub"
set +e
err=$("$AISB" run --mount ./data:/data -- cat /data/token 2>&1); rc=$?
set -e
expect_eq "a --mount source through a planted link is refused" 2 "$rc"
expect_contains "naming the link" "symbolic link" "$err"
expect_absent "and reading nothing through it" "HOST-SECRET" "$err"
set +e
err=$("$AISB" run --mount ./sub:/sub -- true 2>&1); rc=$?
set -e
expect_eq "a --mount source inside the project is refused" 2 "$rc"
expect_contains "saying why" "inside the project" "$err"

# One home per project: what one project's agent plants in its home (~/.bashrc) does not
# run in another project's sandbox. A named volume is the explicit way to share one.
mkdir -p "$E2E_TMP/one" "$E2E_TMP/two"
default_home() { env -u AISB_HOME_VOLUME "$AISB" "$@"; }
(cd "$E2E_TMP/one" && default_home run -- sh -c 'echo "echo PLANTED-BY-ONE" >> ~/.bashrc; echo planted > ~/.planted')
out=$(cd "$E2E_TMP/two" && default_home run -- bash -ic 'cat ~/.planted 2>/dev/null || echo absent' 2>/dev/null)
expect_eq "another project's home does not have what the first planted" absent "$out"
out=$(cd "$E2E_TMP/one" && default_home run -- cat /home/sandbox/.planted)
expect_eq "a project's own home persists across its runs" planted "$out"
volumes=$("$AISB" ps --json | python3 -c '
import json, sys
for line in sys.stdin:
    e = json.loads(line)
    if e["kind"] == "volume" and (e["project"] or "").startswith(sys.argv[1]):
        print(e["name"], e["project"])' "$E2E_TMP/")
expect_contains "aisb ps lists the first project's home" "$E2E_TMP/one" "$volumes"
expect_contains "and the second's" "$E2E_TMP/two" "$volumes"
for v in $(printf '%s\n' "$volumes" | awk '{print $1}'); do podman volume rm -f "$v" >/dev/null; done
(cd "$E2E_TMP/one" && "$AISB" run --home-volume "aisb-e2e-shared-$$" -- sh -c 'echo shared > ~/.note')
out=$(cd "$E2E_TMP/two" && "$AISB" run --home-volume "aisb-e2e-shared-$$" -- cat /home/sandbox/.note)
podman volume rm -f "aisb-e2e-shared-$$" >/dev/null
expect_eq "a named home volume is shared on purpose" shared "$out"
