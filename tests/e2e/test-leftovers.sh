#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What one run leaves in the project cannot act later as the user.
#
# Setuid and setgid files: the agent tries every way it has to leave a setuid copy of id in
# the project (chmod, install, cp -a of a setuid file, creating open and O_TMPFILE modes,
# mknod, a tar member); the host's files carry neither bit, and another local user who runs
# them is themselves. The second line: a file made setuid during the run by what the filter
# cannot see (here the host itself) loses the bit at the run's end, with a warning; a setuid
# file of the user's from before the run keeps it.
#
# Run as root: the other local user is made here and removed at the end; the runs are the aisb
# user's, through lib.sh, in a project the other user can reach.
set -euo pipefail
: "${AISB_SRC:?AISB_SRC must point at the source tree}"
: "${AISB_BUILD:?AISB_BUILD must point at the build tree}"

if [ "${1:-}" != --as-user ]; then
  . "$(dirname "$0")/assert.sh"
  [ "$(id -u)" -eq 0 ] || cannot_run "needs root, to act as another local user"
  user=${AISB_USER:-aisb}
  id "$user" >/dev/null 2>&1 || cannot_run "no user $user (run scripts/setup)"
  evil=aisbevil
  id "$evil" >/dev/null 2>&1 || useradd -M -r -s /usr/sbin/nologin "$evil"
  work=$(mktemp -d /var/tmp/aisb-e2e-leftovers.XXXXXX)
  chmod 755 "$work"
  install -d -o "$user" -m 755 "$work/project"
  cleanup() {
    userdel "$evil" 2>/dev/null || true
    rm -rf "$work"
  }
  trap cleanup EXIT
  "$AISB_SRC/scripts/as-user" env AISB_SRC="$AISB_SRC" AISB_BUILD="$AISB_BUILD" \
    AISB_ENTRYPOINT="${AISB_ENTRYPOINT:-$AISB_BUILD/entrypoint/aisb-entrypoint}" \
    LEFT_PROJECT="$work/project" EVIL_UID="$(id -u "$evil")" bash "$0" --as-user
  # The other user runs what the runs left: each is itself, never the aisb user.
  cd "$work/project"
  evil_uid=$(id -u "$evil")
  ran=0
  # Those another user may run at all (install leaves its file 0600 when its chmod fails).
  for f in $(find . -maxdepth 1 -type f \( -name 't-*' -o -name late \) -perm -o+x | sort); do
    out=$(runuser -u "$evil" -- "./$f" -u 2>&1) || fail "$evil could not run $f: $out"
    [ "$out" = "$evil_uid" ] || fail "$evil ran $f as uid $out"
    ran=$((ran + 1))
  done
  [ "$ran" -ge 3 ] || fail "only $ran of the planted files were there to run"
  pass "another local user runs each of the $ran files the runs left as itself"
  # What the run made writable for others, or gave an ACL naming the other user, it is not now.
  for f in .git .git/description shared; do
    ! runuser -u "$evil" -- sh -c "echo x > $f/planted 2>/dev/null || echo x > $f" 2>/dev/null ||
      fail "$evil could write $f after the run"
  done
  pass "another local user cannot write what the run made writable for it"
  out=$(runuser -u "$evil" -- ./mine -u)
  [ "$out" = "$(id -u "$user")" ] || fail "the user's own setuid file lost its bit: ran as $out"
  pass "the user's setuid file from before the runs is still setuid (control)"
  exit 0
fi

. "$(dirname "$0")/lib.sh"
: "${LEFT_PROJECT:?}"
cd "$LEFT_PROJECT"

# The payload is the host's id (another local user runs it on the host after the runs); the
# control, a setuid copy of the user's, from before any run.
cp /usr/bin/id payload
cp /usr/bin/id mine && chmod 4755 mine

cat > plant.py <<'PY'
import os, stat, tarfile, io, shutil, subprocess
results = []
def attempt(name, fn):
    try:
        fn()
    except OSError:
        pass
    try:
        st = os.lstat(name)
    except FileNotFoundError:
        results.append(name + ":absent")
        return
    results.append(name + (":SETID" if st.st_mode & (stat.S_ISUID | stat.S_ISGID) else ":plain"))
ID = open("payload", "rb").read()
def write(name, flags, mode):
    fd = os.open(name, flags, mode)
    os.write(fd, ID)
    os.close(fd)
def chmod_after(name, mode):
    write(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o755)
    os.chmod(name, mode)
