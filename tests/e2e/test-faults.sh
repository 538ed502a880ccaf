#!/usr/bin/env bash
# Faults: the podman service dying mid-attach, eight concurrent runs, kill -9 of aisb.
. "$(dirname "$0")/lib.sh"

"$AISB" build >/dev/null 2>&1

# Eight concurrent runs on one project: all succeed, and no output lands in another's.
pids=()
for i in $(seq 8); do
  "$AISB" run -- sh -c "for k in \$(seq 200); do echo run-$i-line-\$k; done" > "$E2E_TMP/out$i" 2>"$E2E_TMP/err$i" &
  pids+=($!)
done
failed=0 why=
for i in $(seq 8); do
  wait "${pids[$((i - 1))]}" || { failed=$((failed + 1)); why="$why run $i: $(tail -3 "$E2E_TMP/err$i" | tr '\n' ' ')"; }
done
expect_eq "eight concurrent runs all succeed$why" 0 "$failed"
for i in $(seq 8); do
  lines=$(grep -c "^run-$i-line-" "$E2E_TMP/out$i")
  others=$(grep -vc "^run-$i-line-" "$E2E_TMP/out$i" || true)
  [ "$lines" = 200 ] && [ "$others" = 0 ] || fail "run $i: $lines own lines, $others foreign"
done
pass "outputs never mix"

# The service dies mid-attach: a clear error and a non-zero exit, no hang.
"$AISB" run -- sleep 60 </dev/null >"$E2E_TMP/killed.out" 2>"$E2E_TMP/killed.err" &
pid=$!
for _ in $(seq 100); do
  [ -n "$(podman ps --filter "label=aisb.pid=$pid" -q 2>/dev/null)" ] && break
  sleep 0.1
done
pkill -f "podman system service.*$XDG_RUNTIME_DIR/podman/podman.sock" || fail "no service to kill"
start=$(date +%s)
set +e
wait "$pid"
rc=$?
set -e
took=$(( $(date +%s) - start ))
[ "$rc" -ne 0 ] || fail "aisb exited 0 after its service died"
expect_eq "aisb fails with its own exit status" 125 "$rc"
[ "$took" -lt 20 ] || fail "aisb took ${took}s to notice"
pass "and does not hang (${took}s)"
cat "$E2E_TMP/killed.err" >&2
expect_eq "with one clear error line" 1 "$(grep '^aisb: ' "$E2E_TMP/killed.err" | grep -vc 'warning:')"
expect_contains "that names the service" "podman" "$(cat "$E2E_TMP/killed.err")"
# The next command starts a fresh service; clean reclaims the sandbox left behind.
"$AISB" clean >/dev/null
expect_eq "clean reclaims what the dead service left" "" "$(podman ps -a --filter "label=aisb.pid=$pid" -q)"
