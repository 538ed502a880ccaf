/* SPDX-License-Identifier: MIT */
/*
 * The harness (harness.c): when pi's host configuration is bridged, which agents directory a
 * run mounts, the bridge itself into an ephemeral home (the run directory's seed) and into a
 * home volume (found through the fake libpod service, its mount point a directory of the
 * test), where a symlink the agent planted must never be followed, and what aisb inspect says
 * of it: names, never a value.
 */
#include <check.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "fake-podman.h"
#include "internal.h"
#include "unit.h"
#include "fileio.h"
#include "toml-json.h"

#define LITERAL_KEY "sk-acme-literal-0001"
#define LITERAL_HEADER "team-secret-0002"
#define MODELS                                                                                        \
        "{\"providers\":{\"acme\":{\"baseUrl\":\"https://api.acme.test\",\"apiKey\":\"" LITERAL_KEY "\"," \
        "\"headers\":{\"X-Team\":\"" LITERAL_HEADER "\"},\"models\":[{\"id\":\"m1\"}]}}}"
#define TOKEN "ghp_Qm4TzR8vLc2WxHy7NbKd3PfJ6sGa9UeVt5Rw"

static char base[] = "/tmp/aisb-test-harness-XXXXXX";
static char dir[256]; /* this test's own: home/, volume/, victim/ */
static char home[300];
static fake_podman *fp;
static aisb_ctx *ctx;

typedef struct log_lines {
        char text[8192];
} log_lines;
static log_lines logs;

static int on_event(const aisb_event *e, void *userdata)
{
        log_lines *l = userdata;
        if (e->type != AISB_EVENT_LOG)
                return 0;
        size_t n = strlen(l->text);
        snprintf(l->text + n, sizeof l->text - n, "%d %s\n", (int) e->level, e->text);
        return 0;
}

static void setup(void)
{
        snprintf(dir, sizeof dir, "%s/t-XXXXXX", base);
        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(home, sizeof home, "%s/home", dir);
        ck_assert_int_eq(mkdir(home, 0700), 0);
        setenv("HOME", home, 1);
        unit_podman_start(&fp, &ctx);
        logs.text[0] = 0;
        aisb_ctx_set_event_fn(ctx, on_event, &logs);
}

static void teardown(void)
{
        unit_podman_stop(fp, ctx);
}

/* dir/sub, in one of four static buffers. */
static const char *at(const char *sub)
{
        static char path[4][PATH_MAX];
        static unsigned next;
        char *p = path[next++ % 4];
        snprintf(p, PATH_MAX, "%s/%s", dir, sub);
        return p;
}

static void mkdirs(const char *path)
{
        char command[PATH_MAX + 16];
        snprintf(command, sizeof command, "mkdir -p '%s'", path);
        ck_assert_int_eq(system(command), 0);
}

static void write_file(const char *path, const char *text)
{
        char parent[PATH_MAX];
        snprintf(parent, sizeof parent, "%s", path);
        *strrchr(parent, '/') = 0;
        mkdirs(parent);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write_all(fd, text, strlen(text)), 0);
        close(fd);
}

/* harness's host directory, dir/HARNESS-home as its variable names it, with file holding text. */
static void host_harness(const char *harness, const char *file, const char *text)
{
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s-home", dir, harness);
        setenv(strcmp(harness, "claude") == 0 ? "CLAUDE_CONFIG_DIR" : "CODEX_HOME", path, 1);
        char rel[128];
        snprintf(rel, sizeof rel, "%s-home/%s", harness, file);
        write_file(at(rel), text);
}

/* The file's text, or NULL when it is absent. */
static char *read_file(const char *path)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        char *text = NULL;
        size_t size;
        ck_assert_int_eq(read_full_fd(fd, 1 << 20, &text, &size), 0);
        close(fd);
        return text;
}

static json_object *read_json(const char *path)
{
        char *text = read_file(path);
        ck_assert_msg(text, "%s is missing", path);
        json_object *o = json_tokener_parse(text);
        ck_assert_msg(o, "%s is not JSON", path);
        free(text);
        return o;
}

static const char *get_string(json_object *o, const char *a, const char *b, const char *c)
{
        const char *keys[] = { a, b, c };
        for (size_t i = 0; i < 3 && keys[i]; i++)
                if (!json_object_object_get_ex(o, keys[i], &o))
                        return NULL;
        return json_object_get_string(o);
}

/* The host's pi configuration, where pi itself keeps it. */
static void host_pi(const char *settings, const char *models)
{
        char path[PATH_MAX];
        if (settings) {
                snprintf(path, sizeof path, "%s/.pi/agent/settings.json", home);
                write_file(path, settings);
        }
        if (models) {
                snprintf(path, sizeof path, "%s/.pi/agent/models.json", home);
                write_file(path, models);
        }
        snprintf(path, sizeof path, "%s/.pi/agent/auth.json", home);
        write_file(path, "{\"anthropic\":{\"type\":\"api_key\",\"key\":\"sk-ant-never-copied\"}}");
}

static aisb_policy *new_policy(void)
{
        aisb_policy *p = NULL;
        ck_assert_int_eq(aisb_policy_new(&p, NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "no-cwd", "true", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "no-agents", "true", NULL), 0);
        return p;
}

static void expect_mode(const char *path, mode_t mode)
{
        struct stat st;
        ck_assert_msg(lstat(path, &st) == 0, "%s: %m", path);
        ck_assert_msg(S_ISREG(st.st_mode), "%s is not a regular file", path);
        ck_assert_uint_eq(st.st_mode & 07777, mode);
}

/* ---- what applies ---- */

START_TEST(test_bridge_applies)
{
        aisb_policy *p = new_policy();
        ck_assert(harness_bridge_applies(p)); /* the default harness is pi */
        ck_assert_int_eq(aisb_policy_set(p, "no-pi-config", "true", NULL), 0);
        ck_assert(!harness_bridge_applies(p));
        ck_assert_int_eq(aisb_policy_set(p, "no-pi-config", "false", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "shell", "true", NULL), 0);
        ck_assert(!harness_bridge_applies(p));
        ck_assert_int_eq(aisb_policy_set(p, "shell", "false", NULL), 0);
        ck_assert_int_eq(aisb_policy_set_command(p, (const char *const[]) { "/opt/pi/bin/pi", "--continue", NULL }, NULL), 0);
        ck_assert(harness_bridge_applies(p));
        ck_assert_int_eq(aisb_policy_set_command(p, (const char *const[]) { "pip", "install", NULL }, NULL), 0);
        ck_assert(!harness_bridge_applies(p));
        ck_assert_int_eq(aisb_policy_set_command(p, (const char *const[]) { "/usr/bin/pi/", NULL }, NULL), 0);
        ck_assert(!harness_bridge_applies(p));
        aisb_policy_free(p);
        /* claude and codex have bridges of their own; no-harness-config declines each, and
         * no-pi-config only pi's. */
        for (const char *const *h = (const char *const[]) { "claude", "codex", NULL }; *h; h++) {
                ck_assert_int_eq(aisb_policy_new(&p, NULL), 0);
                ck_assert_int_eq(aisb_policy_set(p, "harness", *h, NULL), 0);
                ck_assert(harness_bridge_applies(p));
                ck_assert_str_eq(harness_sandbox_dir(p), streq(*h, "claude") ? "/home/sandbox/.claude" : "/home/sandbox/.codex");
                ck_assert_int_eq(aisb_policy_set(p, "no-pi-config", "true", NULL), 0);
                ck_assert(harness_bridge_applies(p));
                ck_assert_int_eq(aisb_policy_set(p, "no-harness-config", "true", NULL), 0);
                ck_assert(!harness_bridge_applies(p));
                aisb_policy_free(p);
        }
        ck_assert_int_eq(aisb_policy_new(&p, NULL), 0);
        ck_assert_str_eq(harness_sandbox_dir(p), "/home/sandbox/.pi/agent");
        ck_assert_int_eq(aisb_policy_set(p, "no-harness-config", "true", NULL), 0);
        ck_assert(!harness_bridge_applies(p));
        ck_assert_int_eq(aisb_policy_set(p, "shell", "true", NULL), 0);
        ck_assert_ptr_null(harness_sandbox_dir(p));
        aisb_policy_free(p);
}
END_TEST

static const struct thinking_case {
        const char *settings[4][2]; /* KEY, VALUE set in turn on a new policy (pi, xhigh) */
        int check;                  /* harness_thinking_check */
        const char *message;        /* its error's, when it refuses */
        const char *env;            /* harness_thinking_env */
} thinking_cases[] = {
        { {}, 0, NULL, NULL },
        { { { "thinking", "max" } }, -EINVAL,
          "thinking: pi has no level 'max' (use one of: off, minimal, low, medium, high, xhigh, host)", NULL },
        /* Declined, pi's level is not applied, so nothing to refuse. */
        { { { "thinking", "max" }, { "no-pi-config", "true" } }, 0, NULL, NULL },
        { { { "thinking", "max" }, { "no-pi-config", "true" }, { "harness", "claude" } }, 0, NULL,
          "CLAUDE_CODE_EFFORT_LEVEL" },
        { { { "harness", "claude" }, { "thinking", "off" } }, -EINVAL,
          "thinking: claude has no level 'off' (use one of: low, medium, high, xhigh, max, host)",
          "CLAUDE_CODE_EFFORT_LEVEL" },
        { { { "harness", "claude" }, { "thinking", "host" } }, 0, NULL, NULL },
        { { { "harness", "claude" }, { "thinking", "low" }, { "env", "CLAUDE_CODE_EFFORT_LEVEL=high" } }, 0, NULL, NULL },
        /* codex: its own levels, through its bridged config.toml (no variable); declined with
         * the bridge. */
        { { { "harness", "codex" } }, 0, NULL, NULL },
        { { { "harness", "codex" }, { "thinking", "max" } }, -EINVAL,
          "thinking: codex has no level 'max' (use one of: none, minimal, low, medium, high, xhigh, host)", NULL },
        { { { "harness", "codex" }, { "thinking", "minimal" } }, 0, NULL, NULL },
        { { { "harness", "codex" }, { "thinking", "max" }, { "no-harness-config", "true" } }, 0, NULL, NULL },
};

/* The reasoning level, per harness: each takes its own levels and refuses the others with
 * its list; claude gets its level as CLAUDE_CODE_EFFORT_LEVEL, unless the run sets that
 * itself; "host" leaves every harness alone. */
START_TEST(test_thinking_per_harness)
{
        const struct thinking_case *c = &thinking_cases[_i];
        aisb_policy *p = NULL;
        ck_assert_int_eq(aisb_policy_new(&p, NULL), 0);
        for (size_t i = 0; i < ELEMENTSOF(c->settings) && c->settings[i][0]; i++)
                ck_assert_int_eq(aisb_policy_set(p, c->settings[i][0], c->settings[i][1], NULL), 0);
        aisb_error *err = NULL;
        ck_assert_int_eq(harness_thinking_check(p, &err), c->check);
        if (c->message)
                ck_assert_str_eq(aisb_error_message(err), c->message);
        aisb_error_free(err);
        ck_assert_str_eq(harness_thinking_env(p) ? harness_thinking_env(p) : "(none)", c->env ? c->env : "(none)");
        aisb_policy_free(p);
}
END_TEST

