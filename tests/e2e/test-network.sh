#!/usr/bin/env bash
# The network modes against real traffic, nothing leaving this machine: test servers on the
# host's loopback (and one on its own address), names given to the gate with
# --gate-add-host, and each way out tried from inside a sandbox.
. "$(dirname "$0")/lib.sh"

openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=allowed.test -days 1 \
  -addext subjectAltName=DNS:allowed.test -keyout "$E2E_TMP/key.pem" -out "$E2E_TMP/cert.pem" 2>/dev/null
python3 "$AISB_SRC/tests/e2e/servers.py" "$E2E_TMP/cert.pem" "$E2E_TMP/key.pem" > "$E2E_TMP/ports" &
servers=$!
trap 'kill $servers 2>/dev/null; cleanup' EXIT
for _ in $(seq 50); do grep -q '^ready' "$E2E_TMP/ports" 2>/dev/null && break; sleep 0.1; done
port() { awk -v n="$1" '$1==n{print $2}' "$E2E_TMP/ports"; }
HTTP=$(port http) TLS=$(port tls) OTHER=$(port other) WIDE=$(port wide) WIDE2=$(port wide2)
HOSTIP=$(hostname -I | awk '{print $1}')
[ -n "$HTTP" ] && [ -n "$HOSTIP" ] || cannot_run "test servers did not start"

# A distinct allowlist per test run, so this test starts its own gate.
names="--gate-add-host allowed.test:127.0.0.1 --gate-add-host denied.test:127.0.0.1
  --gate-add-host badallowed.test:127.0.0.1 --gate-add-host e2e-$$.allowed.test:127.0.0.1"
allow="--net allow --allow allowed.test:$HTTP --allow allowed.test:$TLS $names"

cat > "$E2E_TMP/project/probe.sh" <<PROBE
set -u
code() { curl -s -o /dev/null -m 5 -w '%{http_code}' "\$@"; echo; }
echo "http-allowed \$(curl -s -m 5 http://allowed.test:$HTTP/)"
echo "https-allowed \$(curl -s -m 5 --cacert /project/cert.pem https://allowed.test:$TLS/)"
echo "sub-allowed \$(curl -s -m 5 http://e2e-$$.allowed.test:$HTTP/)"
echo "denied \$(code http://denied.test:$HTTP/)"
echo "suffix-trick \$(code http://badallowed.test:$HTTP/)"
echo "other-port \$(code http://allowed.test:$OTHER/)"
echo "connect-other-port \$(curl -s -o /dev/null -m 5 -w '%{http_connect}' -p http://allowed.test:$OTHER/)"
echo "ip-literal \$(code -x http://10.0.2.2:\$(echo \$http_proxy | sed 's/.*://') http://$HOSTIP:$WIDE/)"
echo "direct \$(curl -s -m 5 --noproxy '*' http://10.0.2.2:$HTTP/ || echo failed)"
echo "direct-other \$(curl -s -m 5 --noproxy '*' http://10.0.2.2:$OTHER/ || echo failed)"
echo "direct-hostip \$(curl -s -m 5 --noproxy '*' http://$HOST_INSIDE:$WIDE/ || echo failed)"
PROBE
cp "$E2E_TMP/cert.pem" "$E2E_TMP/project/cert.pem"

