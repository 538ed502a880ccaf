/* SPDX-License-Identifier: MIT */
/*
 * aisb kube's emitter over what a user or a project's files can put into a policy: allowlist
 * entries (a project's .ai-sandbox/allow holds them), --gate-add-host entries, variable names,
 * the command's words, the network mode. One policy setting a line: "allow ENTRY", "host
 * NAME:IP", "env NAME", "cmd WORD", "net MODE". Checked: a refusal is one line; otherwise the
 * output is JSON documents after "---" lines and nothing else (no text of the input can end a
 * string or start a document), every object is one of the kinds aisb emits with a name a
 * cluster takes, and no variable's value appears in it.
 */
#include "internal.h"
#include "fuzz.h"
#include "kube.h"

#define VALUE "fuzz-VALUE-never-printed" /* upper case: no name the allowlist lowers is it */

static char entrypoint_path[] = "/tmp/aisb-fuzz-kube-entrypoint.XXXXXX";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
        (void) argc;
        (void) argv;
        /* The image's tag hashes the entrypoint binary: any small file does. */
        int fd = mkstemp(entrypoint_path);
        if (fd < 0 || write(fd, "\177ELF", 4) != 4)
                abort();
        close(fd);
        return 0;
}

static void check_output(const char *text, bool input_names_value)
{
        static const char *const kinds[] = { "ConfigMap", "Deployment", "Service", "NetworkPolicy",
                                             "PersistentVolumeClaim", "Pod" };
        FUZZ_CHECK(startswith(text, "---\n"));
        FUZZ_CHECK(input_names_value || !strstr(text, VALUE));
        for (const char *p = text; p && *p;) {
                FUZZ_CHECK(startswith(p, "---\n"));
                p += 4;
                const char *next = strstr(p, "\n---\n");
                char *one = next ? strndup(p, (size_t) (next - p + 1)) : strdup(p);
                FUZZ_CHECK(one);
                json_object *o = json_tokener_parse(one), *v = NULL, *meta = NULL, *name = NULL;
                FUZZ_CHECK(o && json_object_is_type(o, json_type_object));
                FUZZ_CHECK(json_object_object_get_ex(o, "kind", &v));
                bool known = false;
                for (size_t i = 0; i < ELEMENTSOF(kinds); i++)
                        known |= streq(json_object_get_string(v), kinds[i]);
                FUZZ_CHECK(known);
                FUZZ_CHECK(json_object_object_get_ex(o, "metadata", &meta) &&
                           json_object_object_get_ex(meta, "name", &name));
                const char *n = json_object_get_string(name);
                FUZZ_CHECK(n && *n && strlen(n) <= 63 && n[0] != '-' && n[strlen(n) - 1] != '-' &&
                           strspn(n, "abcdefghijklmnopqrstuvwxyz0123456789-") == strlen(n));
                json_object_put(o);
                free(one);
                p = next ? next + 1 : NULL;
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size > 4096)
                return 0;
        char *text = fuzz_strndup(data, size), *lines[32];
        size_t n = fuzz_split_lines(text, size, lines, ELEMENTSOF(lines));
        aisb_policy *p = NULL;
        if (aisb_policy_new(&p, NULL) < 0)
                abort();
        static const char *const base[][2] = { { "no-cwd", "true" }, { "user-allowlist", "" }, { "net", "allow" } };
        for (size_t i = 0; i < ELEMENTSOF(base); i++)
                FUZZ_CHECK(aisb_policy_set(p, base[i][0], base[i][1], NULL) == 0);
        FUZZ_CHECK(aisb_policy_set(p, "entrypoint", entrypoint_path, NULL) == 0);
        char **cmd = NULL;
        for (size_t i = 0; i < n; i++) {
                char *line = lines[i], *arg = strchr(line, ' ');
                if (!arg)
                        continue;
                *arg++ = 0;
                aisb_error *err = NULL;
                int r = 0;
                if (streq(line, "allow"))
                        r = aisb_policy_set(p, "allow", arg, &err);
                else if (streq(line, "host"))
                        r = aisb_policy_set(p, "gate-add-host", arg, &err);
                else if (streq(line, "net"))
                        r = aisb_policy_set(p, "net", arg, &err);
                else if (streq(line, "cmd"))
                        r = strv_push(&cmd, arg) < 0 ? -ENOMEM : 0;
                else if (streq(line, "env")) {
                        if (env_name_valid(arg))
                                setenv(arg, VALUE, 1);
                        r = aisb_policy_set(p, "env", arg, &err);
                }
                if (r < 0 && err)
                        FUZZ_CHECK(fuzz_one_line(aisb_error_message(err)));
                aisb_error_free(err);
        }
        if (cmd)
                (void) aisb_policy_set_command(p, (const char *const *) cmd, NULL);
        kube_options o = { .timeout_s = 60 };
        char *out = NULL;
        aisb_error *err = NULL;
        int r = kube_manifests(p, &o, &out, &err);
        if (r < 0) {
                FUZZ_CHECK(!out && fuzz_one_line(aisb_error_message(err)));
        } else
                check_output(out, memmem(data, size, VALUE, strlen(VALUE)) != NULL);
        free(out);
        aisb_error_free(err);
        strv_free(cmd);
        aisb_policy_free(p);
        free(text);
        return 0;
}
