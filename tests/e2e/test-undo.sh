#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Undo of a plain run (docs/review.md, threat-model T33), around real sandboxes: a run that
# deletes and rewrites files, removes a nested directory and commits in .git; aisb undo gives
# back the tree's hash from before it. A file the user changed since the run ended is
# refused, named, and the rest put back; --force takes it back too. Nothing left to undo is
# one line and exit 1. A project larger than the default bound is not recorded, and the run
# says so; --undo on and undo = on record it anyway. ps lists the records, clean --layers
# removes them. Last, each undo goes one run further back, over a file both runs changed.
. "$(dirname "$0")/lib.sh"

export XDG_STATE_HOME=$E2E_TMP/state
config=$XDG_CONFIG_HOME/ai-sandbox/config

tree_hash() {
  (cd "$1" && find . -printf '%p %y %m %s %l\n' | LC_ALL=C sort &&
    find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum) | sha256sum | cut -d' ' -f1
}

"$AISB" build --quiet >/dev/null
proj=$E2E_TMP/project
git -C "$proj" init -q
printf 'hello\n' > "$proj/a.txt"
printf 'untouched\n' > "$proj/same.txt"
mkdir -p "$proj/src/deep" "$proj/docs"
printf 'int main(void) { return 0; }\n' > "$proj/src/main.c"
printf 'deep\n' > "$proj/src/deep/d.txt"
printf 'doc\n' > "$proj/docs/readme"
printf '#!/bin/sh\necho hi\n' > "$proj/run.sh" && chmod 755 "$proj/run.sh"
ln -s a.txt "$proj/link"
git -C "$proj" add -A
git -C "$proj" -c user.email=u@example.com -c user.name=u commit -qm init
# A first run makes .ai-sandbox (the project's settings' place): before that, the tree is
# what the runs below start from.
"$AISB" run -- true > /dev/null 2>&1 || fail "a first run"
before=$(tree_hash "$proj")

