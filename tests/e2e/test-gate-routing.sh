#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Where a request inside a connection the gate opened really goes: down the server connection
# its CONNECT named, whatever the client wrote inside. squid builds each such request's URL
# from what the client wrote (Host, or an absolute-form target), so a request naming the
# secret's host on a tunnel to a server the agent runs would get the value added and go to
# that server; one naming a plain listed host on a tunnel to a host with rules would skip its
# rules. From inside real sandboxes, with a raw client (tunnel-client.py) that says one thing
# in its CONNECT and another inside: each shape is refused, and the stand-ins' records show
# where every request went. The stand-in on 127.0.0.2 plays the agent's server on a listed
# name: its certificate is also valid for the secret's host and the host with rules, as a
# front end serving many names is.
#
# Also: TRACE refused where a secret or a rule is (it echoes the added header); Node and npm
# over plain HTTP in a run whose gate opens TLS (Node sends plain HTTP through a CONNECT).
. "$(dirname "$0")/lib.sh"

https_stub_start
ca=$AISB_SRC/tests/e2e/tls/ca.pem
names=(--gate-add-host api.stub.test:127.0.0.1 --gate-add-host other.stub.test:127.0.0.2
  --gate-add-host rules.stub.test:127.0.0.1)
cp "$AISB_SRC/tests/e2e/tunnel-client.py" "$E2E_TMP/project/"
export STUB_KEY=real-routing-secret-$$
real=$STUB_KEY
# What reached the stand-ins: "ADDRESS METHOD PATH HOST CREDENTIAL" a request, CREDENTIAL
# "value" when it carried the real value, else what it carried ("-": nothing).
records() { python3 -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    creds = r["authorization"] + r["x-api-key"]
    c = "value" if any(sys.argv[2] in v for v in creds) else (" ".join(creds).replace(" ", "_") or "-")
    print(r["addr"], r["method"], r["path"], r["host"], c)' "$E2E_TMP/requests" "$real"; }
reached() { records | awk -v p="$1" '$3 == p' ; }

"$AISB" build --quiet --ca-cert "$ca" >/dev/null

# 1. A secret held for api.stub.test; other.stub.test is listed, and is the agent's.
A=api.stub.test:$TLS O=other.stub.test:$TLS
secret=(--ca-cert "$ca" --net allow --secret STUB_KEY@api.stub.test --allow "$A" --allow "$O"
  --allow "other.stub.test:$PLAIN" "${names[@]}")
out=$("$AISB" run "${secret[@]}" -- sh -c "
  c='python3 /project/tunnel-client.py'
  \$c first $O rules.stub.test 'POST /first $A'
  \$c later $A api.stub.test 'GET /later-own $A' 'POST /later $O'
  \$c own $O rules.stub.test 'GET /own $O'
  \$c port $O rules.stub.test 'POST /port other.stub.test:$PLAIN'
  \$c noport $O rules.stub.test 'POST /noport api.stub.test'
  \$c absolute $O rules.stub.test 'POST https://$A/absolute $O'
  \$c spliced $O other.stub.test 'POST /spliced $A'
  \$c nosni $A - 'GET /nosni-own $A' 'GET /nosni-other $O'
  \$c hello $A other.stub.test 'GET /hello $A'
  \$c inner $A api.stub.test 'CONNECT $O $O'
  \$c trace $A api.stub.test 'TRACE /trace $A'
  \$c case $A API.Stub.Test 'GET /case $A'
  node -e \"fetch('http://other.stub.test:$PLAIN/node-plain').then(r => r.text()).then(t => console.log('node', t.trim()),
    e => console.log('node failed', e.cause && e.cause.code))\"
  npm view aisb-routing-probe --registry http://other.stub.test:$PLAIN/ >/dev/null 2>&1; echo npm=\$?
  " 2>"$E2E_TMP/err") || { cat "$E2E_TMP/err" >&2; fail "the secret run: $out"; }
verdict() { printf '%s\n' "$out" | awk -v l="$1" '$1 == l {print $2, $3}'; }
astray="403 ERR_AISB_ASTRAY"
expect_eq "a request naming the secret's host on a tunnel to another listed host is refused" "$astray" "$(verdict first.0)"
expect_eq "(control: a request to where its connection goes passes)" "200 -" "$(verdict later.0)"
expect_eq "and a later request on the same connection naming another host is refused" "$astray" "$(verdict later.1)"
expect_eq "on a tunnel whose hello named another server, even one naming the tunnel's host is refused" \
  "$astray" "$(verdict own.0)"
expect_eq "a Host with the tunnel's name and another port is refused" "$astray" "$(verdict port.0)"
expect_eq "a Host naming the secret's host without a port is refused" "$astray" "$(verdict noport.0)"
expect_eq "an absolute-form target naming the secret's host is refused" "$astray" "$(verdict absolute.0)"
expect_eq "a tunnel whose hello names its own listed host is not opened (the request goes unread)" "200 -" \
  "$(verdict spliced.0)"
expect_eq "no server name in the hello: the tunnel's own host passes" "200 -" "$(verdict nosni.0)"
expect_eq "and another host named inside is refused" "$astray" "$(verdict nosni.1)"
expect_eq "a hello naming another server than the tunnel's is refused" "$astray" "$(verdict hello.0)"
expect_eq "a CONNECT inside an opened connection is refused" "$astray" "$(verdict inner.0)"
expect_eq "TRACE to the secret's host is refused" "403 ERR_AISB_TRACE" "$(verdict trace.0)"
expect_eq "the hello's name in another case is the same host" "200 -" "$(verdict case.0)"
for p in /first /later /own /port /noport /absolute /nosni-other /hello /trace; do
  expect_eq "nothing of $p reached any server" "" "$(reached "$p")"
done
expect_eq "the unread request reached the agent's server, with the placeholder only" \
  "127.0.0.2 POST /spliced $A Bearer_aisb-secret-" "$(reached /spliced | sed 's/\(aisb-secret-\)[0-9a-f]*$/\1/')"
expect_eq "the value went to the secret's host's address, named so, and nowhere else" \
  "127.0.0.1 api.stub.test:$TLS" "$(records | awk '$5 == "value" {print $1, $4}' | sort -u)"
expect_eq "(it did go there: the passing requests)" "/case /later-own /nosni-own" \
  "$(records | awk '$5 == "value" {print $3}' | sort | tr '\n' ' ' | sed 's/ $//')"
expect_contains "Node's fetch over plain HTTP passes the gate" "node stub GET /node-plain" "$out"
expect_contains "npm over plain HTTP reaches the registry through the gate" "127.0.0.2 GET /aisb-routing-probe" "$(records)"
expect_absent "the value is in nothing the sandbox read" "$real" "$out"

# 2. Rules on rules.stub.test (the same front end as other.stub.test, the agent's).
R=rules.stub.test:$TLS
rules=(--ca-cert "$ca" --net allow --allow "$R GET /allowed/" --allow "$O"
  --allow "rules.stub.test:$PLAIN /allowed/" "${names[@]}")
out=$("$AISB" run "${rules[@]}" -- sh -c "
  c='python3 /project/tunnel-client.py'
  \$c rule-own $R rules.stub.test 'GET /allowed/own $R'
  \$c bypass $R rules.stub.test 'DELETE /bypass $O'
  \$c carry $O api.stub.test 'GET /allowed/carry $R'
  printf 'trace %s\n' \$(curl -s -o /dev/null -X TRACE -w '%{http_code}' http://rules.stub.test:$PLAIN/allowed/trace)
  printf 'plain %s\n' \$(curl -s -o /dev/null -w '%{http_code}' http://rules.stub.test:$PLAIN/allowed/plain)
  printf 'body %s\n' \$(curl -s -o /dev/null -w '%{http_code}' -X GET --data 'DELETE /other HTTP/1.1' https://$R/allowed/body)
  printf 'nul %s\n' \$(curl -s --path-as-is -o /dev/null -w '%{http_code}' https://$R/allowed/..%00/other)
  printf 'override %s\n' \$(curl -s -o /dev/null -w '%{http_code}' -H 'X-Original-URL: /other' \
    -H 'X-Rewrite-URL: /other' https://$R/allowed/override)
  node -e \"fetch('http://rules.stub.test:$PLAIN/allowed/node').then(r => r.text()).then(t => console.log('node', t.trim()),
    e => console.log('node failed', e.cause && e.cause.code))\"
  curl -s -o /dev/null https://192.168.1.10:22/ || true
  " 2>"$E2E_TMP/err") || { cat "$E2E_TMP/err" >&2; fail "the rules run: $out"; }
expect_eq "(control: an allowed request on the rule host's own tunnel passes)" "200 -" "$(verdict rule-own.0)"
expect_eq "a request naming a plain listed host on the rule host's tunnel is refused" "$astray" "$(verdict bypass.0)"
expect_eq "a request naming the rule host on another host's tunnel is refused" "$astray" "$(verdict carry.0)"
expect_eq "(neither reached a server)" "" "$(reached /bypass)$(reached /allowed/carry)"
expect_contains "TRACE to a host whose rule names only paths is refused" "trace 403" "$out"
expect_eq "(and reached nothing)" "" "$(reached /allowed/trace)"
expect_contains "(control: plain HTTP sent to the gate as such is checked and passes)" "plain 200" "$out"
expect_contains "a GET with a body (a second request to a server that ignores its length) is refused" "body 403" "$out"
expect_contains "a %00 hiding a dot segment is refused" "nul 403" "$out"
expect_eq "(neither reached a server)" "" "$(reached /allowed/body)$(grep -F '%00' "$E2E_TMP/requests" || true)"
expect_contains "a request with path-override headers passes" "override 200" "$out"
expect_eq "without them" "[]" "$(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["path"] == "/allowed/override":
        print([h for h in r["headers"] if h in ("x-original-url", "x-rewrite-url")])' "$E2E_TMP/requests")"
expect_contains "Node's plain HTTP to a host with rules, through a CONNECT the gate cannot read, is refused" \
  "node failed UND_ERR_SOCKET" "$out"
expect_eq "(and reached nothing)" "" "$(reached /allowed/node)"

# Learn, then lock: an address the gate refused is shown, never proposed, never written (as an
# allowlist entry it would be a rule straight to it, past the gate).
allow_out=$("$AISB" allow 2>&1)
expect_contains "aisb allow shows the refused address as not proposed" "# not proposed: 192.168.1.10:22" "$allow_out"
expect_absent "and proposes no address" "
192.168.1.10" "$allow_out"
"$AISB" allow --write user >/dev/null 2>&1 || true
expect_absent "--write user writes no address" "192.168.1.10" "$(cat "$XDG_CONFIG_HOME/ai-sandbox/allow" 2>/dev/null)"