/* Another command is no harness: any level, no variable. */
START_TEST(test_thinking_no_harness)
{
        aisb_policy *p = NULL;
        ck_assert_int_eq(aisb_policy_new(&p, NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "harness", "claude", NULL), 0);
        ck_assert_int_eq(aisb_policy_set_command(p, (const char *const[]) { "sh", "-c", "claude -p hi", NULL }, NULL), 0);
        ck_assert_int_eq(harness_of_command(p), HARNESS_NONE);
        ck_assert_int_eq(aisb_policy_set(p, "thinking", "off", NULL), 0);
        ck_assert_int_eq(harness_thinking_check(p, NULL), 0);
        ck_assert_ptr_null(harness_thinking_env(p));
        aisb_error *err = NULL;
        ck_assert_int_eq(aisb_policy_set(p, "thinking", "bogus", &err), -EINVAL);
        aisb_error_free(err);
        aisb_policy_free(p);
}
END_TEST

static void expect_no_agents_dir(const aisb_policy *p, const char *why, const char *message)
{
        char *d = (char *) "unset";
        const char *reason = NULL;
        ck_assert_int_eq(harness_agents_dir(p, &d, &reason), 0);
        ck_assert_ptr_null(d);
        ck_assert_str_eq(reason, why);
        aisb_error *err = NULL;
        ck_assert_int_eq(aisb_policy_agents_dir(p, &d, &err), -ENOENT);
        ck_assert_str_eq(aisb_error_message(err), message);
        aisb_error_free(err);
}

static void expect_agents_dir(const aisb_policy *p, const char *expected)
{
        char *d = NULL;
        const char *reason = "unset";
        ck_assert_int_eq(harness_agents_dir(p, &d, &reason), 0);
        ck_assert_str_eq(d ? d : "(null)", expected);
        ck_assert_ptr_null(reason);
        free(d);
        ck_assert_int_eq(aisb_policy_agents_dir(p, &d, NULL), 0);
        ck_assert_str_eq(d, expected);
        free(d);
}

START_TEST(test_agents_dir)
{
        aisb_policy *p = NULL;
        ck_assert_int_eq(aisb_policy_new(&p, NULL), 0);
        char message[PATH_MAX + 64], agents[PATH_MAX];
        snprintf(agents, sizeof agents, "%s/.agents", home);
        snprintf(message, sizeof message, "runs mount no agents directory: %s does not exist", agents);
        expect_no_agents_dir(p, "it does not exist", message);
        /* Not a directory: none either. */
        write_file(agents, "not a directory\n");
        expect_no_agents_dir(p, "it does not exist", message);
        ck_assert_int_eq(unlink(agents), 0);
        ck_assert_int_eq(mkdir(agents, 0700), 0);
        expect_agents_dir(p, agents);

        /* The policy's own directory instead; gone since it was set: none. */
        mkdirs(at("skills"));
        ck_assert_int_eq(aisb_policy_set(p, "agents-dir", at("skills"), NULL), 0);
        expect_agents_dir(p, at("skills"));
        ck_assert_int_eq(rmdir(at("skills")), 0);
        snprintf(message, sizeof message, "runs mount no agents directory: %s does not exist", at("skills"));
        expect_no_agents_dir(p, "it does not exist", message);

        /* Declined, whatever exists. */
        ck_assert_int_eq(aisb_policy_set(p, "no-agents", "true", NULL), 0);
        expect_no_agents_dir(p, "no-agents is set", "runs mount no agents directory: no-agents is set");
        aisb_policy_free(p);

        ck_assert_int_eq(aisb_policy_new(&p, NULL), 0);
        unsetenv("HOME");
        expect_no_agents_dir(p, "HOME is not set", "runs mount no agents directory: HOME is not set");
        setenv("HOME", "", 1);
        expect_no_agents_dir(p, "HOME is not set", "runs mount no agents directory: HOME is not set");
        setenv("HOME", home, 1);
        aisb_policy_free(p);
}
END_TEST

/* p's bridge prepared in a new run directory *rd, into *b. */
static int prepare_in(const aisb_policy *p, run_dir *rd, harness_bridge *b, aisb_error **err)
{
        *rd = RUN_DIR_NULL;
        ck_assert_int_eq(run_dir_create(rd, NULL), 0);
        *b = (harness_bridge) {};
        return harness_bridge_prepare(ctx, p, rd, b, err);
}

/* An ephemeral home's bridge, prepared: its seed, rd's NAME, into seed (PATH_MAX bytes). */
static void prepare_seed(const aisb_policy *p, run_dir *rd, harness_bridge *b, const char *name, char *seed)
{
        aisb_error *err = NULL;
        ck_assert_msg(prepare_in(p, rd, b, &err) == 0, "%s", aisb_error_message(err));
        snprintf(seed, PATH_MAX, "%s/%s", rd->path, name);
        ck_assert_str_eq(b->seed_dir, seed);
}

/* ---- the bridge into an ephemeral home ---- */

START_TEST(test_prepare_ephemeral)
{
        host_pi("{\"theme\":\"dark\",\"defaultThinkingLevel\":\"low\",\"packages\":[\"npm:x\"]}", MODELS);
        aisb_policy *p = new_policy();
        ck_assert_int_eq(aisb_policy_set(p, "ephemeral-home", "true", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "thinking", "medium", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "env", "AISB_PI_KEY_ACME=value", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "env", "AISB_PI_HEADER_ACME_X_TEAM=value", NULL), 0);
        run_dir rd;
        harness_bridge b;
        /* The seed waits in the run's own directory; the entrypoint copies it in. */
        char seed[PATH_MAX], path[PATH_MAX + 32];
        prepare_seed(p, &rd, &b, "pi-agent", seed);
        ck_assert_ptr_null(b.agents_dir);
        snprintf(path, sizeof path, "%s/settings.json", seed);
        expect_mode(path, 0600);
        json_object *settings = read_json(path);
        ck_assert_str_eq(get_string(settings, "theme", NULL, NULL), "dark");
        /* The policy's level, not the host's. */
        ck_assert_str_eq(get_string(settings, "defaultThinkingLevel", NULL, NULL), "medium");
        json_object_put(settings);

        snprintf(path, sizeof path, "%s/models.json", seed);
        expect_mode(path, 0600);
        char *text = read_file(path);
        ck_assert_ptr_null(strstr(text, LITERAL_KEY));
        ck_assert_ptr_null(strstr(text, LITERAL_HEADER));
        free(text);
        json_object *models = read_json(path);
        ck_assert_str_eq(get_string(models, "providers", "acme", "apiKey"), "AISB_PI_KEY_ACME");
        ck_assert_str_eq(get_string(models, "providers", "acme", "baseUrl"), "https://api.acme.test");
        json_object_put(models);
        snprintf(path, sizeof path, "%s/auth.json", seed);
        ck_assert_int_eq(access(path, F_OK), -1);

        /* No home volume to look up. */
        ck_assert_uint_eq(fake_podman_request_count(fp), 0);
        harness_bridge_done(&b);
        run_dir_remove(&rd);
        aisb_policy_free(p);
}
END_TEST

/* A literal key whose variable the run does not pass: refused, naming the variable only. */
START_TEST(test_prepare_key_not_passed)
{
        host_pi("{}", MODELS);
        aisb_policy *p = new_policy();
        ck_assert_int_eq(aisb_policy_set(p, "ephemeral-home", "true", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "env", "AISB_PI_HEADER_ACME_X_TEAM=value", NULL), 0);
        run_dir rd;
        harness_bridge b;
        aisb_error *err = NULL;
        ck_assert_int_eq(prepare_in(p, &rd, &b, &err), -ENOKEY);
        ck_assert_ptr_nonnull(strstr(aisb_error_message(err), "AISB_PI_KEY_ACME"));
        ck_assert_ptr_null(strstr(aisb_error_message(err), LITERAL_KEY));
        aisb_error_free(err);
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/pi-agent/models.json", rd.path);
        ck_assert_int_eq(access(path, F_OK), -1);
        ck_assert_ptr_null(b.seed_dir);
        run_dir_remove(&rd);
        aisb_policy_free(p);
}
END_TEST

static aisb_policy *volume_policy(void)
{
        mkdirs(at("volume"));
        char body[PATH_MAX + 64];
        snprintf(body, sizeof body, "{\"Name\":\"aisb-home-t\",\"Mountpoint\":\"%s\"}", at("volume"));
        fake_podman_route(fp, "GET", "/volumes/aisb-home-t/json", 200, "application/json", body, FAKE_NORMAL, 0);
        aisb_policy *p = new_policy();
        ck_assert_int_eq(aisb_policy_set(p, "home-volume", "aisb-home-t", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "env", "AISB_PI_KEY_ACME=value", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "env", "AISB_PI_HEADER_ACME_X_TEAM=value", NULL), 0);
        return p;
}

/* volume_policy, for harness. */
static aisb_policy *volume_policy_of(const char *harness)
{
        aisb_policy *p = volume_policy();
        ck_assert_int_eq(aisb_policy_set(p, "harness", harness, NULL), 0);
        return p;
}

static int prepare(const aisb_policy *p, aisb_error **err)
{
        run_dir rd;
        harness_bridge b;
        int r = prepare_in(p, &rd, &b, err);
        if (r >= 0)
                ck_assert_ptr_null(b.seed_dir);
        harness_bridge_done(&b);
        run_dir_remove(&rd);
        return r;
}

/* prepare, which succeeds. */
static void prepare_ok(const aisb_policy *p)
{
        aisb_error *err = NULL;
        ck_assert_msg(prepare(p, &err) == 0, "%s", aisb_error_message(err));
}

/* A dry run bridges nothing: it asks the service for nothing (not the volume's mountpoint)
 * and writes nothing of pi's into the home volume. */
static void ignore_request(const char *text, void *userdata)
{
        (void) text, (void) userdata;
}

START_TEST(test_dry_run_bridges_nothing)
{
        host_pi("{\"theme\":\"dark\"}", NULL);
        aisb_policy *p = volume_policy();
        ck_assert_int_eq(aisb_policy_apply_environment(p, NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "no-cwd", "true", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "net", "none", NULL), 0);
        ck_assert(harness_bridge_applies(p));
        aisb_ctx_set_dry_run(ctx, ignore_request, NULL);
        aisb_io *io = NULL;
        ck_assert_int_eq(aisb_io_new(&io, NULL), 0);
        int code = -1;
        aisb_error *err = NULL;
        ck_assert_msg(aisb_run(ctx, p, io, &code, &err) == 0, "%s", aisb_error_message(err));
        ck_assert_uint_eq(fake_podman_request_count(fp), 0);
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/.pi", at("volume"));
        ck_assert_int_eq(access(path, F_OK), -1);
        aisb_io_free(io);
        aisb_policy_free(p);
}
END_TEST

