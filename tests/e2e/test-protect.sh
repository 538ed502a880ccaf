#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Protected paths (docs/protect.md): what the user's own tools run without being asked
# cannot be armed from a sandbox. Each vector is planted from inside a real sandbox; then
# the user's ordinary git on the host (status, diff, add -A, commit, log, fetch) runs in the
# project and the directories below it, and no marker appears. Each marker is a host path
# no sandbox sees (its /tmp is its own), so only the host can create it. The control plants
# the same vectors directly on the host and sees every marker appear. Then: the agent's
# ordinary git work inside (commit, branch, checkout, stash, rebase, fetch and push through
# the gate), worktrees (two runs at once, each on its own branch), a husky project's npm
# install and commit, editors' and agents' directories, and what aisb says.
. "$(dirname "$0")/lib.sh"

# Quarantines and the gate's state in this test's own directory.
export XDG_STATE_HOME=$E2E_TMP/state
quarantine=$XDG_STATE_HOME/ai-sandbox/quarantine
markers=$E2E_TMP/markers
mkdir -p "$markers" "$E2E_TMP/served"
no_markers() { [ -z "$(ls "$markers")" ] || fail "$1: the host ran what the agent planted: $(ls "$markers")"; pass "$1"; }
"$AISB" build --quiet >/dev/null

python3 "$AISB_SRC/tests/e2e/git-http.py" "$E2E_TMP/served" > "$E2E_TMP/git-port" 2> "$E2E_TMP/git-requests" &
git_server=$!
python3 "$AISB_SRC/tests/e2e/registries.py" > "$E2E_TMP/npm-port" 2> "$E2E_TMP/npm-requests" &
registry=$!
gate_down() {
  local gate
  gate=$("$AISB" run "${net[@]}" --print-policy 2>/dev/null | sed -n 's/^gate=//p')
  [ -z "$gate" ] || podman rm -f "aisb-gate-$gate" >/dev/null 2>&1 || true
}
trap 'gate_down; kill $git_server $registry 2>/dev/null; chmod -R u+rwX "$E2E_TMP" 2>/dev/null; cleanup' EXIT
for _ in $(seq 50); do [ -s "$E2E_TMP/git-port" ] && [ -s "$E2E_TMP/npm-port" ] && break; sleep 0.1; done
GIT_PORT=$(cat "$E2E_TMP/git-port") NPM_PORT=$(cat "$E2E_TMP/npm-port")
[ -n "$GIT_PORT" ] && [ -n "$NPM_PORT" ] || cannot_run "the stand-in git server or npm registry did not start"
net=(--net allow --allow "git.test:$GIT_PORT" --allow "npm.test:$NPM_PORT"
     --gate-add-host git.test:127.0.0.1 --gate-add-host npm.test:127.0.0.1)
# The host reaches the same server by its address.
export GIT_CONFIG_COUNT=2 GIT_CONFIG_KEY_0="url.http://127.0.0.1:$GIT_PORT/.insteadOf"
export GIT_CONFIG_VALUE_0="http://git.test:$GIT_PORT/" GIT_CONFIG_KEY_1=protocol.file.allow GIT_CONFIG_VALUE_1=always

repo_init() {
  git init -q -b main "$1"
  git -C "$1" config user.email user@example.invalid
  git -C "$1" config user.name user
  echo data > "$1/file.txt"
  git -C "$1" add file.txt
  git -C "$1" commit -qm one
}
# A repository as a user has one: a commit, an identity, a remote served over HTTP, a
# submodule.
template=$E2E_TMP/template
repo_init "$E2E_TMP/subsrc"
repo_init "$template"
git -C "$template" submodule --quiet add "$E2E_TMP/subsrc" sub
git -C "$template" commit -qm "a submodule"
# A hook that is a link to a tracked script, as many projects install theirs.
mkdir -p "$template/scripts"
printf '#!/bin/sh\nexit 0\n' > "$template/scripts/commit-msg"
chmod +x "$template/scripts/commit-msg"
git -C "$template" add scripts/commit-msg
git -C "$template" commit -qm "a commit-msg hook"
ln -s ../../scripts/commit-msg "$template/.git/hooks/commit-msg"
# A repository of its own below it, which the project ignores.
repo_init "$template/vendor/other"
echo vendor/ > "$template/.gitignore"
git -C "$template" add .gitignore
git -C "$template" commit -qm "vendor is not ours"
git clone -q --bare "$template" "$E2E_TMP/served/remote.git"
git -C "$template" remote add origin "http://git.test:$GIT_PORT/remote.git"
git -C "$template" fetch -q origin

