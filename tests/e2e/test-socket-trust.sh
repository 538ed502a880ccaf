#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Another local user makes podman's /tmp fallback, /tmp/podman-run-UID, for the aisb user
# before that user's podman ever does, and serves a fake libpod API there that records all it
# receives. The aisb user has no runtime directory (a login without systemd: /run/user is
# hidden from this one run by a private mount namespace, so the suite's own podman service is
# untouched). aisb must not send that socket anything, the create request and its secret
# values least of all: it warns, and refuses to start its own service in the other user's
# directory. CONTAINER_HOST and --socket naming that socket are refused too.
set -euo pipefail
: "${AISB_SRC:?AISB_SRC must point at the source tree}"
: "${AISB_BUILD:?AISB_BUILD must point at the build tree}"

. "$(dirname "$0")/assert.sh"

[ "$(id -u)" -eq 0 ] || cannot_run "needs root, to act as another local user"
command -v unshare >/dev/null || cannot_run "unshare (util-linux) is missing"
AISB=$AISB_BUILD/cli/aisb
user=${AISB_USER:-aisb}
evil=aisbevil
uid=$(id -u "$user") || cannot_run "no user $user (run scripts/setup)"
home=$(getent passwd "$user" | cut -d: -f6)
runuser -u "$user" -- test -x "$AISB" || cannot_run "$user cannot run $AISB"
trap_dir=/tmp/podman-run-$uid
sock=$trap_dir/podman/podman.sock

if [ -e "$trap_dir" ]; then
  owner=$(stat -c %U "$trap_dir")
  [ "$owner" = "$evil" ] || cannot_run "$trap_dir exists and belongs to $owner: no other user can take it now"
  rm -rf "$trap_dir"
fi
id "$evil" >/dev/null 2>&1 || useradd -M -r -s /usr/sbin/nologin "$evil"
work=$(mktemp -d /var/tmp/aisb-e2e-socket.XXXXXX)
chmod 755 "$work"
server=
cleanup() {
  # The fake service's own pid (it runs as the other user under runuser), then runuser.
  [ -s "$work/evil/ready" ] && kill "$(awk '{print $2}' "$work/evil/ready")" 2>/dev/null
  [ -n "$server" ] && kill "$server" 2>/dev/null
  wait 2>/dev/null || true
  [ -e "$trap_dir" ] && [ "$(stat -c %U "$trap_dir")" = "$evil" ] && rm -rf "$trap_dir"
  userdel "$evil" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# The other user's side: their directory, their socket, their record of what arrived.
install -d -o "$evil" -m 755 "$work/evil"
cp "$AISB_SRC/tests/e2e/evil-podman.py" "$work/evil.py"
runuser -u "$evil" -- mkdir -m 755 -p "$trap_dir/podman"
runuser -u "$evil" -- python3 "$work/evil.py" "$sock" "$work/evil/log" > "$work/evil/ready" &
server=$!
for _ in $(seq 50); do grep -q ready "$work/evil/ready" 2>/dev/null && break; sleep 0.1; done
[ -S "$sock" ] || fail "the other user's fake service did not start"

secret=SECRET-$RANDOM$RANDOM-VALUE
mkdir -p "$work/config" "$work/project" && chown -R "$user:" "$work/config" "$work/project"
as_victim() {
  runuser -u "$user" -- env -i HOME="$home" USER="$user" PATH=/usr/local/bin:/usr/bin:/bin \
    LANG=C.UTF-8 XDG_CONFIG_HOME="$work/config" AISB_ENTRYPOINT="${AISB_ENTRYPOINT:-$AISB_BUILD/entrypoint/aisb-entrypoint}" \
    SECRET_X="$secret" "$@"
}
export -f as_victim
export user home work secret AISB AISB_BUILD AISB_ENTRYPOINT

# The aisb user without a runtime directory: /run/user is an empty tmpfs in this mount
# namespace only, and XDG_RUNTIME_DIR is unset, as after a login without systemd.
set +e
out=$(cd "$work/project" && timeout -k 5 60 unshare --mount --propagation private bash -c '
  mount -t tmpfs -o mode=0755,size=1m tmpfs /run/user || exit 99
  as_victim "$AISB" run --net none --env SECRET_X -- true' 2>&1)
rc=$?
set -e
[ "$rc" -ne 99 ] || cannot_run "cannot mount a tmpfs over /run/user in a private namespace"
case $rc in 124|137) fail "aisb hung: $out" ;; esac
received=$(cat "$work/evil/log" 2>/dev/null || true)
expect_absent "the other user's socket never saw the secret" "$secret" "$received"
expect_eq "nor any connection" "" "$received"
expect_contains "aisb warns, naming the socket and whose directory it is" \
  "warning: not using the podman socket $sock: $trap_dir belongs to uid $(id -u "$evil") ($evil)" "$out"
expect_contains "and refuses to start its own service in that directory" \
  "will not start a podman service at $sock: $trap_dir belongs to uid $(id -u "$evil") ($evil)" "$out"
expect_eq "exit status 125" 125 "$rc"
expect_eq "two lines: the warning and the refusal" 2 "$(printf '%s\n' "$out" | grep -c .)"

# Naming the socket outright: refused with the reason and what to do.
for how in container-host socket; do
  set +e
  if [ $how = container-host ]; then
    out=$(cd "$work/project" && as_victim env CONTAINER_HOST="unix://$sock" XDG_RUNTIME_DIR="/run/user/$uid" \
      timeout -k 5 60 "$AISB" run --net none --env SECRET_X -- true 2>&1)
  else
    out=$(cd "$work/project" && as_victim env XDG_RUNTIME_DIR="/run/user/$uid" \
      timeout -k 5 60 "$AISB" run --socket "$sock" --net none --env SECRET_X -- true 2>&1)
  fi
  rc=$?
  set -e
  expect_eq "$how: exit status 125" 125 "$rc"
  expect_contains "$how: refused, saying why" "$sock is not safe to use: $trap_dir belongs to uid $(id -u "$evil") ($evil)" "$out"
  expect_contains "$how: and what to do" "use a socket in a directory that only you (or root) can write" "$out"
  expect_eq "$how: nothing reached the other user's socket" "" "$(cat "$work/evil/log" 2>/dev/null || true)"
done
[ "$(printf '%s\n' "$out" | grep -c .)" -eq 1 ] || fail "more than one line: $out"
pass "one line"

# Control: the fake service does record a client, so the empty record above means something.
runuser -u "$evil" -- curl -s --unix-socket "$sock" http://d/_ping >/dev/null
expect_contains "control: the fake service records a connection" "GET /_ping" "$(cat "$work/evil/log")"
