#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Review runs (docs/review.md, threat-model T32), attacked from inside real sandboxes: the
# agent deletes everything and writes new files, and the host tree keeps its hash (protected
# paths stay read-only inside); diff lists it, discard drops it, apply of some paths changes
# those paths only; a run that changes nothing leaves no layer; apply refuses a file the user
# changed (during the run or after it) and --force then takes it; a planted link is made as a
# link and nothing is written through it, nor through a link the project already held, nor
# through a directory link planted in the project after the run (even forced); no FIFO is
# made, a setuid bit is dropped; two review runs of one project at once each keep their own
# layer, apply and discard refuse a run still going, and the two apply in turn with the
# shared file a conflict; ps and clean --layers list and remove the layers; a run whose aisb
# is killed is applied only once aisb clean removed its sandbox.
. "$(dirname "$0")/lib.sh"

export XDG_STATE_HOME=$E2E_TMP/state
layers=$XDG_STATE_HOME/ai-sandbox/layers
# What a sandbox's overlay left there belongs to the user's subordinate ids.
trap 'podman unshare rm -rf "$E2E_TMP/state" 2>/dev/null; cleanup' EXIT

# The tree, hashed: each path with its type, mode, size and link target, and each file's
# content; .git included.
tree_hash() {
  (cd "$1" && find . -printf '%p %y %m %s %l\n' | LC_ALL=C sort &&
    find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum) | sha256sum | cut -d' ' -f1
}
layer_count() { find "$layers" -mindepth 2 -maxdepth 2 -name 'aisb-*' 2>/dev/null | wc -l; }
# The run a review run's last words name.
run_named() { sed -n 's/.*kept apart in \(aisb-[^:]*\):.*/\1/p' "$1"; }
# Wait for a file a sandbox makes through a --mount, bounded (a safety net, not a timing
# assertion: the sandbox waits for the test, not for a time).
wait_for() {
  for _ in $(seq 1200); do [ -e "$1" ] && return 0; sleep 0.1; done
  fail "$2: $1 never appeared"
}

"$AISB" build --quiet >/dev/null
# A project with history, a nested directory, a link, an executable.
proj=$E2E_TMP/project
git -C "$proj" init -q
printf 'hello\n' > "$proj/a.txt"
printf 'keep me\n' > "$proj/keep.txt"
mkdir -p "$proj/src/deep"
printf 'int main(void) { return 0; }\n' > "$proj/src/main.c"
printf 'deep\n' > "$proj/src/deep/d.txt"
printf '#!/bin/sh\necho hi\n' > "$proj/run.sh" && chmod 755 "$proj/run.sh"
ln -s a.txt "$proj/link"
git -C "$proj" add -A
git -C "$proj" -c user.email=u@example.com -c user.name=u commit -qm init
before=$(tree_hash "$proj")

