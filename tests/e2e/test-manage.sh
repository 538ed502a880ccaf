#!/usr/bin/env bash
# ps, clean and log: what runs, what is left over (and only ours), what ran.
. "$(dirname "$0")/lib.sh"

image=$("$AISB" build 2>/dev/null)

"$AISB" run -- sleep 60 </dev/null >/dev/null 2>&1 &
pid=$!
for _ in $(seq 100); do
  [ -n "$(podman ps --filter "label=aisb.pid=$pid" -q)" ] && break
  sleep 0.1
done
name=$(podman ps --filter "label=aisb.pid=$pid" --format '{{.Names}}')
[ -n "$name" ] || fail "the sandbox never started"
ps_out=$("$AISB" ps)
expect_contains "ps lists the running sandbox" "$name" "$ps_out"
expect_contains "with its project" "$E2E_TMP/project" "$(printf '%s\n' "$ps_out" | grep "$name")"
json=$("$AISB" ps --json | grep "\"$name\"")
expect_contains "ps --json has the net mode" '"net":"none"' "$json"
expect_contains "and the state" '"state":"running"' "$json"

# kill -9: aisb cannot clean up, so the sandbox is an orphan; clean reclaims it.
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
expect_contains "ps marks it orphaned" "orphaned" "$("$AISB" ps | grep "$name")"

# Foreign things: a container and volumes that are not ours, even with aisb-like names.
podman create --name "foreign-$$" "$image" true >/dev/null
podman volume create "foreign-vol-$$" >/dev/null
podman volume create "aisb-e2e-inuse-$$" >/dev/null
podman create --name "foreign-user-$$" -v "aisb-e2e-inuse-$$:/x" "$image" true >/dev/null
podman volume create "aisb-e2e-stale-$$" >/dev/null

dry=$("$AISB" clean --volumes="aisb-e2e-*-$$" --dry-run)
expect_contains "clean --dry-run names the orphan" "would remove sandbox $name" "$dry"
[ -n "$(podman ps -a --filter "name=^$name\$" -q)" ] || fail "--dry-run removed something"
pass "--dry-run removes nothing"

out=$("$AISB" clean --volumes="aisb-e2e-*-$$")
expect_contains "clean removes the orphan" "removed sandbox $name" "$out"
expect_eq "it is gone" "" "$(podman ps -a --filter "name=^$name\$" -q)"
expect_contains "clean removes an unused aisb- volume" "removed volume aisb-e2e-stale-$$" "$out"
podman container exists "foreign-$$" || fail "clean removed a foreign container"
pass "a foreign container is left alone"
podman volume exists "foreign-vol-$$" || fail "clean removed a foreign volume"
pass "a foreign volume is left alone"
podman volume exists "aisb-e2e-inuse-$$" || fail "clean removed a volume a container uses"
pass "a volume in use is left alone"
podman image exists "$image" || fail "clean removed the image the next run needs"
pass "the current image is kept"
podman rm -f "foreign-$$" "foreign-user-$$" >/dev/null
podman volume rm -f "foreign-vol-$$" "aisb-e2e-inuse-$$" >/dev/null

# The session log: the run, its exit code, the names it was given, never a value.
secret=log-secret-$RANDOM-$RANDOM
AISB_E2E_LOGGED=$secret "$AISB" run --env AISB_E2E_LOGGED -- sh -c 'exit 3' || true
last=$("$AISB" log -n 1 --json)
expect_contains "log records the run's exit code" '"exit":3' "$last"
expect_contains "and the env names" '"AISB_E2E_LOGGED"' "$last"
expect_contains "and the project" "$E2E_TMP/project" "$last"
expect_absent "never the secret" "$secret" "$("$AISB" log -n 1000 --json)"
expect_contains "log prints a readable line" "exit=3" "$("$AISB" log -n 1)"
