#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# aisb skill-lint, for real, on agents directories of the test's own (never the user's
# ~/.agents): a clean one exits 0; one with credentials in its files and in a history that
# deleted them exits 1, printing each masked and none of them whole; a link out of the tree,
# a huge and a binary file are skipped with a note; a repository whose configuration makes
# git run commands (core.fsmonitor, gpg.program for signed commits, diff.external, a
# textconv driver) never runs them on the host, while plain git on the host does (the
# control); without the image, the history is said not to be scanned and the files still
# are; a run warns once per changed directory; doctor reports the cached result.
. "$(dirname "$0")/lib.sh"

# The cache of runs and doctor, and the session log: the test's own.
export XDG_STATE_HOME=$E2E_TMP/state
markers=$E2E_TMP/markers
mkdir -p "$markers"
"$AISB" build --quiet >/dev/null

# Made-up credentials, each of a known kind.
hist_token=ghp_sN0KRE4Z5xLWHrydJAQbZA3S65vUSeQEcbwW
file_token=npm_5LAg5nhJ5ipKq7apEfOsco4GxeaVXRd9rsJT
outside_token=glpat-OSbMQMxTV04KnAMR2aLe
secrets=("$hist_token" "$file_token" "$outside_token")

git_as_user() { git -c user.email=a@b.invalid -c user.name=user -c init.defaultBranch=main "$@"; }

# lint ARGS...: run skill-lint, keeping stdout, stderr and the exit code.
lint() {
  set +e
  "$AISB" skill-lint "$@" >"$E2E_TMP/out" 2>"$E2E_TMP/err"
  rc=$?
  set -e
  out=$(cat "$E2E_TMP/out")
  err=$(cat "$E2E_TMP/err")
}
no_secret_anywhere() {
  for s in "${secrets[@]}"; do
    expect_absent "$1: ${s:0:4}... is nowhere in the output" "$s" "$out$err"
  done
}

# ---- a clean directory: a repository with an ordinary history ----
clean=$E2E_TMP/clean-agents
mkdir -p "$clean/skills/hello"
printf '# Hello\n\nSay hello. Set OPENAI_API_KEY=sk-... first (your-api-key).\n' > "$clean/skills/hello/SKILL.md"
(cd "$clean" && git_as_user init -q . && git_as_user add -A && git_as_user commit -q -m one)
# A nested repository whose .git leads out of the directory: git in the sandbox cannot read it.
mkdir -p "$clean/skills/linked-repo"
echo "gitdir: $E2E_TMP/elsewhere.git" > "$clean/skills/linked-repo/.git"
lint "$clean"
expect_eq "a clean directory exits 0" 0 "$rc"
expect_contains "its summary says what was read" "0 findings in $clean: " "$out"
expect_contains "its history was read in a sandbox" "history: 1 commit of 2 repositories" "$out"
expect_eq "a repository git cannot read is said in one line" \
  "aisb: warning: skills/linked-repo: git could not read its history (a .git pointing outside the directory, or a broken repository)" \
  "$err"

# ---- planted secrets: in a file, and in a history that deleted them ----
agents=$E2E_TMP/agents
mkdir -p "$agents/skills/deploy"
(cd "$agents" && git_as_user init -q .)
printf 'GITHUB_TOKEN=%s\n' "$hist_token" > "$agents/skills/deploy/.env"
(cd "$agents" && git_as_user add -A && git_as_user commit -q -m "add env")
hist_commit=$(cd "$agents" && git rev-parse HEAD)
rm "$agents/skills/deploy/.env"
(cd "$agents" && git_as_user add -A && git_as_user commit -q -m "oops, remove env")
[ -z "$(cd "$agents" && git ls-files | grep -F .env || true)" ] || fail "the .env is still tracked"
printf '# Deploy\n\nnpm publish with\n\n    //registry.npmjs.org/:_authToken=%s\n' "$file_token" \
  > "$agents/skills/deploy/SKILL.md"
printf 'TOKEN=%s\n' "$outside_token" > "$E2E_TMP/outside.env"
ln -s "$E2E_TMP/outside.env" "$agents/skills/deploy/linked.env"
head -c $((2 * 1024 * 1024)) /dev/zero | tr '\0' 'a' > "$agents/skills/deploy/huge.txt"
printf 'ELF\0\0%s\n' "$file_token" > "$agents/skills/deploy/tool.bin"

