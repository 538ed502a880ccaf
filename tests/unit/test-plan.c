/* SPDX-License-Identifier: MIT */
/*
 * One plan, every view of it: for a matrix of policies, the plan is built twice from the same
 * facts and gives the same bytes, and the dry run's requests, inspect's JSON, the printed
 * ruleset and aisb kube's objects show what that one value holds (the same create body, the
 * same entrypoint argv, the same proxy variables, the same mounts).
 */
#include <check.h>
#include <stdlib.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "fileio.h"
#include "internal.h"
#include "kube.h"
#include "unit.h"
#include "../suite-table.h"

#define PROJECT "/tmp/aisb-test-plan/acme"

static void set(aisb_policy *p, const char *key, const char *value)
{
        aisb_error *err = NULL;
        ck_assert_msg(aisb_policy_set(p, key, value, &err) == 0, "%s=%s: %s", key, value ? value : "",
                      aisb_error_message(err));
}

/* The matrix: each row a policy, as keys and values. */
typedef struct row {
        const char *name;
        const char *keys[12][2];
} row;

static const row rows[] = {
        { "none", { { "net", "none" } } },
        { "full", { { "net", "full" } } },
        { "gate", { { "net", "allow" }, { "allow", "example.org" }, { "allow", "192.0.2.10:5432" } } },
        { "addresses", { { "net", "allow" }, { "allow", "192.0.2.10:5432" }, { "allow", "198.51.100.0/24" } } },
        { "proxy", { { "net", "allow" }, { "proxy", "127.0.0.1:3128" }, { "allow", "192.0.2.10:5432" } } },
        { "secret", { { "net", "allow" }, { "allow", "api.example.com" }, { "secret", "AISB_PLAN_KEY@api.example.com" } } },
        { "rules", { { "net", "allow" }, { "allow", "example.org GET,HEAD /v1/" } } },
        { "mounts", { { "net", "none" }, { "mount", "/tmp:/data:ro" }, { "env", "AISB_PLAN_TOKEN=hunter2" } } },
        { "devices", { { "net", "none" }, { "device", "/dev/null" } } },
        { "ephemeral", { { "net", "none" }, { "ephemeral-home", NULL }, { "insecure-keep-root", "true" } } },
        { "codex", { { "net", "none" }, { "harness", "codex" } } },
        { "claude", { { "net", "none" }, { "harness", "claude" } } },
};

static aisb_policy *policy_for(const row *w, bool project)
{
        aisb_policy *p = NULL;
        ck_assert_int_eq(aisb_policy_new(&p, NULL), 0);
        set(p, "user-allowlist", "");
        set(p, "no-agents", "true");
        set(p, "no-pi-config", "true");
        set(p, "entrypoint", getenv("AISB_ENTRYPOINT"));
        if (project) {
                ck_assert(mkdir("/tmp/aisb-test-plan", 0755) == 0 || errno == EEXIST);
                ck_assert(mkdir(PROJECT, 0755) == 0 || errno == EEXIST);
                ck_assert(mkdir(PROJECT "/.git", 0755) == 0 || errno == EEXIST);
                ck_assert(mkdir(PROJECT "/.vscode", 0755) == 0 || errno == EEXIST);
                set(p, "project", PROJECT);
        } else
                set(p, "no-cwd", "true");
        setenv("AISB_PLAN_KEY", "s3cr3t-plan-key", 1);
        for (size_t i = 0; i < ELEMENTSOF(w->keys) && w->keys[i][0]; i++)
                set(p, w->keys[i][0], w->keys[i][1]);
        return p;
}

static char *body_text(json_object *o)
{
        char *t = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
        ck_assert_ptr_nonnull(t);
        return t;
}

static char *argv_text(char *const *v)
{
        buffer b = {};
        for (size_t i = 0; v && v[i]; i++)
                ck_assert_int_ge(buffer_printf(&b, "%s%s", i ? " " : "", v[i]), 0);
        return b.data ? buffer_steal(&b) : strdup("");
}

