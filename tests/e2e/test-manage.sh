#!/usr/bin/env bash
# ps, clean and log: what runs, what is left over (and only ours), what ran; a killed run's
# gate and its secret, reclaimed by clean.
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

# A run with a secret killed with -9: its own gate keeps refusing everything, with the value
# in its squid.conf, until something removes it. aisb clean does, plain or --all, and a clean
# also wipes the state of a gate removed behind aisb's back: after each, no file under the
# state directory holds the value.
export MANAGE_KEY=manage-secret-$$-$RANDOM
secret_run=(--net allow --secret MANAGE_KEY@api.stub.test --gate-add-host api.stub.test:127.0.0.1)
state=$HOME/.local/state/ai-sandbox
killed_gate() { # starts a run with the secret, kills its aisb, prints the run's gate
  local before pid g=
  before=$(podman ps -a --filter label=aisb.gate.run=true --format '{{.Names}}' | sort)
  "$AISB" run "${secret_run[@]}" -- sleep 120 </dev/null >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 150); do
    g=$(podman ps --filter label=aisb.gate.run=true --format '{{.Names}}' | sort |
      comm -13 <(printf '%s\n' "$before") - | grep . || true)
    [ -n "$g" ] && [ -n "$(podman ps --filter "label=aisb.pid=$pid" -q)" ] && break
    sleep 0.2
  done
  kill -9 "$pid"
  wait "$pid" 2>/dev/null || true
  printf '%s\n' "$g"
}
# A clean removes the images nothing uses, the gate's once its gate is gone: containers of
# podman's own keep them, for the next round and the tests after this one (an image in use is
# left, with a warning).
g=$(killed_gate)
podman rm -f "$g" >/dev/null
keepers=()
for img in $(podman images --format '{{.Repository}}:{{.Tag}}' | grep '^localhost/aisb'); do
  keepers+=("$(podman create "$img" true)")
done
trap 'podman rm -f "${keepers[@]}" >/dev/null 2>&1; cleanup' EXIT
for how in plain behind all; do
  g=$(killed_gate)
  [ -n "$g" ] || fail "$how: the run's gate did not start"
  [ -n "$(grep -rsl "$MANAGE_KEY" "$state" || true)" ] || fail "$how: control: the killed run's gate holds no value"
  case $how in
    plain) out=$("$AISB" clean 2>/dev/null) ;;
    all) out=$("$AISB" clean --all 2>/dev/null) ;;
    behind) podman rm -f "$g" >/dev/null; out=$("$AISB" clean 2>/dev/null) ;;
  esac
  expect_eq "$how: the killed run's gate is gone" gone "$(podman inspect -f '{{.State.Status}}' "$g" 2>/dev/null || echo gone)"
  expect_contains "$how: clean says its state is wiped" "removed gate-state $state/gates/${g#aisb-gate-}" "$out"
  expect_eq "$how: no file under the state directory holds the value" "" "$(grep -rsl "$MANAGE_KEY" "$state" || true)"
done
podman rm -f "${keepers[@]}" >/dev/null
