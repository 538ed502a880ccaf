/* SPDX-License-Identifier: MIT */
/* --unsafe-create-patch: RFC 7396 merge semantics, the fields named, what each gives up, and
 * the file refused where someone else (or the sandbox) could write it. */
#include <check.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "internal.h"
#include "createpatch.h"
#include "../suite-table.h"
#include "unit.h"
#include "fileio.h"

static json_object *parse(const char *text)
{
        json_object *o = json_tokener_parse(text);
        ck_assert_ptr_nonnull(o);
        return o;
}

static void expect_merge(const char *target_text, const char *patch_text, const char *want_text,
                         const char *want_fields)
{
        json_object *target = parse(target_text), *patch = parse(patch_text), *want = parse(want_text);
        char **changed = NULL;
        ck_assert_int_eq(create_patch_apply(target, patch, &changed), 0);
        ck_assert_msg(json_object_equal(target, want), "%s + %s = %s, not %s", target_text, patch_text,
                      json_object_to_json_string(target), want_text);
        buffer b = {};
        for (size_t i = 0; changed && changed[i]; i++)
                ck_assert_int_eq(buffer_printf(&b, "%s%s", i ? " " : "", changed[i]), 0);
        ck_assert_str_eq(b.data ? b.data : "", want_fields);
        buffer_free(&b);
        strv_free(changed);
        json_object_put(target);
        json_object_put(patch);
        json_object_put(want);
}

START_TEST(test_merge)
{
        /* RFC 7396's own examples, and what each names. */
        expect_merge("{\"a\":\"b\"}", "{\"a\":\"c\"}", "{\"a\":\"c\"}", "a");
        expect_merge("{\"a\":\"b\"}", "{\"b\":\"c\"}", "{\"a\":\"b\",\"b\":\"c\"}", "b");
        expect_merge("{\"a\":\"b\"}", "{\"a\":null}", "{}", "a");
        expect_merge("{\"a\":\"b\",\"b\":\"c\"}", "{\"a\":null}", "{\"b\":\"c\"}", "a");
        expect_merge("{\"a\":[\"b\"]}", "{\"a\":\"c\"}", "{\"a\":\"c\"}", "a");
        expect_merge("{\"a\":{\"b\":\"c\"}}", "{\"a\":{\"b\":\"d\",\"c\":null}}", "{\"a\":{\"b\":\"d\"}}", "a.b");
        expect_merge("{\"a\":[{\"b\":\"c\"}]}", "{\"a\":[1]}", "{\"a\":[1]}", "a");
        expect_merge("{}", "{\"a\":{\"bb\":{\"ccc\":null}}}", "{\"a\":{\"bb\":{}}}", "");
        expect_merge("{\"labels\":{\"aisb.managed\":\"true\"}}", "{\"labels\":{\"team\":\"x\"},\"devices\":[{\"path\":\"/dev/fuse\"}]}",
                     "{\"labels\":{\"aisb.managed\":\"true\",\"team\":\"x\"},\"devices\":[{\"path\":\"/dev/fuse\"}]}",
                     "labels.team devices");
}
END_TEST

START_TEST(test_gives_up)
{
        ck_assert(strstr(create_patch_gives_up("cap_add"), "T3"));
        ck_assert(strstr(create_patch_gives_up("entrypoint"), "ruleset"));
        ck_assert(strstr(create_patch_gives_up("mounts"), "T1"));
        ck_assert(strstr(create_patch_gives_up("netns.nsmode"), "T4"));
        ck_assert(strstr(create_patch_gives_up("seccomp_profile_path"), "seccomp"));
        ck_assert(strstr(create_patch_gives_up("devices"), "T1"));
        ck_assert_str_eq(create_patch_gives_up("labels.team"), "");
        ck_assert_str_eq(create_patch_gives_up("hostname"), "");
        ck_assert_ptr_null(create_patch_gives_up("no_such_field"));
        ck_assert_ptr_null(create_patch_gives_up("cap_addx"));
}
END_TEST

static char dir[] = "/tmp/aisb-test-patch-XXXXXX";

