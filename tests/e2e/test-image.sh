#!/usr/bin/env bash
# The image is built once by content hash and reused: a second build and a run do no build.
. "$(dirname "$0")/lib.sh"

out=$("$AISB" build 2>"$E2E_TMP/build.err") || { cat "$E2E_TMP/build.err" >&2; fail "aisb build"; }
case "$out" in localhost/aisb:*) pass "build prints the tag ($out)" ;; *) fail "build printed '$out'" ;; esac
podman image exists "$out" || fail "the image $out does not exist after the build"
pass "the tagged image exists"

out2=$("$AISB" build 2>"$E2E_TMP/build2.err")
expect_eq "the same inputs give the same tag" "$out" "$out2"
expect_absent "a second build builds nothing" "building" "$(cat "$E2E_TMP/build2.err")"

run_err=$("$AISB" run -- true 2>&1 >/dev/null)
expect_absent "a run reuses the image" "building" "$run_err"

# A different package set is a different image; --print-containerfile shows why.
cf=$("$AISB" run --install file --print-containerfile)
expect_contains "the containerfile lists the extra package" " file" "$cf"
tag3=$("$AISB" run --install file --print-policy | sed -n 's/^image=//p')
[ "$tag3" != "$out" ] || fail "--install did not change the tag"
pass "--install changes the content tag"