# The user's ordinary git in DIR, as after any run.
host_git() {
  (cd "$1" && touch -d 2001-01-01 file.txt 2>/dev/null
   git status >/dev/null 2>&1; git diff >/dev/null 2>&1; git add -A >/dev/null 2>&1
   git commit -qm "on the host" >/dev/null 2>&1; git log -1 >/dev/null 2>&1; git fetch -q origin >/dev/null 2>&1) || true
}

# ---- 1. The vectors, planted from inside a sandbox ----
project=$E2E_TMP/project
cp -a "$template/." "$project/"
mkdir -p "$project/plain"
cat > "$project/plant.sh" <<SH
M=$markers
say() { echo "\$1=\$2"; }
hook() { printf '#!/bin/sh\ntouch %s/%s\n' "\$M" "\$1"; }
touch -d 2001-01-01 file.txt
hook hook > .git/hooks/post-index-change 2>/dev/null; say hook \$?
hook hook-commit > .git/hooks/pre-commit 2>/dev/null; say hook-commit \$?
hook linked-hook > scripts/commit-msg 2>/dev/null; say linked-hook \$?
git config core.fsmonitor "touch \$M/fsmonitor; false" 2>/dev/null; say fsmonitor \$?
printf '[core]\n\tfsmonitor = "touch %s/fsmonitor; false"\n' "\$M" >> .git/config 2>/dev/null; say fsmonitor-by-hand \$?
echo '*.txt filter=evil' > .gitattributes
git config filter.evil.clean "sh -c 'touch \$M/filter; cat'" 2>/dev/null; say filter \$?
echo '*.txt filter=evil' > .git/info/attributes 2>/dev/null; say filter-info \$?
mv .git .git-aside 2>/dev/null; say moved \$?
mv .git/modules .git/modules-aside 2>/dev/null; say modules-aside \$?
mv vendor vendor-aside 2>/dev/null; say vendor-aside \$?
git -C vendor/other config core.fsmonitor "touch \$M/vendor; false" 2>/dev/null; say vendor-fsmonitor \$?
mkdir .evil-gitdir && cp -r .git/. .evil-gitdir/ && git --git-dir=.evil-gitdir config core.fsmonitor "touch \$M/gitfile; false"
printf 'gitdir: .evil-gitdir\n' > .git 2>/dev/null; say gitfile \$?
hook sub-hook > .git/modules/sub/hooks/post-index-change 2>/dev/null; say sub-hook \$?
git -C sub config core.fsmonitor "touch \$M/sub-fsmonitor; false" 2>/dev/null; say sub-fsmonitor \$?
printf 'gitdir: ../.evil-gitdir\n' > sub/.git 2>/dev/null; say sub-gitfile \$?
git init -q plain/nested && echo n > plain/nested/file.txt && git -C plain/nested add file.txt &&
  git -C plain/nested -c user.name=a -c user.email=a@b.invalid commit -qm n &&
  git -C plain/nested config core.fsmonitor "touch \$M/nested; false"; say nested \$?
mkdir -p hidden/deep && git init -q hidden/deep/repo && echo h > hidden/deep/repo/file.txt &&
  git -C hidden/deep/repo add file.txt && git -C hidden/deep/repo -c user.name=a -c user.email=a@b.invalid commit -qm h &&
  git -C hidden/deep/repo config core.fsmonitor "touch \$M/hidden; false" && chmod 0111 hidden; say hidden \$?
mkdir .cursor && echo x > .cursor/rules && chmod 0555 .cursor; say stubborn \$?
mkdir -p scripts/objects scripts/refs/heads && echo 'ref: refs/heads/main' > scripts/HEAD &&
  printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = "touch %s/scripts-gitdir; false"\n' "\$M" > scripts/config &&
  echo 'gitdir: /nonexistent' > scripts/.git; say scripts-gitdir \$?
mkdir -p cover/objects cover/refs && echo 'ref: refs/heads/main' > cover/HEAD && git init -q cover/inner &&
  git -C cover/inner config core.fsmonitor "touch \$M/cover-inner; false"; say cover \$?
