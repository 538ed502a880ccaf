/* SPDX-License-Identifier: MIT */
/* The container specification, key by key: what the sandbox may see and do. */
#include <check.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "internal.h"
#include "run-fixture.h"
#include "../suite-table.h"

/* The body of a plan built from facts set here (the settings' copy, the project's identity):
 * the real one, or the one shown. */
static json_object *body_with(aisb_policy *p, const char *settings_copy, bool redact)
{
        plan_facts f = {};
        ck_assert_int_eq(plan_gather(p, &(plan_gather_options) { .purpose = PLAN_DESCRIBE, .image = "localhost/aisb:x" },
                                     &f, NULL),
                         0);
        free(f.settings_copy);
        f.settings_copy = settings_copy ? strdup(settings_copy) : NULL;
        f.have_project_id = true;
        f.project_dev = 7;
        f.project_ino = 42;
        run_plan plan = {};
        ck_assert_int_eq(plan_build(p, &f, &plan, NULL), 0);
        /* The real body is wiped with its plan: taken from it. */
        json_object *o = redact ? json_object_get(plan.shown) : steal_pointer(&plan.body);
        run_plan_done(&plan);
        plan_facts_done(&f);
        return o;
}

static json_object *body_for(aisb_policy *p, bool redact)
{
        return body_with(p, NULL, redact);
}

static json_object *get(json_object *o, const char *key)
{
        json_object *v = NULL;
        ck_assert_msg(json_object_object_get_ex(o, key, &v), "no key %s", key);
        return v;
}

static json_object *find_mount(json_object *o, const char *destination)
{
        json_object *mounts = get(o, "mounts");
        for (size_t i = 0; i < json_object_array_length(mounts); i++) {
                json_object *m = json_object_array_get_idx(mounts, i);
                if (streq(json_object_get_string(get(m, "destination")), destination))
                        return m;
        }
        return NULL;
}

START_TEST(test_confinement)
{
        aisb_policy *p = POLICY({ "net", "none" });
        json_object *o = body_for(p, false);
        ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(get(o, "cap_drop"), 0)), "ALL");
        ck_assert_uint_eq(json_object_array_length(get(o, "cap_drop")), 1);
        /* Only what the entrypoint needs, and it drops them before the command. */
        const char *cap_add = json_object_to_json_string_ext(get(o, "cap_add"), JSON_C_TO_STRING_PLAIN);
        ck_assert_str_eq(cap_add, "[\"CAP_NET_ADMIN\",\"CAP_SETUID\",\"CAP_SETGID\",\"CAP_SETPCAP\"]");
        json_object *entrypoint = get(o, "entrypoint");
        ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(entrypoint, 0)),
                         "/usr/local/libexec/aisb/aisb-entrypoint");
        char uid[32];
        snprintf(uid, sizeof uid, "\"--uid\",\"%u\"", getuid());
        ck_assert_ptr_nonnull(strstr(json_object_to_json_string_ext(entrypoint, JSON_C_TO_STRING_PLAIN), uid));
        ck_assert_ptr_nonnull(strstr(json_object_to_json_string_ext(entrypoint, JSON_C_TO_STRING_PLAIN),
                                     "\"--net\",\"none\","));
        ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(
                                 entrypoint, json_object_array_length(entrypoint) - 1)),
                         "--");
        ck_assert(json_object_get_boolean(get(o, "no_new_privileges")));
        ck_assert(json_object_get_boolean(get(o, "read_only_filesystem")));
        ck_assert_str_eq(json_object_get_string(get(get(o, "userns"), "nsmode")), "keep-id");
        ck_assert_str_eq(json_object_get_string(get(o, "user")), "0:0");
        ck_assert_str_eq(json_object_get_string(get(get(o, "netns"), "nsmode")), "none");
        ck_assert_str_eq(json_object_get_string(get(o, "work_dir")), "/project");
        ck_assert(!json_object_get_boolean(get(o, "remove")));

        json_object *project = find_mount(o, "/project");
        ck_assert_ptr_nonnull(project);
        ck_assert_str_eq(json_object_get_string(get(project, "source")), p->project);
        ck_assert_str_eq(json_object_get_string(get(project, "type")), "bind");
        for (size_t i = 0; i < 3; i++) {
                static const char *const tmp[] = { "/tmp", "/var/tmp", "/run" };
                json_object *m = find_mount(o, tmp[i]);
                ck_assert_ptr_nonnull(m);
                ck_assert_str_eq(json_object_get_string(get(m, "type")), "tmpfs");
                ck_assert(strstr(json_object_to_json_string(get(m, "options")), "size="));
        }
        /* Only the project, the tmpfs and the home: nothing else of the host. */
        ck_assert_uint_eq(json_object_array_length(get(o, "mounts")), 4);
        json_object *volume = json_object_array_get_idx(get(o, "volumes"), 0);
        ck_assert_str_eq(json_object_get_string(get(volume, "Name")), p->home_volume);
        ck_assert(startswith(p->home_volume, "aisb-home-"));
        ck_assert_str_eq(json_object_get_string(get(volume, "Dest")), "/home/sandbox");

        json_object *limits = get(o, "resource_limits");
        ck_assert_int_eq(json_object_get_int64(get(get(limits, "memory"), "limit")), 4LL << 30);
        ck_assert_int_eq(json_object_get_int64(get(get(limits, "pids"), "limit")), 1024);
        ck_assert_int_eq(json_object_get_int64(get(get(limits, "cpu"), "quota")), 200000);
        ck_assert_str_eq(json_object_get_string(get(get(o, "labels"), "aisb.managed")), "true");
        json_object_put(o);
        aisb_policy_free(p);
}
END_TEST