out=$("$AISB" run $allow -- bash /project/probe.sh 2>"$E2E_TMP/err")
result() { printf '%s\n' "$out" | awk -v k="$1" '$1==k{ $1=""; sub(/^ /,""); print }'; }
expect_eq "an allowlisted name works over HTTP through the gate" "server:http" "$(result http-allowed)"
expect_eq "and over CONNECT (https)" "server:tls" "$(result https-allowed)"
expect_eq "a name below an allowlisted one works" "server:http" "$(result sub-allowed)"
expect_eq "a non-listed name is refused by the gate" 403 "$(result denied)"
expect_eq "a suffix trick (badallowed.test) is refused" 403 "$(result suffix-trick)"
expect_eq "another port of a listed name is refused" 403 "$(result other-port)"
expect_eq "CONNECT to another port of a listed name is refused" 403 "$(result connect-other-port)"
expect_eq "an IP literal is refused" 403 "$(result ip-literal)"
expect_eq "without the proxy, the server's address is unreachable" failed "$(result direct)"
expect_eq "other host loopback ports are unreachable" failed "$(result direct-other)"
expect_eq "the host's own address is unreachable" failed "$(result direct-hostip)"
expect_contains "the run sums up its egress" "egress: 3 allowed, 5 denied" "$(cat "$E2E_TMP/err")"
expect_contains "and names what was denied" "denied.test" "$(cat "$E2E_TMP/err")"

# Everything that is not TCP to the gate: UDP, ICMP, IPv6, DNS to any resolver.
cat > "$E2E_TMP/project/lowlevel.py" <<'PY'
import socket, struct, sys
def attempt(name, fn):
    try:
        fn()
        print(name, "OPEN")
    except OSError:
        print(name, "blocked")
def udp(addr):
    def f():
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(3)
        query = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01"
        s.sendto(query, (addr, 53))
        s.recvfrom(512)
    return f
def tcp(addr, port):
    def f():
        socket.create_connection((addr, port), timeout=3).close()
    return f
def icmp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)
    s.settimeout(3)
    s.sendto(b"\x08\x00\xf7\xff\x00\x00\x00\x00", ("10.0.2.2", 0))
    s.recvfrom(64)
