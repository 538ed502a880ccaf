#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A repository's .ai-sandbox/allow cannot open the host. The agent, from inside a real
# sandbox that can write the project (the project's own sandbox mounts .ai-sandbox read-only,
# so one with the project's parent mounted: the way a repository it cloned would bring the
# file), plants an address entry in the project's allowlist for the next run: 10.0.2.2
# (slirp4netns's mapping of the host's loopback), 0.0.0.0/0, or 10.0.2.2:PORT of a test
# server on the host's 127.0.0.1. The next run must refuse to start with the file's line
# (exit 2), and the server must receive nothing. A control with the entry given by the user
# and --insecure-allow-host-ranges does reach the server, so the test can see a breach.
. "$(dirname "$0")/lib.sh"

openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=allowed.test -days 1 \
  -keyout "$E2E_TMP/key.pem" -out "$E2E_TMP/cert.pem" 2>/dev/null
python3 "$AISB_SRC/tests/e2e/servers.py" "$E2E_TMP/cert.pem" "$E2E_TMP/key.pem" "$E2E_TMP/requests" \
  > "$E2E_TMP/ports" &
servers=$!
trap 'kill $servers 2>/dev/null; cleanup' EXIT
for _ in $(seq 50); do grep -q '^ready' "$E2E_TMP/ports" 2>/dev/null && break; sleep 0.1; done
HTTP=$(awk '$1=="http"{print $2}' "$E2E_TMP/ports")
[ -n "$HTTP" ] || cannot_run "test servers did not start"
: > "$E2E_TMP/requests"

# A gate of this test's own (the unique name), for the runs that get as far as starting one.
names="--gate-add-host allowed.test:127.0.0.1 --gate-add-host ranges-$$.test:127.0.0.1"
fetch="curl -s -m 5 --noproxy * http://10.0.2.2:$HTTP/"

# The agent writes the project's allowlist (a name, and the address entry) where none was.
plant() {
  rm -rf "$E2E_TMP/project/.ai-sandbox"
  "$AISB" run --no-cwd --mount "$E2E_TMP:/parent" -- sh -c "mkdir /parent/project/.ai-sandbox &&
    printf 'allowed.test:$HTTP\n%s\n' '$1' > /parent/project/.ai-sandbox/allow"
  expect_eq "the agent planted '$1' for the next run" "$1" "$(sed -n 2p "$E2E_TMP/project/.ai-sandbox/allow")"
}

for entry in 10.0.2.2 0.0.0.0/0 "10.0.2.2:$HTTP"; do
  plant "$entry"
  set +e
  out=$("$AISB" run --net allow $names -- $fetch 2>"$E2E_TMP/err"); rc=$?
  set -e
  expect_eq "the next run is refused ('$entry' in the project's allowlist)" 2 "$rc"
  expect_contains "with one line naming the file, the line and where addresses belong" \
    "/project/.ai-sandbox/allow:2: '$entry' is an address, and a project's allowlist may name domains only: put it in --allow or ~/.config/ai-sandbox/allow" \
    "$(cat "$E2E_TMP/err")"
  expect_eq "nothing ran" "" "$out"
done

# The flag is the user's: it does not let the project's file name addresses either.
set +e
out=$("$AISB" run --net allow $names --insecure-allow-host-ranges -- $fetch 2>"$E2E_TMP/err"); rc=$?
set -e
expect_eq "--insecure-allow-host-ranges does not open the project's file" 2 "$rc"
expect_contains "which is still refused by its line" \
  "/project/.ai-sandbox/allow:2: '10.0.2.2:$HTTP' is an address" "$(cat "$E2E_TMP/err")"
expect_eq "the host's server received nothing" "" "$(cat "$E2E_TMP/requests")"
rm -rf "$E2E_TMP/project/.ai-sandbox"

# From the user, without the flag: the host's ranges and catch-alls are refused too.
set +e
err=$("$AISB" run --net allow $names --allow "allowed.test:$HTTP" --allow 0.0.0.0/0 -- true 2>&1); rc=$?
set -e
expect_eq "--allow 0.0.0.0/0 without the flag is refused" 2 "$rc"
expect_contains "as a catch-all, naming the flag" \
  "--allow: '0.0.0.0/0' is a catch-all (wider than /8), which opens the host itself with everything else: name the networks you need, or add --insecure-allow-host-ranges" \
  "$err"
set +e
err=$("$AISB" run --net allow $names --allow "allowed.test:$HTTP" --allow "10.0.2.2:$HTTP" -- $fetch 2>&1); rc=$?
set -e
expect_eq "--allow 10.0.2.2:PORT without the flag is refused" 2 "$rc"
expect_contains "as the host's loopback" \
  "--allow: '10.0.2.2:$HTTP' reaches the host itself (10.0.2.0/24, slirp4netns: the host's loopback at 10.0.2.2, its resolver at 10.0.2.3): refused unless --insecure-allow-host-ranges" \
  "$err"
expect_eq "and the host's server still received nothing" "" "$(cat "$E2E_TMP/requests")"
# The host's own address (its LAN address here) is the host too.
hostip=$(hostname -I | awk '{print $1}')
set +e
err=$("$AISB" run --net allow --no-gate --allow "$hostip:$HTTP" -- true 2>&1); rc=$?
set -e
expect_eq "--allow with the host's own address is refused" 2 "$rc"
expect_contains "naming it" "covers $hostip, one of this host's own addresses" "$err"

# The control: the same entry from the user, with the flag, reaches the server.
out=$("$AISB" run --net allow $names --allow "allowed.test:$HTTP" --allow "10.0.2.2:$HTTP" \
  --insecure-allow-host-ranges -- $fetch 2>/dev/null)
expect_eq "control: with --insecure-allow-host-ranges the host's server is reached" server:http "$out"
expect_eq "control: and the server saw it" "http /" "$(cat "$E2E_TMP/requests")"

gate=$("$AISB" run --net allow $names --allow "allowed.test:$HTTP" --print-policy | sed -n 's/^gate=//p')
podman rm -f "aisb-gate-$gate" >/dev/null 2>&1 || true
