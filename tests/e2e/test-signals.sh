#!/usr/bin/env bash
# SIGTERM, SIGINT and SIGHUP to aisb stop and remove the sandbox: nothing is left behind.
# The reader of its output going away (| head) ends aisb quietly with 141, the sandbox removed,
# every time (podman 4.3 refused about half of those removals: the command had just stopped).
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

# | head: the command ends about when the reader goes away, the race the removal must survive.
# Over 200 KiB each time: more than the pipe holds and head reads before it goes (64 KiB and
# 8 KiB), or aisb could write it all and rightly exit 0.
for i in $(seq 8); do
  set +e
  "$AISB" run -- sh -c "seq 1 $((i * 3000 + 40000))" 2> "$E2E_TMP/pipe.err" | head -n 1 > /dev/null
  rc=${PIPESTATUS[0]}
  set -e
  expect_eq "| head, try $i: aisb exits 141" 141 "$rc"
  expect_eq "| head, try $i: nothing on stderr" "" "$(cat "$E2E_TMP/pipe.err")"
  expect_eq "| head, try $i: no sandbox is left" "" "$(our_containers)"
done