# 1. The agent deletes and rewrites, and commits.
out=$("$AISB" run -- sh -c '
  cd /project
  rm -rf src link
  echo rewritten > a.txt
  chmod 644 run.sh
  echo new > new.txt && mkdir -p made/sub && echo x > made/sub/x
  rm -rf docs && echo "now a file" > docs
  git add -A && git -c user.email=a@example.com -c user.name=agent commit -qm "agent was here"' 2>&1) ||
  fail "the plain run: $out"
expect_contains "the run says what undo would put back" '"aisb undo" puts them back' "$out"
[ "$before" != "$(tree_hash "$proj")" ] || fail "the run changed nothing"
pass "the run changed the tree"
expect_eq "the agent's commit is in the repository" "agent was here" "$(git -C "$proj" log -1 --format=%s)"

"$AISB" undo --dry-run > "$E2E_TMP/dry" 2>&1 || fail "undo --dry-run: $(cat "$E2E_TMP/dry")"
expect_contains "a dry run says what it would restore" "would restore file  a.txt" "$(cat "$E2E_TMP/dry")"
[ "$before" != "$(tree_hash "$proj")" ] || fail "the dry run changed the tree"
pass "and changes nothing"
set +e
"$AISB" undo > "$E2E_TMP/undo" 2>&1
rc=$?
set -e
undone=$(cat "$E2E_TMP/undo")
expect_eq "undo: exit 0" 0 "$rc"
expect_contains "undo removes what the run made" "removed       -     new.txt" "$undone"
expect_contains "and restores what it deleted" "restored      file  src/deep/d.txt" "$undone"
expect_contains "and what it rewrote" "restored      file  a.txt" "$undone"
expect_contains "and a directory the run made a file" "restored      dir   docs" "$undone"
expect_eq "the tree matches its hash from before the run" "$before" "$(tree_hash "$proj")"
expect_eq "the repository is back at its first commit" "init" "$(git -C "$proj" log -1 --format=%s)"
expect_eq "git sees a clean tree" "" "$(git -C "$proj" status --porcelain --ignored=no | grep -v '^?? .ai-sandbox/$' || true)"

# 2. Another run; then the user changes one of the files it changed. (The git status above
# refreshed the index: the tree from before this run is hashed anew.)
before=$(tree_hash "$proj")
"$AISB" run -- sh -c 'cd /project && echo agent > a.txt && echo agent > same.txt && rm -f run.sh' > "$E2E_TMP/run2" 2>&1 ||
  fail "the second run: $(cat "$E2E_TMP/run2")"
expect_contains "the run counts the paths it changed" 'undo: the run changed 3 paths; "aisb undo" puts them back' "$(cat "$E2E_TMP/run2")"
printf 'the user wrote this after the run\n' > "$proj/same.txt"
set +e
"$AISB" undo > "$E2E_TMP/undo2" 2>&1
rc=$?
set -e
undone=$(cat "$E2E_TMP/undo2")
expect_eq "undo with a conflict: exit 1" 1 "$rc"
expect_contains "the file the user changed is refused, named" "conflict      file  same.txt: it was changed since the run ended" "$undone"
expect_eq "and only that file" "conflict      file  same.txt: it was changed since the run ended" "$(grep -E '^(conflict|refused|failed|cannot)' <<< "$undone")"
expect_eq "and keeps the user's content" "the user wrote this after the run" "$(cat "$proj/same.txt")"
expect_eq "the rest is put back" "hello" "$(cat "$proj/a.txt")"
[ -x "$proj/run.sh" ] || fail "run.sh was not put back"
pass "a deleted executable is back with its mode"
"$AISB" undo --force > "$E2E_TMP/undo3" 2>&1 || fail "undo --force: $(cat "$E2E_TMP/undo3")"
expect_contains "forced, the refused file is named as restored" "restored      file  same.txt" "$(cat "$E2E_TMP/undo3")"
expect_eq "forced, the refused file is put back too" "untouched" "$(cat "$proj/same.txt")"
expect_eq "the tree matches its hash from before the run" "$before" "$(tree_hash "$proj")"

# 3. Nothing left to undo: one line, exit 1 (the first run changed nothing).
set +e
"$AISB" undo > "$E2E_TMP/undo4" 2>&1
rc=$?
set -e
expect_eq "nothing to undo: exit 1" 1 "$rc"
expect_contains "said in one line" "no run of this project left to undo" "$(cat "$E2E_TMP/undo4")"
expect_eq "one line" 1 "$(wc -l < "$E2E_TMP/undo4")"
expect_eq "and the tree is left as it is" "$before" "$(tree_hash "$proj")"
set +e
"$AISB" undo --no-such-option > "$E2E_TMP/bad" 2>&1
rc=$?
set -e
expect_eq "undo with a bad option: exit 2" 2 "$rc"

# 4. A project beyond the default bound: not recorded, and said; undo = on records it.
mkdir -p "$proj/many"
(cd "$proj/many" && seq 1 2001 | xargs touch)
out=$("$AISB" run -- sh -c 'rm /project/many/1' 2>&1) || fail "a run of the large project: $out"
expect_contains "the run says it is not recorded" "undo: this run is not recorded" "$out"
expect_contains "and why" "more than 2000 files and directories" "$out"
set +e
"$AISB" undo > "$E2E_TMP/undo5" 2>&1
rc=$?
set -e
expect_eq "an unrecorded run cannot be undone: exit 1" 1 "$rc"
[ ! -e "$proj/many/1" ] || fail "undo put back what an unrecorded run deleted"
pass "and nothing is put back"
touch "$proj/many/1"
out=$("$AISB" run --undo on -- sh -c 'rm -rf /project/many' 2>&1) || fail "a run with --undo on: $out"
expect_contains "--undo on records it" '"aisb undo" puts them back' "$out"
"$AISB" undo > "$E2E_TMP/undo6" 2>&1 || fail "undo of the large run: $(cat "$E2E_TMP/undo6")"
expect_eq "the large tree is back" "2001" "$(find "$proj/many" -type f | wc -l)"
echo "undo = on" >> "$config"
out=$("$AISB" run -- sh -c 'echo changed > /project/many/5' 2>&1) || fail "a run with undo = on: $out"
sed -i '/^undo = on$/d' "$config"
expect_contains "undo = on in the config records it" 'undo: the run changed 1 path; "aisb undo" puts them back' "$out"
"$AISB" undo > "$E2E_TMP/undo7" 2>&1 || fail "undo of the undo = on run: $(cat "$E2E_TMP/undo7")"
expect_contains "and undo names the file" "restored      file  many/5" "$(cat "$E2E_TMP/undo7")"
expect_eq "and puts it back" "" "$(cat "$proj/many/5")"
rm -rf "$proj/many"

# 5. ps lists the project's undo records with their size; clean --layers removes them.
out=$("$AISB" ps)
expect_eq "aisb ps lists the project's undo record, kind undo" "undo $proj" \
  "$(awk -v p="$proj" '$1 ~ /^undo-project-/ && $NF == p { print $2, $NF }' <<< "$out")"
expect_eq "aisb ps --json: the undo record with its size" "ok" "$("$AISB" ps --json | python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.strip()]
print("ok" if any(r["kind"] == "undo" and r["name"].startswith("undo-project-") and r["size"] > 0
                  and r["project"] == sys.argv[1] for r in rows) else rows)' "$proj")"
"$AISB" clean --layers > "$E2E_TMP/clean" 2>&1 || fail "clean --layers: $(cat "$E2E_TMP/clean")"
expect_contains "clean --layers removes the undo record, named" "removed undo undo-project-" "$(cat "$E2E_TMP/clean")"
expect_absent "aisb ps no longer lists it" "$proj" "$("$AISB" ps | awk '$2 == "undo"')"
expect_eq "no container is left" "" "$(our_containers)"

# 6. Each undo goes one run further back: two runs that each rewrite a.txt (and the second
# another file), undone one after the other, give back the tree from before the first.
# (Last: it fails while aisb takes its own undo of the later run for the user's change.)
before=$(tree_hash "$proj")
a_before=$(cat "$proj/a.txt")
"$AISB" run -- sh -c 'echo first > /project/a.txt' > "$E2E_TMP/run3" 2>&1 || fail "the first of two runs: $(cat "$E2E_TMP/run3")"
"$AISB" run -- sh -c 'echo second > /project/a.txt && echo second > /project/same.txt' > "$E2E_TMP/run4" 2>&1 ||
  fail "the second of two runs: $(cat "$E2E_TMP/run4")"
set +e
"$AISB" undo > "$E2E_TMP/undo8" 2>&1
rc=$?
set -e
expect_eq "undo of the later run: exit 0" 0 "$rc"
expect_eq "a.txt is as the first run left it" "first" "$(cat "$proj/a.txt")"
set +e
"$AISB" undo > "$E2E_TMP/undo9" 2>&1
rc=$?
set -e
undone=$(cat "$E2E_TMP/undo9")
expect_absent "the second undo takes aisb's own undo for no change of the user's" "conflict" "$undone"
expect_eq "the second undo: exit 0" 0 "$rc"
expect_contains "and names the file" "restored      file  a.txt" "$undone"
expect_eq "a.txt is as it was before both runs" "$a_before" "$(cat "$proj/a.txt")"
expect_eq "the tree matches its hash from before both runs" "$before" "$(tree_hash "$proj")"
