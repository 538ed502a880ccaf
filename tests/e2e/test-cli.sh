#!/usr/bin/env bash
# The command line: harness argument splitting, --strict-args, --print-policy, bad input.
. "$(dirname "$0")/lib.sh"

pol=$("$AISB" run --memory 2g --print-policy --model gpt -p hello)
expect_contains "unknown flags go to the harness" "command=pi --model gpt -p hello" "$pol"
expect_contains "sandbox flags before them apply" "memory=2g" "$pol"
pol=$("$AISB" run --print-policy -- ls -la)
expect_contains "-- replaces the command" "command=ls -la" "$pol"
pol=$("$AISB" run --print-policy --shell)
expect_contains "--shell runs bash" "command=bash" "$pol"

set +e
err=$("$AISB" run --strict-args --model gpt 2>&1)
rc=$?
set -e
expect_eq "--strict-args makes an unknown flag an error" 2 "$rc"
expect_contains "naming it" "--model" "$err"

set +e
err=$("$AISB" run --memory lots -- true 2>&1); rc=$?
set -e
expect_eq "a bad value is a usage error" 2 "$rc"
expect_eq "on one line" 1 "$(printf '%s\n' "$err" | wc -l)"

# No registry answers for a base image: the error says what to use instead (.invalid never
# resolves, on any machine).
set +e
err=$("$AISB" build --quiet --base-image registry.invalid/aisb/none:1 2>&1); rc=$?
set -e
expect_eq "an unreachable registry fails the build" 125 "$rc"
expect_contains "and names the bootstrapped base as the way forward" "use --base-image bootstrap:debian:trixie" "$err"

# Run in the home directory: the whole home would be the sandbox's. Refused, saying what to do.
set +e
err=$(cd "$HOME" && "$AISB" run -- true 2>&1); rc=$?
set -e
expect_eq "a run whose project would be the home directory is refused" 2 "$rc"
expect_contains "saying why and what to do" "the project would be $(cd "$HOME" && pwd -P), your home" "$err"

# Host facts podman repeats on every run (cgroup v1: caps not enforced) are shown only when
# asked: doctor says them once.
if [ ! -f /sys/fs/cgroup/cgroup.controllers ]; then
  expect_absent "podman's per-run host warning is not shown by default" "Resource limits" "$("$AISB" run -- true 2>&1)"
  expect_contains "--verbose shows it" "podman: Resource limits are not supported" "$("$AISB" run --verbose -- true 2>&1)"
else
  echo "e2e: cgroup v2 here: podman has no per-run warning about caps to hide"
fi

echo "memory = 3g" > "$XDG_CONFIG_HOME/ai-sandbox/config.extra"
cat "$XDG_CONFIG_HOME/ai-sandbox/config" >> "$XDG_CONFIG_HOME/ai-sandbox/config.extra"
pol=$("$AISB" run --config "$XDG_CONFIG_HOME/ai-sandbox/config.extra" --print-policy -- true)
expect_contains "the config file sets defaults" "memory=3g" "$pol"
pol=$("$AISB" run --config "$XDG_CONFIG_HOME/ai-sandbox/config.extra" --memory 1g --print-policy -- true)
expect_contains "flags override the config" "memory=1g" "$pol"
echo "nonsense line" >> "$XDG_CONFIG_HOME/ai-sandbox/config"
set +e
err=$("$AISB" run --print-policy 2>&1); rc=$?
set -e
expect_eq "a broken config is a usage error" 2 "$rc"
expect_contains "with file and line" "config:" "$err"

expect_contains "--version" 'aisb ' "$("$AISB" --version)"
expect_contains "run --help lists options" '--strict-args' "$("$AISB" run --help)"
pass "--version and --help"
