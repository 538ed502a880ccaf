#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A repository is the agent's to configure, and git runs what its configuration names. Each
# way of making "git status" execute is planted from inside a real sandbox; then "aisb
# doctor" and "aisb doctor --deep" run on the host, and the planted command must not have
# run on the host. Each marker is a host path that does not exist inside a sandbox, so only
# an execution on the host can create it. A control then runs plain git on the host and sees
# each marker appear: the vectors are live, and the test can see a breach.
. "$(dirname "$0")/lib.sh"

markers=$E2E_TMP/markers
mkdir -p "$markers"
# doctor looks at the project with the user's image: build it first, so the check runs.
"$AISB" build --quiet >/dev/null

# plant NAME SCRIPT: a fresh project with one commit and a tracked file whose timestamp is
# stale (so "git status" refreshes the index and re-reads the file), then SCRIPT, all inside
# a sandbox of that project, with nothing protected (--protect=none): what is tried here is
# doctor itself, on a repository the agent configured (test-protect.sh tries the default).
plant() {
  local name=$1 script=$2
  mkdir -p "$E2E_TMP/$name"
  (cd "$E2E_TMP/$name" && "$AISB" run --quiet --protect=none -- sh -c "
    set -e
    git init -q . && git config user.email a@b.invalid && git config user.name agent
    echo data > file.txt && git add file.txt && git commit -q -m one
    $script
    touch -d '2001-01-01' file.txt")
}

m() { printf '%s/%s' "$markers" "$1"; }
plant fsmonitor "git config core.fsmonitor 'touch $(m fsmonitor); false'"
plant include "printf '[core]\\n\\tfsmonitor = \"touch $(m include); false\"\\n' > evil.gitconfig
  git config include.path ../evil.gitconfig"
plant hook "printf '#!/bin/sh\\ntouch $(m hook)\\n' > .git/hooks/post-index-change
  chmod +x .git/hooks/post-index-change"
plant filter "echo '*.txt filter=evil' > .gitattributes && git add .gitattributes && git commit -q -m attrs
  git config filter.evil.clean 'sh -c \"touch $(m filter); cat\"'"
plant gitfile "mv .git .evil-gitdir && echo 'gitdir: .evil-gitdir' > .git
  git config core.fsmonitor 'touch $(m gitfile); false'"
[ -z "$(ls "$markers")" ] || fail "planting itself left a marker on the host: $(ls "$markers")"

for name in fsmonitor include hook filter gitfile; do
  out=$(cd "$E2E_TMP/$name" && "$AISB" doctor 2>&1) || true
  case "$out" in
    *"git work tree is clean"* | *"uncommitted changes"*) pass "$name: doctor checked the project" ;;
    *) fail "$name: the project check gave no answer: $out" ;;
  esac
  [ ! -e "$(m "$name")" ] || fail "$name: aisb doctor ran the repository's command on the host"
  pass "$name: aisb doctor ran nothing of the repository on the host"
  out=$(cd "$E2E_TMP/$name" && "$AISB" doctor --deep 2>&1) || true
  case "$out" in
    *"git work tree is clean"* | *"uncommitted changes"*) pass "$name: doctor --deep checked it too" ;;
    *) fail "$name: the project check of --deep gave no answer: $out" ;;
  esac
  [ ! -e "$(m "$name")" ] || fail "$name: aisb doctor --deep ran the repository's command on the host"
  pass "$name: aisb doctor --deep ran nothing of the repository on the host"
done

# The check still answers: a tree changed inside the sandbox is reported as such.
(cd "$E2E_TMP/fsmonitor" && "$AISB" run --quiet -- sh -c 'echo changed > file.txt')
expect_contains "uncommitted changes are still reported" "uncommitted changes" \
  "$(cd "$E2E_TMP/fsmonitor" && "$AISB" doctor 2>&1 || true)"

# Control: the same "git status" on the host runs every planted command.
for name in fsmonitor include hook filter gitfile; do
  (cd "$E2E_TMP/$name" && git status --porcelain >/dev/null 2>&1) || true
  [ -e "$(m "$name")" ] || fail "control: plain git status on the host did not run the $name vector; the test proves nothing"
  pass "control: plain git status on the host runs the $name vector"
done

# A repository whose configuration makes git wait forever cannot hang doctor: its sandbox is
# stopped after the timeout, the check says so, and nothing is left running.
plant waits "git config core.fsmonitor 'sleep 100000'"
start=$(date +%s)
out=$(cd "$E2E_TMP/waits" && AISB_DOCTOR_TIMEOUT=5 timeout 120 "$AISB" doctor 2>&1) || true
took=$(( $(date +%s) - start ))
expect_contains "a git that waits is stopped" "the sandbox did not finish within 5 s, and was removed" "$out"
[ "$took" -lt 60 ] || fail "doctor took ${took}s"
expect_eq "no sandbox of that project is left" "" \
  "$(podman ps -a --filter "label=aisb.project=$E2E_TMP/waits" --format '{{.Names}}')"

# A repository can make git print as much as it likes: one index entry with a 100 MiB path
# name, which "git status --porcelain" prints whole. doctor keeps a bounded part of what its
# sandbox writes: aisb's peak memory (VmHWM, read from /proc while doctor runs) stays small,
# and doctor still answers.
plant flood 'git hash-object -w --stdin </dev/null >/dev/null
python3 - <<PY
import hashlib, struct
name = b"d/" + b"x" * (100 << 20)
entry = struct.pack(">10I", 0, 0, 0, 0, 0, 0, 0o100644, 0, 0, 0)
entry += bytes.fromhex("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391") + struct.pack(">H", 0xFFF) + name
entry += bytes(8 - len(entry) % 8)
data = b"DIRC" + struct.pack(">II", 2, 1) + entry
open(".git/index", "wb").write(data + hashlib.sha1(data).digest())
PY'
size=$(cd "$E2E_TMP/flood" && git status --porcelain 2>/dev/null | wc -c)
[ "$size" -gt $((100 << 20)) ] || fail "control: the planted index makes git print only $size bytes"
pass "control: git status on the planted index prints $size bytes"
peak=$(cd "$E2E_TMP/flood" && python3 - "$AISB" <<'PY'
import subprocess, sys, time
p = subprocess.Popen([sys.argv[1], "doctor"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
peak = 0
while p.poll() is None:
    try:
        for line in open("/proc/%d/status" % p.pid):
            if line.startswith("VmHWM:"):
                peak = max(peak, int(line.split()[1]))
    except OSError:
        pass
    time.sleep(0.05)
out = p.stdout.read().decode(errors="replace")
print(peak, "answered" if "uncommitted changes" in out else "no answer: " + out[-300:].replace("\n", " "))
PY
)
expect_contains "doctor answers on that repository" "answered" "$peak"
kib=${peak%% *}
[ "$kib" -gt 0 ] && [ "$kib" -lt 65536 ] || fail "aisb doctor's peak memory with 100 MiB of git output: ${kib} KiB"
pass "aisb doctor's peak memory with 100 MiB of git output stays small (${kib} KiB)"