static json_object *get(json_object *o, const char *key)
{
        json_object *v = NULL;
        ck_assert_msg(json_object_object_get_ex(o, key, &v), "no key %s in %s", key, json_object_to_json_string(o));
        return v;
}

static void dry_run_collect(const char *text, void *userdata)
{
        ck_assert_int_eq(buffer_printf(userdata, "%s", text), 0);
}

/* The value of NAME in a NAME=VALUE list, or NULL. */
static const char *env_of(char *const *env, const char *name)
{
        size_t n = strlen(name);
        for (size_t i = 0; env && env[i]; i++)
                if (strncmp(env[i], name, n) == 0 && env[i][n] == '=')
                        return env[i] + n + 1;
        return NULL;
}

/* The same inputs give the same bytes: two builds from one set of facts. */
START_TEST(test_pure)
{
        const row *w = &rows[_i];
        aisb_policy *p = policy_for(w, true);
        plan_facts f = {};
        aisb_error *err = NULL;
        ck_assert_msg(plan_gather(p, &(plan_gather_options) { .purpose = PLAN_DESCRIBE, .image = "localhost/aisb:x" }, &f,
                                  &err) == 0,
                      "%s: %s", w->name, aisb_error_message(err));
        run_plan a = {}, b = {};
        ck_assert_int_eq(plan_build(p, &f, &a, NULL), 0);
        ck_assert_int_eq(plan_build(p, &f, &b, NULL), 0);
        char *ta = body_text(a.body), *tb = body_text(b.body), *sa = body_text(a.shown), *sb = body_text(b.shown);
        ck_assert_str_eq(ta, tb);
        ck_assert_str_eq(sa, sb);
        char *ea = argv_text(a.entrypoint), *eb = argv_text(b.entrypoint);
        ck_assert_str_eq(ea, eb);
        char *va = argv_text(a.env), *vb = argv_text(b.env);
        ck_assert_str_eq(va, vb);
        /* Nothing the policy holds as a secret is shown. */
        ck_assert_ptr_null(strstr(sa, "hunter2"));
        ck_assert_ptr_null(strstr(sa, "s3cr3t-plan-key"));
        ck_assert_ptr_null(strstr(ta, "s3cr3t-plan-key"));
        /* The body's entrypoint is the plan's argv, its environment the plan's. */
        char *be = NULL;
        {
                json_object *ep = get(a.body, "entrypoint");
                buffer t = {};
                for (size_t i = 0; i < json_object_array_length(ep); i++)
                        ck_assert_int_ge(buffer_printf(&t, "%s%s", i ? " " : "",
                                                       json_object_get_string(json_object_array_get_idx(ep, i))),
                                         0);
                be = buffer_steal(&t);
        }
        ck_assert_str_eq(be, ea);
        json_object *env = get(a.body, "env");
        for (size_t i = 0; a.env[i]; i++) {
                char *name = strndup(a.env[i], strcspn(a.env[i], "="));
                ck_assert_str_eq(json_object_get_string(get(env, name)), a.env[i] + strlen(name) + 1);
                free(name);
        }
        ck_assert_uint_eq((size_t) json_object_object_length(env), strv_length((const char *const *) a.env));
        free(be);
        free(ta), free(tb), free(sa), free(sb), free(ea), free(eb), free(va), free(vb);
        run_plan_done(&a);
        run_plan_done(&b);
        plan_facts_done(&f);
        aisb_policy_free(p);
}
END_TEST

