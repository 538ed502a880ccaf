#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# --no-gate leaves DNS open to the sandbox's resolvers (the nameservers of its
# /etc/resolv.conf) and to nothing else: port 53 of any other host is no tunnel out. From
# inside a real sandbox: TCP to the host's own address port 53, where nothing listens, must
# time out (the ruleset drops it) rather than be refused (slirp4netns passed it on and the
# host answered RST); UDP to it must be dropped before it leaves (EPERM), and a listener
# there (bound as root before the test turns into the sandbox user) must receive nothing.
# Name resolution through the sandbox's resolver keeps working.

# Root's part, before lib.sh turns this script into the sandbox user: a UDP listener on the
# host's own address, port 53 (binding it needs root). It counts what it receives into a
# directory the user can read and stops when the user says so, or after ten minutes.
if [ "$(id -u)" -eq 0 ] && [ -z "${1:-}" ]; then
  hostip=$(hostname -I | awk '{print $1}')
  listen=$(mktemp -d /tmp/aisb-e2e-udp53.XXXXXX)
  chmod 755 "$listen"
  chown "${AISB_USER:-aisb}" "$listen"
  python3 - "$hostip" "$listen" <<'PY' &
import os, select, socket, sys, time
addr, d = sys.argv[1], sys.argv[2]
# The other lane's run of this test may still be letting go of the port (its listener ends
# within a poll of being told): a few seconds' retries, then what the bind says.
for attempt in range(50):
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((addr, 53))
        break
    except OSError as e:
        s.close()
        if e.errno != 98 or attempt == 49:
            open(os.path.join(d, "ready"), "w").write("unavailable: %s\n" % e)
            sys.exit(0)
        time.sleep(0.2)
open(os.path.join(d, "received"), "w").close()
open(os.path.join(d, "ready"), "w").write("listening\n")
deadline = time.monotonic() + 600
while time.monotonic() < deadline and not os.path.exists(os.path.join(d, "stop")):
    if select.select([s], [], [], 0.2)[0]:
        data, peer = s.recvfrom(4096)
        with open(os.path.join(d, "received"), "a") as f:
            f.write("%s %d bytes\n" % (peer[0], len(data)))
for name in ("ready", "received", "stop"):
    try:
        os.unlink(os.path.join(d, name))
    except OSError:
        pass
os.rmdir(d)
PY
  for _ in $(seq 150); do [ -s "$listen/ready" ] && break; sleep 0.1; done
  set -- "$listen"
fi
listen=${1:-}

. "$(dirname "$0")/lib.sh"

HOSTIP=$(hostname -I | awk '{print $1}')
[ -n "$HOSTIP" ] || cannot_run "the host has no address (hostname -I)"
getent hosts deb.debian.org >/dev/null || cannot_run "the host itself cannot resolve deb.debian.org"
# Told to stop, the listener lets go of the port and removes its directory: waited for, so
# that the port is free when this test's lock is (the other lane runs this test too).
stop_listener() {
  [ -n "$listen" ] && [ -d "$listen" ] && touch "$listen/stop" 2>/dev/null || return 0
  for _ in $(seq 50); do [ -d "$listen" ] || return 0; sleep 0.1; done
  rm -rf "$listen" 2>/dev/null || true # a listener that could not bind left its reason there
}
trap 'stop_listener; cleanup' EXIT

cat > "$E2E_TMP/project/dns.py" <<'PY'
import errno, socket, sys
hostip = sys.argv[1]
resolvers = [l.split()[1] for l in open("/etc/resolv.conf") if l.startswith("nameserver ")]
query = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x03deb\x06debian\x03org\x00\x00\x01\x00\x01"
def name(e):
    return errno.errorcode.get(e.errno, str(e.errno))
def tcp(addr, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect((addr, port))
        return "connected"
    except socket.timeout:
        return "timeout"
    except OSError as e:
        return name(e)
def udp(addr, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(3)
    try:
        s.connect((addr, port))
        s.send(query)
    except OSError as e:
        return "send-" + name(e)
    try:
        s.recv(512)
        return "answered"
    except socket.timeout:
        return "timeout"
    except OSError as e:
        return "recv-" + name(e)
print("tcp-host-53", tcp(hostip, 53))
print("udp-host-53", udp(hostip, 53))
print("udp-resolver", udp(resolvers[0], 53) if resolvers else "no-resolver")
try:
    print("resolve", "ok" if socket.getaddrinfo("deb.debian.org", 443) else "empty")
except OSError as e:
    print("resolve", "failed", e)
PY
result() { printf '%s\n' "$out" | awk -v k="$1" '$1==k{ $1=""; sub(/^ /,""); print }'; }

# The pinned name is deb.debian.org, which this machine's resolver answers.
out=$("$AISB" run --net allow --no-gate --allow deb.debian.org -- python3 /project/dns.py "$HOST_INSIDE" 2>"$E2E_TMP/err")
expect_eq "TCP to the host's address port 53 is dropped (times out, no RST from the host)" \
  timeout "$(result tcp-host-53)"
expect_eq "UDP to the host's address port 53 is dropped before it leaves" send-EPERM "$(result udp-host-53)"
expect_eq "DNS to the sandbox's resolver is answered" answered "$(result udp-resolver)"
expect_eq "names resolve through the sandbox's resolver with --no-gate" ok "$(result resolve)"
expect_absent "the entrypoint found the resolvers" "no DNS rule" "$(cat "$E2E_TMP/err")"

# The listener on the host's port 53 saw nothing of it.
if [ -n "$listen" ] && grep -q '^listening' "$listen/ready" 2>/dev/null; then
  expect_eq "a listener on the host's address port 53 received nothing" "" "$(cat "$listen/received")"
elif [ "${CI:-}" = true ]; then
  fail "no listener on $HOSTIP:53 to count with: ${listen:+$(cat "$listen/ready" 2>/dev/null)}"
else
  echo "e2e: not checked: a listener on $HOSTIP:53 (needs the test to start as root; ${listen:+$(cat "$listen/ready" 2>/dev/null)})"
fi

# The printers say what the ruleset holds for DNS: resolvers only.
expect_contains "--print-ruleset says where DNS may go" \
  "# udp/tcp dport 53 to each nameserver of /etc/resolv.conf" \
  "$("$AISB" run --net allow --no-gate --allow deb.debian.org --print-ruleset)"
expect_absent "and opens port 53 nowhere else" "	udp dport 53" \
  "$("$AISB" run --net allow --no-gate --allow deb.debian.org --print-ruleset)"