def fchmod_after(name, mode):
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o755)
    os.write(fd, ID)
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)
def tmpfile(name, mode):
    fd = os.open(".", os.O_TMPFILE | os.O_WRONLY, mode)
    os.write(fd, ID)
    os.link("/proc/self/fd/%d" % fd, name)
    os.close(fd)
def tar_member(name):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(ID), 0o4755
        t.addfile(info, io.BytesIO(ID))
    buf.seek(0)
    with tarfile.open(fileobj=buf) as t:
        t.extractall(".", filter="fully_trusted") if hasattr(tarfile, "data_filter") else t.extractall(".")
def sh(cmd):
    subprocess.run(cmd, shell=True, stderr=subprocess.DEVNULL)
attempt("t-chmod", lambda: chmod_after("t-chmod", 0o4755))
attempt("t-chmod-g", lambda: chmod_after("t-chmod-g", 0o2755))
attempt("t-fchmod", lambda: fchmod_after("t-fchmod", 0o6755))
attempt("t-fchmodat", lambda: (write("t-fchmodat", os.O_WRONLY | os.O_CREAT, 0o755),
                               os.chmod("t-fchmodat", 0o4755, follow_symlinks=False)))
attempt("t-open", lambda: write("t-open", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o4755))
attempt("t-tmpfile", lambda: tmpfile("t-tmpfile", 0o4755))
attempt("t-mknod", lambda: os.mknod("t-mknod", stat.S_IFREG | 0o4755))
attempt("t-tar", lambda: tar_member("t-tar"))
attempt("t-install", lambda: sh("install -m 4755 payload t-install"))
attempt("t-shell", lambda: sh("cp payload t-shell && chmod u+s t-shell"))
attempt("t-cp-a", lambda: sh("src=$(find /usr/bin -perm -4000 -type f | head -n 1); cp -a \"$src\" t-cp-a"))
print(" ".join(results))
PY
# The files run under mknod or a tar member hold id's bytes too: make them runnable plainly.
out=$("$AISB" run -- sh -c 'python3 plant.py; for f in t-mknod t-tar; do [ -f "$f" ] && cat payload > "$f" && chmod 755 "$f"; done; true')
expect_absent "no way of the agent's left a setuid or setgid file" ":SETID" "$out"
expect_contains "the chmod attempt ran" "t-chmod:" "$out"
expect_contains "the cp -a attempt ran" "t-cp-a:" "$out"
left=$(find . -perm /6000 -type f ! -name mine)
expect_eq "no file in the project carries a setuid or setgid bit" "" "$left"
# The image's own setuid file, copied with cp -a: checked above, but not the host's to run.
rm -f t-cp-a

# Modes that give another local user the project's git: .git and a file made writable by all,
# and given an ACL naming that user (setxattr: no seccomp filter sees its name).
git init -q
cat > acl.py <<'PY'
import os, struct, sys
uid = int(sys.argv[1])
acl = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", t, p, i) for t, p, i in
      [(1, 7, 0xffffffff), (2, 7, uid), (4, 5, 0xffffffff), (0x10, 7, 0xffffffff), (0x20, 5, 0xffffffff)])
for path in sys.argv[2:]:
    os.setxattr(path, "system.posix_acl_access", acl)
    if os.path.isdir(path):
        os.setxattr(path, "system.posix_acl_default", acl)