static char *put(const char *name, const char *text, mode_t mode)
{
        char *path = NULL;
        ck_assert_int_ge(asprintf(&path, "%s/%s", dir, name), 0);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write_all(fd, text, strlen(text)), 0);
        ck_assert_int_eq(fchmod(fd, mode), 0);
        close(fd);
        return path;
}

static void expect_refused(const char *path, const char *project, const char *needle)
{
        json_object *o = NULL;
        aisb_error *err = NULL;
        ck_assert_int_lt(create_patch_load(path, project, &o, &err), 0);
        ck_assert_msg(strstr(aisb_error_message(err), needle), "'%s' lacks '%s'", aisb_error_message(err), needle);
        ck_assert_ptr_null(o);
        aisb_error_free(err);
}

START_TEST(test_load)
{
        ck_assert_ptr_nonnull(mkdtemp(dir));
        char *good = put("good.json", "{\"labels\":{\"team\":\"x\"}}\n", 0600);
        json_object *o = NULL;
        ck_assert_int_eq(create_patch_load(good, NULL, &o, NULL), 0);
        ck_assert(json_object_is_type(o, json_type_object));
        json_object_put(o);
        char *real = realpath(dir, NULL);
        expect_refused(good, real, "inside the project");
        char *shared = put("shared.json", "{}", 0620);
        expect_refused(shared, NULL, "no one else can write");
        char *array = put("array.json", "[1]", 0600);
        expect_refused(array, NULL, "not one JSON object");
        char *two = put("two.json", "{} {}", 0600);
        expect_refused(two, NULL, "not one JSON object");
        /* podman folds the case of field names (and U+017F, U+212A): a field is written as
         * podman names it, or the warning would name a field podman did not apply. */
        static const char *const folded[] = { "{\"Entrypoint\":[\"/bin/sh\"]}", "{\"CAP_ADD\":[]}",
                                              "{\"\u017Feccomp_policy\":\"\"}", "{\"\u212Aey\":1}",
                                              "{\"cap-add\":[]}", "{\"\":1}" };
        for (size_t i = 0; i < ELEMENTSOF(folded); i++) {
                char name[32];
                snprintf(name, sizeof name, "folded%zu.json", i);
                char *f = put(name, folded[i], 0600);
                expect_refused(f, NULL, "without regard to case");
                free(f);
        }
        /* Nested names are the field's own (map keys, OCI's camelCase): taken as written. */
        char *nested = put("nested.json", "{\"labels\":{\"Team\":\"x\"},\"resource_limits\":{\"memory\":{\"disableOOMKiller\":true}}}", 0600);
        ck_assert_int_eq(create_patch_load(nested, NULL, &o, NULL), 0);
        json_object_put(o);
        free(nested);
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        ck_assert_int_eq(system(cmd), 0);
        free(good), free(shared), free(array), free(two), free(real);
}
END_TEST

/* Where the patch lies is checked again when a run starts: any place the sandbox can write. */
START_TEST(test_place)
{
        ck_assert_ptr_nonnull(mkdtemp(dir));
        char *patch = put("p.json", "{}", 0600);
        char *real = realpath(dir, NULL);
        const char *const none[] = { NULL };
        ck_assert_int_eq(create_patch_check_place(patch, none, NULL), 0);
        const char *const elsewhere[] = { "/nonexistent-project", NULL };
        ck_assert_int_eq(create_patch_check_place(patch, elsewhere, NULL), 0);
        /* A sibling whose name starts alike is not inside. */
        char sibling[PATH_MAX];
        snprintf(sibling, sizeof sibling, "%s-x", real);
        const char *const like[] = { sibling, NULL };
        ck_assert_int_eq(create_patch_check_place(patch, like, NULL), 0);
        const char *const inside[] = { "/nonexistent-project", real, NULL };
        aisb_error *err = NULL;
        ck_assert_int_eq(create_patch_check_place(patch, inside, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(aisb_error_message(err), "which the sandbox can write"));
        aisb_error_free(err);
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        ck_assert_int_eq(system(cmd), 0);
        free(patch), free(real);
}
END_TEST

int main(void)
{
        return unit_run(suite_of("createpatch", "patch", test_merge, test_gives_up, test_load, test_place));
}
