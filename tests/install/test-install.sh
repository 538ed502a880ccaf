#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install test (suite e2e): "meson install" into a DESTDIR, check that everything a user or
# an embedder needs is there, build examples/run-with-policy.c against the installed tree
# through pkg-config, and run it against real rootless podman as the unprivileged user.
#
# Environment (from tests/install/meson.build): AISB_SRC, AISB_BUILD, AISB_MESON.
# Run as root, the install happens first, as root (the build tree is root's), into a
# directory handed to the unprivileged user; lib.sh then re-executes this script as that
# user with the directory as $1. Run as the user, it installs itself.
set -euo pipefail
: "${AISB_SRC:?}" "${AISB_BUILD:?}"

# The layout the build was configured with.
layout() {
  python3 - "$AISB_BUILD/meson-info/intro-buildoptions.json" "$1" <<'EOF'
import json, sys
options = {o["name"]: o["value"] for o in json.load(open(sys.argv[1]))}
name = sys.argv[2]
value = options[name]
print(value if name == "prefix" or value.startswith("/") else options["prefix"] + "/" + value)
EOF
}
bindir=$(layout bindir)
libdir=$(layout libdir)
libexecdir=$(layout libexecdir)
includedir=$(layout includedir)
mandir=$(layout mandir)
datadir=$(layout datadir)