# 1. The agent destroys everything it can and writes new files: the host does not change.
set +e
"$AISB" run --review -- sh -c '
  echo evil >> /project/.git/config 2>/dev/null || echo "config: read-only"
  echo evil > /project/.git/hooks/pre-commit 2>/dev/null || echo "hooks: read-only"
  rm -rf /project/* /project/.git 2>/dev/null
  echo new > /project/new.txt
  mkdir -p /project/made/sub && echo x > /project/made/sub/x.txt
  echo rewritten > /project/keep.txt
  ls -A /project' > "$E2E_TMP/run1" 2>&1
rc=$?
set -e
out=$(cat "$E2E_TMP/run1")
expect_eq "the review run exits as its command" 0 "$rc"
expect_absent "inside, the tree is gone" "a.txt" "$out"
expect_contains "inside, .git/config stays read-only" "config: read-only" "$out"
expect_contains "inside, .git/hooks stays read-only" "hooks: read-only" "$out"
expect_contains "the run says how many paths changed, and where" "paths changed, kept apart in aisb-" "$out"
expect_contains "and the command to see them" '"aisb diff"' "$out"
expect_eq "the host tree is byte-for-byte what it was" "$before" "$(tree_hash "$proj")"
[ ! -e "$proj/.ai-sandbox" ] || fail "a review run made .ai-sandbox in the project"
pass "a review run makes nothing in the project"
expect_eq "one layer" 1 "$(layer_count)"
run1=$(run_named "$E2E_TMP/run1")
[ -n "$run1" ] || fail "the run's name is not in its last words: $out"
layer1=$(find "$layers" -mindepth 2 -maxdepth 2 -name "$run1")
for f in upper work info start lock; do
  [ -e "$layer1/$f" ] || fail "the layer $layer1 has no $f: $(ls -A "$layer1")"
done
pass "the layer is the run's own directory, with upper, work, info, start and lock"
[ -f "$layer1/upper/new.txt" ] || fail "the agent's new file is not in the layer's upper directory"
pass "the agent's writes are in the layer"

set +e
"$AISB" diff --summary > "$E2E_TMP/diff1" 2> "$E2E_TMP/diff1.err"
rc=$?
set -e
expect_eq "diff: exit 0" 0 "$rc"
diff_out=$(cat "$E2E_TMP/diff1")
expect_contains "diff lists a deleted file" "deleted   -     a.txt" "$diff_out"
expect_contains "diff lists a deleted link" "deleted   -     link" "$diff_out"
expect_contains "diff lists a deleted directory" "deleted   -     src" "$diff_out"
expect_contains "diff lists a new file" "added     file  new.txt" "$diff_out"
expect_contains "diff lists a new nested file" "added     file  made/sub/x.txt" "$diff_out"
expect_contains "diff lists a rewritten file" "modified  file  keep.txt" "$diff_out"
expect_contains "diff lists the git directory's deletions as protected" ".git/HEAD (protected: applied only when named)" "$diff_out"
expect_absent "nor lists what was not changed (the read-only .git/config)" ".git/config" "$diff_out"
expect_contains "the summary goes to stderr, naming the run" "changes in $run1" "$(cat "$E2E_TMP/diff1.err")"
expect_absent "and not to stdout" "changes in" "$diff_out"
full=$("$AISB" diff 2>/dev/null)
expect_contains "diff shows a text file's unified diff" "-keep me
+rewritten" "$full"
json=$("$AISB" diff --json)
expect_eq "diff --json: an object a line, each with its keys" "ok" "$(python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.strip()]
keys = {"path", "change", "type", "mode", "size", "target", "mode_stripped", "refused", "protected"}
by = {r["path"]: r for r in rows}
bad = [r for r in rows if not keys <= set(r)]
ok = (rows and not bad and by["new.txt"]["change"] == "added" and by["new.txt"]["type"] == "file"
      and by["a.txt"]["change"] == "deleted" and by["keep.txt"]["change"] == "modified"
      and "+rewritten" in by["keep.txt"]["patch"] and by[".git/HEAD"]["protected"] is True
      and by["new.txt"]["protected"] is False)
print("ok" if ok else bad or rows)' <<< "$json")"
ps_out=$("$AISB" ps)
expect_contains "aisb ps has a SIZE column" "SIZE" "$(head -1 <<< "$ps_out")"
expect_eq "aisb ps lists the layer, kind layer, ended" "layer ended $proj" \
  "$(awk -v n="$run1" '$1 == n { print $2, $3, $NF }' <<< "$ps_out")"
ps_out=$("$AISB" ps --json)
expect_eq "aisb ps --json lists the layer with its size" "ok" "$(python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.strip()]
print("ok" if any(r["name"] == sys.argv[2] and r["kind"] == "layer" and r["size"] > 0 and r["project"] == sys.argv[1] for r in rows) else rows)' "$proj" "$run1" <<< "$ps_out")"

# 2. Apply of some paths changes only those paths; a dry run changes nothing.
set +e
"$AISB" apply --dry-run > "$E2E_TMP/dry" 2>&1
rc=$?
set -e
expect_eq "apply --dry-run: exit 0" 0 "$rc"
expect_contains "apply --dry-run says what it would do" "would apply   file  new.txt" "$(cat "$E2E_TMP/dry")"
expect_eq "and changes nothing" "$before" "$(tree_hash "$proj")"
"$AISB" apply new.txt > "$E2E_TMP/apply" 2>&1 || fail "apply new.txt: $(cat "$E2E_TMP/apply")"
expect_contains "apply says what it did" "applied       file  new.txt" "$(cat "$E2E_TMP/apply")"
expect_eq "apply of one path names that path only" 1 "$(grep -c '^applied' "$E2E_TMP/apply")"
expect_eq "the applied file is the agent's" "new" "$(cat "$proj/new.txt")"
rm "$proj/new.txt"
expect_eq "and nothing else changed" "$before" "$(tree_hash "$proj")"
"$AISB" apply keep.txt a.txt > "$E2E_TMP/apply" 2>&1 || fail "apply keep.txt a.txt: $(cat "$E2E_TMP/apply")"
expect_contains "a modified file applied" "applied       file  keep.txt" "$(cat "$E2E_TMP/apply")"
expect_eq "to the agent's content" "rewritten" "$(cat "$proj/keep.txt")"
[ ! -e "$proj/a.txt" ] || fail "the deletion of a.txt was not applied: $(cat "$E2E_TMP/apply")"
pass "a deletion applied"
printf 'keep me\n' > "$proj/keep.txt" && printf 'hello\n' > "$proj/a.txt"
expect_eq "and nothing else changed" "$before" "$(tree_hash "$proj")"
set +e
"$AISB" apply --no-such-option > "$E2E_TMP/bad" 2>&1
rc=$?
set -e
expect_eq "apply with a bad option: exit 2" 2 "$rc"

# 3. Discard leaves the host as it is, and the layer is gone (its overlay leftovers too).
"$AISB" discard > "$E2E_TMP/discard" 2>&1 || fail "discard: $(cat "$E2E_TMP/discard")"
expect_eq "discard leaves the host tree unchanged" "$before" "$(tree_hash "$proj")"
[ ! -e "$layer1" ] || fail "discard left the layer's directory: $(ls -A "$layer1")"
pass "discard removes the layer's directory"
expect_eq "discard removes the layer" 0 "$(layer_count)"
set +e
"$AISB" diff > "$E2E_TMP/none" 2>&1
rc=$?
set -e
expect_eq "diff with no review run: exit 1" 1 "$rc"
expect_contains "and one line saying how to get one" "aisb run --review" "$(cat "$E2E_TMP/none")"

# A run that changes nothing says so and leaves no layer.
"$AISB" run --review -- true > "$E2E_TMP/nothing" 2>&1 || fail "a review run of true: $(cat "$E2E_TMP/nothing")"
expect_contains "a run that changed nothing says so" "review: the run changed nothing in the project" "$(cat "$E2E_TMP/nothing")"
expect_eq "and leaves no layer" 0 "$(layer_count)"

# 4. Hostile content: links to a host file and directory (planted in the layer, and ones the
# project held that the agent replaces), a FIFO, a setuid file; then a conflict.
host=$HOME/.cache/aisb-e2e/review-host-$$
mkdir -p "$host"
trap 'rm -rf "$host"; podman unshare rm -rf "$E2E_TMP/state" 2>/dev/null; cleanup' EXIT
sentinel=$host/bashrc
printf 'the user'"'"'s own\n' > "$sentinel"
host_before=$(tree_hash "$host")
sentinel_stat=$(stat -c '%i %s %y %z' "$sentinel")
# Links the user's project holds before the run, to what is outside it.
ln -s "$sentinel" "$proj/hostlink"
ln -s "$host" "$proj/hostdir"
"$AISB" run --review -- sh -c "
  ln -s $sentinel /project/evil
  ln -s $host /project/evil-dir
  rm /project/hostlink && echo pwned > /project/hostlink
  rm /project/hostdir && mkdir /project/hostdir && echo pwned > /project/hostdir/bashrc
  mkfifo /project/fifo
  printf '#!/bin/sh\n' > /project/sx && ! chmod 4755 /project/sx 2>/dev/null && chmod 755 /project/sx
  echo agent > /project/a.txt
  mkdir -p /project/src/deep && echo agent > /project/src/deep/d.txt && echo agent > /project/src/deep/added.txt" \
  > "$E2E_TMP/run2" 2>&1 || fail "the second review run: $(cat "$E2E_TMP/run2")"
# The sandbox's filter refuses the bit (the chmod above failed, or sx would be missing): the
# layer is given it here, as what the filter cannot see would, for apply to drop.
run2=$(run_named "$E2E_TMP/run2")
layer2=$(find "$layers" -mindepth 2 -maxdepth 2 -name "$run2")
[ -f "$layer2/upper/sx" ] || fail "the agent's sx is not in the layer: $(cat "$E2E_TMP/run2")"
chmod 4755 "$layer2/upper/sx"
diff_out=$("$AISB" diff --summary 2>&1)
expect_contains "diff names the FIFO as never applied" "fifo (never applied: a FIFO)" "$diff_out"
expect_contains "diff names the dropped setuid bit" "sx (setuid, setgid or sticky dropped)" "$diff_out"
expect_contains "diff shows the link and its target as text" "evil -> $sentinel" "$diff_out"
expect_eq "diff --json: the FIFO refused, the setuid bit stripped" "ok" "$("$AISB" diff --json | python3 -c '
import json, sys
by = {r["path"]: r for r in (json.loads(l) for l in sys.stdin if l.strip())}
ok = by["fifo"]["refused"] and by["sx"]["mode_stripped"] is True and by["evil"]["target"] == sys.argv[1]
print("ok" if ok else by)' "$sentinel")"

# The user edits a.txt on the host after the run began.
printf 'the user changed it\n' > "$proj/a.txt"
# After the run, src becomes a link out of the project (by anyone who can write it).
mv "$proj/src" "$E2E_TMP/src-moved"
outside=$E2E_TMP/outside && mkdir -p "$outside/deep" && printf 'outside\n' > "$outside/deep/d.txt"
ln -s "$outside" "$proj/src"
outside_before=$(tree_hash "$outside")
set +e
"$AISB" apply > "$E2E_TMP/apply2" 2>&1
rc=$?
set -e
applied=$(cat "$E2E_TMP/apply2")
expect_eq "apply with a conflict and refusals: exit 1" 1 "$rc"
expect_contains "the conflicting file is named" "conflict      file  a.txt: it was changed in the project since the run began" "$applied"
expect_eq "and keeps the user's content" "the user changed it" "$(cat "$proj/a.txt")"
expect_contains "the FIFO is refused" "refused       other fifo: a FIFO" "$applied"
[ ! -e "$proj/fifo" ] && [ ! -p "$proj/fifo" ] || fail "a FIFO was made in the project"
pass "no FIFO in the project"
[ -f "$proj/sx" ] || fail "sx was not applied: $applied"
expect_eq "sx arrives without its setuid bit" "755" "$(stat -c %a "$proj/sx")"
[ -L "$proj/evil" ] || fail "evil is not a link: $(ls -la "$proj")"
expect_eq "the planted link is made as a link" "$sentinel" "$(readlink "$proj/evil")"
[ -L "$proj/evil-dir" ] || fail "evil-dir is not a link"
pass "a link to a host directory is made as a link"
[ -f "$proj/hostlink" ] && [ ! -L "$proj/hostlink" ] || fail "the project's link was not replaced by the agent's file: $applied"
expect_eq "a file over the project's link replaces the link" "pwned" "$(cat "$proj/hostlink")"
[ -d "$proj/hostdir" ] && [ ! -L "$proj/hostdir" ] || fail "the project's directory link was not replaced: $applied"
expect_eq "a directory over the project's link replaces the link" "pwned" "$(cat "$proj/hostdir/bashrc")"
expect_contains "a changed file through a link planted in the project is not applied" "src/deep/d.txt: the project's path to it goes through a link" \
  "$(grep -E '^(conflict|refused|failed) ' <<< "$applied")"
expect_contains "nor a new file through it" "src/deep/added.txt: the project's path to it goes through a link" \
  "$(grep -E '^(conflict|refused|failed) ' <<< "$applied")"
expect_eq "nothing was written outside the project through a link" "$outside_before" "$(tree_hash "$outside")"
expect_eq "nor to the host files the links name" "$host_before" "$(tree_hash "$host")"
expect_eq "the host file a link names: same inode, size, mtime and ctime" "$sentinel_stat" "$(stat -c '%i %s %y %z' "$sentinel")"

# Forced, the conflicting file becomes the agent's.
"$AISB" apply --force a.txt > "$E2E_TMP/apply3" 2>&1 || fail "apply --force a.txt: $(cat "$E2E_TMP/apply3")"
expect_eq "apply --force takes the agent's version" "agent" "$(cat "$proj/a.txt")"
# Forced through the planted directory link: the link itself is replaced (docs/review.md),
# nothing outside written.
set +e
"$AISB" apply --force src > "$E2E_TMP/apply4" 2>&1
rc=$?
set -e
expect_eq "nothing was written outside the project, even forced" "$outside_before" "$(tree_hash "$outside")"
expect_eq "forced, apply of src: exit 0" 0 "$rc"
[ -d "$proj/src" ] && [ ! -L "$proj/src" ] || fail "forced, the planted link src is still there: $(cat "$E2E_TMP/apply4")"
pass "forced, the planted link itself is replaced by the run's directory"
expect_eq "and the run's file is written in the project" "agent" "$(cat "$proj/src/deep/d.txt")"
set +e
"$AISB" apply no/such/path > "$E2E_TMP/apply5" 2>&1
rc=$?
set -e
expect_eq "a path where the run changed nothing: exit 2" 2 "$rc"
expect_contains "named in one line" "no/such/path: the run changed nothing there" "$(cat "$E2E_TMP/apply5")"
"$AISB" discard >/dev/null 2>&1 || fail "discard of the second run"
expect_eq "nor did discard write through a link" "$host_before" "$(tree_hash "$host")"
rm -rf "$proj/src" && mv "$E2E_TMP/src-moved" "$proj/src"

# 5. Two review runs of one project at once, each its own layer. Each waits, inside, for the
# test to let it end: both are running at once, and the test acts while they are.
mark=$E2E_TMP/started && mkdir -p "$mark"
hold='i=0; while [ ! -e /mark/go ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done'
"$AISB" run --review --mount "$mark:/mark" -- sh -c "
  echo one > /project/one.txt; echo one > /project/both.txt; touch /mark/one; $hold" > "$E2E_TMP/one" 2>&1 &
first=$!
"$AISB" run --review --mount "$mark:/mark" -- sh -c "
  echo two > /project/two.txt; echo two > /project/both.txt; echo two > /project/keep.txt; touch /mark/two; $hold" > "$E2E_TMP/two" 2>&1 &
second=$!
wait_for "$mark/one" "the first concurrent review run"
wait_for "$mark/two" "the second concurrent review run"
pass "two review runs of one project are running at once"
expect_eq "aisb ps lists both layers running" 2 "$("$AISB" ps | awk -v p="$proj" '$2 == "layer" && $3 == "running" && $NF == p' | wc -l)"
running=$("$AISB" ps | awk -v p="$proj" '$2 == "layer" && $NF == p { print $1; exit }')
set +e
"$AISB" apply "$running" > "$E2E_TMP/busy" 2>&1
rc=$?
set -e
expect_eq "apply of a run still going: exit 1" 1 "$rc"
expect_contains "says it is still running" "$running is still running" "$(cat "$E2E_TMP/busy")"
set +e
"$AISB" discard "$running" > "$E2E_TMP/busy" 2>&1
rc=$?
set -e
expect_eq "discard of a run still going: exit 1" 1 "$rc"
[ -d "$(find "$layers" -mindepth 2 -maxdepth 2 -name "$running")/upper" ] || fail "discard removed a running run's layer"
pass "and leaves its layer"
# The user edits a file on the host while the second run has its own version of it.
printf 'the user, during the run\n' > "$proj/keep.txt"
touch "$mark/go"
wait $first || fail "the first concurrent review run: $(cat "$E2E_TMP/one")"
wait $second || fail "the second concurrent review run: $(cat "$E2E_TMP/two")"
expect_eq "two layers" 2 "$(layer_count)"
run_one=$(run_named "$E2E_TMP/one")
run_two=$(run_named "$E2E_TMP/two")
[ -n "$run_one" ] && [ -n "$run_two" ] && [ "$run_one" != "$run_two" ] || fail "two runs' names: '$run_one' '$run_two'"
one=$("$AISB" diff --summary "$run_one" 2>/dev/null)
two=$("$AISB" diff --summary "${run_two##*-}" 2>/dev/null)
expect_eq "the first layer has its changes only" "added     file  both.txt
added     file  one.txt" "$one"
expect_eq "the second layer has its changes only" "added     file  both.txt
modified  file  keep.txt
added     file  two.txt" "$two"
"$AISB" apply "$run_one" > "$E2E_TMP/apply6" 2>&1 || fail "apply of the first: $(cat "$E2E_TMP/apply6")"
expect_eq "the first run's shared file applied" "one" "$(cat "$proj/both.txt")"
expect_eq "and its own" "one" "$(cat "$proj/one.txt")"
set +e
"$AISB" apply "$run_two" > "$E2E_TMP/apply7" 2>&1
rc=$?
set -e
applied=$(cat "$E2E_TMP/apply7")
expect_eq "the second run's apply: exit 1 (conflicts)" 1 "$rc"
expect_contains "its same-named file is a conflict" "conflict      file  both.txt" "$applied"
expect_contains "and the file the user edited during the run" "conflict      file  keep.txt: it was changed in the project since the run began" "$applied"
expect_eq "its own file applied" "two" "$(cat "$proj/two.txt")"
expect_eq "the first run's version kept" "one" "$(cat "$proj/both.txt")"
expect_eq "the user's edit kept" "the user, during the run" "$(cat "$proj/keep.txt")"
"$AISB" apply --force "${run_two##*-}" both.txt > "$E2E_TMP/apply8" 2>&1 || fail "apply --force both.txt: $(cat "$E2E_TMP/apply8")"
expect_eq "forced, the second run's version" "two" "$(cat "$proj/both.txt")"
"$AISB" clean --layers > "$E2E_TMP/clean" 2>&1 || fail "clean --layers: $(cat "$E2E_TMP/clean")"
expect_contains "clean --layers names each layer" "removed layer $run_one" "$(cat "$E2E_TMP/clean")"
expect_contains "clean --layers names each layer" "removed layer $run_two" "$(cat "$E2E_TMP/clean")"
expect_eq "and removes them" 0 "$(layer_count)"
expect_absent "aisb ps lists no layer of the project" "$proj" "$("$AISB" ps | awk '$2 == "layer"')"
expect_eq "no container is left" "" "$(our_containers)"

# 6. A review run whose aisb is killed (kill -9): its sandbox lives on and may write the
# layer, so apply refuses the run until aisb clean has removed the sandbox; then it applies.
"$AISB" run --review --mount "$mark:/mark" -- sh -c '
  echo killed > /project/killed.txt; touch /mark/k
  while [ ! -e /mark/stop-k ]; do echo more >> /project/growing.txt; sleep 0.1; done' > "$E2E_TMP/k" 2>&1 &
killed=$!
wait_for "$mark/k" "the review run to be killed"
kill -9 "$killed"
wait "$killed" 2>/dev/null || true
run_k=$("$AISB" ps | awk -v p="$proj" '$2 == "layer" && $NF == p { print $1 " " $3 }')
expect_eq "aisb ps shows the killed run's layer interrupted" interrupted "${run_k#* }"
run_k=${run_k%% *}
size=$(stat -c %s "$(find "$layers" -mindepth 2 -maxdepth 2 -name "$run_k")/upper/growing.txt")
wait_for_growth() {
  for _ in $(seq 1200); do
    [ "$(stat -c %s "$(find "$layers" -mindepth 2 -maxdepth 2 -name "$run_k")/upper/growing.txt")" -gt "$size" ] && return 0
    sleep 0.1
  done
  fail "the orphaned sandbox wrote nothing more"
}
wait_for_growth
pass "its sandbox lives on, writing the layer"
set +e
"$AISB" apply "$run_k" > "$E2E_TMP/apply-k" 2>&1
rc=$?
set -e
expect_eq "apply of an interrupted run: exit 1" 1 "$rc"
expect_contains "says why and what to do" "$run_k did not end (its aisb was killed): its sandbox may still write the layer; aisb clean removes the sandbox, then apply" "$(cat "$E2E_TMP/apply-k")"
[ ! -e "$proj/killed.txt" ] || fail "the refused apply wrote the project"
"$AISB" clean > "$E2E_TMP/clean-k" 2>&1 || fail "clean: $(cat "$E2E_TMP/clean-k")"
expect_contains "clean removes the orphaned sandbox" "$run_k" "$(cat "$E2E_TMP/clean-k")"
expect_eq "and gives the layer its end" ended "$("$AISB" ps | awk -v r="$run_k" '$1 == r { print $3 }')"
"$AISB" apply "$run_k" > "$E2E_TMP/apply-k" 2>&1 || fail "apply after clean: $(cat "$E2E_TMP/apply-k")"
expect_eq "then it applies" killed "$(cat "$proj/killed.txt")"
"$AISB" discard "$run_k" >/dev/null 2>&1 || fail "discard of the applied run"
expect_eq "no container is left" "" "$(our_containers)"
