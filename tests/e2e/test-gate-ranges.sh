#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What the gate lets a listed name reach, and how a run counts what it did.
#
# 1. The gate runs on the host's network, so a listed name that resolves to a private
#    address or to one of the host's own addresses would reach the host's surroundings or
#    its services. This machine's resolver answers only a few public names, so no name can be
#    pointed there through DNS here; the test works at squid's level instead, which answers
#    its dst ACL the same way for a name from its hosts_file as for one from DNS. It runs the
#    real gate image with the configuration the library generates (aisb-test-squid-config)
#    and a hosts file of its own that maps listed names to a private address and to the
#    host's own address, where a test server listens, neither name exempt: both refused
#    (403). A name mapped to 127.0.0.1 that is exempt, as --gate-add-host makes it, works.
# 2. A run through a real gate counts a request the gate let through but that failed (the
#    listed name on a port where nothing listens) as failed, neither allowed nor denied.
. "$(dirname "$0")/lib.sh"

openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=allowed.test -days 1 \
  -keyout "$E2E_TMP/key.pem" -out "$E2E_TMP/cert.pem" 2>/dev/null
python3 "$AISB_SRC/tests/e2e/servers.py" "$E2E_TMP/cert.pem" "$E2E_TMP/key.pem" "$E2E_TMP/requests" \
  > "$E2E_TMP/ports" &
servers=$!
squid_name=aisb-e2e-gate-ranges-$$
trap 'kill $servers 2>/dev/null; podman rm -f "$squid_name" >/dev/null 2>&1; cleanup' EXIT
for _ in $(seq 50); do grep -q '^ready' "$E2E_TMP/ports" 2>/dev/null && break; sleep 0.1; done
port() { awk -v n="$1" '$1==n{print $2}' "$E2E_TMP/ports"; }
HTTP=$(port http) WIDE=$(port wide)
HOSTIP=$(hostname -I | awk '{print $1}')
[ -n "$HTTP" ] && [ -n "$WIDE" ] && [ -n "$HOSTIP" ] || cannot_run "test servers did not start"
: > "$E2E_TMP/requests"
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
TOOL=$AISB_BUILD/tests/e2e/aisb-test-squid-config
[ -x "$TOOL" ] || cannot_run "$TOOL is not built"

# The gate image this aisb builds, found through a gate of its own (built if it is missing).
probe="--net allow --allow gate-ranges-$$.test --gate-add-host gate-ranges-$$.test:127.0.0.1"
"$AISB" gate up $probe >/dev/null
hash=$("$AISB" run $probe --print-policy | sed -n 's/^gate=//p')
image=$(podman inspect "aisb-gate-$hash" --format '{{.ImageName}}')
"$AISB" gate down $probe
[ -n "$image" ] || fail "no gate image"

# The gate's configuration as the library writes it, with this host's addresses; the hosts
# file maps the names (in a real gate only --gate-add-host names are in it, and exempt).
dir=$E2E_TMP/gate
mkdir -p "$dir"
gate_port=$(free_port)
host_addresses=()
for a in $(hostname -I); do host_addresses+=(--host-address "$a"); done
"$TOOL" --port "$gate_port" --allow "private.test:$WIDE" --allow "hostaddr.test:$WIDE" \
  --allow "control.test:$HTTP" --add-host control.test:127.0.0.1 "${host_addresses[@]}" \
  --hosts-file /aisb-gate/hosts --access-log /aisb-gate/access.log --cache-log /aisb-gate/cache.log \
  > "$dir/squid.conf"
printf '10.213.0.1 private.test\n%s hostaddr.test\n127.0.0.1 control.test\n' "$HOSTIP" > "$dir/hosts"
tmpfs=()
for t in /run /tmp /var/tmp /var/spool/squid /var/log/squid /var/cache/squid; do
  tmpfs+=(--tmpfs "$t:size=16m,mode=1777")
done
podman run -d --name "$squid_name" --network host --userns keep-id --user "$(id -u):$(id -g)" \
  --cap-drop ALL --security-opt no-new-privileges --read-only -v "$dir:/aisb-gate:rw" "${tmpfs[@]}" \
  "$image" squid -N -f /aisb-gate/squid.conf >/dev/null
for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$gate_port") 2>/dev/null && break; sleep 0.1; done
(exec 3<>"/dev/tcp/127.0.0.1/$gate_port") 2>/dev/null || fail "squid did not start: $(cat "$dir/cache.log" 2>/dev/null)"