lint "$agents"
expect_eq "planted secrets exit 1" 1 "$rc"
expect_contains "the file's token, masked" "skills/deploy/SKILL.md:5: npm-token: npm_… (40 chars)" "$out"
expect_contains "the deleted token, from history, masked" \
  "${hist_commit:0:12}:skills/deploy/.env:1: github-token: ghp_… (40 chars)" "$out"
expect_contains "the summary counts both" "2 findings in $agents" "$out"
expect_contains "the link out of the tree is skipped" \
  "skills/deploy/linked.env: a symbolic link out of the directory: not followed" "$err"
expect_contains "the huge file is skipped" "skills/deploy/huge.txt: larger than 1 MiB: not scanned" "$err"
expect_contains "the binary file is skipped" "skills/deploy/tool.bin: binary: not scanned" "$err"
no_secret_anywhere "text"
[ "$(printf '%s\n' "$err" | wc -l)" -eq 3 ] || fail "expected three warning lines, got: $err"
pass "each warning is one line"

lint "$agents" --json
expect_eq "--json exits 1 too" 1 "$rc"
printf '%s\n' "$out" | python3 -c '
import json, sys
objs = [json.loads(l) for l in sys.stdin if l.strip()]
hist = [o for o in objs if o.get("commit")]
assert len(hist) == 1 and hist[0]["kind"] == "github-token" and hist[0]["path"] == "skills/deploy/.env", hist
assert hist[0]["commit"] == sys.argv[1], hist
assert objs[-1]["findings"] == 2, objs[-1]
' "$hist_commit" || fail "--json: $out"
pass "--json: one object per finding, the history one with its commit, then the summary"
no_secret_anywhere "json"

# A file name holding C1 controls (U+009D starts an OSC, U+009C ends it) and DEL: json-c
# leaves them raw; --json shows them escaped, and the name is still the file's.
c1=$E2E_TMP/c1-agents
mkdir -p "$c1"
c1_name=$'x\xc2\x9d0;PWNED\xc2\x9c\x7f.env'
printf 'TOKEN=%s\n' "$file_token" > "$c1/$c1_name"
lint "$c1" --json --no-history
expect_eq "--json: the file with C1 in its name is found" 1 "$rc"
if printf '%s%s' "$out" "$err" | LC_ALL=C grep -q $'\xc2[\x80-\x9f]\|\x7f'; then
  fail "--json printed a C1 control or DEL raw: $(printf '%s' "$out" | od -c | head -5)"
fi
pass "--json prints no C1 control or DEL raw"
printf '%s\n' "$out" | python3 -c '
import json, sys
objs = [json.loads(l) for l in sys.stdin if l.strip()]
assert objs[0]["path"] == "x\u009d0;PWNED\u009c\x7f.env", objs
' || fail "--json: the name is not the file's: $out"
pass "--json: the escaped name is the file's"

lint "$agents" --no-history
expect_eq "--no-history still finds the file's token" 1 "$rc"
expect_absent "--no-history reads no history" "github-token" "$out"
expect_contains "--no-history says so" "history: not scanned (--no-history)" "$out"

# The directory a run would mount, decided as runs decide it.
lint --agents-dir "$agents" --no-history
expect_eq "--agents-dir names the directory" 1 "$rc"
expect_contains "--agents-dir's directory is the one linted" "in $agents:" "$out"
lint --no-agents
expect_eq "--no-agents: nothing to lint, exit 0" 0 "$rc"
expect_contains "--no-agents says why" "no-agents is set: nothing to lint" "$err"
lint "$E2E_TMP/not-there"
expect_eq "a missing directory is a usage error" 2 "$rc"

# Without the image, the history is not read, in one line, and the files still are.
lint "$agents" --install cowsay
expect_eq "without the image the files still count" 1 "$rc"
expect_contains "one line says the history was not scanned" \
  "history not scanned: the sandbox image is not built yet: run \"aisb build\" first" "$err"
expect_absent "and no history finding" "github-token" "$out"

# ---- a repository whose configuration runs commands: never on the host ----
evil=$E2E_TMP/evil-agents
mkdir -p "$evil"
(cd "$evil" && git_as_user init -q . && echo data > file.txt && echo 'SKILL body' > SKILL.md &&
  git_as_user add -A && git_as_user commit -q -m one)