START_TEST(test_prepare_volume)
{
        host_pi("{\"theme\":\"dark\",\"packages\":[\"npm:x\"]}", MODELS);
        aisb_policy *p = volume_policy();
        prepare_ok(p);
        ck_assert_uint_ge(fake_podman_request_count(fp), 1);
        ck_assert_str_eq(fake_podman_request_path(fp, fake_podman_request_count(fp) - 1),
                         "/v4.0.0/libpod/volumes/aisb-home-t/json");

        /* In the volume, where pi looks: ~/.pi/agent. */
        expect_mode(at("volume/.pi/agent/settings.json"), 0600);
        json_object *settings = read_json(at("volume/.pi/agent/settings.json"));
        ck_assert_str_eq(get_string(settings, "theme", NULL, NULL), "dark");
        ck_assert_str_eq(get_string(settings, "defaultThinkingLevel", NULL, NULL), "xhigh");
        json_object_put(settings);
        char *text = read_file(at("volume/.pi/agent/models.json"));
        ck_assert_ptr_nonnull(text);
        ck_assert_ptr_nonnull(strstr(text, "AISB_PI_KEY_ACME"));
        ck_assert_ptr_null(strstr(text, LITERAL_KEY));
        free(text);
        ck_assert_int_eq(access(at("volume/.pi/agent/auth.json"), F_OK), -1);
        /* The merge base lives on the host, out of the sandbox's reach. */
        char base_file[PATH_MAX];
        snprintf(base_file, sizeof base_file, "%s/state/ai-sandbox/pi/aisb-home-t/settings.base.json", base);
        expect_mode(base_file, 0600);

        /* The agent changes one setting in its home; the user another on the host: the next
         * run keeps both. */
        write_file(at("volume/.pi/agent/settings.json"),
                   "{\"theme\":\"light\",\"packages\":[\"npm:x\"],\"defaultThinkingLevel\":\"xhigh\"}");
        host_pi("{\"theme\":\"dark\",\"packages\":[\"npm:y\"]}", MODELS);
        prepare_ok(p);
        settings = read_json(at("volume/.pi/agent/settings.json"));
        ck_assert_str_eq(get_string(settings, "theme", NULL, NULL), "light");
        ck_assert_str_eq(json_object_to_json_string_ext(json_object_object_get(settings, "packages"), JSON_C_TO_STRING_PLAIN),
                         "[\"npm:y\"]");
        json_object_put(settings);
        aisb_policy_free(p);
}
END_TEST

/* claude's host configuration, in $CLAUDE_CONFIG_DIR (its own variable, honoured as pi's is):
 * settings.json merged per key without a credential or a command that makes one, CLAUDE.md
 * copied, .credentials.json never; commands/ and skills/ mounted read-only. */
#define CLAUDE_KEY "sk-ant-literal-0003"
static char *describe(const aisb_policy *p);
START_TEST(test_prepare_claude)
{
        host_harness("claude", "settings.json",
                   "{\"model\":\"opus\",\"apiKeyHelper\":\"/home/u/bin/key\",\"env\":{\"ANTHROPIC_BASE_URL\":"
                   "\"https://llm.corp.test\",\"ANTHROPIC_API_KEY\":\"" CLAUDE_KEY "\",\"MY_TOKEN\":\"" CLAUDE_KEY "\","
                   "\"MY_REGION\":\"eu\"},\"permissions\":{\"allow\":[\"Bash(ls)\"]}}");
        write_file(at("claude-home/CLAUDE.md"), "# be brief\n");
        write_file(at("claude-home/.credentials.json"), "{\"claudeAiOauth\":{\"accessToken\":\"" CLAUDE_KEY "\"}}");
        write_file(at("claude-home/commands/review.md"), "review\n");
        write_file(at("claude-home/skills/s/SKILL.md"), "skill\n");
        aisb_policy *p = volume_policy_of("claude");
        ck_assert_int_eq(aisb_policy_set(p, "bridge-carry", "claude:env.MY_*", NULL), 0);
        prepare_ok(p);

        expect_mode(at("volume/.claude/settings.json"), 0600);
        json_object *settings = read_json(at("volume/.claude/settings.json"));
        ck_assert_str_eq(get_string(settings, "model", NULL, NULL), "opus");
        ck_assert_str_eq(get_string(settings, "env", "ANTHROPIC_BASE_URL", NULL), "https://llm.corp.test");
        ck_assert_ptr_null(get_string(settings, "env", "ANTHROPIC_API_KEY", NULL));
        ck_assert_ptr_null(get_string(settings, "apiKeyHelper", NULL, NULL));
        /* What bridge-carry adds: carried, and the second line still withholds a credential. */
        ck_assert_str_eq(get_string(settings, "env", "MY_REGION", NULL), "eu");
        ck_assert_ptr_null(get_string(settings, "env", "MY_TOKEN", NULL));
        json_object_put(settings);
        char *text = read_file(at("volume/.claude/CLAUDE.md"));
        ck_assert_str_eq(text ? text : "(none)", "# be brief\n");
        free(text);
        ck_assert_int_eq(access(at("volume/.claude/.credentials.json"), F_OK), -1);
        char command[PATH_MAX + 64];
        snprintf(command, sizeof command, "! grep -r '" CLAUDE_KEY "' '%s'", at("volume"));
        ck_assert_msg(system(command) == 0, "the key reached the sandbox's home");
        /* Said in one line: how many keys stayed, how to carry one, the credentials by name;
         * never a value. */
        char said[3 * PATH_MAX];
        snprintf(said, sizeof said,
                 "2 2 keys of %s/settings.json stay on the host (on no carry-list: aisb inspect names them; carry one "
                 "with bridge-carry = claude:KEY); %s/settings.json: env.MY_TOKEN not bridged (credentials stay on the "
                 "host; pass a key with --secret, docs/bridges.md)\n",
                 getenv("CLAUDE_CONFIG_DIR"), getenv("CLAUDE_CONFIG_DIR"));
        ck_assert_msg(strstr(logs.text, said), "%s", logs.text);
        ck_assert_ptr_null(strstr(logs.text, CLAUDE_KEY));
        text = describe(p);
        ck_assert_msg(strstr(text, "bridge-held=settings.json: 2 (apiKeyHelper, env.ANTHROPIC_API_KEY; on no carry-list: "
                                   "bridge-carry = claude:KEY carries one)\nbridge-withheld=env.MY_TOKEN (credentials)\n"),
                      "%s", text);
        ck_assert_ptr_null(strstr(text, CLAUDE_KEY));
        free(text);

        /* Read-only mounts for what exists of commands/, agents/, skills/. */
        harness_mount m[HARNESS_MOUNTS_MAX];
        size_t n = 0;
        ck_assert_int_eq(harness_mounts(p, m, &n), 0);
        ck_assert_uint_eq(n, 2);
        ck_assert_str_eq(m[0].source, at("claude-home/commands"));
        ck_assert_str_eq(m[0].destination, "/home/sandbox/.claude/commands");
        ck_assert_str_eq(m[1].source, at("claude-home/skills"));
        ck_assert_str_eq(m[1].destination, "/home/sandbox/.claude/skills");
        harness_mounts_done(m, n);

        /* The agent's edit stays; the user's change on the host follows; a key the run passes
         * itself is not news. */
        write_file(at("volume/.claude/settings.json"),
                   "{\"model\":\"haiku\",\"env\":{\"ANTHROPIC_BASE_URL\":\"https://llm.corp.test\"},"
                   "\"permissions\":{\"allow\":[\"Bash(ls)\"]}}");
        write_file(at("claude-home/settings.json"),
                   "{\"model\":\"opus\",\"env\":{\"ANTHROPIC_BASE_URL\":\"https://llm.corp.test\","
                   "\"MY_TOKEN\":\"" CLAUDE_KEY "\"},\"permissions\":{\"allow\":[\"Bash(git *)\"]}}");
        ck_assert_int_eq(aisb_policy_set(p, "env", "MY_TOKEN=x", NULL), 0);
        logs.text[0] = 0;
        prepare_ok(p);
        settings = read_json(at("volume/.claude/settings.json"));
        ck_assert_str_eq(get_string(settings, "model", NULL, NULL), "haiku");
        ck_assert_str_eq(json_object_to_json_string_ext(json_object_object_get(settings, "permissions"), JSON_C_TO_STRING_PLAIN),
                         "{\"allow\":[\"Bash(git *)\"]}");
        json_object_put(settings);
        ck_assert_ptr_null(strstr(logs.text, "not bridged"));
        /* And stays edited run after run, while the host's changes still follow. */
        for (int run = 0; run < 2; run++) {
                write_file(at("claude-home/settings.json"),
                           run ? "{\"model\":\"opus\",\"permissions\":{\"allow\":[\"Bash(make)\"]}}"
                               : "{\"model\":\"sonnet\",\"permissions\":{\"allow\":[\"Bash(git *)\"]}}");
                prepare_ok(p);
                settings = read_json(at("volume/.claude/settings.json"));
                ck_assert_str_eq(get_string(settings, "model", NULL, NULL), "haiku");
                ck_assert_str_eq(json_object_to_json_string_ext(json_object_object_get(settings, "permissions"),
                                                                JSON_C_TO_STRING_PLAIN),
                                 run ? "{\"allow\":[\"Bash(make)\"]}" : "{\"allow\":[\"Bash(git *)\"]}");
                json_object_put(settings);
        }
        char base_file[PATH_MAX];
        snprintf(base_file, sizeof base_file, "%s/state/ai-sandbox/claude/aisb-home-t/settings.base.json", base);
        expect_mode(base_file, 0600);

        /* Declined: nothing mounted. */
        ck_assert_int_eq(aisb_policy_set(p, "no-harness-config", "true", NULL), 0);
        ck_assert_int_eq(harness_mounts(p, m, &n), 0);
        ck_assert_uint_eq(n, 0);
        unsetenv("CLAUDE_CONFIG_DIR");
        aisb_policy_free(p);
}
END_TEST

/* codex's config.toml from $CODEX_HOME: merged per key without credentials, its sandbox mode,
 * update check and reasoning set by policy (in its profiles too), AGENTS.md copied, auth.json
 * never. An ephemeral home gets it in the seed, written as TOML. */
#define CODEX_TOKEN "lit-bearer-0004"
/* What the run sets in claude's environment, its settings' env cannot undo: claude copies that
 * env over its own environment. An agent's lower level, or its traffic let back on, lasts one
 * run at most. */
