# The gate's first process (gate.c runs it with sh -c): makes the CA when the gate intercepts
# TLS (the key never leaves the gate's tls/, readable by the user alone), starts squid, and
# stops it once no run holds a lease, no connection is open and nothing was logged for the
# idle time. Arguments: idle seconds (0: never; "held": a run's own gate, which within 2 s of
# its run's lease going, even when the run was killed, refuses every request and keeps its
# port, so that the sandbox left behind reaches nothing and nobody else takes the port; the
# next run with secrets removes it), port, intercept (0 or 1). What serves is the marker
# tls/serving, made before squid starts and removed (which needs no space) once the lease is
# gone: squid's helper (held.sh) looks for it at every request, where a reload of squid would
# close its port for a moment. The paths are the mounts gate.c makes (GATE_*_INSIDE).
idle=$1 port=$2 intercept=$3
leased() {
  for f in /aisb-gate/leases/*; do
    [ -e "$f" ] && ! flock -n -x "$f" true && return 0
  done
  return 1
}
# A run's own gate serves only while a lease is held, from its first start on (a container
# started again keeps the marker of its last life).
if [ "$idle" = held ]; then
  rm -f /aisb-gate/tls/serving || exit 70
  if leased; then : > /aisb-gate/tls/serving || exit 70; fi
else
  : > /aisb-gate/tls/serving || exit 70
fi
if [ "$intercept" = 1 ]; then
  umask 077
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 -subj "/CN=aisb gate 127.0.0.1:$port" -addext basicConstraints=critical,CA:true -addext keyUsage=critical,keyCertSign,cRLSign -keyout /aisb-gate/tls/ca.key -out /aisb-gate/tls/ca.pem.new 2>/dev/null || exit 70
  /usr/lib/squid/security_file_certgen -c -s /tmp/aisb-certs -M 4MB >/dev/null || exit 70
  chmod 644 /aisb-gate/tls/ca.pem.new && mv /aisb-gate/tls/ca.pem.new /aisb-gate/tls/ca.pem || exit 70
fi
squid -N -f /aisb-gate/config/squid.conf & pid=$!
trap 'kill $pid 2>/dev/null' TERM INT
start=$(date +%s) hex=$(printf %04X "$port") every=15
[ "$idle" = held ] && every=2
while sleep $every & wait $!; kill -0 $pid 2>/dev/null; do
  [ "$idle" = 0 ] && continue
  leased && continue
  if [ "$idle" = held ]; then rm -f /aisb-gate/tls/serving && idle=0; continue; fi
  [ "$(awk -v p=":$hex" '$2 ~ p"$" && $4 == "01"' /proc/net/tcp /proc/net/tcp6 2>/dev/null | wc -l)" -eq 0 ] || continue
  last=$(stat -c %Y /aisb-gate/logs/access.log 2>/dev/null || echo 0)
  [ "$last" -gt "$start" ] || last=$start
  [ $(( $(date +%s) - last )) -ge "$idle" ] || continue
  kill $pid; wait $pid; exit 0
done
wait $pid