/* The dry run shows the plan's requests: its create body as shown, its name, its image. */
START_TEST(test_dry_run_renders_plan)
{
        const row *w = &rows[_i];
        aisb_policy *p = policy_for(w, false);
        /* What inspect_plan makes, with the image: the dry run's plan. */
        plan_facts f = {};
        run_plan plan = {};
        ck_assert_int_eq(inspect_plan(p, NULL, false, &f, &plan, NULL), 0);
        aisb_ctx *ctx = NULL;
        ck_assert_int_eq(aisb_ctx_new(&ctx, NULL), 0);
        buffer shown = {};
        aisb_ctx_set_dry_run(ctx, dry_run_collect, &shown);
        aisb_io *io = NULL;
        ck_assert_int_eq(aisb_io_new(&io, NULL), 0);
        int code = -1;
        aisb_error *err = NULL;
        ck_assert_msg(aisb_run(ctx, p, io, &code, &err) == 0, "%s: %s", w->name, aisb_error_message(err));
        ck_assert_int_eq(code, 0);
        char *body = body_text(plan.shown);
        ck_assert_msg(strstr(shown.data, body), "%s: the dry run lacks the plan's body:\n%s\n---\n%s", w->name, body,
                      shown.data);
        ck_assert_ptr_nonnull(strstr(shown.data, plan.image));
        ck_assert_ptr_nonnull(strstr(shown.data, "POST /v4.0.0/libpod/containers/create"));
        ck_assert_ptr_null(strstr(shown.data, "hunter2"));
        ck_assert_ptr_null(strstr(shown.data, "s3cr3t-plan-key"));
        /* Every step of the plan, in its order, and no other. */
        static const char *const marks[_PLAN_STEP_MAX] = {
                [PLAN_STEP_IMAGE] = "/images/",          [PLAN_STEP_VOLUME] = "/volumes/",
                [PLAN_STEP_NETWORK] = "# network: ",     [PLAN_STEP_GATE] = "# the gate: ",
                [PLAN_STEP_BRIDGE] = "# bridge: ",       [PLAN_STEP_KEEP] = "# keep: ",
                [PLAN_STEP_PROTECT] = "# protect: ",     [PLAN_STEP_CREATE] = "/containers/create",
                [PLAN_STEP_ATTACH] = "/attach?",         [PLAN_STEP_START] = "/start",
                [PLAN_STEP_STREAM] = "# stream: ",       [PLAN_STEP_WAIT] = "/wait?",
        };
        bool planned[_PLAN_STEP_MAX] = {};
        const char *at = shown.data;
        for (size_t i = 0; i < plan.n_steps; i++) {
                planned[plan.steps[i]] = true;
                const char *found = strstr(at, marks[plan.steps[i]]);
                ck_assert_msg(found, "%s: the dry run lacks step %s after its previous one:\n%s", w->name,
                              plan_steps[plan.steps[i]].name, shown.data);
                at = found + 1;
        }
        for (plan_step k = 0; k < _PLAN_STEP_MAX; k++)
                if (!planned[k] && marks[k][0] == '#')
                        ck_assert_msg(!strstr(shown.data, marks[k]), "%s: the dry run shows step %s, not planned",
                                      w->name, plan_steps[k].name);
        free(body);
        buffer_free(&shown);
        aisb_io_free(io);
        aisb_ctx_free(ctx);
        run_plan_done(&plan);
        plan_facts_done(&f);
        aisb_policy_free(p);
}
END_TEST

/* The steps follow the policy: a gate only when the network needs one, a home volume unless
 * the home is ephemeral, the project's steps only with a project to write; the create step
 * after every step that fills a slot it reads. */