START_TEST(test_prepare_claude_policy)
{
        host_harness("claude", "settings.json", "{\"model\":\"opus\",\"env\":{\"MAX_THINKING_TOKENS\":\"8000\"}}");
        aisb_policy *p = volume_policy_of("claude");
        ck_assert_int_eq(aisb_policy_set(p, "thinking", "medium", NULL), 0);
        prepare_ok(p);
        /* The agent's edits, as a run leaves them. */
        write_file(at("volume/.claude/settings.json"),
                   "{\"model\":\"opus\",\"effortLevel\":\"low\",\"maxEffortLevel\":\"low\",\"env\":"
                   "{\"CLAUDE_CODE_EFFORT_LEVEL\":\"low\",\"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC\":\"0\","
                   "\"MY_VAR\":\"kept\",\"CLAUDE_CODE_EXTRA_BODY\":\"{}\",\"CLAUDE_CODE_DISABLE_THINKING\":\"1\","
                   "\"MAX_THINKING_TOKENS\":\"1024\"},"
                   "\"modelSettings\":{\"sonnet\":{\"maxEffortLevel\":\"low\",\"effortLevel\":\"low\",\"x\":1}}}");
        prepare_ok(p);
        json_object *settings = read_json(at("volume/.claude/settings.json"));
        ck_assert_str_eq(get_string(settings, "env", "CLAUDE_CODE_EFFORT_LEVEL", NULL), "medium");
        ck_assert_str_eq(get_string(settings, "env", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", NULL), "1");
        /* The env is the host's whole: claude copies it over its environment, and a variable
         * of the agent's (BASH_ENV, NODE_OPTIONS) would run its code in every later run. */
        ck_assert_ptr_null(get_string(settings, "env", "MY_VAR", NULL));
        ck_assert(!json_object_object_get_ex(settings, "effortLevel", NULL));
        ck_assert(!json_object_object_get_ex(settings, "maxEffortLevel", NULL));
        ck_assert_ptr_null(get_string(settings, "env", "CLAUDE_CODE_EXTRA_BODY", NULL));
        ck_assert_ptr_null(get_string(settings, "env", "CLAUDE_CODE_DISABLE_THINKING", NULL));
        ck_assert_str_eq(get_string(settings, "env", "MAX_THINKING_TOKENS", NULL), "8000");
        ck_assert_str_eq(json_object_to_json_string_ext(json_object_object_get(settings, "modelSettings"),
                                                        JSON_C_TO_STRING_PLAIN),
                         "{\"sonnet\":{\"x\":1}}");
        json_object_put(settings);

        /* The user's --env wins here as in the environment; "host" leaves claude's level alone. */
        ck_assert_int_eq(aisb_policy_set(p, "env", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=0", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "thinking", "host", NULL), 0);
        write_file(at("volume/.claude/settings.json"),
                   "{\"model\":\"opus\",\"maxEffortLevel\":\"high\",\"env\":{\"CLAUDE_CODE_EFFORT_LEVEL\":\"low\"}}");
        prepare_ok(p);
        settings = read_json(at("volume/.claude/settings.json"));
        /* "host": the level the host's settings give (none here), not the agent's. */
        ck_assert_ptr_null(get_string(settings, "env", "CLAUDE_CODE_EFFORT_LEVEL", NULL));
        ck_assert_str_eq(get_string(settings, "env", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", NULL), "0");
        ck_assert_str_eq(get_string(settings, "maxEffortLevel", NULL, NULL), "high");
        json_object_put(settings);
        ck_assert_int_eq(aisb_policy_set(p, "env", "CLAUDE_CODE_EFFORT_LEVEL=high", NULL), 0);
        prepare_ok(p);
        settings = read_json(at("volume/.claude/settings.json"));
        ck_assert_str_eq(get_string(settings, "env", "CLAUDE_CODE_EFFORT_LEVEL", NULL), "high");
        ck_assert(!json_object_object_get_ex(settings, "maxEffortLevel", NULL));
        json_object_put(settings);
        unsetenv("CLAUDE_CONFIG_DIR");
        aisb_policy_free(p);
}
END_TEST

/* pi's budgets per level are the level's size: the host's, whatever the sandbox wrote. */
START_TEST(test_prepare_pi_budgets)
{
        host_pi("{\"thinkingBudgets\":{\"high\":16384}}", NULL);
        aisb_policy *p = volume_policy();
        ck_assert_int_eq(aisb_policy_set(p, "thinking", "high", NULL), 0);
        prepare_ok(p);
        write_file(at("volume/.pi/agent/settings.json"),
                   "{\"thinkingBudgets\":{\"high\":1024,\"low\":512},\"defaultThinkingLevel\":\"low\",\"theme\":\"light\"}");
        prepare_ok(p);
        json_object *settings = read_json(at("volume/.pi/agent/settings.json"));
        ck_assert_str_eq(json_object_to_json_string_ext(json_object_object_get(settings, "thinkingBudgets"),
                                                        JSON_C_TO_STRING_PLAIN),
                         "{\"high\":16384}");
        ck_assert_str_eq(get_string(settings, "defaultThinkingLevel", NULL, NULL), "high");
        ck_assert_str_eq(get_string(settings, "theme", NULL, NULL), "light");
        json_object_put(settings);
        /* None on the host: none in the sandbox. "host": the sandbox's own stand. */
        host_pi("{}", NULL);
        write_file(at("volume/.pi/agent/settings.json"), "{\"thinkingBudgets\":{\"high\":1024}}");
        prepare_ok(p);
        settings = read_json(at("volume/.pi/agent/settings.json"));
        ck_assert(!json_object_object_get_ex(settings, "thinkingBudgets", NULL));
        json_object_put(settings);
        ck_assert_int_eq(aisb_policy_set(p, "thinking", "host", NULL), 0);
        write_file(at("volume/.pi/agent/settings.json"), "{\"thinkingBudgets\":{\"high\":1024}}");
        prepare_ok(p);
        settings = read_json(at("volume/.pi/agent/settings.json"));
        ck_assert(json_object_object_get_ex(settings, "thinkingBudgets", NULL));
        json_object_put(settings);
        aisb_policy_free(p);
}
END_TEST

/* The host's files may be links (a dotfile manager's): the agent cannot write there, and they
 * are followed, to a regular file. */
START_TEST(test_prepare_host_links)
{
        write_file(at("dotfiles/pi-settings.json"), "{\"theme\":\"dark\"}");
        mkdirs(at("home/.pi/agent"));
        ck_assert_int_eq(symlink(at("dotfiles/pi-settings.json"), at("home/.pi/agent/settings.json")), 0);
        aisb_policy *p = volume_policy();
        aisb_error *err = NULL;
        prepare_ok(p);
        json_object *settings = read_json(at("volume/.pi/agent/settings.json"));
        ck_assert_str_eq(get_string(settings, "theme", NULL, NULL), "dark");
        json_object_put(settings);
        /* A link to anything but a regular file is refused, as a FIFO there would be. */
        ck_assert_int_eq(unlink(at("home/.pi/agent/settings.json")), 0);
        ck_assert_int_eq(mkfifo(at("dotfiles/fifo"), 0600), 0);
        ck_assert_int_eq(symlink(at("dotfiles/fifo"), at("home/.pi/agent/settings.json")), 0);
        ck_assert_int_lt(prepare(p, &err), 0);
        ck_assert_ptr_nonnull(strstr(aisb_error_message(err), "is not a regular file"));
        aisb_error_free(err);
        aisb_policy_free(p);
}
END_TEST

/* pi's settings are scrubbed as claude's and codex's are: a package's URL with a token. */
START_TEST(test_prepare_pi_scrubbed)
{
        host_pi("{\"theme\":\"dark\",\"packages\":[\"git:https://oauth2:glpat-Xk2Lm9Pq8Rs7Tu6Vw5Yz@gitlab.test/x\"],"
                "\"myToken\":\"" TOKEN "\"}",
                NULL);
        aisb_policy *p = volume_policy();
        prepare_ok(p);
        char *text = read_file(at("volume/.pi/agent/settings.json"));
        ck_assert_ptr_nonnull(strstr(text, "\"theme\""));
        ck_assert_ptr_null(strstr(text, "glpat"));
        ck_assert_ptr_null(strstr(text, TOKEN));
        free(text);
        /* myToken is on no carry-list: it stays on the host; packages is carried, and its token
         * withheld by the second line. */
        char said[3 * PATH_MAX];
        snprintf(said, sizeof said,
                 "2 1 key of %s/.pi/agent/settings.json stays on the host (on no carry-list: aisb inspect names them; "
                 "carry one with bridge-carry = pi:KEY); %s/.pi/agent/settings.json: packages not bridged",
                 home, home);
        ck_assert_msg(strstr(logs.text, said), "%s", logs.text);
        ck_assert_ptr_null(strstr(logs.text, "glpat"));
        text = describe(p);
        ck_assert_msg(strstr(text, "bridge-held=settings.json: 1 (myToken; on no carry-list: bridge-carry = pi:KEY "
                                   "carries one)\nbridge-withheld=packages (credentials)\n"),
                      "%s", text);
        ck_assert_ptr_null(strstr(text, "glpat"));
        free(text);
        aisb_policy_free(p);
}
END_TEST

/* What a carry-list does not name stays on the host, in settings.json and models.json alike
 * (a random value under an innocent name: no scan of values catches it); bridge-carry carries
 * it; and a key carried once, named no more, goes from the sandbox on the next run (the base
 * says aisb wrote it). */
#define RANDOM_HEX "9f86d081884c7d659a2feaa0c55ad015"
START_TEST(test_prepare_carry)
{
        host_pi("{\"defaultModel\":\"m1\",\"defaultProvider\":\"acme\",\"colorScheme2\":\"" RANDOM_HEX "\"}",
                "{\"providers\":{\"acme\":{\"baseUrl\":\"https://api.acme.test\",\"apiKey\":\"" LITERAL_KEY "\","
                "\"colorScheme2\":\"" RANDOM_HEX "\",\"models\":[{\"id\":\"m1\",\"reasoning\":true}]}}}");
        aisb_policy *p = volume_policy();
        prepare_ok(p);
        char *settings = read_file(at("volume/.pi/agent/settings.json")), *models = read_file(at("volume/.pi/agent/models.json"));
        ck_assert_ptr_null(strstr(settings, RANDOM_HEX));
        ck_assert_ptr_nonnull(strstr(settings, "\"defaultModel\""));
        ck_assert_ptr_null(strstr(models, RANDOM_HEX));
        ck_assert_ptr_nonnull(strstr(models, "\"reasoning\""));
        free(settings);
        free(models);
        char said[3 * PATH_MAX];
        snprintf(said, sizeof said,
                 "1 1 key of %s/.pi/agent/settings.json, 1 key of %s/.pi/agent/models.json stay on the host (on no "
                 "carry-list: aisb inspect names them; carry one with bridge-carry = pi:KEY or pi-models:KEY)\n",
                 home, home);
        ck_assert_msg(strstr(logs.text, said), "%s", logs.text);
        ck_assert_ptr_null(strstr(logs.text, RANDOM_HEX));
        char *text = describe(p);
        ck_assert_msg(strstr(text, "bridge-held=settings.json: 1 (colorScheme2; on no carry-list: bridge-carry = pi:KEY "
                                   "carries one)\n") &&
                              strstr(text, "bridge-held=models.json: 1 (providers.acme.colorScheme2; on no carry-list: "
                                           "bridge-carry = pi-models:KEY carries one)\n"),
                      "%s", text);
        free(text);

        ck_assert_int_eq(aisb_policy_set(p, "bridge-carry", "pi:colorScheme2", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "bridge-carry", "pi-models:providers.*.colorScheme2", NULL), 0);
        logs.text[0] = 0;
        prepare_ok(p);
        json_object *o = read_json(at("volume/.pi/agent/settings.json"));
        ck_assert_str_eq(get_string(o, "colorScheme2", NULL, NULL), RANDOM_HEX);
        json_object_put(o);
        o = read_json(at("volume/.pi/agent/models.json"));
        ck_assert_str_eq(get_string(o, "providers", "acme", "colorScheme2"), RANDOM_HEX);
        json_object_put(o);
        ck_assert_ptr_null(strstr(logs.text, "on the host"));
        text = describe(p);
        ck_assert_ptr_null(strstr(text, "bridge-held="));
        free(text);
        aisb_policy_free(p);

        p = volume_policy();
        prepare_ok(p);
        settings = read_file(at("volume/.pi/agent/settings.json"));
        ck_assert_ptr_null(strstr(settings, RANDOM_HEX));
        free(settings);
        aisb_policy_free(p);
}
END_TEST

START_TEST(test_prepare_codex)
{
        host_harness("codex", "config.toml",
                   "model = \"gpt-5\"\nmodel_provider = \"corp\"\nsandbox_mode = \"workspace-write\"\n"
                   "model_reasoning_effort = \"low\"\n"
                   "[model_providers.corp]\nname = \"Corp\"\nbase_url = \"https://llm.corp.test/v1\"\n"
                   "env_key = \"CORP_KEY\"\nwire_api = \"responses\"\nexperimental_bearer_token = \"" CODEX_TOKEN "\"\n"
                   "[profiles.quick]\nmodel_reasoning_effort = \"minimal\"\n");
        write_file(at("codex-home/AGENTS.md"), "be terse\n");
        write_file(at("codex-home/auth.json"), "{\"OPENAI_API_KEY\":\"" CODEX_TOKEN "\"}");
        aisb_policy *p = new_policy();
        ck_assert_int_eq(aisb_policy_set(p, "harness", "codex", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "ephemeral-home", "true", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "thinking", "medium", NULL), 0);
        run_dir rd;
        harness_bridge b;
        aisb_error *err = NULL;
        char seed[PATH_MAX], path[PATH_MAX + 32];
        prepare_seed(p, &rd, &b, "codex-config", seed);
        snprintf(path, sizeof path, "%s/config.toml", seed);
        expect_mode(path, 0600);
        char *text = read_file(path);
        ck_assert_ptr_null(strstr(text, CODEX_TOKEN));
        json_object *config = NULL;
        ck_assert_msg(toml_parse_json(text, strlen(text), path, &config, &err) == 0, "%s", aisb_error_message(err));
        free(text);
        ck_assert_str_eq(get_string(config, "model", NULL, NULL), "gpt-5");
        ck_assert_str_eq(get_string(config, "sandbox_mode", NULL, NULL), "danger-full-access");
        ck_assert_str_eq(get_string(config, "model_reasoning_effort", NULL, NULL), "medium");
        ck_assert_str_eq(get_string(config, "profiles", "quick", "model_reasoning_effort"), "medium");
        ck_assert_str_eq(get_string(config, "model_providers", "corp", "env_key"), "CORP_KEY");
        ck_assert_str_eq(get_string(config, "model_providers", "corp", "base_url"), "https://llm.corp.test/v1");
        json_object *update = NULL;
        ck_assert(json_object_object_get_ex(config, "check_for_update_on_startup", &update));
        ck_assert(!json_object_get_boolean(update));
        json_object_put(config);
        snprintf(path, sizeof path, "%s/AGENTS.md", seed);
        text = read_file(path);
        ck_assert_str_eq(text ? text : "(none)", "be terse\n");
        free(text);
        snprintf(path, sizeof path, "%s/auth.json", seed);
        ck_assert_int_eq(access(path, F_OK), -1);
        /* A provider's token is on no carry-list: it stays on the host, counted. */
        char said[2 * PATH_MAX];
        snprintf(said, sizeof said, "1 1 key of %s/config.toml stays on the host (on no carry-list: aisb inspect names "
                                    "them; carry one with bridge-carry = codex:KEY)\n", getenv("CODEX_HOME"));
        ck_assert_msg(strstr(logs.text, said), "%s", logs.text);
        ck_assert_ptr_null(strstr(logs.text, "not bridged"));
        ck_assert_ptr_null(strstr(logs.text, CODEX_TOKEN));
        harness_bridge_done(&b);
        run_dir_remove(&rd);

        /* A host file that is not TOML fails the run, saying where. */
        write_file(at("codex-home/config.toml"), "model = \n");
        ck_assert_int_eq(run_dir_create(&rd, NULL), 0);
        ck_assert_int_lt(harness_bridge_prepare(ctx, p, &rd, &b, &err), 0);
        ck_assert_msg(strstr(aisb_error_message(err), "codex-home/config.toml"), "%s", aisb_error_message(err));
        aisb_error_free(err);
        harness_bridge_done(&b);
        run_dir_remove(&rd);
        unsetenv("CODEX_HOME");
        aisb_policy_free(p);
}
END_TEST

/* In a home volume, the agent's own edit of config.toml stays (the sandbox mode excepted), and
 * a config.toml the agent broke is re-seeded from the host with a warning. */
/* codex 0.171's profiles are files of their own (NAME.config.toml, --profile NAME): the one
 * a run names is bridged with the same policy, the host's merged, the agent's own policed. */
START_TEST(test_prepare_codex_profile)
{
        host_harness("codex", "config.toml", "model = \"gpt-5\"\n");
        write_file(at("codex-home/fast.config.toml"), "model = \"gpt-5-mini\"\nmodel_reasoning_effort = \"low\"\n"
                                                       "experimental_bearer_token = \"lit-in-profile-1\"\n");
        write_file(at("volume/.codex/lazy.config.toml"), "model_reasoning_effort = \"minimal\"\nsandbox_mode = \"read-only\"\n"
                                                         "[features]\nplugins = true\n");
        aisb_policy *p = volume_policy_of("codex");
        ck_assert_int_eq(aisb_policy_set(p, "thinking", "high", NULL), 0);
        ck_assert_int_eq(aisb_policy_set_command(p, (const char *const[]) { "codex", "--profile", "fast", "exec", "x", NULL },
                                                 NULL), 0);
        aisb_error *err = NULL;
        prepare_ok(p);
        char *text = read_file(at("volume/.codex/fast.config.toml"));
        ck_assert_ptr_nonnull(text);
        ck_assert_ptr_nonnull(strstr(text, "model = \"gpt-5-mini\""));
        ck_assert_ptr_nonnull(strstr(text, "model_reasoning_effort = \"high\""));
        ck_assert_ptr_nonnull(strstr(text, "sandbox_mode = \"danger-full-access\""));
        ck_assert_ptr_null(strstr(text, "lit-in-profile-1"));
        free(text);
        /* Only the profile the run names: the agent's other one waits for a run that names it. */
        text = read_file(at("volume/.codex/lazy.config.toml"));
        ck_assert_ptr_nonnull(strstr(text, "\"minimal\""));
        free(text);
        ck_assert_int_eq(aisb_policy_set_command(p, (const char *const[]) { "codex", "-p", "lazy", NULL }, NULL), 0);
        prepare_ok(p);
        text = read_file(at("volume/.codex/lazy.config.toml"));
        ck_assert_ptr_nonnull(strstr(text, "model_reasoning_effort = \"high\""));
        ck_assert_ptr_nonnull(strstr(text, "sandbox_mode = \"danger-full-access\""));
        ck_assert_ptr_nonnull(strstr(text, "plugins = false"));
        free(text);
        /* -pNAME is one too. */
        write_file(at("volume/.codex/deep.config.toml"), "model_reasoning_effort = \"minimal\"\n");
        ck_assert_int_eq(aisb_policy_set_command(p, (const char *const[]) { "codex", "exec", "-pdeep", "x", NULL }, NULL), 0);
        prepare_ok(p);
        text = read_file(at("volume/.codex/deep.config.toml"));
        ck_assert_ptr_nonnull(strstr(text, "model_reasoning_effort = \"high\""));
        free(text);
        /* A name aisb could not police: the run is refused, nothing of it written. */
        ck_assert_int_eq(aisb_policy_set_command(p, (const char *const[]) { "codex", "--profile=../x", NULL }, NULL), 0);
        ck_assert_int_eq(prepare(p, &err), -EINVAL);
        ck_assert_str_eq(aisb_error_message(err),
                         "codex --profile '../x': not a name aisb can bridge (letters, digits, '.', '_', '-')");
        aisb_error_free(err);
        err = NULL;
        ck_assert_int_eq(access(at("volume/x.config.toml"), F_OK), -1);
        unsetenv("CODEX_HOME");
        aisb_policy_free(p);
}
END_TEST

START_TEST(test_prepare_codex_volume)
{
        host_harness("codex", "config.toml", "model = \"gpt-5\"\napproval_policy = \"on-request\"\n");
        aisb_policy *p = volume_policy_of("codex");
        prepare_ok(p);
        write_file(at("volume/.codex/config.toml"),
                   "model = \"gpt-5\"\napproval_policy = \"never\"\nsandbox_mode = \"read-only\"\n"
                   "check_for_update_on_startup = false\nmodel_reasoning_effort = \"xhigh\"\n");
        write_file(at("codex-home/config.toml"), "model = \"gpt-5.1\"\napproval_policy = \"on-request\"\n");
        prepare_ok(p);
        char *text = read_file(at("volume/.codex/config.toml"));
        json_object *config = NULL;
        ck_assert_int_eq(toml_parse_json(text, strlen(text), "config.toml", &config, NULL), 0);
        free(text);
        ck_assert_str_eq(get_string(config, "model", NULL, NULL), "gpt-5.1");
        ck_assert_str_eq(get_string(config, "approval_policy", NULL, NULL), "never");
        ck_assert_str_eq(get_string(config, "sandbox_mode", NULL, NULL), "danger-full-access");
        json_object_put(config);

        /* A key the sandbox wrote that TOML output cannot carry (a tab in a quoted key):
         * re-seeded too, never a failed run. */
        write_file(at("volume/.codex/config.toml"), "\"tab\\there\" = 1\nmodel = \"gpt-5.1\"\n");
        logs.text[0] = 0;
        prepare_ok(p);
        ck_assert_ptr_nonnull(strstr(logs.text, "taking the host's settings afresh"));
        text = read_file(at("volume/.codex/config.toml"));
        ck_assert_ptr_null(strstr(text, "tab"));
        free(text);

        write_file(at("volume/.codex/config.toml"), "[[[ not toml\n");
        logs.text[0] = 0;
        prepare_ok(p);
        ck_assert_ptr_nonnull(strstr(logs.text, "taking the host's settings afresh"));
        text = read_file(at("volume/.codex/config.toml"));
        ck_assert_ptr_nonnull(strstr(text, "approval_policy = \"on-request\""));
        free(text);
        unsetenv("CODEX_HOME");
        aisb_policy_free(p);
}
END_TEST

/* A symlink the agent planted at .pi or .pi/agent in its home: never followed, moved aside
 * (kept for the agent, said), a directory made in its place; nothing written where it points. */
static void expect_symlink_refused(const char *link_at)
{
        host_pi("{\"theme\":\"dark\"}", MODELS);
        aisb_policy *p = volume_policy();
        mkdirs(at("victim"));
        if (strchr(link_at, '/'))
                mkdirs(at("volume/.pi"));
        char link_path[PATH_MAX];
        snprintf(link_path, sizeof link_path, "%s/%s", at("volume"), link_at);
        ck_assert_int_eq(symlink(at("victim"), link_path), 0);
        prepare_ok(p);
        /* Moved by the home's reset, which comes first (harness-home.c), and kept there. */
        char said[PATH_MAX];
        snprintf(said, sizeof said, "(left by an earlier run): ~/%s moved to ~/.aisb-moved/", link_at);
        ck_assert_msg(strstr(logs.text, said), "%s", logs.text);
        char kept[PATH_MAX + 64];
        snprintf(kept, sizeof kept, "test -L %s/.aisb-moved/*/%s", at("volume"), link_at);
        ck_assert_msg(system(kept) == 0, "the link planted at %s is not kept in ~/.aisb-moved", link_at);
        char command[PATH_MAX + 64];
        snprintf(command, sizeof command, "test -z \"$(ls -A '%s')\"", at("victim"));
        ck_assert_msg(system(command) == 0, "something was written through the symlink at %s", link_at);
        struct stat st;
        ck_assert_int_eq(lstat(link_path, &st), 0);
        ck_assert(S_ISDIR(st.st_mode));
        expect_mode(at("volume/.pi/agent/settings.json"), 0600);
        aisb_policy_free(p);
}

START_TEST(test_prepare_volume_symlink_pi)
{
        expect_symlink_refused(".pi");
}
END_TEST

START_TEST(test_prepare_volume_symlink_agent)
{
        expect_symlink_refused(".pi/agent");
}
END_TEST

/* The agent's settings.json a symlink to a file of the host's, its models.json a FIFO: the
 * host file is neither read into the sandbox nor written, and nothing waits on the FIFO. */
/* What an agent leaves to make every later run fail: a directory where settings.json goes, its
 * ~/.claude without permissions, a file where ~/.codex goes. Each is put right (the agent's
 * own content moved aside, not lost) and the run goes on. */
START_TEST(test_prepare_volume_obstacles)
{
        host_harness("claude", "settings.json", "{\"model\":\"opus\"}");
        write_file(at("claude-home/CLAUDE.md"), "# be brief\n");
        aisb_policy *p = volume_policy_of("claude");
        write_file(at("volume/.claude/settings.json/x"), "the agent's\n");
        mkdirs(at("volume/.claude/CLAUDE.md"));
        prepare_ok(p);
        ck_assert_ptr_nonnull(strstr(logs.text, "settings.json in the sandbox's home was not what aisb writes there: "
                                                "moved to settings.json.aisb-moved-"));
        ck_assert_ptr_nonnull(strstr(logs.text, "CLAUDE.md in the sandbox's home was not what aisb writes there"));
        expect_mode(at("volume/.claude/settings.json"), 0600);
        expect_mode(at("volume/.claude/CLAUDE.md"), 0600);
        char command[PATH_MAX + 64];
        snprintf(command, sizeof command, "grep -q \"the agent's\" '%s'/.claude/settings.json.aisb-moved-*/x",
                 at("volume"));
        ck_assert_msg(system(command) == 0, "the agent's directory was lost");

        /* No permissions on ~/.claude, nor on the file: given back (the home is the user's). */
        ck_assert_int_eq(chmod(at("volume/.claude/settings.json"), 0), 0);
        ck_assert_int_eq(chmod(at("volume/.claude"), 0), 0);
        prepare_ok(p);
        struct stat st;
        ck_assert_int_eq(stat(at("volume/.claude"), &st), 0);
        ck_assert_uint_eq(st.st_mode & 0700, 0700);
        json_object *settings = read_json(at("volume/.claude/settings.json"));
        ck_assert_str_eq(get_string(settings, "model", NULL, NULL), "opus");
        json_object_put(settings);
        ck_assert_int_eq(chmod(at("volume/.claude"), 0500), 0);
        prepare_ok(p);
        unsetenv("CLAUDE_CONFIG_DIR");
        aisb_policy_free(p);

        /* A file at ~/.codex. */
        host_harness("codex", "config.toml", "model = \"gpt-5.1\"\n");
        write_file(at("volume/.codex"), "not a directory\n");
        p = volume_policy_of("codex");
        logs.text[0] = 0;
        prepare_ok(p);
        ck_assert_msg(strstr(logs.text, "(left by an earlier run): ~/.codex "), "%s", logs.text);
        char *text = read_file(at("volume/.codex/config.toml"));
        ck_assert_ptr_nonnull(text);
        ck_assert_ptr_nonnull(strstr(text, "gpt-5.1"));
        free(text);
        unsetenv("CODEX_HOME");
        aisb_policy_free(p);
}
END_TEST

START_TEST(test_prepare_volume_files_planted)
{
        host_pi("{\"theme\":\"dark\"}", MODELS);
        aisb_policy *p = volume_policy();
        write_file(at("precious.json"), "{\"precious\":true}");
        mkdirs(at("volume/.pi/agent"));
        ck_assert_int_eq(symlink(at("precious.json"), at("volume/.pi/agent/settings.json")), 0);
        ck_assert_int_eq(mkfifo(at("volume/.pi/agent/models.json"), 0600), 0);
        prepare_ok(p);
        ck_assert_ptr_nonnull(strstr(logs.text, "the sandbox's settings.json is a symlink, which is not followed: "
                                                "taking the host's settings afresh"));
        char *precious = read_file(at("precious.json"));
        ck_assert_str_eq(precious, "{\"precious\":true}");
        free(precious);
        /* Replaced by regular files. */
        expect_mode(at("volume/.pi/agent/settings.json"), 0600);
        json_object *settings = read_json(at("volume/.pi/agent/settings.json"));
        ck_assert_ptr_null(json_object_object_get(settings, "precious"));
        ck_assert_str_eq(get_string(settings, "theme", NULL, NULL), "dark");
        json_object_put(settings);
        expect_mode(at("volume/.pi/agent/models.json"), 0600);

        /* A FIFO at settings.json: refused at once (no writer ever comes), replaced. */
        ck_assert_int_eq(unlink(at("volume/.pi/agent/settings.json")), 0);
        ck_assert_int_eq(mkfifo(at("volume/.pi/agent/settings.json"), 0600), 0);
        logs.text[0] = 0;
        prepare_ok(p);
        ck_assert_ptr_nonnull(strstr(logs.text, "the sandbox's settings.json is not a regular file: "
                                                "taking the host's settings afresh"));
        expect_mode(at("volume/.pi/agent/settings.json"), 0600);
        aisb_policy_free(p);
}
END_TEST

START_TEST(test_prepare_volume_unknown)
{
        host_pi("{}", NULL);
        fake_podman_route(fp, "GET", "/volumes/aisb-home-t/json", 404, "application/json",
                          "{\"message\":\"no such volume\",\"response\":404}", FAKE_NORMAL, 0);
        aisb_policy *p = new_policy();
        ck_assert_int_eq(aisb_policy_set(p, "home-volume", "aisb-home-t", NULL), 0);
        aisb_error *err = NULL;
        ck_assert_int_eq(prepare(p, &err), -EIO);
        ck_assert_str_eq(aisb_error_message(err), "inspecting volume aisb-home-t: no such volume");
        aisb_error_free(err);
        aisb_policy_free(p);
}
END_TEST

/* What an earlier run left where a harness or the shell loads code or instructions at start:
 * moved into ~/.aisb-moved, kept, said once; the harnesses' own data stays; an empty
 * directory stays; the bridge writes its files afresh, and the sandbox's instructions go when
 * the host has none. */
static bool exists_at(const char *sub)
{
        struct stat st;
        return lstat(at(sub), &st) == 0;
}

START_TEST(test_prepare_home_reset)
{
        host_pi("{\"theme\":\"dark\"}", NULL);
        aisb_policy *p = volume_policy();
        static const char *const planted[] = {
                "volume/.pi/agent/extensions/x.js", "volume/.pi/agent/SYSTEM.md", "volume/.pi/agent/AGENTS.md",
                "volume/.pi/agent/bin/rg", "volume/.pi/agent/git/h/p/index.js", "volume/.pi/agent/models.json",
                "volume/.claude/rules/r.md", "volume/.claude/hooks/h.sh", "volume/.claude/CLAUDE.md",
                "volume/.claude/projects/-project/memory/MEMORY.md", "volume/.codex/AGENTS.override.md",
                "volume/.codex/.env", "volume/.codex/hooks.json", "volume/.codex/.tmp/plugins/p/hooks.json",
                "volume/.bashrc", "volume/.profile", "volume/.gitconfig", "volume/.config/git/config",
                "volume/.agents/skills/s/SKILL.md",
        };
        static const char *const kept[] = {
                "volume/.pi/agent/sessions/s.jsonl", "volume/.pi/agent/themes/t.json",
                "volume/.claude/.credentials.json", "volume/.claude/projects/-project/t.jsonl",
                "volume/.codex/auth.json", "volume/.codex/sessions/s.jsonl", "volume/.bash_history",
                "volume/.config/other/x",
        };
        for (size_t i = 0; i < ELEMENTSOF(planted); i++)
                write_file(at(planted[i]), "planted\n");
        for (size_t i = 0; i < ELEMENTSOF(kept); i++)
                write_file(at(kept[i]), "data\n");
        mkdirs(at("volume/.pi/agent/prompts")); /* empty: nothing to load, stays */
        /* The state the harnesses keep in the home, with what runs at start in it. */
        write_file(at("volume/.pi/agent/auth.json"), "{\"loc\":{\"type\":\"api_key\",\"key\":\"!curl x | sh\"},"
                                                     "\"oauth\":{\"type\":\"oauth\",\"access\":\"a\"}}");
        write_file(at("volume/.claude.json"), "{\"numStartups\":3,\"mcpServers\":{\"x\":{\"command\":\"sh\"}},"
                                              "\"projects\":{\"/project\":{\"mcpServers\":{\"y\":{}},\"k\":1}}}");
        /* A link where a harness's directory goes: moved whole, never followed. */
        mkdirs(at("victim"));
        write_file(at("victim/rules.md"), "victim\n");
        ck_assert_int_eq(symlink(at("victim"), at("volume/.claude/output-styles")), 0);
        logs.text[0] = 0;
        prepare_ok(p);
        for (size_t i = 0; i < ELEMENTSOF(planted); i++) {
                ck_assert_msg(!exists_at(planted[i]) || streq(planted[i], "volume/.pi/agent/models.json"),
                              "%s is still there", planted[i]);
                char moved[PATH_MAX + 64];
                snprintf(moved, sizeof moved, "test -e %s/.aisb-moved/*/%s", at("volume"), planted[i] + 7);
                ck_assert_msg(system(moved) == 0, "%s is not kept in ~/.aisb-moved", planted[i]);
        }
        for (size_t i = 0; i < ELEMENTSOF(kept); i++)
                ck_assert_msg(exists_at(kept[i]), "%s went", kept[i]);
        ck_assert(exists_at("volume/.pi/agent/prompts"));
        json_object *auth = read_json(at("volume/.pi/agent/auth.json"));
        ck_assert(!json_object_object_get_ex(auth, "loc", NULL));
        ck_assert(json_object_object_get_ex(auth, "oauth", NULL));
        json_object_put(auth);
        json_object *state = read_json(at("volume/.claude.json"));
        ck_assert(!json_object_object_get_ex(state, "mcpServers", NULL));
        ck_assert_ptr_null(strstr(json_object_to_json_string(state), "mcpServers"));
        ck_assert_ptr_nonnull(strstr(json_object_to_json_string(state), "numStartups"));
        json_object_put(state);
        ck_assert_msg(strstr(logs.text, "~/.pi/agent/auth.json held keys that are commands"), "%s", logs.text);
        ck_assert_msg(strstr(logs.text, "~/.claude.json held MCP servers claude starts (left by an earlier run): 2 taken out"),
                      "%s", logs.text);
        ck_assert(exists_at("victim/rules.md"));
        ck_assert(!exists_at("volume/.claude/output-styles"));
        /* One line for all of it, naming the first few. */
        ck_assert_msg(strstr(logs.text, "(left by an earlier run): ~/.pi/agent/AGENTS.md ~/.pi/agent/SYSTEM.md"),
                      "%s", logs.text);
        ck_assert_ptr_nonnull(strstr(logs.text, " and more moved to ~/.aisb-moved/"));
        /* The bridge wrote its own afresh: settings from the host; the host has no models.json. */
        json_object *settings = read_json(at("volume/.pi/agent/settings.json"));
        ck_assert_str_eq(get_string(settings, "theme", NULL, NULL), "dark");
        json_object_put(settings);
        /* Nothing left: the next run says nothing. */
        logs.text[0] = 0;
        prepare_ok(p);
        ck_assert_msg(!strstr(logs.text, "aisb-moved"), "%s", logs.text);
        aisb_policy_free(p);
}
END_TEST

/* The settings keys that run code or load it (pi's extensions and packages, claude's hooks
 * and env, codex's MCP servers and notify): the host's, never what the agent added. */
START_TEST(test_prepare_host_only_keys)
{
        host_pi("{\"theme\":\"dark\",\"packages\":[\"npm:host-pkg\"]}", NULL);
        aisb_policy *p = volume_policy();
        prepare_ok(p);
        write_file(at("volume/.pi/agent/settings.json"),
                   "{\"theme\":\"light\",\"packages\":[\"npm:evil\"],\"extensions\":[\"/home/sandbox/x.js\"],"
                   "\"shellCommandPrefix\":\"curl x|sh;\"}");
        prepare_ok(p);
        json_object *settings = read_json(at("volume/.pi/agent/settings.json"));
        ck_assert_str_eq(get_string(settings, "theme", NULL, NULL), "light"); /* the agent's own taste stays */
        ck_assert_str_eq(json_object_to_json_string_ext(json_object_object_get(settings, "packages"),
                                                        JSON_C_TO_STRING_PLAIN), "[\"npm:host-pkg\"]");
        ck_assert(!json_object_object_get_ex(settings, "extensions", NULL));
        ck_assert(!json_object_object_get_ex(settings, "shellCommandPrefix", NULL));
        json_object_put(settings);
        aisb_policy_free(p);

        host_harness("claude", "settings.json", "{\"model\":\"opus\"}");
        p = volume_policy_of("claude");
        write_file(at("volume/.claude/settings.json"),
                   "{\"model\":\"opus\",\"hooks\":{\"SessionStart\":[{\"hooks\":[{\"type\":\"command\","
                   "\"command\":\"sh /home/sandbox/x\"}]}]},\"statusLine\":{\"type\":\"command\",\"command\":\"x\"},"
                   "\"env\":{\"BASH_ENV\":\"/home/sandbox/x\"},\"enabledPlugins\":{\"p@m\":true}}");
        prepare_ok(p);
        settings = read_json(at("volume/.claude/settings.json"));
        ck_assert(!json_object_object_get_ex(settings, "hooks", NULL));
        ck_assert(!json_object_object_get_ex(settings, "statusLine", NULL));
        ck_assert(!json_object_object_get_ex(settings, "enabledPlugins", NULL));
        ck_assert_ptr_null(get_string(settings, "env", "BASH_ENV", NULL));
        json_object_put(settings);
        unsetenv("CLAUDE_CONFIG_DIR");
        aisb_policy_free(p);

        host_harness("codex", "config.toml", "model = \"gpt-5.1\"\n");
        p = volume_policy_of("codex");
        write_file(at("volume/.codex/config.toml"), "model = \"gpt-5.1\"\nnotify = [\"sh\", \"/home/sandbox/x\"]\n"
                                                    "[mcp_servers.evil]\ncommand = \"sh\"\n");
        prepare_ok(p);
        char *text = read_file(at("volume/.codex/config.toml"));
        ck_assert_ptr_nonnull(text);
        ck_assert_ptr_null(strstr(text, "notify"));
        ck_assert_ptr_null(strstr(text, "mcp_servers"));
        ck_assert_ptr_nonnull(strstr(text, "gpt-5.1"));
        free(text);
        unsetenv("CODEX_HOME");
        aisb_policy_free(p);
}
END_TEST

/* A run warns when the agents directory changed and holds what looks like a credential. */
START_TEST(test_prepare_warns_of_credentials)
{
        aisb_policy *p = NULL;
        ck_assert_int_eq(aisb_policy_new(&p, NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "no-cwd", "true", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "no-pi-config", "true", NULL), 0);
        unit_route_home_volume(fp);
        char agents[512], file[PATH_MAX];
        snprintf(agents, sizeof agents, "%s/.agents", home);
        snprintf(file, sizeof file, "%s/skills/deploy/SKILL.md", agents);
        write_file(file, "Deploy with token " TOKEN "\n");
        run_dir rd;
        harness_bridge b;
        ck_assert_int_eq(prepare_in(p, &rd, &b, NULL), 0);
        ck_assert_str_eq(b.agents_dir, agents);
        ck_assert_ptr_null(b.seed_dir);
        char expected[PATH_MAX + 64];
        snprintf(expected, sizeof expected, "2 %s, mounted read-only in every sandbox, holds 1 possible credential in its files", agents);
        ck_assert_msg(strstr(logs.text, expected), "log: %s", logs.text);
        ck_assert_ptr_null(strstr(logs.text, TOKEN));
        harness_bridge_done(&b);
        /* Unchanged: said once. */
        logs.text[0] = 0;
        ck_assert_int_eq(harness_bridge_prepare(ctx, p, &rd, &b, NULL), 0);
        ck_assert_str_eq(logs.text, "");
        harness_bridge_done(&b);
        run_dir_remove(&rd);
        aisb_policy_free(p);
}
END_TEST

/* ---- aisb inspect ---- */

static char *describe(const aisb_policy *p)
{
        buffer b = {};
        ck_assert_int_eq(harness_describe(p, &b), 0);
        return buffer_steal(&b);
}

/* ---- keys held by the gate ---- */

/* The policy's secrets as "NAME@HOST/HEADER" lines, then the policy freed. */
static char *held_then_free(aisb_policy *p)
{
        char *text = NULL;
        ck_assert_int_eq(aisb_policy_get(p, "secret", &text, NULL), 0);
        aisb_policy_free(p);
        return text ? text : strdup("");
}

static aisb_policy *harness_policy(const char *harness, const char *const *sets)
{
        aisb_policy *p = new_policy();
        ck_assert_int_eq(aisb_policy_set(p, "harness", harness, NULL), 0);
        for (; sets && *sets; sets += 2)
                ck_assert_int_eq(aisb_policy_set(p, sets[0], sets[1], NULL), 0);
        ck_assert_int_eq(aisb_policy_set_harness_args(p, (const char *const[]) { NULL }, NULL), 0);
        char **names = NULL;
        ck_assert_int_eq(aisb_policy_hold_harness_keys(p, &names, NULL), 0);
        strv_free(names);
        return p;
}

static void expect_held(const char *harness, const char *const *sets, const char *expected)
{
        char *text = held_then_free(harness_policy(harness, sets));
        ck_assert_str_eq(text, expected);
        free(text);
}

START_TEST(test_hold_claude)
{
        setenv("ANTHROPIC_API_KEY", "sk-ant-api03-held", 1);
        unsetenv("ANTHROPIC_AUTH_TOKEN");
        expect_held("claude", NULL, "ANTHROPIC_API_KEY@api.anthropic.com/x-api-key");
        setenv("ANTHROPIC_AUTH_TOKEN", "gateway-token", 1);
        expect_held("claude", NULL,
                    "ANTHROPIC_API_KEY@api.anthropic.com/x-api-key\n"
                    "ANTHROPIC_AUTH_TOKEN@api.anthropic.com/Authorization:Bearer");
        unsetenv("ANTHROPIC_AUTH_TOKEN");

        /* Where the host's settings send claude, the run's --env before them; https only. */
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/.claude/settings.json", home);
        write_file(path, "{\"env\":{\"ANTHROPIC_BASE_URL\":\"https://gw.corp.test/anthropic\"}}");
        expect_held("claude", NULL, "ANTHROPIC_API_KEY@gw.corp.test/x-api-key");
        expect_held("claude", (const char *const[]) { "env", "ANTHROPIC_BASE_URL=https://other.test", NULL },
                    "ANTHROPIC_API_KEY@other.test/x-api-key");
        expect_held("claude", (const char *const[]) { "no-harness-config", "true", NULL },
                    "ANTHROPIC_API_KEY@api.anthropic.com/x-api-key");
        expect_held("claude", (const char *const[]) { "env", "ANTHROPIC_BASE_URL=http://plain.test", NULL }, "");

        /* The user's own: a --secret filling the same header there, an --env of the key, or none. */
        setenv("MY_KEY", "sk-ant-mine", 1);
        expect_held("claude", (const char *const[]) { "secret", "MY_KEY@gw.corp.test/x-api-key", NULL },
                    "MY_KEY@gw.corp.test/x-api-key");
        expect_held("claude", (const char *const[]) { "env", "ANTHROPIC_API_KEY", NULL }, "");
        expect_held("claude", (const char *const[]) { "no-harness-keys", "true", NULL }, "");
        unsetenv("MY_KEY");
        unsetenv("ANTHROPIC_API_KEY");
        expect_held("claude", NULL, "");
}
END_TEST

START_TEST(test_hold_codex)
{
        setenv("OPENAI_API_KEY", "sk-proj-held", 1);
        setenv("GW_KEY", "gw-key", 1);
        expect_held("codex", NULL, "OPENAI_API_KEY@api.openai.com/Authorization:Bearer");
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/.codex/config.toml", home);
        write_file(path, "model_provider = \"gw\"\n[model_providers.gw]\nbase_url = \"https://gw.test/v1\"\n"
                         "env_key = \"GW_KEY\"\n");
        expect_held("codex", NULL, "GW_KEY@gw.test/Authorization:Bearer");
        expect_held("codex", (const char *const[]) { "no-harness-config", "true", NULL },
                    "OPENAI_API_KEY@api.openai.com/Authorization:Bearer");
        /* A provider of codex's own with no block here (a local model): no key of ours. */
        write_file(path, "model_provider = \"ollama\"\n");
        expect_held("codex", NULL, "");
        write_file(path, "model_provider = \"gw\"\n[model_providers.gw]\nbase_url = \"http://gw.test/v1\"\n"
                         "env_key = \"GW_KEY\"\n");
        expect_held("codex", NULL, "");
        /* A host spelled otherwise is the same host: the user's --secret there wins. */
        write_file(path, "model_provider = \"gw\"\n[model_providers.gw]\nbase_url = \"https://GW.Test./v1\"\n"
                         "env_key = \"GW_KEY\"\n");
        expect_held("codex", NULL, "GW_KEY@gw.test/Authorization:Bearer");
        setenv("MY_KEY", "mine", 1);
        expect_held("codex", (const char *const[]) { "secret", "MY_KEY@gw.test", NULL }, "MY_KEY@gw.test/Authorization:Bearer");
        unsetenv("MY_KEY");
        unsetenv("OPENAI_API_KEY");
        unsetenv("GW_KEY");
}
END_TEST

#define PI_HOLD_MODELS                                                                                       \
        "{\"providers\":{"                                                                                   \
        "\"stub\":{\"baseUrl\":\"https://api.stub.test:8443/v1\",\"api\":\"openai-completions\","            \
        "\"apiKey\":\"STUB_KEY\",\"models\":[]},"                                                            \
        "\"lit\":{\"baseUrl\":\"https://lit.test\",\"api\":\"anthropic-messages\",\"apiKey\":\"sk-lit-0003\"," \
        "\"headers\":{\"X-Team\":\"TEAM_VALUE\",\"X-Spaced\":\"Bearer two words\"},\"models\":[]},"           \
        "\"cmd\":{\"baseUrl\":\"https://cmd.test\",\"api\":\"openai-completions\",\"apiKey\":\"!pass show k\"," \
        "\"models\":[]},"                                                                                    \
        "\"plain\":{\"baseUrl\":\"http://plain.test\",\"api\":\"openai-completions\",\"apiKey\":\"PLAIN_KEY\"," \
        "\"models\":[]},"                                                                                    \
        "\"odd\":{\"baseUrl\":\"https://odd.test\",\"api\":\"bedrock-converse-stream\",\"apiKey\":\"ODD_KEY\"," \
        "\"models\":[]},"                                                                                    \
        "\"anthropic\":{\"apiKey\":\"ANTHROPIC_API_KEY\",\"models\":[]}}}"

START_TEST(test_hold_pi)
{
        host_pi("{}", PI_HOLD_MODELS);
        static const char *const vars[] = { "STUB_KEY", "TEAM_VALUE", "PLAIN_KEY", "ODD_KEY", "ANTHROPIC_API_KEY",
                                            "OPENAI_API_KEY" };
        for (size_t i = 0; i < ELEMENTSOF(vars); i++)
                setenv(vars[i], "value-of-a-key", 1);
        aisb_policy *p = harness_policy("pi", NULL);
        /* A literal is held with its own value; the sandbox's models.json names the variable. */
        const char *literal = NULL;
        for (size_t i = 0; i < p->n_secrets; i++)
                if (streq(p->secrets[i].name, "AISB_PI_KEY_LIT"))
                        literal = p->secrets[i].value;
        ck_assert_str_eq(literal, "sk-lit-0003");
        char *text = held_then_free(p);
        ck_assert_str_eq(text, "STUB_KEY@api.stub.test/Authorization:Bearer\n"
                               "AISB_PI_KEY_LIT@lit.test/x-api-key\n"
                               "TEAM_VALUE@lit.test/X-Team\n"
                               "ANTHROPIC_API_KEY@api.anthropic.com/x-api-key\n"
                               "OPENAI_API_KEY@api.openai.com/Authorization:Bearer");
        free(text);

        /* What the gate cannot hold stays the run's to pass, and the run says which. */
        p = harness_policy("pi", (const char *const[]) { "ephemeral-home", "true", NULL });
        run_dir rd;
        harness_bridge b;
        aisb_error *err = NULL;
        ck_assert_int_eq(prepare_in(p, &rd, &b, &err), -ENOKEY);
        const char *m = aisb_error_message(err);
        ck_assert_msg(strstr(m, "--env AISB_PI_HEADER_LIT_X_SPACED") && strstr(m, "--env AISB_PI_KEY_CMD") &&
                              strstr(m, "--env PLAIN_KEY") && strstr(m, "--env ODD_KEY") && !strstr(m, "STUB_KEY") &&
                              !strstr(m, "AISB_PI_KEY_LIT ") && !strstr(m, "TEAM_VALUE"),
                      "%s", m);
        aisb_error_free(err);
        run_dir_remove(&rd);
        aisb_policy_free(p);

        expect_held("pi", (const char *const[]) { "no-pi-config", "true", NULL },
                    "ANTHROPIC_API_KEY@api.anthropic.com/x-api-key\n"
                    "OPENAI_API_KEY@api.openai.com/Authorization:Bearer");
        expect_held("pi", (const char *const[]) { "no-harness-keys", "true", NULL }, "");
        for (size_t i = 0; i < ELEMENTSOF(vars); i++)
                unsetenv(vars[i]);
}
END_TEST

START_TEST(test_describe)
{
        host_pi("{\"theme\":\"dark\",\"defaultModel\":\"m1\"}", MODELS);
        aisb_policy *p = new_policy();
        ck_assert_int_eq(aisb_policy_set(p, "env", "AISB_PI_KEY_ACME=value", NULL), 0);
        char *text = describe(p);
        char expected[PATH_MAX + 1024];
        snprintf(expected, sizeof expected,
                 "bridge=pi from %s/.pi/agent\n"
                 "bridge-settings=theme,defaultModel (merged per key)\n"
                 "bridge-thinking=xhigh\n"
                 "bridge-key=AISB_PI_KEY_ACME for the apiKey of provider 'acme' (passed)\n"
                 "bridge-key=AISB_PI_HEADER_ACME_X_TEAM for header 'X-Team' of provider 'acme' (missing: add --env)\n"
                 "bridge-auth=never copied\n",
                 home);
        ck_assert_str_eq(text, expected);
        free(text);
        /* The literal header, held by the gate (the provider names no api: its key is not). */
        ck_assert_int_eq(aisb_policy_hold_harness_keys(p, NULL, NULL), 0);
        text = describe(p);
        ck_assert_ptr_nonnull(strstr(text, "bridge-key=AISB_PI_HEADER_ACME_X_TEAM for header 'X-Team' of provider "
                                           "'acme' (held by the gate)\n"));
        ck_assert_ptr_null(strstr(text, LITERAL_HEADER));
        free(text);
        aisb_policy_free(p);
}
END_TEST

START_TEST(test_describe_nothing_on_the_host)
{
        aisb_policy *p = new_policy();
        ck_assert_int_eq(aisb_policy_set(p, "thinking", "host", NULL), 0);
        char *text = describe(p);
        char expected[PATH_MAX + 512];
        snprintf(expected, sizeof expected,
                 "bridge=pi from %s/.pi/agent\nbridge-settings=none on the host\nbridge-thinking=host\n"
                 "bridge-models=none on the host\nbridge-auth=never copied\n",
                 home);
        ck_assert_str_eq(text, expected);
        free(text);
        /* pi's own variable names the directory. */
        setenv("PI_CODING_AGENT_DIR", at("elsewhere"), 1);
        text = describe(p);
        unsetenv("PI_CODING_AGENT_DIR");
        snprintf(expected, sizeof expected, "bridge=pi from %s\n", at("elsewhere"));
        ck_assert(startswith(text, expected));
        free(text);
        aisb_policy_free(p);
}
END_TEST

/* A models.json a run would refuse: said so, by names and types. */
START_TEST(test_describe_models_refused)
{
        host_pi(NULL, "{\"providers\":{\"acme\":{\"apiKey\":12345678}}}");
        aisb_policy *p = new_policy();
        char *text = describe(p);
        ck_assert_ptr_nonnull(strstr(text, "\nbridge-models=refused: "));
        ck_assert_ptr_nonnull(strstr(text, "acme"));
        ck_assert_ptr_null(strstr(text, "12345678"));
        free(text);
        aisb_policy_free(p);
}
END_TEST

/* Each backend fills every operation harness.c calls through it, and its places agree. */
START_TEST(test_backends_complete)
{
        static const struct {
                const char *name;
                harness_kind kind;
        } harnesses[] = { { "pi", HARNESS_PI }, { "claude", HARNESS_CLAUDE }, { "codex", HARNESS_CODEX } };
        aisb_policy *p = NULL;
        ck_assert_int_eq(aisb_policy_new(&p, NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "harness", harnesses[_i].name, NULL), 0);
        const harness_ops *ops = harness_backend(p);
        ck_assert_ptr_nonnull(ops);
        ck_assert_int_eq(ops->kind, harnesses[_i].kind);
        ck_assert_str_eq(ops->name, harnesses[_i].name);
        ck_assert(ops->dir_env && ops->home_dir && ops->seed && ops->base && ops->whole_file && ops->settings);
        char sandbox_dir[PATH_MAX];
        snprintf(sandbox_dir, sizeof sandbox_dir, "%s/%s", AISB_SANDBOX_HOME, ops->home_dir);
        ck_assert_str_eq(ops->sandbox_dir, sandbox_dir);
        ck_assert_str_eq(harness_sandbox_dir(p), sandbox_dir);
        ck_assert(ops->syntax && ops->syntax->parse && ops->syntax->format);
        ck_assert(ops->level_valid && ops->levels && ops->bridge && ops->describe && ops->hold_keys);
        ck_assert(ops->level_valid("host") && !ops->level_valid("bogus"));
        const char *levels = ops->levels();
        ck_assert_str_eq(levels + strlen(levels) - strlen(", host"), ", host");
        if (ops->describe == harness_describe_settings)
                ck_assert(ops->level_where && ops->auth_file);
        size_t n = 0;
        for (const read_only_dir *d = ops->read_only; d && d->name; d++, n++)
                ck_assert(d->destination && strncmp(d->destination, sandbox_dir, strlen(sandbox_dir)) == 0);
        ck_assert_uint_le(n, HARNESS_MOUNTS_MAX);
        if (ops->state)
                ck_assert(ops->state->dir && ops->state->name && ops->state->shown && ops->state->what && ops->state->take);
        aisb_policy_free(p);
}
END_TEST

static Suite *harness_suite(void)
{
        Suite *s = suite_create("harness");
        TCase *tc = tcase_create("choices");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_bridge_applies);
        tcase_add_loop_test(tc, test_thinking_per_harness, 0, (int) ELEMENTSOF(thinking_cases));
        tcase_add_test(tc, test_thinking_no_harness);
        tcase_add_loop_test(tc, test_backends_complete, 0, 3);
        tcase_add_test(tc, test_agents_dir);
        tcase_add_test(tc, test_hold_claude);
        tcase_add_test(tc, test_hold_codex);
        tcase_add_test(tc, test_hold_pi);
        suite_add_tcase(s, tc);
        tc = tcase_create("bridge");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_prepare_ephemeral);
        tcase_add_test(tc, test_prepare_key_not_passed);
        tcase_add_test(tc, test_dry_run_bridges_nothing);
        tcase_add_test(tc, test_prepare_volume);
        tcase_add_test(tc, test_prepare_volume_symlink_pi);
        tcase_add_test(tc, test_prepare_volume_symlink_agent);
        tcase_add_test(tc, test_prepare_volume_files_planted);
        tcase_add_test(tc, test_prepare_volume_obstacles);
        tcase_add_test(tc, test_prepare_home_reset);
        tcase_add_test(tc, test_prepare_host_only_keys);
        tcase_add_test(tc, test_prepare_volume_unknown);
        tcase_add_test(tc, test_prepare_warns_of_credentials);
        tcase_add_test(tc, test_prepare_claude);
        tcase_add_test(tc, test_prepare_claude_policy);
        tcase_add_test(tc, test_prepare_pi_budgets);
        tcase_add_test(tc, test_prepare_pi_scrubbed);
        tcase_add_test(tc, test_prepare_carry);
        tcase_add_test(tc, test_prepare_host_links);
        tcase_add_test(tc, test_prepare_codex);
        tcase_add_test(tc, test_prepare_codex_volume);
        tcase_add_test(tc, test_prepare_codex_profile);
        suite_add_tcase(s, tc);
        tc = tcase_create("describe");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_describe);
        tcase_add_test(tc, test_describe_nothing_on_the_host);
        tcase_add_test(tc, test_describe_models_refused);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        if (!mkdtemp(base))
                return EXIT_FAILURE;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/state", base);
        setenv("XDG_STATE_HOME", path, 1);
        snprintf(path, sizeof path, "%s/config", base);
        setenv("XDG_CONFIG_HOME", path, 1);
        /* The run directories: under the test's own (private, as run_dir_create wants it). */
        snprintf(path, sizeof path, "%s/run", base);
        if (mkdir(path, 0700) < 0)
                return EXIT_FAILURE;
        setenv("XDG_RUNTIME_DIR", path, 1);
        unsetenv("PI_CODING_AGENT_DIR");
        unsetenv("AISB_HOME_VOLUME");
        int failed = unit_run(harness_suite()) != EXIT_SUCCESS;
        char command[PATH_MAX + 16];
        snprintf(command, sizeof command, "rm -rf '%s'", base);
        if (system(command) != 0)
                failed++;
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