START_TEST(test_options_change_spec)
{
        aisb_policy *p = POLICY({ "no-cwd", NULL }, { "ephemeral-home", NULL }, { "net", "full" },
                                { "mount", "/tmp:/data:ro" }, { "read-only", "false" });
        json_object *o = body_for(p, false);
        ck_assert_ptr_null(find_mount(o, "/project"));
        ck_assert_str_eq(json_object_get_string(get(o, "work_dir")), "/home/sandbox");
        json_object *home = find_mount(o, "/home/sandbox");
        ck_assert_str_eq(json_object_get_string(get(home, "type")), "tmpfs");
        ck_assert(!json_object_object_get_ex(o, "volumes", NULL));
        ck_assert_str_eq(json_object_get_string(get(get(o, "netns"), "nsmode")), "slirp4netns");
        json_object *data = find_mount(o, "/data");
        ck_assert(strstr(json_object_to_json_string(get(data, "options")), "\"ro\""));
        ck_assert(!json_object_get_boolean(get(o, "read_only_filesystem")));
        json_object_put(o);
        aisb_policy_free(p);
}
END_TEST

START_TEST(test_redaction)
{
        aisb_policy *p = POLICY({ "net", "none" }, { "env", "API_TOKEN=hunter2" });
        json_object *real = body_for(p, false);
        ck_assert_str_eq(json_object_get_string(get(get(real, "env"), "API_TOKEN")), "hunter2");
        json_object *shown = body_for(p, true);
        const char *text = json_object_to_json_string(shown);
        ck_assert_ptr_null(strstr(text, "hunter2"));
        ck_assert_str_eq(json_object_get_string(get(get(shown, "env"), "API_TOKEN")), "<redacted>");
        ck_assert_ptr_null(strstr(json_object_to_json_string(get(real, "labels")), "hunter2"));
        ck_assert_str_eq(json_object_get_string(get(get(real, "env"), "HOME")), "/home/sandbox");
        ck_assert(!json_object_object_get_ex(get(real, "env"), "PATH", NULL));
        json_object_put(real);
        json_object_put(shown);
        aisb_policy_free(p);
}
END_TEST