START_TEST(test_steps)
{
        const row *w = &rows[_i];
        for (int project = 0; project < 2; project++) {
                aisb_policy *p = policy_for(w, project);
                plan_facts f = {};
                run_plan plan = {};
                ck_assert_int_eq(plan_gather(p, &(plan_gather_options) { .purpose = PLAN_DESCRIBE, .image = "localhost/aisb:x" },
                                             &f, NULL), 0);
                ck_assert_int_eq(plan_build(p, &f, &plan, NULL), 0);
                bool has[_PLAN_STEP_MAX] = {};
                unsigned filled = 0;
                for (size_t i = 0; i < plan.n_steps; i++) {
                        const plan_step_info *s = &plan_steps[plan.steps[i]];
                        ck_assert_msg(!has[plan.steps[i]], "%s: step %s twice", w->name, s->name);
                        has[plan.steps[i]] = true;
                        ck_assert_msg((s->reads & ~filled & (PLAN_SLOT_SANDBOX | PLAN_SLOT_STREAM)) == 0,
                                      "%s: step %s reads a slot no earlier step fills", w->name, s->name);
                        filled |= s->makes;
                }
                ck_assert_int_eq(has[PLAN_STEP_GATE], plan.needs_gate);
                ck_assert_int_eq(has[PLAN_STEP_VOLUME], plan.home_volume != NULL);
                ck_assert_int_eq(has[PLAN_STEP_KEEP], project);
                ck_assert_int_eq(has[PLAN_STEP_PROTECT], project);
                ck_assert_int_eq(plan.steps[0], PLAN_STEP_IMAGE);
                ck_assert_int_eq(plan.steps[plan.n_steps - 1], PLAN_STEP_WAIT);
                for (plan_step k = PLAN_STEP_CREATE; k <= PLAN_STEP_WAIT; k++)
                        ck_assert(has[k]);
                run_plan_done(&plan);
                plan_facts_done(&f);
                aisb_policy_free(p);
        }
}
END_TEST

/* docs/architecture.md's table of the steps is plan_steps, row for row. */
START_TEST(test_steps_documented)
{
        static const char *const slots[] = { "gate", "seed", "layer", "sandbox", "stream" };
        buffer want = {};
        ck_assert_int_eq(buffer_printf(&want, "| step | what it does | reads | fills |\n|---|---|---|---|\n"), 0);
        for (plan_step k = 0; k < _PLAN_STEP_MAX; k++) {
                ck_assert_int_eq(buffer_printf(&want, "| %s | %s |", plan_steps[k].name, plan_steps[k].what), 0);
                for (int pass = 0; pass < 2; pass++) {
                        unsigned set = pass ? plan_steps[k].makes : plan_steps[k].reads, n = 0;
                        for (size_t i = 0; i < ELEMENTSOF(slots); i++)
                                if (set & (1u << i))
                                        ck_assert_int_eq(buffer_printf(&want, " %s%s", n++ ? "" : "", slots[i]), 0);
                        ck_assert_int_eq(buffer_printf(&want, " |"), 0);
                }
                ck_assert_int_eq(buffer_printf(&want, "\n"), 0);
        }
        char path[4096], *doc = NULL;
        snprintf(path, sizeof path, "%s/docs/architecture.md", getenv("AISB_SRC"));
        size_t size = 0;
        ck_assert_int_eq(read_file_at(AT_FDCWD, path, 1 << 20, &doc, &size), 0);
        ck_assert_msg(strstr(doc, want.data), "docs/architecture.md's step table is not plan_steps; it should read:\n%s",
                      want.data);
        free(doc);
        buffer_free(&want);
}
END_TEST

/* inspect --json is the plan: its create request, entrypoint, environment names and
 * protected paths; the ruleset printed is of the plan's entrypoint argv. */
