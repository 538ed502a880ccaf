#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Review runs (docs/review.md, threat-model T32), attacked from inside real sandboxes: the
# agent deletes everything and writes new files, and the host tree keeps its hash; diff lists
# it, discard drops it, apply of one path changes that path only; apply refuses a file the
# user changed, makes a planted link as a link and writes nothing through it, refuses a path
# through a link planted in the project, never makes a FIFO, drops a setuid bit; two review
# runs of one project at once each keep their own layer.
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
out=$("$AISB" run --review -- sh -c '
  rm -rf /project/* /project/.git 2>/dev/null
  echo new > /project/new.txt
  mkdir -p /project/made/sub && echo x > /project/made/sub/x.txt
  echo rewritten > /project/keep.txt
  ls -A /project' 2>&1)
rc=$?
set -e
expect_eq "the review run exits as its command" 0 "$rc"
expect_absent "inside, the tree is gone" "a.txt" "$out"
expect_contains "the run says how many paths changed, and where" "paths changed, kept apart in aisb-" "$out"
expect_contains "and the command to see them" '"aisb diff"' "$out"
expect_eq "the host tree is byte-for-byte what it was" "$before" "$(tree_hash "$proj")"
expect_eq "one layer" 1 "$(layer_count)"

diff_out=$("$AISB" diff --summary 2>&1)
expect_contains "diff lists a deleted file" "deleted   -     a.txt" "$diff_out"
expect_contains "diff lists a deleted directory" "deleted   -     src" "$diff_out"
expect_contains "diff lists a new file" "added     file  new.txt" "$diff_out"
expect_contains "diff lists a rewritten file" "modified  file  keep.txt" "$diff_out"
expect_contains "diff lists the git directory's deletions as protected" ".git/HEAD (protected: applied only when named)" "$diff_out"
full=$("$AISB" diff 2>/dev/null)
expect_contains "diff shows a text file's unified diff" "-keep me
+rewritten" "$full"
json=$("$AISB" diff --json)
expect_eq "diff --json: an object a line, each with path and change" "ok" "$(python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.strip()]
new = [r for r in rows if r["path"] == "new.txt"]
print("ok" if rows and all("change" in r for r in rows) and new and new[0]["change"] == "added" and new[0]["type"] == "file" else rows)' <<< "$json")"
ps_out=$("$AISB" ps --json)
expect_eq "aisb ps lists the layer with its size" "ok" "$(python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.strip()]
print("ok" if any(r["kind"] == "layer" and r["size"] > 0 and r["project"] == sys.argv[1] for r in rows) else rows)' "$proj" <<< "$ps_out")"

# 2. Apply of one path changes only that path.
"$AISB" apply new.txt > "$E2E_TMP/apply" 2>&1 || fail "apply new.txt: $(cat "$E2E_TMP/apply")"
expect_contains "apply says what it did" "applied       file  new.txt" "$(cat "$E2E_TMP/apply")"
expect_eq "the applied file is the agent's" "new" "$(cat "$proj/new.txt")"
rm "$proj/new.txt"
expect_eq "and nothing else changed" "$before" "$(tree_hash "$proj")"

# 3. Discard leaves the host as it is, and the layer is gone (its overlay leftovers too).
"$AISB" discard > "$E2E_TMP/discard" 2>&1 || fail "discard: $(cat "$E2E_TMP/discard")"
expect_eq "discard leaves the host tree unchanged" "$before" "$(tree_hash "$proj")"
expect_eq "discard removes the layer" 0 "$(layer_count)"
set +e
"$AISB" diff > "$E2E_TMP/none" 2>&1
rc=$?
set -e
expect_eq "diff with no review run: exit 1" 1 "$rc"
expect_contains "and one line saying how to get one" "aisb run --review" "$(cat "$E2E_TMP/none")"

# 4. Hostile content: a link to a host file, a FIFO, a setuid file; then a conflict.
host=$HOME/.cache/aisb-e2e/review-host-$$
mkdir -p "$host"
trap 'rm -rf "$host"; podman unshare rm -rf "$E2E_TMP/state" 2>/dev/null; cleanup' EXIT
sentinel=$host/bashrc
printf 'the user'"'"'s own\n' > "$sentinel"
host_before=$(tree_hash "$host")
"$AISB" run --review -- sh -c "
  ln -s $sentinel /project/evil
  ln -s $host /project/evil-dir
  mkfifo /project/fifo
  printf '#!/bin/sh\n' > /project/sx && chmod 4755 /project/sx
  echo agent > /project/a.txt
  mkdir -p /project/src/deep && echo agent > /project/src/deep/d.txt" > "$E2E_TMP/run2" 2>&1 ||
  fail "the second review run: $(cat "$E2E_TMP/run2")"
diff_out=$("$AISB" diff --summary 2>&1)
expect_contains "diff names the FIFO as never applied" "fifo (never applied: a FIFO)" "$diff_out"
expect_contains "diff names the dropped setuid bit" "sx (setuid, setgid or sticky dropped)" "$diff_out"
expect_contains "diff shows the link and its target as text" "evil -> $sentinel" "$diff_out"

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
expect_contains "a path through a link planted in the project is not applied" "src" \
  "$(grep -E '^(conflict|refused|failed) ' <<< "$applied")"
expect_eq "nothing was written outside the project through a link" "$outside_before" "$(tree_hash "$outside")"
expect_eq "nor to the host files the layer's links name" "$host_before" "$(tree_hash "$host")"

# Forced, the conflicting file becomes the agent's.
"$AISB" apply --force a.txt > "$E2E_TMP/apply3" 2>&1 || fail "apply --force a.txt: $(cat "$E2E_TMP/apply3")"
expect_eq "apply --force takes the agent's version" "agent" "$(cat "$proj/a.txt")"
set +e
"$AISB" apply no/such/path > "$E2E_TMP/apply4" 2>&1
rc=$?
set -e
expect_eq "a path where the run changed nothing: exit 2" 2 "$rc"
expect_contains "named in one line" "no/such/path: the run changed nothing there" "$(cat "$E2E_TMP/apply4")"
"$AISB" discard >/dev/null 2>&1 || fail "discard of the second run"
rm "$proj/src" && mv "$E2E_TMP/src-moved" "$proj/src"

# 5. Two review runs of one project at once, each its own layer.
mark=$E2E_TMP/started && mkdir -p "$mark"
"$AISB" run --review --mount "$mark:/mark" -- sh -c '
  echo one > /project/one.txt; echo one > /project/both.txt; touch /mark/one
  while [ ! -e /mark/two ]; do sleep 0.1; done' > "$E2E_TMP/one" 2>&1 &
first=$!
"$AISB" run --review --mount "$mark:/mark" -- sh -c '
  echo two > /project/two.txt; echo two > /project/both.txt; touch /mark/two
  while [ ! -e /mark/one ]; do sleep 0.1; done' > "$E2E_TMP/two" 2>&1 &
second=$!
wait $first || fail "the first concurrent review run: $(cat "$E2E_TMP/one")"
wait $second || fail "the second concurrent review run: $(cat "$E2E_TMP/two")"
expect_eq "two layers" 2 "$(layer_count)"
run_one=$(sed -n 's/.*kept apart in \(aisb-[^:]*\):.*/\1/p' "$E2E_TMP/one")
run_two=$(sed -n 's/.*kept apart in \(aisb-[^:]*\):.*/\1/p' "$E2E_TMP/two")
[ -n "$run_one" ] && [ -n "$run_two" ] && [ "$run_one" != "$run_two" ] || fail "two runs' names: '$run_one' '$run_two'"
one=$("$AISB" diff --summary "$run_one" 2>/dev/null)
two=$("$AISB" diff --summary "${run_two##*-}" 2>/dev/null)
expect_contains "the first layer has its file" "one.txt" "$one"
expect_absent "and not the other's" "two.txt" "$one"
expect_contains "the second layer has its file" "two.txt" "$two"
expect_absent "and not the other's" "one.txt" "$two"
"$AISB" apply "$run_one" > "$E2E_TMP/apply5" 2>&1 || fail "apply of the first: $(cat "$E2E_TMP/apply5")"
expect_eq "the first run's shared file applied" "one" "$(cat "$proj/both.txt")"
set +e
"$AISB" apply "$run_two" > "$E2E_TMP/apply6" 2>&1
rc=$?
set -e
expect_eq "the second run's apply: exit 1 (a conflict)" 1 "$rc"
expect_contains "its same-named file is a conflict" "conflict      file  both.txt" "$(cat "$E2E_TMP/apply6")"
expect_eq "its own file applied" "two" "$(cat "$proj/two.txt")"
expect_eq "the first run's version kept" "one" "$(cat "$proj/both.txt")"
"$AISB" clean --layers > "$E2E_TMP/clean" 2>&1 || fail "clean --layers: $(cat "$E2E_TMP/clean")"
expect_contains "clean --layers names each layer" "removed layer $run_one" "$(cat "$E2E_TMP/clean")"
expect_eq "and removes them" 0 "$(layer_count)"
expect_eq "no container is left" "" "$(our_containers)"
