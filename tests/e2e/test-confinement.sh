#!/usr/bin/env bash
# No capabilities, no-new-privileges, the invoking user's uid, no network with --net none.
. "$(dirname "$0")/lib.sh"

status=$("$AISB" run -- cat /proc/self/status)
for f in CapEff CapPrm CapInh CapAmb; do
  expect_eq "$f is empty" "0000000000000000" "$(printf '%s\n' "$status" | awk -v f="$f:" '$1==f{print $2}')"
done
expect_eq "NoNewPrivs is set" "1" "$(printf '%s\n' "$status" | awk '$1=="NoNewPrivs:"{print $2}')"
expect_eq "the uid is the invoking user's" "$(id -u)" "$("$AISB" run -- id -u)"

out=$("$AISB" run --net none -- sh -c 'ls /sys/class/net')
expect_eq "--net none has only loopback" "lo" "$out"

# A code of the command's own, so that aisb failing (125) cannot pass for the refusal.
set +e
err=$("$AISB" run -- sh -c 'echo x > /etc/passwd-test || exit 42' 2>&1)
rc=$?
set -e
expect_eq "no write to /etc" 42 "$rc"
expect_contains "refused by the read-only root" "Read-only file system" "$err"