START_TEST(test_inspect_renders_plan)
{
        const row *w = &rows[_i];
        aisb_policy *p = policy_for(w, true);
        plan_facts f = {};
        run_plan plan = {};
        ck_assert_int_eq(inspect_plan(p, NULL, false, &f, &plan, NULL), 0);
        char *text = NULL;
        aisb_error *err = NULL;
        ck_assert_msg(aisb_policy_inspect_json(p, &text, &err) == 0, "%s", aisb_error_message(err));
        json_object *o = json_tokener_parse(text);
        ck_assert_ptr_nonnull(o);
        /* The name's random part and the pid aside (a description has none). */
        ck_assert_str_eq(json_object_to_json_string(get(o, "create")), json_object_to_json_string(plan.shown));
        ck_assert_str_eq(json_object_to_json_string(get(o, "entrypoint")),
                         json_object_to_json_string(get(plan.shown, "entrypoint")));
        json_object *names = get(o, "env");
        ck_assert_uint_eq(json_object_array_length(names), strv_length((const char *const *) plan.env));
        json_object *protect = get(o, "protected");
        ck_assert_uint_eq(json_object_array_length(protect), f.protect.n_mounts);
        ck_assert_uint_ge(f.protect.n_mounts, 2); /* .git over itself, .vscode */
        /* Each protected path is in the body's mounts. */
        const char *mounts = json_object_to_json_string_ext(get(plan.shown, "mounts"), JSON_C_TO_STRING_PLAIN);
        for (size_t i = 0; i < f.protect.n_mounts; i++) {
                char want[600];
                snprintf(want, sizeof want, "\"destination\":\"%s\"", f.protect.mounts[i].destination);
                char escaped[1200];
                size_t k = 0;
                for (const char *c = want; *c && k + 2 < sizeof escaped; c++) {
                        if (*c == '/')
                                escaped[k++] = '\\';
                        escaped[k++] = *c;
                }
                escaped[k] = 0;
                ck_assert_msg(strstr(mounts, escaped), "%s lacks %s", mounts, escaped);
        }
        /* The printed ruleset's allowed destinations are the plan's (run by root, the plan's
         * argv names uid 0, which the entrypoint's parser refuses as a run would). */
        char *ruleset = NULL;
        if (p->net == SANDBOX_NET_ALLOW) {
                aisb_error *e = NULL;
                int k = aisb_policy_ruleset(p, &ruleset, &e);
                if (getuid() == 0)
                        ck_assert_msg(k == -EINVAL && strstr(aisb_error_message(e), "--uid 0 is root"), "%s",
                                      aisb_error_message(e));
                else {
                        ck_assert_msg(k == 0, "%s", aisb_error_message(e));
                        bool address = false;
                        for (size_t i = 0; plan.entrypoint[i]; i++)
                                address |= streq(plan.entrypoint[i], "--allow") && plan.entrypoint[i + 1] &&
                                           strncmp(plan.entrypoint[i + 1], "192.0.2.10", 10) == 0;
                        ck_assert(!address || strstr(ruleset, "192.0.2.10"));
                }
                aisb_error_free(e);
        }
        free(ruleset);
        json_object_put(o);
        free(text);
        run_plan_done(&plan);
        plan_facts_done(&f);
        aisb_policy_free(p);
}
END_TEST

/* aisb kube's sandbox gets the proxy variables a local run's plan has (its NO_PROXY names
 * the same address entries; the proxy's URL is the gate's Service there), and --target
 * podman the same protected paths. */
START_TEST(test_kube_renders_plan)
{
        const row *w = &rows[_i];
        if (strcmp(w->name, "gate") && strcmp(w->name, "none"))
                return;
        aisb_policy *p = policy_for(w, true);
        plan_facts f = {};
        run_plan plan = {};
        ck_assert_int_eq(inspect_plan(p, NULL, false, &f, &plan, NULL), 0);
        kube_options ko = { .podman = true };
        char *text = NULL;
        aisb_error *err = NULL;
        ck_assert_msg(kube_manifests(p, &ko, &text, &err) == 0, "%s", aisb_error_message(err));
        const char *no_proxy = env_of(plan.env, "NO_PROXY");
        if (plan.needs_gate) {
                ck_assert_ptr_nonnull(no_proxy);
                char want[512];
                snprintf(want, sizeof want, "\"value\": \"%s\"", no_proxy);
                ck_assert_msg(strstr(text, want), "kube lacks %s", want);
                ck_assert_ptr_nonnull(strstr(no_proxy, "192.0.2.10"));
        } else
                ck_assert_ptr_null(no_proxy);
        /* Each protected path, the host's own over itself (podman 4.3 has no subPath). */
        for (size_t i = 0; i < f.protect.n_mounts; i++) {
                char want[600];
                snprintf(want, sizeof want, "\"mountPath\": \"%s\"", f.protect.mounts[i].destination);
                ck_assert_msg(strstr(text, want), "kube lacks %s", want);
                snprintf(want, sizeof want, "\"path\": \"%s\"", f.protect.mounts[i].source);
                ck_assert_msg(strstr(text, want), "kube lacks %s", want);
        }
        free(text);
        run_plan_done(&plan);
        plan_facts_done(&f);
        aisb_policy_free(p);
}
END_TEST