git replace "\$(git rev-parse HEAD:file.txt)" "\$(echo fake | git hash-object -w --stdin)"; say replace \$?
mkdir .common && cp -r .git/. .common/ && git --git-dir=.common config core.fsmonitor "touch \$M/commondir; false"
echo ../.common > .git/commondir; say commondir \$?
SH
out=$("$AISB" run -- sh /project/plant.sh 2> "$E2E_TMP/plant.err") || { cat "$E2E_TMP/plant.err" >&2; fail "the plant run failed: $out"; }
for v in hook hook-commit linked-hook fsmonitor fsmonitor-by-hand filter filter-info moved modules-aside vendor-aside vendor-fsmonitor \
         gitfile sub-hook sub-fsmonitor sub-gitfile; do
  case "$out" in
    *"$v=0"*) fail "$v: the write succeeded inside the sandbox" ;;
    *"$v="*) pass "$v: refused inside the sandbox" ;;
    *) fail "$v: no answer from the plant: $out" ;;
  esac
done
expect_contains "a nested repository can be made inside" "nested=0" "$out"
expect_contains "a commondir can be written inside (the git directory stays writable)" "commondir=0" "$out"
err=$(cat "$E2E_TMP/plant.err")
expect_contains "aisb said what was read-only" "protected, read-only in the sandbox: .git/config .git/hooks scripts/commit-msg .git/info" "$err"
expect_contains "a repository in a directory made unreadable can be made inside" "hidden=0" "$out"
expect_contains "a tracked directory can be made a git directory inside" "scripts-gitdir=0" "$out"
expect_contains "a replace ref can be made inside" "replace=0" "$out"
expect_contains "a repository inside a directory made a git directory can be made inside" "cover=0" "$out"
for q in ".git/commondir is new since the run began" "plain/nested/.git is a git directory" \
         ".evil-gitdir/HEAD is what makes its directory a git directory" ".common/HEAD is what makes its directory" \
         "hidden/deep/repo/.git is a git directory" "scripts/HEAD is what makes its directory" \
         "cover/HEAD is what makes its directory" "cover/inner/.git is a git directory" \
         ".git/refs/replace is new since the run began" \
         ".cursor is new since the run began"; do
  expect_contains "aisb named it after the run: $q" "$project/$q" "$err"
done
[ ! -e "$project/.git/commondir" ] && [ ! -e "$project/plain/nested/.git" ] && [ ! -e "$project/.common/HEAD" ] ||
  fail "what the run made is still in the project"
pass "the commondir, the nested repository and what made the copies git directories are out of the project"
[ -n "$(find "$quarantine" -path '*/.git/commondir' -print -quit)" ] || fail "the commondir is not in $quarantine"
[ -n "$(find "$quarantine" -path '*/plain/nested/.git/config' -print -quit)" ] || fail "the nested repository is not in $quarantine"
pass "what was moved is in the quarantine, restorable"
[ -z "$(ls "$markers")" ] || fail "planting left a marker on the host: $(ls "$markers")"
for d in "$project" "$project/sub" "$project/plain" "$project/plain/nested" "$project/vendor/other" \
         "$project/hidden/deep/repo" "$project/scripts" "$project/cover/inner"; do host_git "$d"; done
no_markers "after the run, the user's git in the project, its submodule and below ran nothing planted"
expect_eq "the host's repository still works (its commit is there)" "on the host" "$(git -C "$project" log -1 --format=%s)"
expect_eq "the host's git shows the file's own content, not the agent's replacement" "data" \
  "$(git -C "$project" show "$(git -C "$template" rev-parse HEAD):file.txt")"
expect_eq "(and the tracked directory's own files stayed)" "#!/bin/sh" "$(head -1 "$project/scripts/commit-msg")"