print("acl set")
PY
out=$("$AISB" run -- sh -c "mkdir -p shared && chmod 0777 .git shared && chmod 0666 .git/description &&
  python3 acl.py $EVIL_UID .git .git/description shared" 2> "$E2E_TMP/modes.err")
expect_eq "the agent could set the modes and ACLs (the test's premise)" "acl set" "$out"
expect_contains "the run says what it put right" "was made writable by others during the run" "$(cat "$E2E_TMP/modes.err")"
expect_eq "no mode is writable by others" "" "$(find .git shared -maxdepth 1 -perm /022 ! -type l)"
expect_eq "no ACL is left" "" "$(python3 -c '
import os
for p in (".git", ".git/description", "shared"):
    for a in ("system.posix_acl_access", "system.posix_acl_default"):
        try:
            os.getxattr(p, a); print(p, a)
        except OSError:
            pass')"
rm -f acl.py

# The shell's start files in the home: a ~/.bashrc and a ~/.gitconfig one run leaves are not
# read by the next one's bash (--shell's is interactive) or git.
"$AISB" run -- sh -c 'echo "echo PLANTED-BASHRC" > ~/.bashrc; printf "[alias]\n\tst = !echo PLANTED-GIT\n" > ~/.gitconfig'
out=$("$AISB" run -- bash -ic 'git st 2>/dev/null; true' 2> "$E2E_TMP/rc.err")
expect_absent "the next run's interactive bash did not read the planted ~/.bashrc" "PLANTED-BASHRC" "$out"
expect_absent "nor its git the planted ~/.gitconfig" "PLANTED-GIT" "$out"
expect_contains "the run said what it moved aside" "~/.bashrc ~/.gitconfig moved to ~/.aisb-moved/" "$(cat "$E2E_TMP/rc.err")"

# The refusal, as a build inside sees it.
set +e
err=$("$AISB" run -- sh -c 'cp payload t-seen && chmod 4755 t-seen' 2>&1)
rc=$?
set -e
expect_eq "chmod u+s fails inside" 1 "$rc"
expect_contains "with EPERM" "Operation not permitted" "$err"

# The second line: the run's end. What the filter cannot see is the host's own chmod here,
# during the run.
rm -f ready go
"$AISB" run -- sh -c 'touch ready; i=0; while [ ! -e go ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done' \
  2> "$E2E_TMP/late.err" &
run=$!
for _ in $(seq 300); do [ -e ready ] && break; sleep 0.1; done
[ -e ready ] || fail "the sandbox did not start"
cp /usr/bin/id late && chmod 4755 late
expect_eq "the host could set the bit during the run (the test's premise)" 4755 "$(stat -c %a late)"
touch go
wait "$run"
expect_eq "the file made setuid during the run lost the bit" 755 "$(stat -c %a late)"
expect_contains "the run said so" "late was made setuid during the run (mode 4755): the bit is removed" \
  "$(cat "$E2E_TMP/late.err")"
expect_eq "the user's own setuid file keeps its bit" 4755 "$(stat -c %a mine)"
rm -f ready go plant.py

# `aisb apply .git` after a review run that plants what redirects git: a commondir naming a
# directory it made with an fsmonitor in its configuration, a config.worktree, object
# alternates, a replace ref, and that directory itself (named too, as a user following the
# run's list would). The user's next git status runs nothing; the agent's commit is there.
proj=$E2E_TMP/project
cd "$proj"
git init -q
echo one > a.txt
git add -A && git -c user.email=u@example.com -c user.name=u commit -qm init
marker=$E2E_TMP/fsmonitor-ran
"$AISB" run --review -- sh -c '
  set -e
  cd /project
  echo two > a.txt
  git -c user.email=a@example.com -c user.name=agent commit -qam "the agent'"'"'s work"
  mkdir -p .git/refs/replace && git rev-parse HEAD > .git/refs/replace/$(git rev-parse HEAD~1)
  mkdir -p evilgit/objects evilgit/refs
  echo "ref: refs/heads/main" > evilgit/HEAD
  printf "[core]\n\tfsmonitor = \"touch '"$marker"'; false\"\n" > evilgit/config
  printf "[core]\n\tfsmonitor = \"touch '"$marker"'; false\"\n" > .git/config.worktree
  mkdir -p .git/objects/info && echo /project/evilgit/objects > .git/objects/info/alternates
  echo ../evilgit > .git/commondir
' > "$E2E_TMP/review.out" 2>&1 || fail "the review run: $(cat "$E2E_TMP/review.out")"
set +e
"$AISB" apply .git evilgit > "$E2E_TMP/apply.out" 2>&1
rc=$?
set -e
applied=$(cat "$E2E_TMP/apply.out")
expect_eq "apply .git evilgit: exit 1 (refusals)" 1 "$rc"
for p in .git/commondir .git/config.worktree .git/objects/info/alternates .git/refs/replace evilgit/HEAD evilgit/config; do
  expect_contains "apply refuses $p" "refused" "$(printf '%s\n' "$applied" | grep -F " $p" | head -n 1)"
  [ ! -e "$p" ] || fail "$p reached the project: $applied"
done
git status > "$E2E_TMP/status" 2>&1 || fail "git status after apply: $(cat "$E2E_TMP/status")"
[ ! -e "$marker" ] || fail "the user's git status ran the agent's fsmonitor"
pass "the user's git status runs nothing of the agent's"
expect_eq "the agent's commit came with .git" "the agent's work" "$(git log -1 --format=%s)"
expect_eq "git sees no replacement" "" "$(git replace -l)"