/* The facts a run sets once its gate serves it change the plan where they should: the
 * port, the key (never shown), the CA. */
START_TEST(test_gate_facts)
{
        aisb_policy *p = policy_for(&rows[2], false);
        plan_facts f = {};
        ck_assert_int_eq(plan_gather(p, &(plan_gather_options) { .purpose = PLAN_DESCRIBE, .image = "localhost/aisb:x" },
                                     &f, NULL),
                         0);
        ck_assert(plan_needs_gate(p, &f));
        f.gate_port = 40123;
        f.gate_key = "0123456789abcdef";
        f.gate_hash = "feedfacefeedface";
        f.gate_ca = "/run/user/1/aisb-run-x/gate-ca.pem";
        run_plan plan = {};
        ck_assert_int_eq(plan_build(p, &f, &plan, NULL), 0);
        ck_assert_str_eq(env_of(plan.env, "HTTPS_PROXY"), "http://aisb:0123456789abcdef@10.0.2.2:40123");
        ck_assert_str_eq(env_of(plan.env_shown, "HTTPS_PROXY"), "http://aisb:<redacted>@10.0.2.2:40123");
        ck_assert_str_eq(env_of(plan.env, "GIT_HTTP_PROXY_AUTHMETHOD"), "basic");
        ck_assert_str_eq(env_of(plan.env, "SSL_CERT_FILE"), AISB_CA_BUNDLE_IN_SANDBOX);
        char *argv = argv_text(plan.entrypoint);
        ck_assert_msg(strstr(argv, "--allow 10.0.2.2:40123"), "%s", argv);
        ck_assert_msg(strstr(argv, "--ca-bundle " AISB_GATE_CA_IN_SANDBOX), "%s", argv);
        char *shown = body_text(plan.shown);
        ck_assert_ptr_null(strstr(shown, "0123456789abcdef"));
        ck_assert_ptr_nonnull(strstr(shown, "feedfacefeedface"));
        free(shown);
        free(argv);
        f.gate_key = f.gate_hash = f.gate_ca = NULL;
        run_plan_done(&plan);
        plan_facts_done(&f);
        aisb_policy_free(p);
}
END_TEST

/* A description shows what a run's effects add: the key of a gate of the run's own (shown
 * redacted), the trust of the gate's CA where it intercepts, neither for a plain gate. */
START_TEST(test_description_effects)
{
        static const struct {
                size_t row;
                bool key, ca;
        } cases[] = { { 2, false, false }, { 5, true, true }, { 6, false, true } };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                aisb_policy *p = policy_for(&rows[cases[i].row], false);
                plan_facts f = {};
                ck_assert_int_eq(plan_gather(p, &(plan_gather_options) { .purpose = PLAN_DESCRIBE, .image = "localhost/aisb:x" },
                                             &f, NULL),
                                 0);
                run_plan plan = {};
                ck_assert_int_eq(plan_build(p, &f, &plan, NULL), 0);
                const char *proxy = env_of(plan.env_shown, "HTTPS_PROXY");
                ck_assert_ptr_nonnull(proxy);
                ck_assert_msg(!!strstr(proxy, "aisb:<redacted>@") == cases[i].key, "%s: %s", rows[cases[i].row].name, proxy);
                ck_assert(!!env_of(plan.env_shown, "GIT_HTTP_PROXY_AUTHMETHOD") == cases[i].key);
                ck_assert(!!env_of(plan.env_shown, "SSL_CERT_FILE") == cases[i].ca);
                char *argv = argv_text(plan.entrypoint), *shown = body_text(plan.shown);
                ck_assert_msg(!!strstr(argv, "--ca-bundle " AISB_GATE_CA_IN_SANDBOX) == cases[i].ca, "%s", argv);
                ck_assert_msg(!!strstr(shown, "gate-ca.pem\"") == cases[i].ca, "%s", rows[cases[i].row].name);
                ck_assert_ptr_nonnull(strstr(shown, "aisb.gate"));
                free(argv);
                free(shown);
                run_plan_done(&plan);
                plan_facts_done(&f);
                aisb_policy_free(p);
        }
}
END_TEST