# The control: the same plants made directly on the host fire.
control() { # NAME DIR-IN-COPY SCRIPT
  local c=$E2E_TMP/control-$1
  rm -rf "$c" && cp -a "$template" "$c"
  (cd "$c" && M=$markers && eval "$3") >/dev/null 2>&1
  host_git "$c/$2"
  [ -e "$markers/$1" ] || fail "control: $1 planted on the host did not fire: the check above proves nothing"
  pass "control: $1 planted on the host fires"
}
control hook . 'printf "#!/bin/sh\ntouch $M/hook\n" > .git/hooks/post-index-change; chmod +x .git/hooks/post-index-change'
control hook-commit . 'printf "#!/bin/sh\ntouch $M/hook-commit\n" > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit'
control linked-hook . 'printf "#!/bin/sh\ntouch $M/linked-hook\n" > scripts/commit-msg'
control fsmonitor . 'git config core.fsmonitor "touch $M/fsmonitor; false"'
control filter . 'echo "*.txt filter=evil" > .gitattributes; git config filter.evil.clean "sh -c \"touch $M/filter; cat\""'
control moved . 'mv .git .git-aside && git init -q . && git config core.fsmonitor "touch $M/moved; false"'
control gitfile . 'mkdir .evil-gitdir && cp -r .git/. .evil-gitdir/ && git --git-dir=.evil-gitdir config core.fsmonitor "touch $M/gitfile; false" && rm -rf .git && printf "gitdir: .evil-gitdir\n" > .git'
control sub-hook sub 'printf "#!/bin/sh\ntouch $M/sub-hook\n" > .git/modules/sub/hooks/post-index-change; chmod +x .git/modules/sub/hooks/post-index-change'
control nested plain/nested 'mkdir -p plain && git init -q plain/nested && echo n > plain/nested/file.txt && git -C plain/nested add file.txt && git -C plain/nested -c user.name=a -c user.email=a@b.invalid commit -qm n && git -C plain/nested config core.fsmonitor "touch $M/nested; false"'
control vendor vendor/other 'git -C vendor/other config core.fsmonitor "touch $M/vendor; false"'
control hidden hidden/deep/repo 'mkdir -p hidden/deep && git init -q hidden/deep/repo && echo h > hidden/deep/repo/file.txt && git -C hidden/deep/repo add file.txt && git -C hidden/deep/repo -c user.name=a -c user.email=a@b.invalid commit -qm h && git -C hidden/deep/repo config core.fsmonitor "touch $M/hidden; false" && chmod 0111 hidden'
control scripts-gitdir scripts 'mkdir -p scripts/objects scripts/refs/heads && echo "ref: refs/heads/main" > scripts/HEAD && printf "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = \"touch $M/scripts-gitdir; false\"\n" > scripts/config'
control cover-inner cover/inner 'mkdir -p cover/objects cover/refs && echo "ref: refs/heads/main" > cover/HEAD && git init -q cover/inner && git -C cover/inner config core.fsmonitor "touch $M/cover-inner; false"'
c=$E2E_TMP/control-replace
rm -rf "$c" && cp -a "$template" "$c"
git -C "$c" replace "$(git -C "$c" rev-parse HEAD:file.txt)" "$(echo fake | git -C "$c" hash-object -w --stdin)"
expect_eq "control: a replace ref made on the host makes git show the replacement" "fake" \
  "$(git -C "$c" show HEAD:file.txt)"
