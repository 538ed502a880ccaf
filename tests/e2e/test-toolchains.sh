#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Node and Python as users know them, inside the sandbox: node, npm, npx and corepack of the
# one pinned Node release, and python3 with venv and pip. Packages come from stand-in
# registries on the host's loopback (tests/e2e/registries.py), reached through the gate as
# an agent would reach the real ones: no test depends on a public registry.
. "$(dirname "$0")/lib.sh"

python3 "$AISB_SRC/tests/e2e/registries.py" > "$E2E_TMP/port" 2> "$E2E_TMP/requests" &
registries=$!
trap 'kill $registries 2>/dev/null; cleanup' EXIT
for _ in $(seq 50); do [ -s "$E2E_TMP/port" ] && break; sleep 0.1; done
PORT=$(cat "$E2E_TMP/port")
[ -n "$PORT" ] || cannot_run "the stand-in registries did not start"
net="--net allow --allow npm.test:$PORT --allow pypi.test:$PORT
  --gate-add-host npm.test:127.0.0.1 --gate-add-host pypi.test:127.0.0.1"

# The same release everywhere: npm and npx answer, and run on the node beside them.
"$AISB" build --quiet >/dev/null
out=$("$AISB" run -- sh -c 'node --version; npm --version; npx --version; corepack --version' 2>/dev/null)
expect_eq "node, npm, npx and corepack are there, of the pinned release" "v22.21.1
10.9.4
10.9.4
0.34.0" "$out"
# Root owns all of /usr/local: the sandbox's user (whatever its uid) can replace none of it.
expect_eq "nothing under /usr/local belongs to anyone but root" "" \
        "$("$AISB" run -- find /usr/local ! -user 0 2>&1 | head -5)"

# npm install from the registry through the gate, the module used, its bin run by npx.
cat > "$E2E_TMP/project/npm.sh" <<SH
set -e
cd /project && mkdir -p js && cd js
npm init -y >/dev/null
npm install --registry http://npm.test:$PORT/ --no-audit --no-fund aisb-demo >/dev/null 2>&1 || { echo npm-install-failed; exit 1; }
node -e "console.log(require('aisb-demo')())"
npx --no-install aisb-demo
SH
out=$("$AISB" run $net -- sh /project/npm.sh 2>"$E2E_TMP/err") || { cat "$E2E_TMP/err" >&2; fail "npm: $out"; }
expect_eq "npm installs from a registry through the gate, and npx runs its bin" "aisb-demo works
aisb-demo cli: aisb-demo works" "$out"
expect_contains "the registry saw npm fetch the tarball" "/aisb-demo/-/aisb-demo-1.0.0.tgz" "$(cat "$E2E_TMP/requests")"

# python3 -m venv and pip, from an index through the gate.
cat > "$E2E_TMP/project/pip.sh" <<SH
set -e
python3 -m venv /tmp/venv
/tmp/venv/bin/pip install --quiet --disable-pip-version-check --index-url http://pypi.test:$PORT/simple/ --trusted-host pypi.test aisbdemo >/dev/null 2>&1 || { echo pip-install-failed; exit 1; }
/tmp/venv/bin/python -c 'import aisbdemo; print(aisbdemo.hello())'
SH
out=$("$AISB" run $net -- sh /project/pip.sh 2>"$E2E_TMP/err") || { cat "$E2E_TMP/err" >&2; fail "pip: $out"; }
expect_eq "a venv's pip installs from an index through the gate" "aisbdemo works" "$out"
expect_contains "the index saw pip fetch the wheel" "/packages/aisbdemo-1.0-py3-none-any.whl" "$(cat "$E2E_TMP/requests")"

gate=$("$AISB" run $net --print-policy | sed -n 's/^gate=//p')
podman rm -f "aisb-gate-$gate" >/dev/null 2>&1 || true
