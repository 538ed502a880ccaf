#!/usr/bin/env bash
# SIGTERM, SIGINT and SIGHUP to aisb stop and remove the sandbox: nothing is left behind.
. "$(dirname "$0")/lib.sh"

"$AISB" build >/dev/null 2>&1

for sig in TERM INT HUP; do
  "$AISB" run -- sleep 300 </dev/null >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    [ -n "$(podman ps --filter label=aisb.managed=true --filter "label=aisb.pid=$pid" -q)" ] && break
    sleep 0.1
  done
  [ -n "$(podman ps --filter "label=aisb.pid=$pid" -q)" ] || fail "the sandbox of $pid never started"
  kill -"$sig" "$pid"
  set +e
  wait "$pid"
  rc=$?
  set -e
  case $sig in TERM) want=143 ;; INT) want=130 ;; HUP) want=129 ;; esac
  expect_eq "SIG$sig: aisb exits 128+N" "$want" "$rc"
  expect_eq "SIG$sig: no container is left" "" "$(podman ps -a --filter "label=aisb.pid=$pid" -q)"
done