control commondir . 'mkdir .common && cp -r .git/. .common/ && git --git-dir=.common config core.fsmonitor "touch $M/commondir; false" && echo ../.common > .git/commondir'
rm -f "$markers"/*

# ---- 2. The agent's ordinary git work inside ----
work=$E2E_TMP/work
cp -a "$template" "$work"
out=$(cd "$work" && "$AISB" run "${net[@]}" -- sh -c '
  set -e
  git status --short >/dev/null
  echo two >> file.txt && git add -A && git commit -qm two
  git branch topic && git checkout -q topic
  echo t > t.txt && git add t.txt && git commit -qm topic-commit
  git checkout -q main
  echo wip >> file.txt && git stash -q && git stash pop -q && git checkout -q -- file.txt
  git rebase -q topic
  git diff --stat HEAD~1 | tail -n 1
  git log --oneline | wc -l
  git fetch -q origin
  git push -q origin HEAD:refs/heads/from-sandbox
  echo done' 2> "$E2E_TMP/work.err") || { cat "$E2E_TMP/work.err" >&2; fail "ordinary git work inside failed: $out"; }
expect_eq "status, add, commit, branch, checkout, stash, rebase, diff, log, fetch and push work inside" \
  " 1 file changed, 1 insertion(+)
6
done" "$out"
expect_eq "the sandbox's commits are the host's" "topic-commit" "$(git -C "$work" log -1 --format=%s)"
expect_eq "its push reached the server through the gate" "$(git -C "$work" rev-parse HEAD)" \
  "$(git -C "$E2E_TMP/served/remote.git" rev-parse from-sandbox)"
expect_contains "the server saw the push" "git-receive-pack" "$(cat "$E2E_TMP/git-requests")"
expect_eq "nothing aisb made shows in git status" "" "$(git -C "$work" status --porcelain --untracked-files=all)"
out=$(cd "$work" && "$AISB" run "${net[@]}" -- sh -c 'git config user.name agent; echo "config=$?"
  git remote add other /tmp; echo "remote=$?"; git push -q -u origin topic; echo "push-u=$?"' 2>&1)
expect_contains "git config writes to the repository fail inside, with git's reason" "Device or resource busy" "$out"
expect_contains "(git config's status says so)" "config=4" "$out"
expect_contains "(so does git remote add's)" "remote=128" "$out"
expect_contains "git push -u pushes (the upstream is not recorded)" "push-u=0" "$out"
expect_eq "(the branch is on the server)" "$(git -C "$work" rev-parse topic)" "$(git -C "$E2E_TMP/served/remote.git" rev-parse topic)"
expect_eq "(and the host's configuration has no upstream for it)" "" "$(git -C "$work" config branch.topic.remote || true)"
expect_eq "the host's identity is unchanged" "user" "$(git -C "$work" config user.name)"

# ---- 3. Worktrees: two runs at once, each on its own branch ----
wt=$E2E_TMP/wt
repo_init "$wt/main"
git -C "$wt/main" worktree add -q ../a -b a
git -C "$wt/main" worktree add -q ../b -b b
main_head=$(git -C "$wt/main" rev-parse HEAD)
b_index=$(sha256sum < "$wt/main/.git/worktrees/b/index")
pids=()
for w in a b; do
  other=$([ $w = a ] && echo b || echo a)
  (cd "$wt/$w" && "$AISB" run -- sh -c "
    git status --short; echo status=\$?
    echo $w >> file.txt && git commit -qam in-$w && git branch $w-topic; echo commit=\$?
    echo x > $wt/main/.git/worktrees/$other/HEAD 2>/dev/null; echo other-head=\$?
    echo x > $wt/main/.git/worktrees/$other/index 2>/dev/null; echo other-index=\$?
    echo x > $wt/main/.git/index 2>/dev/null; echo main-index=\$?
    echo '#!/bin/sh' > $wt/main/.git/hooks/pre-commit 2>/dev/null; echo hooks=\$?
    mv $wt/main/.git/worktrees $wt/main/.git/worktrees-aside 2>/dev/null; echo worktrees-aside=\$?
    git log -1 --format=%s" > "$E2E_TMP/wt-$w.out" 2> "$E2E_TMP/wt-$w.err") &
  pids+=($!)
done
wait "${pids[@]}"
for w in a b; do
  out=$(cat "$E2E_TMP/wt-$w.out")
  expect_contains "worktree $w: status works inside" "status=0" "$out"
  expect_contains "worktree $w: commit and branch work inside" "commit=0" "$out"
  expect_contains "worktree $w: its commit is there inside" "in-$w" "$out"
  for x in other-head other-index main-index hooks worktrees-aside; do
    case "$out" in *"$x=0"*) fail "worktree $w: $x was written" ;; esac
  done
  pass "worktree $w: the other worktree's HEAD and index, the main worktree's index and the hooks are read-only, worktrees/ stays"
  expect_eq "worktree $w: its branch has its commit on the host" "in-$w" "$(git -C "$wt/main" log -1 --format=%s $w)"
  expect_eq "worktree $w: its HEAD is its own branch" "refs/heads/$w" "$(git -C "$wt/$w" symbolic-ref HEAD)"
  expect_eq "worktree $w: clean after the run" "" "$(git -C "$wt/$w" status --porcelain)"
  git -C "$wt/main" rev-parse -q --verify "$w-topic" >/dev/null || fail "worktree $w: its new branch is missing"
done
expect_eq "the main worktree's HEAD did not move" "$main_head" "$(git -C "$wt/main" rev-parse HEAD)"
expect_eq "the main worktree's index is unchanged" "" "$(git -C "$wt/main" status --porcelain)"
# The common directory gains a commondir from a worktree's run: quarantined after it.
mkdir -p "$E2E_TMP/evil-common" && cp -r "$wt/main/.git/." "$E2E_TMP/evil-common/"
git --git-dir="$E2E_TMP/evil-common" config core.fsmonitor "touch $markers/worktree-common; false"
err=$(cd "$wt/a" && "$AISB" run -- sh -c "echo $E2E_TMP/evil-common > $wt/main/.git/commondir" 2>&1)
expect_contains "a commondir written into the common directory is named after the run" \
  "$wt/main/.git/commondir is new since the run began" "$err"
for d in main a b; do host_git "$wt/$d"; done
no_markers "after the run, the user's git in every worktree ran nothing planted"
echo "$E2E_TMP/evil-common" > "$wt/main/.git/commondir"
host_git "$wt/main"
[ -e "$markers/worktree-common" ] || fail "control: a commondir planted on the host did not fire"
pass "control: a commondir planted on the host fires"
rm -f "$markers"/* "$wt/main/.git/commondir"

# A .git file names a directory of the user's that is no git directory of this project (one
# an agent wrote, that survived): nothing of it is mounted, the run is refused with the reason.
mkdir -p "$E2E_TMP/secret" "$E2E_TMP/planted"
echo key > "$E2E_TMP/secret/id_rsa"
echo "gitdir: $E2E_TMP/secret" > "$E2E_TMP/planted/.git"
set +e
err=$(cd "$E2E_TMP/planted" && "$AISB" run -- cat "$E2E_TMP/secret/id_rsa" 2>&1)
rc=$?
set -e
expect_eq "a .git file naming another directory of the user's refuses the run (exit 2)" 2 "$rc"
expect_contains "(saying why)" "no linked worktree's" "$err"
expect_absent "(and nothing of it reached a sandbox)" "key" "$err"
# git init --separate-git-dir outside the project: refused, saying what works.
git init -q --separate-git-dir="$E2E_TMP/sep.git" "$E2E_TMP/sep"
set +e
err=$(cd "$E2E_TMP/sep" && "$AISB" run -- git status 2>&1)
rc=$?
set -e
expect_eq "a separate git directory outside the project is refused (exit 2)" 2 "$rc"
expect_contains "(saying what works instead)" "keep the git directory inside the project, or use git worktree add" "$err"
# One inside the project works, protected like .git.
git init -q --separate-git-dir="$E2E_TMP/sep2/.git-dir" "$E2E_TMP/sep2"
echo "gitdir: .git-dir" > "$E2E_TMP/sep2/.git"
out=$(cd "$E2E_TMP/sep2" && "$AISB" run -- sh -c 'git status >/dev/null; echo status=$?
  echo x > .git-dir/hooks/pre-commit 2>/dev/null; echo hooks=$?' 2>&1)
expect_contains "a separate git directory inside the project works" "status=0" "$out"
expect_absent "(and its hooks are read-only)" "hooks=0" "$out"

# ---- 4. A husky project: npm install and commit work inside; its hooks stay the user's ----
husky=$E2E_TMP/husky
repo_init "$husky"
printf '{"name":"h","version":"1.0.0","scripts":{"prepare":"husky"},"devDependencies":{"husky":"9.1.7"}}\n' > "$husky/package.json"
mkdir -p "$husky/.husky"
echo 'echo ran > /tmp/husky-ran' > "$husky/.husky/pre-commit"
git -C "$husky" add -A && git -C "$husky" commit -qm husky
cp -a "$husky" "$E2E_TMP/husky-fresh"
# As after the user's own npm install on the host: git points at .husky/_.
git -C "$husky" config core.hooksPath .husky/_
mkdir -p "$husky/.husky/_"
printf '#!/bin/sh\nh="$(dirname "$0")/../$(basename "$0")"\n[ -f "$h" ] || exit 0\nexec sh -e "$h" "$@"\n' > "$husky/.husky/_/pre-commit"
chmod +x "$husky/.husky/_/pre-commit"
printf '*\n' > "$husky/.husky/_/.gitignore"
for h in "$husky" "$E2E_TMP/husky-fresh"; do
  out=$(cd "$h" && "$AISB" run "${net[@]}" -- sh -c "
    npm install --registry http://npm.test:$NPM_PORT/ --no-audit --no-fund >/tmp/npm.log 2>&1; echo npm=\$?
    echo x >> file.txt && git commit -qam two; echo commit=\$?
    cat /tmp/husky-ran 2>/dev/null
    printf '#!/bin/sh\ntouch $markers/husky\n' > .husky/pre-commit 2>/dev/null; echo plant=\$?
    printf '#!/bin/sh\ntouch $markers/husky\n' > .husky/_/pre-commit 2>/dev/null; echo plant-shim=\$?" 2>&1)
  expect_contains "husky ($(basename "$h")): npm install works inside" "npm=0" "$out"
  expect_contains "husky ($(basename "$h")): commit works inside" "commit=0" "$out"
  expect_eq "husky ($(basename "$h")): the commit is the host's" "two" "$(git -C "$h" log -1 --format=%s)"
done
out=$(cd "$husky" && "$AISB" run -- sh -c "echo y >> file.txt && git commit -qam three; cat /tmp/husky-ran; printf '#!/bin/sh\ntouch $markers/husky\n' > .husky/pre-commit 2>/dev/null; echo plant=\$?
    printf '#!/bin/sh\ntouch $markers/husky\n' > .husky/_/pre-commit 2>/dev/null; echo plant-shim=\$?" 2>&1)
expect_contains "husky: the project's pre-commit hook runs inside, where core.hooksPath points" "ran" "$out"
case "$out" in *"plant=0"* | *"plant-shim=0"*) fail "husky: the hooks directory core.hooksPath names was written: $out" ;; esac
pass "husky: .husky, where core.hooksPath points, is read-only inside"
expect_eq "husky: the fresh clone's configuration did not gain core.hooksPath" "" \
  "$(git -C "$E2E_TMP/husky-fresh" config core.hooksPath || true)"
host_git "$husky"
no_markers "husky: the user's commit on the host ran nothing planted"
echo "touch $markers/husky" > "$husky/.husky/pre-commit"
host_git "$husky"
[ -e "$markers/husky" ] || fail "control: a husky hook planted on the host did not fire"
pass "control: a husky hook planted on the host fires"
rm -f "$markers"/*

# A hooks path that a tracked file sets, included by the repository's configuration (a team's
# shared hooks): both read-only inside; the user's commit runs nothing planted.
team=$E2E_TMP/team
repo_init "$team"
mkdir -p "$team/.githooks"
printf '[core]\n\thooksPath = .githooks\n' > "$team/team.gitconfig"
printf '#!/bin/sh\nexit 0\n' > "$team/.githooks/pre-commit"
chmod +x "$team/.githooks/pre-commit"
git -C "$team" add -A && git -C "$team" commit -qm "team hooks"
git -C "$team" config include.path ../team.gitconfig
out=$(cd "$team" && "$AISB" run -- sh -c "
  printf '#!/bin/sh\ntouch $markers/team\n' > .githooks/pre-commit 2>/dev/null; echo hook=\$?
  printf '[core]\n\thooksPath = elsewhere\n' > team.gitconfig 2>/dev/null; echo include=\$?" 2>&1)
case "$out" in *"hook=0"* | *"include=0"*) fail "the included hooks path or its file was written: $out" ;; esac
pass "a hooks path set by an included file, and that file, are read-only inside"
host_git "$team"
no_markers "the user's commit in the team's repository ran nothing planted"
printf '#!/bin/sh\ntouch %s/team\n' "$markers" > "$team/.githooks/pre-commit"
host_git "$team"
[ -e "$markers/team" ] || fail "control: a hook planted in the included hooks path on the host did not fire"
pass "control: a hook planted in the included hooks path on the host fires"
rm -f "$markers"/*

# ---- 5. Editors' and host-side agents' directories ----
ed=$E2E_TMP/editors
mkdir -p "$ed/.vscode" "$ed/.idea" "$ed/.claude" "$ed/.gemini"
echo '{"user": true}' > "$ed/.gemini/settings.json"
echo '{"user": true}' > "$ed/.vscode/settings.json"
echo '<user/>' > "$ed/.idea/workspace.xml"
echo '{"user": true}' > "$ed/.claude/settings.json"
echo '{"user": true}' > "$ed/.mcp.json"
before=$(cd "$ed" && find . -type f | sort | xargs sha256sum)
out=$(cd "$ed" && "$AISB" run -- sh -c '
  for f in .vscode/settings.json .idea/workspace.xml .claude/settings.json .mcp.json .gemini/settings.json; do
    echo "{\"agent\": true}" > "$f" 2>/dev/null; echo "$f=$?"
  done
  echo "{\"tasks\": [{\"runOptions\": {\"runOn\": \"folderOpen\"}}]}" > .vscode/tasks.json 2>/dev/null; echo "tasks=$?"
  for d in .devcontainer .codex .cursor .zed .pi; do mkdir "$d" && echo agent > "$d/planted" && echo "$d=made"; done
  echo "{\"initializeCommand\": \"touch /tmp/x\"}" > .devcontainer.json && echo ".devcontainer.json=made"' 2> "$E2E_TMP/ed.err")
for f in .vscode/settings.json .idea/workspace.xml .claude/settings.json .mcp.json .gemini/settings.json tasks; do
  case "$out" in *"$f=0"*) fail "$f was written inside" ;; *"$f="*) ;; *) fail "no answer for $f: $out" ;; esac
done
pass "existing editors' and agents' settings are read-only inside"
expect_eq "their content on the host is the user's" "$before" "$(cd "$ed" && find . -type f | sort | xargs sha256sum)"
err=$(cat "$E2E_TMP/ed.err")
expect_contains "aisb said they are protected" "protected, read-only in the sandbox: .vscode .idea .claude .mcp.json .gemini" "$err"
expect_contains ".devcontainer.json: made inside" ".devcontainer.json=made" "$out"
[ ! -e "$ed/.devcontainer.json" ] || fail ".devcontainer.json: what the agent made is still in the project"
expect_contains ".devcontainer.json: aisb named it" "$ed/.devcontainer.json is new since the run began: moved to $quarantine/" "$err"
for d in .devcontainer .codex .cursor .zed .pi; do
  expect_contains "$d: made inside" "$d=made" "$out"
  [ ! -e "$ed/$d" ] || fail "$d: what the agent made is still in the project"
  expect_contains "$d: aisb named it and where it went" "$ed/$d is new since the run began: moved to $quarantine/" "$err"
  [ -n "$(find "$quarantine" -path "*/$d/planted" -print -quit)" ] || fail "$d: not in the quarantine"
