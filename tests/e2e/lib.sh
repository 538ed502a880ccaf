# SPDX-License-Identifier: MIT
# Shared by the e2e tests: real rootless podman, as the unprivileged user. Sourced by each
# test after it sets nothing; provides $AISB (the binary), run helpers and assertions.
#
# Run as root (as CI does), a test re-executes itself as AISB_USER through scripts/as-user.
# A test that cannot run here exits 77 (skip) with the reason (assert.sh).
set -euo pipefail

: "${AISB_SRC:?AISB_SRC must point at the source tree}"
: "${AISB_BUILD:?AISB_BUILD must point at the build tree}"

if [ "$(id -u)" -eq 0 ]; then
  exec "$AISB_SRC/scripts/as-user" env AISB_SRC="$AISB_SRC" AISB_BUILD="$AISB_BUILD" \
    AISB_ENTRYPOINT="${AISB_ENTRYPOINT:-$AISB_BUILD/entrypoint/aisb-entrypoint}" \
    bash "$0" "$@"
fi

. "$(dirname "${BASH_SOURCE[0]}")/assert.sh"

command -v podman >/dev/null || cannot_run "podman is not installed (run scripts/setup)"
[ -n "${XDG_RUNTIME_DIR:-}" ] || cannot_run "XDG_RUNTIME_DIR is not set"

AISB=$AISB_BUILD/cli/aisb
export AISB_ENTRYPOINT=${AISB_ENTRYPOINT:-$AISB_BUILD/entrypoint/aisb-entrypoint}
[ -x "$AISB" ] || cannot_run "$AISB is not built"

# Each test gets its own scratch directory and home volume; nothing of the user's. The
# config directory is the tests' own too, but stays: a podman service that a test starts
# outlives it, and reads podman's configuration under XDG_CONFIG_HOME (kept as the user's).
E2E_TMP=$(mktemp -d "${TMPDIR:-/tmp}/aisb-e2e.XXXXXX")
export XDG_CONFIG_HOME=$HOME/.cache/aisb-e2e/config
export AISB_HOME_VOLUME=aisb-e2e-home-$$
mkdir -p "$XDG_CONFIG_HOME/ai-sandbox" "$E2E_TMP/project"
rm -f "$XDG_CONFIG_HOME/ai-sandbox/"*
if [ -d "$HOME/.config/containers" ] && [ ! -e "$XDG_CONFIG_HOME/containers" ]; then
  ln -s "$HOME/.config/containers" "$XDG_CONFIG_HOME/containers"
fi
cleanup() {
  podman volume rm -f "$AISB_HOME_VOLUME" >/dev/null 2>&1 || true
  rm -rf "$E2E_TMP"
}
trap cleanup EXIT

# No registry here: the base is bootstrapped from the Debian mirror, and the machine's CA
# certificates (a TLS-intercepting egress proxy) are trusted inside.
# Tests of the network modes say --net themselves; the rest need no network.
{
  echo "base-image = ${AISB_E2E_BASE:-bootstrap:debian:trixie}"
  echo "net = none"
  echo "node-source = npm"
  # The podman 5 suite runs twice: with its default (pasta) and forcing slirp4netns.
  [ -z "${AISB_E2E_BACKEND:-}" ] || echo "network-backend = $AISB_E2E_BACKEND"
  for c in /usr/local/share/ca-certificates/*.crt; do
    [ -r "$c" ] && echo "ca-cert = $c"
  done
} > "$XDG_CONFIG_HOME/ai-sandbox/config"

cd "$E2E_TMP/project"

# Where a sandbox reaches the host's own address (test servers bound to 0.0.0.0):
# slirp4netns NATs the host's address; pasta gives that very address to the sandbox and maps
# the host at 169.254.1.2 (podman's host.containers.internal). The backend is the suite's
# (AISB_E2E_BACKEND), or podman's default: pasta from podman 5.
E2E_BACKEND=${AISB_E2E_BACKEND:-}
if [ -z "$E2E_BACKEND" ]; then
  case "$(podman version --format '{{.Client.Version}}' 2>/dev/null)" in
    [0-4].*) E2E_BACKEND=slirp4netns ;;
    *) E2E_BACKEND=pasta ;;
  esac
fi
if [ "$E2E_BACKEND" = pasta ]; then HOST_INSIDE=169.254.1.2; else HOST_INSIDE=$(hostname -I | awk '{print $1}'); fi
# The host's own address (or pasta's 169.254.1.2 for it) reaches the host: pinning it needs
# the user's explicit flag.
HOST_INSIDE_FLAG=--insecure-allow-host-ranges


# The API stand-in (tests/e2e/https-stub.py) on 127.0.0.1 and 127.0.0.2, stopped with the
# test: sets TLS and PLAIN, its ports; it logs each request to $E2E_TMP/requests.
https_stub_start() {
  python3 "$AISB_SRC/tests/e2e/https-stub.py" > "$E2E_TMP/ports" 2> "$E2E_TMP/requests" &
  STUB_PID=$!
  trap 'kill $STUB_PID 2>/dev/null; cleanup' EXIT
  for _ in $(seq 50); do [ -s "$E2E_TMP/ports" ] && break; sleep 0.1; done
  read -r TLS PLAIN < "$E2E_TMP/ports" || true
  [ -n "${PLAIN:-}" ] || cannot_run "the HTTPS stand-in did not start"
}

# logging_resolver DIR: DIR/resolver.sh, for a script in the gate image (run as root, DIR at
# /aisb-gate) to source: the image's resolver becomes a logger on 127.0.0.1:53 (perl, which
# the image has) that answers nothing and writes each query's name to /aisb-gate/dns.log.
logging_resolver() {
  cat > "$1/resolver.sh" <<'SH'
echo "nameserver 127.0.0.1" > /etc/resolv.conf
perl -MIO::Socket::INET -e '
  my $s = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => 53, Proto => "udp") or die;
  open(my $log, ">>", "/aisb-gate/dns.log") or die; $log->autoflush(1);
  while ($s->recv(my $q, 512)) { (my $t = substr($q, 12)) =~ s/[^a-z0-9-]/./g; print $log "$t\n"; }' &
SH
}

# Sandboxes of this test's project (names), for leak checks.
our_containers() { podman ps -a --filter "label=aisb.project=$E2E_TMP/project" --format '{{.Names}}'; }