/* The plan is the snapshot's: the project's allowlist changed (to what a project file may not
 * hold) after the facts were gathered changes nothing a build makes, the policy's label
 * included. */
START_TEST(test_built_from_snapshot)
{
        aisb_policy *p = policy_for(&rows[2], true);
        ck_assert(mkdir(PROJECT "/.ai-sandbox", 0755) == 0 || errno == EEXIST);
        FILE *a = fopen(PROJECT "/.ai-sandbox/allow", "w");
        ck_assert_ptr_nonnull(a);
        fputs("example.net\n", a);
        fclose(a);
        plan_facts f = {};
        aisb_error *err = NULL;
        ck_assert_msg(plan_gather(p, &(plan_gather_options) { .purpose = PLAN_DESCRIBE, .image = "localhost/aisb:x" }, &f,
                                  &err) == 0,
                      "%s", aisb_error_message(err));
        run_plan before = {}, after = {};
        ck_assert_int_eq(plan_build(p, &f, &before, NULL), 0);
        a = fopen(PROJECT "/.ai-sandbox/allow", "w");
        ck_assert_ptr_nonnull(a);
        fputs("10.1.2.3\n", a);
        fclose(a);
        ck_assert_msg(plan_build(p, &f, &after, &err) == 0, "%s", aisb_error_message(err));
        char *tb = body_text(before.body), *ta = body_text(after.body);
        ck_assert_str_eq(tb, ta);
        ck_assert_str_eq(before.policy_hash, after.policy_hash);
        ck_assert_ptr_nonnull(strstr(tb, before.policy_hash));
        free(tb);
        free(ta);
        ck_assert_int_eq(unlink(PROJECT "/.ai-sandbox/allow"), 0);
        run_plan_done(&before);
        run_plan_done(&after);
        plan_facts_done(&f);
        aisb_policy_free(p);
}
END_TEST

/* A review run's project is an overlay whose upper directory is the run's layer: no bind of
 * the project, no writable bind of a git directory (its writes go to the layer too), its
 * read-only binds kept, and no check of /project's inode (the overlay's root is the layer's). */