done
pass "directories the agent made for editors and agents are quarantined, and said so"
out=$(cd "$ed" && "$AISB" run --protect=-.vscode -- sh -c 'echo "{\"agent\": true}" > .vscode/settings.json; echo "w=$?"' 2>/dev/null)
expect_eq "--protect=-.vscode gives .vscode back to the agent" "w=0" "$out"
expect_eq "(and its write reached the host)" '{"agent": true}' "$(cat "$ed/.vscode/settings.json")"
expect_contains "--print-policy shows the key" "protect=.git,.vscode,.idea,.devcontainer,.devcontainer.json,.claude,.mcp.json,.codex,.cursor,.gemini,.zed,.pi" \
  "$(cd "$ed" && "$AISB" run --print-policy)"
expect_contains "inspect shows what a run keeps read-only" "protected=/project/.idea (read-only)" "$(cd "$ed" && "$AISB" inspect)"

# ---- 6. A run in a subdirectory of a repository says how to get git ----
mkdir -p "$work/deeper"
out=$(cd "$work/deeper" && "$AISB" run -- git status 2>&1 || true)
expect_contains "a run below a repository's top says so" "is inside the git repository $work" "$out"
expect_contains "(git inside finds no repository, as said)" "not a git repository" "$out"
# The agent makes the project itself a git directory: git on the host in it, before the
# repository above, would take it. Quarantined after the run.
err=$(cd "$work/deeper" && "$AISB" run -- sh -c "mkdir -p objects refs/heads && echo 'ref: refs/heads/main' > HEAD &&
  printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = \"touch $markers/deeper; false\"\n' > config" 2>&1)
expect_contains "the project made a git directory is named after the run" "$work/deeper/HEAD is new since the run began" "$err"
host_git "$work/deeper"
no_markers "the user's git in it ran nothing planted"
(cd "$work/deeper" && mkdir -p objects refs/heads && echo 'ref: refs/heads/main' > HEAD)
host_git "$work/deeper"
[ -e "$markers/deeper" ] || fail "control: the project made a git directory on the host did not fire"
pass "control: the project made a git directory on the host fires"

# ---- 7. A project the user keeps 0700 (umask 077) ----
# The entrypoint checks each protected mount before the command runs; it looks as the user,
# whose directory it is (the namespace's root may not search it).
private=$E2E_TMP/private
mkdir -p "$private" && git -C "$private" init -q && mkdir "$private/.vscode" && chmod 700 "$private"
out=$(cd "$private" && "$AISB" run -- sh -c 'touch .git/hooks/x 2>/dev/null; echo "hook=$?"; touch y; echo "file=$?"' 2>&1) ||
  fail "a 0700 project with protected entries: $out"
expect_contains "a 0700 project runs, its protected entries checked" "hook=1" "$out"
expect_contains "(and the agent writes the rest)" "file=0" "$out"