code() { curl -s -o /dev/null -m 10 -w '%{http_code}' -x "http://127.0.0.1:$gate_port" "$@"; }
expect_eq "a listed name resolving to a private address is refused" 403 "$(code "http://private.test:$WIDE/")"
expect_eq "a listed name resolving to the host's own address is refused" 403 "$(code "http://hostaddr.test:$WIDE/")"
expect_eq "also over CONNECT" 403 \
  "$(curl -s -o /dev/null -m 10 -w '%{http_connect}' -p -x "http://127.0.0.1:$gate_port" "http://hostaddr.test:$WIDE/")"
expect_eq "the host's server received nothing" "" "$(cat "$E2E_TMP/requests")"
expect_eq "a name mapped on purpose (exempt) reaches 127.0.0.1" server:http \
  "$(curl -s -m 10 -x "http://127.0.0.1:$gate_port" "http://control.test:$HTTP/")"
# And the server behind the host's address is there to be reached: directly, not through the gate.
expect_eq "the host's address does serve" server:wide "$(curl -s -m 10 --noproxy '*' "http://$HOSTIP:$WIDE/")"
podman rm -f "$squid_name" >/dev/null

# 3. A name no entry lists is refused by name, before squid resolves it: a lookup of a name
#    the agent chose would carry a message out through the resolvers (a DNS tunnel). The real
#    gate image again, alone in a network namespace of its own, its resolver a logger of every
#    query (perl, which the image has): a listed name is looked up (control), an unlisted one
#    over plain HTTP and over CONNECT is not.
"$TOOL" --port 3128 --allow example.test --access-log /tmp/access.log --cache-log /tmp/cache.log > "$dir/dns.conf"
logging_resolver "$dir"
cat > "$dir/dns.sh" <<'SH'
. /aisb-gate/resolver.sh
squid -N -f /aisb-gate/dns.conf & sleep 2
for req in "GET http://probe-listed.example.test/ HTTP/1.1" "GET http://c2VjcmV0.unlisted-a.test/ HTTP/1.1" \
    "CONNECT dGhlLXRva2Vu.unlisted-b.test:443 HTTP/1.1"; do
  exec 3<>/dev/tcp/127.0.0.1/3128
  printf '%s\r\nHost: x\r\nConnection: close\r\n\r\n' "$req" >&3
  timeout 5 head -c 12 <&3 | tail -c 3 >> /aisb-gate/codes; echo >> /aisb-gate/codes
  exec 3>&-
done
SH
: > "$dir/dns.log"; : > "$dir/codes"
podman run --rm --network none --user 0 --cap-drop ALL --cap-add NET_BIND_SERVICE,SETUID,SETGID,CHOWN \
  -v "$dir:/aisb-gate:rw" "$image" bash /aisb-gate/dns.sh >/dev/null 2>&1 || true
expect_contains "control: the resolver logs the lookup of a listed name" "probe-listed" "$(cat "$dir/dns.log")"
expect_eq "the unlisted names are refused" "403
403" "$(sed -n '2,3p' "$dir/codes")"
expect_absent "and never looked up (plain HTTP)" "unlisted-a" "$(cat "$dir/dns.log")"
expect_absent "(nor over CONNECT)" "unlisted-b" "$(cat "$dir/dns.log")"

# A run through a real gate: one request that worked, one the gate refused, one it let
# through to a port where nothing listens. Each counted where it belongs.
dead=$(free_port)
allow="--net allow --allow ok.test:$HTTP --allow ok.test:$dead --gate-add-host ok.test:127.0.0.1
  --gate-add-host denied.test:127.0.0.1 --gate-add-host egress-$$.test:127.0.0.1"
"$AISB" run $allow -- sh -c "curl -s -o /dev/null -m 5 http://ok.test:$HTTP/;
  curl -s -o /dev/null -m 5 http://ok.test:$dead/; curl -s -o /dev/null -m 5 http://denied.test:$HTTP/" \
  2>"$E2E_TMP/err"
expect_contains "the run counts the failed request apart" \
  "egress: 1 allowed, 1 denied, 1 failed (denied: denied.test:$HTTP; failed: ok.test:$dead; refused: GET http://denied.test:$HTTP/)" "$(cat "$E2E_TMP/err")"
gate=$("$AISB" run $allow --print-policy | sed -n 's/^gate=//p')
expect_contains "the session log has it too" "\"failed\":1,\"failed_names\":[\"ok.test:$dead\"]" \
  "$(grep -F "\"project\":\"$E2E_TMP/project\"" "${XDG_STATE_HOME:-$HOME/.local/state}/ai-sandbox/sessions.log" | tail -n 1)"
podman rm -f "aisb-gate-$gate" >/dev/null 2>&1 || true
