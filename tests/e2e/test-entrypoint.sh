#!/usr/bin/env bash
# The entrypoint's promises, attacked from inside a real sandbox: no capabilities in any
# set, no-new-privileges, seccomp on, the ruleset cannot be removed, no new namespaces,
# setuid gives nothing, no raw sockets.
. "$(dirname "$0")/lib.sh"

status=$("$AISB" run -- cat /proc/self/status)
field() { printf '%s\n' "$status" | awk -v f="$1:" '$1==f{print $2}'; }
for f in CapEff CapPrm CapInh CapBnd CapAmb; do
  expect_eq "$f is empty" "0000000000000000" "$(field "$f")"
done
expect_eq "NoNewPrivs is set" 1 "$(field NoNewPrivs)"
expect_eq "seccomp is in filter mode" 2 "$(field Seccomp)"
expect_eq "the uid is the invoking user's" "$(id -u)" "$(field Uid | cut -f1)"
expect_eq "the gid is the invoking user's" "$(id -g)" "$("$AISB" run -- id -g)"

# Delete the ruleset's table over netlink, as "nft flush ruleset" would (no nft binary in
# the image): the kernel must refuse it.
cat > nft-delete.py <<'PY'
import errno, socket, struct
NETLINK_NETFILTER = 12
def msg(mtype, flags, seq, payload):
    return struct.pack("=LHHLL", 16 + len(payload), mtype, flags, seq, 0) + payload
def nfgen(family, res_id=0):
    return struct.pack("=BBH", family, 0, socket.htons(res_id))
def attr(atype, data):
    raw = struct.pack("=HH", 4 + len(data), atype) + data
    return raw + b"\0" * (-len(raw) % 4)
REQUEST, ACK = 1, 4
batch = (msg(0x10, REQUEST, 1, nfgen(0, 10))
         + msg((10 << 8) | 2, REQUEST | ACK, 2, nfgen(1) + attr(1, b"aisb\0"))
         + msg(0x11, REQUEST, 3, nfgen(0, 10)))
try:
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    s.send(batch)
    s.settimeout(5)
    reply = s.recv(65536)
    length, mtype, flags, seq, pid = struct.unpack("=LHHLL", reply[:16])
    code = struct.unpack("=i", reply[16:20])[0] if mtype == 2 else None
    # EPERM is the kernel saying no; any other error would mean a malformed probe.
    print("refused" if code == -errno.EPERM else "DELETED" if code == 0 else "error %s" % code)
except PermissionError:
    print("refused")
PY
expect_eq "the ruleset's table cannot be deleted" refused "$("$AISB" run -- python3 nft-delete.py)"

for ns in -n -U -m -p; do
  set +e
  err=$("$AISB" run -- sh -c "unshare $ns true || exit 42" 2>&1)
  rc=$?
  set -e
  expect_eq "unshare $ns fails" 42 "$rc"
  expect_contains "unshare $ns is refused by the kernel" "Operation not permitted" "$err"
done

cat > raw.py <<'PY'
import socket
results = []
for family, kind, proto in [(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),
                            (socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6),
                            (socket.AF_PACKET, socket.SOCK_RAW, 0),
                            (socket.AF_INET, socket.SOCK_PACKET if hasattr(socket, "SOCK_PACKET") else 10, 0)]:
    try:
        socket.socket(family, kind, proto)
        results.append("OPENED")
    except OSError:
        results.append("refused")
print(" ".join(results))
PY
expect_eq "raw and packet sockets cannot be opened" "refused refused refused refused" \
  "$("$AISB" run -- python3 raw.py)"

# A setuid-root binary: a copy of id owned by the sandbox's root, with the setuid bit.
# podman unshare maps the first subordinate id, which keep-id gives to the sandbox's root.
podman unshare sh -c 'cp /usr/bin/id ./suid-id && chown 1:1 ./suid-id && chmod 4755 ./suid-id'
owner=$("$AISB" run -- stat -c %u /project/suid-id)
expect_eq "the probe is owned by the sandbox's root" 0 "$owner"
expect_eq "setuid-root gives no root" "$(id -u)" "$("$AISB" run -- /project/suid-id -u)"
podman unshare rm -f ./suid-id

out=$("$AISB" run --insecure-keep-root -- sh -c 'id -u; grep CapEff /proc/self/status')
expect_eq "--insecure-keep-root keeps uid 0, with no capabilities" "0
CapEff:	0000000000000000" "$out"

ruleset=$("$AISB" run --print-ruleset)
expect_contains "--print-ruleset shows the drop policy" "policy drop" "$ruleset"
plan=$("$AISB" run --print-entrypoint)
expect_contains "--print-entrypoint names the capabilities kept" "NET_ADMIN" "$plan"

# --net external (a cluster enforces the network): the container starts unprivileged, as a
# Kubernetes pod under the "restricted" standard does, and the entrypoint checks that rather
# than trusting it: a capability, root, or a supplementary group, and nothing runs.
tag=$("$AISB" build --quiet)
ep=/usr/local/libexec/aisb/aisb-entrypoint
external() { podman run --rm --net none "$@" "$tag" $ep --net external --uid 1000 --gid 1000 -- \
  sh -c 'grep -E "^(CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs|Seccomp):" /proc/self/status; id -u'; }
out=$(external --user 1000:1000 --cap-drop ALL 2>&1)
expect_eq "external: unprivileged, no-new-privileges and seccomp, as uid 1000" "CapPrm:	0000000000000000
CapEff:	0000000000000000
CapBnd:	0000000000000000
CapAmb:	0000000000000000
NoNewPrivs:	1
Seccomp:	2
1000" "$out"
for bad in "--user 1000:1000 --cap-drop ALL --cap-add NET_RAW|started with capabilities" \
    "--user 1000:1000|in the bounding or ambient set; drop ALL" "--user 0:0 --cap-drop ALL|started as root" \
    "--user 1000:1000 --cap-drop ALL --group-add 5|supplementary groups" \
    "--user 1001:1001 --cap-drop ALL|not 1000:1000"; do
  set +e
  out=$(external ${bad%%|*} 2>&1)
  rc=$?
  set -e
  expect_eq "external refuses ${bad%%|*}" 77 "$rc"
  expect_contains "saying why" "${bad#*|}" "$out"
done