/* The project's .ai-sandbox is never handed to podman by its path in the project (the
 * sandbox could swap it for a link): the run's private copy is mounted over it, read-only. */
START_TEST(test_project_settings_copy)
{
        aisb_policy *p = POLICY({ "net", "none" });
        json_object *o = body_with(p, "/run/user/1/aisb-run-x/ai-sandbox", false);
        json_object *m = find_mount(o, "/project/.ai-sandbox");
        ck_assert_ptr_nonnull(m);
        ck_assert_str_eq(json_object_get_string(get(m, "source")), "/run/user/1/aisb-run-x/ai-sandbox");
        ck_assert(strstr(json_object_to_json_string(get(m, "options")), "\"ro\""));
        const char *text = json_object_to_json_string(get(o, "mounts"));
        char in_project[4200];
        snprintf(in_project, sizeof in_project, "%s/.ai-sandbox", p->project);
        ck_assert_ptr_null(strstr(text, in_project));
        json_object_put(o);

        /* The doctor's read-only look at the project: no copy, the project itself read-only. */
        p->project_read_only = true;
        o = body_with(p, NULL, false);
        ck_assert_ptr_null(find_mount(o, "/project/.ai-sandbox"));
        ck_assert(strstr(json_object_to_json_string(get(find_mount(o, "/project"), "options")), "\"ro\""));
        json_object_put(o);
        aisb_policy_free(p);
}
END_TEST

/* Every bind mount named by a path is checked inside against what the host saw: the project
 * (as the run began) and each --mount source (as it was named). */
START_TEST(test_mounts_identified)
{
        aisb_policy *p = POLICY({ "net", "none" }, { "mount", "/tmp:/data:ro" });
        struct stat st;
        ck_assert_int_eq(stat("/tmp", &st), 0);
        json_object *o = body_for(p, false);
        const char *entrypoint = json_object_to_json_string_ext(get(o, "entrypoint"), JSON_C_TO_STRING_PLAIN);
        ck_assert_msg(strstr(entrypoint, "\"--expect-mount\",\"\\/project:7:42\""), "%s", entrypoint);
        char want[128];
        snprintf(want, sizeof want, "\"--expect-mount\",\"\\/data:%llu:%llu\"", (unsigned long long) st.st_dev,
                 (unsigned long long) st.st_ino);
        ck_assert_msg(strstr(entrypoint, want), "%s lacks %s", entrypoint, want);
        json_object_put(o);
        aisb_policy_free(p);
}
END_TEST

/* A body's secret values can be wiped in place (run.c does, once the create is sent): the
 * bytes json-c holds, short strings (kept inside the object) and long ones alike. */
START_TEST(test_body_wiped)
{
        aisb_policy *p = POLICY({ "net", "none" }, { "env", "SHORT=hunter2" },
                                { "env", "LONG=sk-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" });
        json_object *o = body_for(p, false), *env = get(o, "env");
        const char *values[] = { json_object_get_string(get(env, "SHORT")), json_object_get_string(get(env, "LONG")) };
        size_t sizes[] = { strlen(values[0]), strlen(values[1]) };
        ck_assert_str_eq(values[0], "hunter2");
        json_wipe_strings(o);
        for (size_t i = 0; i < ELEMENTSOF(values); i++)
                for (size_t k = 0; k < sizes[i]; k++)
                        ck_assert_int_eq(values[i][k], 0);
        /* Everything else too: no value of the body is left readable. */
        ck_assert_str_eq(json_object_get_string(get(o, "image")), "");
        json_object_put(o);
        aisb_policy_free(p);
}
END_TEST

int main(void)
{
        unsetenv("AISB_HOME_VOLUME");
        return unit_run(suite_of("container", "spec", test_confinement, test_options_change_spec, test_redaction,
                                 test_project_settings_copy, test_mounts_identified, test_body_wiped));
}
