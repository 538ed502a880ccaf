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

# A variant (another --install) reuses every layer before its packages: the base tools, the
# CA certificates, Node and the harness come from the cache; the packages' layer and the
# entrypoint's after it are built. Every image holding a layer that installs this package
# (earlier runs of any tree: another entrypoint, the same packages' layer) is removed first,
# children before parents, so that this build is a new one; and this one at the end.
remove_file_variants() {
        local pass id
        for pass in 1 2 3 4; do
                for id in $(podman images -a -q | sort -u); do
                        podman history --no-trunc --format '{{.CreatedBy}}' "$id" 2>/dev/null |
                                grep -q -- '--no-install-recommends file ' &&
                                podman rmi "$id" >/dev/null 2>&1
                done
        done
        return 0
}
remove_file_variants
trap 'remove_file_variants; cleanup' EXIT
"$AISB" build --install file >"$E2E_TMP/variant.out" 2>"$E2E_TMP/variant.err" ||
        { cat "$E2E_TMP/variant.err" >&2; fail "aisb build --install file"; }
expect_eq "the variant has the tag --print-policy named" "$tag3" "$(tail -n 1 "$E2E_TMP/variant.out")"
awk '
        / STEP [0-9]+\/[0-9]+: RUN apt-get update .* install .* file / { at = NR }
        /^build: --> Using cache / { if (at) after++; else cached++ }
        / STEP [0-9]+\/[0-9]+: RUN npm install -g / { if (!at) harness = 1 }
        /^build: (\[[0-9]\/[0-9]\] )?STEP [0-9]+\/[0-9]+: / && !/: FROM / { if (!at) steps++ }
        END { printf "%d %d %d %d %d\n", (at ? 1 : 0), steps, cached, after, harness }' "$E2E_TMP/variant.err" >"$E2E_TMP/variant.count"
read -r found steps cached after harness <"$E2E_TMP/variant.count"
[ "$found" = 1 ] || { cat "$E2E_TMP/variant.err" >&2; fail "no step installs the variant's package"; }
[ "$steps" -ge 5 ] && [ "$cached" = "$steps" ] ||
        { cat "$E2E_TMP/variant.err" >&2; fail "$cached of the $steps steps before the packages came from the cache"; }
pass "every step before the variant's packages came from the cache ($cached of $steps)"
expect_eq "Node and the harness come before the packages (cached too)" 1 "$harness"
expect_eq "the packages' layer and the entrypoint's were built, not cached" 0 "$after"
expect_contains "the variant has its package" "/usr/bin/file" \
        "$("$AISB" run --install file -- sh -c 'command -v file' 2>&1)"