# A commit with a signature, so that log.showSignature makes git call gpg.program.
(cd "$evil" && {
  printf 'tree %s\nparent %s\n' "$(git rev-parse 'HEAD^{tree}')" "$(git rev-parse HEAD)"
  printf 'author A <a@b.invalid> 1700000000 +0000\ncommitter A <a@b.invalid> 1700000000 +0000\n'
  printf 'gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEEaaaa\n -----END PGP SIGNATURE-----\n\nsigned\n'
} | git hash-object -t commit -w --stdin | xargs git update-ref refs/heads/main)
m() { printf '%s/%s' "$markers" "$1"; }
printf '#!/bin/sh\ntouch %s\nexit 1\n' "$(m gpg)" > "$E2E_TMP/fake-gpg" && chmod +x "$E2E_TMP/fake-gpg"
printf '#!/bin/sh\ntouch %s\n' "$(m external)" > "$E2E_TMP/ext-diff" && chmod +x "$E2E_TMP/ext-diff"
echo '*.txt diff=evil' > "$evil/.git/info/attributes"
cat >> "$evil/.git/config" <<EOF
[core]
	fsmonitor = "touch $(m fsmonitor); false"
[log]
	showSignature = true
[gpg]
	program = $E2E_TMP/fake-gpg
[diff]
	external = $E2E_TMP/ext-diff
[diff "evil"]
	textconv = "touch $(m textconv); cat"
EOF
[ -z "$(ls "$markers")" ] || fail "planting left a marker: $(ls "$markers")"
lint "$evil"
expect_eq "the hostile repository lints clean" 0 "$rc"
expect_contains "its history was read (in the sandbox)" "history: 2 commits of 1 repository" "$out"
for name in fsmonitor gpg external textconv; do
  [ ! -e "$(m "$name")" ] || fail "$name: skill-lint ran the repository's command on the host"
  pass "$name: skill-lint ran nothing of the repository on the host"
done
# Control: plain git on the host runs each of them.
(cd "$evil" && git status --porcelain >/dev/null 2>&1) || true
(cd "$evil" && git log -p >/dev/null 2>&1) || true
# diff.external: the porcelain diff runs it (against the empty tree, so there is a change).
(cd "$evil" && git diff 4b825dc642cb6eb9a060e54bf8d69288fbee4904 HEAD >/dev/null 2>&1) || true
for name in fsmonitor gpg external textconv; do
  [ -e "$(m "$name")" ] || fail "control: plain git on the host did not run the $name vector; the test proves nothing"
  pass "control: plain git on the host runs the $name vector"
done

# ---- runs warn once per changed directory; doctor reports the cached result ----
run_err() { "$AISB" run --quiet --agents-dir "$1" -- true 2>&1 >/dev/null; }
first=$(run_err "$agents")
expect_contains "a run warns about the directory" \
  "$agents, mounted read-only in every sandbox, holds 1 possible credential in its files: run \"aisb skill-lint\"" "$first"
expect_eq "the warning is one line" 1 "$(printf '%s\n' "$first" | grep -c 'skill-lint')"
second=$(run_err "$agents")
expect_absent "the same directory: no warning again" "skill-lint" "$second"
echo "more" > "$agents/skills/deploy/notes.md"
third=$(run_err "$agents")
expect_contains "a changed directory: the warning again" "aisb skill-lint" "$third"
expect_absent "a clean directory: no warning" "skill-lint" "$(run_err "$clean")"
for s in "${secrets[@]}"; do
  expect_absent "runs never print ${s:0:4}..." "$s" "$first$second$third"
done
[ -n "$(ls "$XDG_STATE_HOME/ai-sandbox/skills")" ] || fail "no cache under the state directory"
pass "the result is cached under the state directory"

doc=$("$AISB" doctor --agents-dir "$agents" 2>&1 || true)
line=$(printf '%s\n' "$doc" | grep -A1 '^warn skills' || true)
expect_contains "doctor's skills line warns with the count" \
  "$agents, mounted read-only in every sandbox, holds 1 possible credential in its files" "$line"
expect_contains "with the fix" "fix: run \"aisb skill-lint\"" "$line"
expect_contains "doctor: a clean directory is ok" "ok   skills           $clean: no credential found in its files" \
  "$("$AISB" doctor --agents-dir "$clean" 2>&1 || true)"
expect_contains "doctor: --no-agents mounts none" "no agents directory is mounted (no-agents is set)" \
  "$("$AISB" doctor --no-agents 2>&1 || true)"