if [ $# -eq 0 ]; then
  : "${AISB_MESON:?AISB_MESON must name meson}"
  destdir=$(mktemp -d "${TMPDIR:-/tmp}/aisb-install.XXXXXX")
  if ! "$AISB_MESON" install -C "$AISB_BUILD" --no-rebuild --destdir "$destdir" \
      > "$destdir.log" 2>&1; then
    cat "$destdir.log" >&2
    rm -rf "$destdir" "$destdir.log"
    echo "FAIL: meson install --destdir failed" >&2
    exit 1
  fi
  rm -f "$destdir.log"
  chmod 0755 "$destdir"
  # As root, the unprivileged user that runs the rest must be able to remove it.
  if [ "$(id -u)" -eq 0 ]; then
    chown -R "${AISB_USER:-aisb}:" "$destdir"
  fi
  set -- "$destdir"
fi
destdir=$1
# The entrypoint the library puts into the image: the installed one (the library's default
# is the configured prefix, which a DESTDIR install does not populate).
export AISB_ENTRYPOINT=$destdir$libexecdir/aisb/aisb-entrypoint

# shellcheck source=tests/e2e/lib.sh
. "$AISB_SRC/tests/e2e/lib.sh"
SECONDS=0
trap 'cleanup; rm -rf "$destdir"' EXIT

# ---- what the install put where ----
for path in \
    "$bindir/aisb" \
    "$libdir/libaisb.so" "$libdir/libaisb.so.0" "$libdir/libaisb.so.0.1.0" "$libdir/libaisb.a" \
    "$includedir/aisb.h" "$includedir/aisb-version.h" \
    "$libdir/pkgconfig/aisb.pc" \
    "$libexecdir/aisb/aisb-entrypoint" \
    "$mandir/man1/aisb.1" \
    "$datadir/bash-completion/completions/aisb" \
    "$datadir/zsh/site-functions/_aisb" \
    "$datadir/doc/aisb/LICENSE"; do
  [ -e "$destdir$path" ] || fail "not installed: $path"
done
pass "the CLI, libaisb.so* and libaisb.a, aisb.h and aisb-version.h, aisb.pc, aisb-entrypoint, aisb(1), both completions and LICENSE are installed"
# The installed archive hides the library's internals as the shared library does
# (tests/link checks the built one against lib/libaisb.sym, and links a program with it).
internal=$(nm -g --defined-only "$destdir$libdir/libaisb.a" | awk 'NF == 3 && $3 !~ /^aisb_/ { print $3 }')
expect_eq "the installed libaisb.a defines no global name without the aisb_ prefix" "" "$internal"
if [ ! -x "$destdir$bindir/aisb" ] || [ ! -x "$AISB_ENTRYPOINT" ]; then
  fail "aisb or aisb-entrypoint is not executable"
fi

version=$("$destdir$bindir/aisb" --version)
expect_contains "the installed aisb runs" "aisb " "$version"

# The image tag hashes the entrypoint's bytes: the installed copy must be the built file, or
# a run of the installed aisb would build an image of its own.
cmp -s "$AISB_ENTRYPOINT" "$AISB_BUILD/entrypoint/aisb-entrypoint" ||
  fail "the installed aisb-entrypoint differs from the built one (stripped?), so its image tag would too"
pass "the installed aisb-entrypoint is the built file"
built_tag=$(AISB_ENTRYPOINT=$AISB_BUILD/entrypoint/aisb-entrypoint "$AISB" build --quiet)
installed_tag=$("$destdir$bindir/aisb" build --quiet)
expect_eq "the installed aisb uses the built tree's image" "$built_tag" "$installed_tag"

# ---- build the example against the installed tree ----
export PKG_CONFIG_PATH=$destdir$libdir/pkgconfig
export PKG_CONFIG_SYSROOT_DIR=$destdir
pkg-config --exists aisb || fail "pkg-config finds no aisb in $PKG_CONFIG_PATH"
flags=$(pkg-config --cflags --libs aisb)
expect_contains "pkg-config's flags point into the installed tree" "-I$destdir$includedir" "$flags"
# Word splitting of $flags is intended: they are separate arguments.
# shellcheck disable=SC2086
cc -std=c99 -Wall -Wextra -Werror -o "$E2E_TMP/run-with-policy" \
  "$AISB_SRC/examples/run-with-policy.c" $flags ||
  fail "examples/run-with-policy.c does not build against the installed tree"
pass "examples/run-with-policy.c builds against the installed tree through pkg-config"

export LD_LIBRARY_PATH=$destdir$libdir
resolved=$(ldd "$E2E_TMP/run-with-policy" | awk '$1 ~ /^libaisb\.so/ { print $3 }')
expect_eq "the example loads the installed libaisb" "$destdir$libdir/libaisb.so.0" "$resolved"

# ---- run it: the same base, certificates and Node source as the other e2e tests, so the
# image they built is reused ----
policy=()
while IFS= read -r line; do
  case $line in ''|'#'*) continue ;; esac
  policy+=("$(sed -E 's/^[[:space:]]*([^[:space:]=]+)[[:space:]]*=[[:space:]]*/\1=/' <<<"$line")")
done < "$XDG_CONFIG_HOME/ai-sandbox/config"

# In the background, for its pid: the sandbox carries it as the label aisb.pid.
"$E2E_TMP/run-with-policy" "${policy[@]}" -- \
  sh -c 'echo one; printf "two\nthree"; echo to-stderr >&2; exit 7' \
  >"$E2E_TMP/out" 2>"$E2E_TMP/err" &
pid=$!
set +e
wait "$pid"
rc=$?
set -e
out=$(cat "$E2E_TMP/out")
err=$(cat "$E2E_TMP/err")
expect_eq "the example exits with the command's exit code" 7 "$rc"
expect_eq "each stdout line comes through the callback with its prefix" \
  "[sandbox] one
[sandbox] two
[sandbox] three" "$out"
expect_contains "stderr passes through" "to-stderr" "$err"
expect_contains "the example reports the exit code and the bytes" \
  "exit code 7, 13 bytes on stdout, 10 on stderr" "$err"
expect_absent "no image was built for the installed entrypoint" "run-with-policy: build:" "$err"
expect_eq "no container is left after the run" "" \
  "$(podman ps -a --filter "label=aisb.pid=$pid" --format '{{.Names}}')"
echo "e2e-install: ${SECONDS}s"