START_TEST(test_review_plan)
{
        aisb_policy *p = policy_for(&rows[0], true);
        FILE *c = fopen(PROJECT "/.git/config", "w");
        ck_assert_ptr_nonnull(c);
        fclose(c);
        set(p, "review", "true");
        plan_facts f = {};
        aisb_error *err = NULL;
        ck_assert_msg(plan_gather(p, &(plan_gather_options) { .purpose = PLAN_DESCRIBE, .image = "localhost/aisb:x" }, &f,
                                  &err) == 0,
                      "%s", aisb_error_message(err));
        run_plan plan = {};
        ck_assert_int_eq(plan_build(p, &f, &plan, NULL), 0);
        json_object *overlay = get(plan.body, "overlay_volumes");
        ck_assert_uint_eq(json_object_array_length(overlay), 1);
        json_object *o = json_object_array_get_idx(overlay, 0);
        ck_assert_str_eq(json_object_get_string(get(o, "source")), PROJECT);
        ck_assert_str_eq(json_object_get_string(get(o, "destination")), AISB_PROJECT_DIR);
        char *options = body_text(get(o, "options"));
        ck_assert_ptr_nonnull(strstr(options, "\"upperdir=(the run's review layer)"));
        ck_assert_ptr_nonnull(strstr(options, "\"workdir=(the run's review layer)"));
        free(options);
        json_object *mounts = get(plan.body, "mounts");
        bool config_ro = false;
        for (size_t i = 0; i < json_object_array_length(mounts); i++) {
                json_object *m = json_object_array_get_idx(mounts, i);
                const char *dst = json_object_get_string(get(m, "destination"));
                char *opts = body_text(get(m, "options"));
                ck_assert_msg(!streq(dst, AISB_PROJECT_DIR), "the project is bound: %s", dst);
                ck_assert_msg(!streq(dst, AISB_PROJECT_DIR "/.git"), "the git directory is bound writable");
                if (streq(dst, AISB_PROJECT_DIR "/.git/config"))
                        config_ro = strstr(opts, "\"ro\"") != NULL;
                free(opts);
        }
        ck_assert(config_ro);
        char *argv = argv_text(plan.entrypoint);
        ck_assert_ptr_null(strstr(argv, "--expect-mount " AISB_PROJECT_DIR ":"));
        ck_assert_ptr_null(strstr(argv, "--expect-mount " AISB_PROJECT_DIR "/.git:"));
        ck_assert_ptr_nonnull(strstr(argv, "--expect-mount " AISB_PROJECT_DIR "/.git/config:"));
        free(argv);
        run_plan_done(&plan);
        plan_facts_done(&f);
        /* Nothing to review without a project; what root would write is not the user's. */
        set(p, "insecure-keep-root", "true");
        ck_assert_int_eq(plan_gather(p, &(plan_gather_options) { .purpose = PLAN_DRY_RUN }, &f, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(aisb_error_message(err), "--insecure-keep-root"));
        aisb_error_free(err);
        err = NULL;
        set(p, "insecure-keep-root", "false");
        set(p, "no-cwd", "true");
        ck_assert_int_eq(plan_gather(p, &(plan_gather_options) { .purpose = PLAN_DRY_RUN }, &f, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(aisb_error_message(err), "--review"));
        aisb_error_free(err);
        ck_assert_int_eq(unlink(PROJECT "/.git/config"), 0);
        aisb_policy_free(p);
}
END_TEST

/* The pieces every view shares. */
START_TEST(test_builders)
{
        char **env = NULL;
        allowlist l = {};
        ck_assert_int_eq(plan_proxy_env(&l, "http://gate:3128", false, &env), 0);
        ck_assert_str_eq(env_of(env, "http_proxy"), "http://gate:3128");
        ck_assert_str_eq(env_of(env, "no_proxy"), "localhost,127.0.0.1,::1");
        ck_assert_ptr_null(env_of(env, "GIT_HTTP_PROXY_AUTHMETHOD"));
        strv_free(env);
        char **argv = NULL;
        static const char *const net[] = { "--net", "allow", "--allow", "192.0.2.1:80", NULL };
        ck_assert_int_eq(plan_entrypoint_argv(&(entrypoint_spec) { .no_ids = true, .net_args = net, .ruleset_only = true },
                                              &argv),
                         0);
        char *t = argv_text(argv);
        ck_assert_str_eq(t, AISB_ENTRYPOINT_IN_IMAGE " --net allow --ruleset-only --allow 192.0.2.1:80");
        free(t);
        strv_free(argv);
        argv = NULL;
        ck_assert_int_eq(plan_entrypoint_argv(&(entrypoint_spec) { .uid = 7, .gid = 8, .net_args = net }, &argv), 0);
        t = argv_text(argv);
        ck_assert_str_eq(t, AISB_ENTRYPOINT_IN_IMAGE " --uid 7 --gid 8 --net allow --allow 192.0.2.1:80 --");
        free(t);
        strv_free(argv);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("plan");
        TCase *tc = suite_add_tests(s, "plan", NULL, NULL, test_steps_documented, test_gate_facts,
                                    test_description_effects, test_built_from_snapshot, test_builders,
                                    test_review_plan);
        tcase_set_timeout(tc, 60);
        const TTest *const loops[] = { test_pure, test_steps, test_dry_run_renders_plan, test_inspect_renders_plan,
                                       test_kube_renders_plan };
        for (size_t i = 0; i < ELEMENTSOF(loops); i++)
                tcase_add_loop_test(tc, loops[i], 0, ELEMENTSOF(rows));
        return unit_run(s);
}