def ipv6():
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect(("fd00::2", 80))
attempt("dns-udp-slirp", udp("10.0.2.3"))
attempt("dns-tcp-slirp", tcp("10.0.2.3", 53))
attempt("dns-udp-host", udp("10.0.2.2"))
attempt("dns-udp-public", udp(sys.argv[1]))
attempt("dns-udp-pasta", udp("169.254.1.1"))
attempt("icmp", icmp)
attempt("ipv6", ipv6)
attempt("raw", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
try:
    socket.getaddrinfo("example.com", 80)
    print("resolver OPEN")
except OSError:
    print("resolver blocked")
PY
out=$("$AISB" run $allow -- python3 /project/lowlevel.py "$HOST_INSIDE" 2>/dev/null)
for probe in dns-udp-slirp dns-tcp-slirp dns-udp-host dns-udp-public dns-udp-pasta icmp ipv6 raw resolver; do
  expect_eq "$probe is blocked" blocked "$(result "$probe")"
done

# --net full reaches the server directly; --net none has only loopback.
out=$("$AISB" run --net full -- curl -s -m 5 "http://$HOST_INSIDE:$WIDE/" 2>/dev/null)
expect_eq "--net full reaches the test server directly" "server:wide" "$out"
out=$("$AISB" run --net none -- ls /sys/class/net)
expect_eq "--net none has only loopback" lo "$out"

# --no-gate: a pinned address entry and nothing else.
out=$("$AISB" run --net allow --no-gate --allow "$HOST_INSIDE:$WIDE" $HOST_INSIDE_FLAG -- sh -c \
  "curl -s -m 5 http://$HOST_INSIDE:$WIDE/; curl -s -m 5 http://$HOST_INSIDE:$WIDE2/ || echo failed; env | grep -ci proxy || true" 2>/dev/null)
expect_eq "--no-gate reaches the pinned entry, nothing else, with no proxy set" "server:wide
failed
0" "$out"

# --proxy: a proxy the user runs (here: the gate started above) and only it.
gate_hash=$("$AISB" run $allow --print-policy | sed -n 's/^gate=//p')
gate_port=$(podman ps --filter "label=aisb.gate=$gate_hash" --format '{{index .Labels "aisb.gate.port"}}')
[ -n "$gate_port" ] || fail "no running gate to use as a proxy"
out=$("$AISB" run --net allow --proxy "127.0.0.1:$gate_port" -- sh -c \
  "curl -s -m 5 http://allowed.test:$HTTP/; curl -s -m 5 --noproxy '*' http://10.0.2.2:$HTTP/ || echo failed" 2>/dev/null)
expect_eq "--proxy goes through that proxy and nowhere else" "server:http
failed" "$out"

# An empty allowlist in allow mode is an error before anything starts.
before=$(podman ps -a -q | wc -l)
set +e
err=$("$AISB" run --net allow -- true 2>&1); rc=$?
set -e
expect_eq "an empty allowlist is refused" 2 "$rc"
expect_contains "saying what to do" "--allow" "$err"
expect_eq "before anything starts" "$before" "$(podman ps -a -q | wc -l)"

# The gate dies mid-run: the next request fails instead of going around it.
rm -f "$E2E_TMP/project/ready" "$E2E_TMP/project/go"
"$AISB" run $allow -- sh -c "curl -s -m 5 http://allowed.test:$HTTP/; touch /project/ready;
  while [ ! -e /project/go ]; do sleep 0.1; done;
  curl -s -m 5 http://allowed.test:$HTTP/ || echo failed-closed" > "$E2E_TMP/killed" 2>/dev/null &
run=$!
for _ in $(seq 300); do [ -e "$E2E_TMP/project/ready" ] && break; sleep 0.1; done
podman kill "aisb-gate-$gate_hash" >/dev/null
touch "$E2E_TMP/project/go"
wait "$run" || true
expect_eq "killing the gate makes the next request fail, not bypass" "server:http
failed-closed" "$(cat "$E2E_TMP/killed")"
out=$("$AISB" run $allow -- curl -s -m 5 "http://allowed.test:$HTTP/" 2>"$E2E_TMP/err")
expect_eq "the next run restarts the gate" "server:http" "$out"
expect_contains "and says so" "gate" "$(cat "$E2E_TMP/err")"

# Concurrent runs with a new allowlist start one gate between them.
fresh="--net allow --allow allowed.test:$HTTP --gate-add-host allowed.test:127.0.0.1 --gate-add-host concurrent-$$.test:127.0.0.1"
pids=()
for i in 1 2 3; do
  "$AISB" run $fresh -- curl -s -m 5 "http://allowed.test:$HTTP/" > "$E2E_TMP/c$i" 2>/dev/null &
  pids+=($!)
done
wait "${pids[@]}"
for i in 1 2 3; do expect_eq "concurrent run $i works" server:http "$(cat "$E2E_TMP/c$i")"; done
hash=$("$AISB" run $fresh --print-policy | sed -n 's/^gate=//p')
count=$(podman ps -a --filter "label=aisb.gate=$hash" -q | wc -l)
expect_eq "one gate for the three" 1 "$count"

# aisb gate: status lists it, logs show its requests, down removes it, up starts it again.
expect_contains "gate status lists the gate as up" "aisb-gate-$hash" "$("$AISB" gate status | grep ' up$')"
expect_contains "gate status --json" "\"policy\":\"$hash\"" "$("$AISB" gate status --json)"
expect_contains "gate logs shows the requests" "allowed.test:$HTTP" "$("$AISB" gate logs -n 5 $fresh)"
"$AISB" gate down $fresh
expect_absent "gate down removes it" "aisb-gate-$hash" "$("$AISB" gate status)"
up=$("$AISB" gate up $fresh 2>/dev/null)
expect_contains "gate up starts it again" "aisb-gate-$hash 127.0.0.1:" "$up"
set +e
"$AISB" gate up --allow 10.1.2.3 >/dev/null 2>&1; rc=$?
set -e
expect_eq "gate up without a domain is a usage error" 2 "$rc"

# Tidy: the gates this test started.
podman rm -f "aisb-gate-$gate_hash" "aisb-gate-$hash" >/dev/null 2>&1 || true
