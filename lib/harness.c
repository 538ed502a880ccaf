/* SPDX-License-Identifier: MIT */
/*
 * The harness feels like the user's own: before a run of pi, the host's pi configuration is
 * bridged into the sandbox's home (settings merged per key against what aisb last wrote,
 * models with literal keys and header values turned into variable references, auth.json
 * never), and the reasoning level is re-applied as policy, so one run cannot lower it for the
 * next.
 *
 * The sandbox's home is a volume the agent writes: everything there is opened relative to a
 * directory descriptor with O_NOFOLLOW, so a planted symlink can neither make us read a host
 * file into the sandbox nor overwrite one. The merge base lives on the host, out of reach.
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "entrypoint-args.h"
#include "harness.h"
#include "jsonutil.h"
#include "pi-config.h"
#include "podman.h"
#include "skills-walk.h"
#include "userdirs.h"
#include "fileio.h"

#define PI_AGENT_DIR ".pi/agent"

const struct harness_env harness_quiet_env[] = {
        { "PI_SKIP_VERSION_CHECK", "1" },
        { "PI_TELEMETRY", "0" },
        /* claude's autoupdater, telemetry, error reporting and feedback command. */
        { "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1" },
        {},
};

void harness_bridge_done(harness_bridge *b)
{
        /* The seed directory is the run directory's, removed with it. */
        free(b->seed_dir);
        free(b->agents_dir);
        *b = (harness_bridge) {};
}

harness_kind harness_of_command(const aisb_policy *p)
{
        const char *const *cmd = policy_command(p);
        if (p->shell || !cmd[0])
                return HARNESS_NONE;
        const char *slash = strrchr(cmd[0], '/');
        const char *name = slash ? slash + 1 : cmd[0];
        return streq(name, "pi") ? HARNESS_PI : streq(name, "claude") ? HARNESS_CLAUDE
                                              : streq(name, "codex")  ? HARNESS_CODEX
                                                                      : HARNESS_NONE;
}

bool harness_bridge_applies(const aisb_policy *p)
{
        return !p->no_pi_config && harness_of_command(p) == HARNESS_PI;
}

/* claude's effort levels (claude --help: --effort). */
static const char *const claude_levels[] = { "low", "medium", "high", "xhigh", "max" };

int harness_thinking_check(const aisb_policy *p, aisb_error **err)
{
        if (streq(p->thinking, "host"))
                return 0;
        switch (harness_of_command(p)) {
        case HARNESS_PI:
                if (!p->no_pi_config && !pi_thinking_level_valid(p->thinking))
                        return aisb_error_set(err, -EINVAL, "thinking: pi has no level '%s' (use one of: %s)",
                                              p->thinking, pi_thinking_levels());
                return 0;
        case HARNESS_CLAUDE:
                for (size_t i = 0; i < ELEMENTSOF(claude_levels); i++)
                        if (streq(p->thinking, claude_levels[i]))
                                return 0;
                return aisb_error_set(err, -EINVAL,
                                      "thinking: claude has no level '%s' (use one of: low, medium, high, xhigh, max, host)",
                                      p->thinking);
        default:
                return 0;
        }
}

const char *harness_thinking_env(const aisb_policy *p)
{
        if (harness_of_command(p) != HARNESS_CLAUDE || streq(p->thinking, "host") ||
            policy_env_named(p, "CLAUDE_CODE_EFFORT_LEVEL"))
                return NULL;
        return "CLAUDE_CODE_EFFORT_LEVEL";
}

/* Read dirfd/name as JSON. 0 with *ret NULL when absent. Never waits: a FIFO (or anything
 * but a regular file) planted there is refused at once, not opened for a writer that never
 * comes. */
static int read_json_at(int dirfd, const char *name, const char *origin, json_object **ret,
                        aisb_error **err)
{
        *ret = NULL;
        _cleanup_close_ int fd = openat(dirfd, name,
                                        O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                if (errno == ENOENT)
                        return 0;
                if (errno == EACCES)
                        return aisb_error_set(err, -EACCES, "cannot read %s: permission denied (chmod u+r %s)",
                                              origin, origin);
                if (errno == ELOOP)
                        return aisb_error_set(err, -EINVAL, "%s is a symlink, which is not followed", origin);
                return aisb_error_set(err, -errno, "cannot open %s: %s", origin, strerror(errno));
        }
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return aisb_error_set(err, -EINVAL, "%s is not a regular file", origin);
        if (st.st_size > (off_t) PIBRIDGE_JSON_MAX)
                return aisb_error_set(err, -EFBIG, "%s is larger than %u bytes", origin, PIBRIDGE_JSON_MAX);
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        int r = read_full_fd(fd, PIBRIDGE_JSON_MAX, &text, &size);
        if (r < 0)
                return aisb_error_set(err, r, "cannot read %s: %s", origin, strerror(-r));
        return pi_parse_json(text, size, origin, ret, err);
}

/* Write JSON to dirfd/name through a new file and a rename: a symlink planted at name is
 * replaced, never followed. */
static int write_json_at(int dirfd, const char *name, json_object *o, aisb_error **err)
{
        const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
                                                                JSON_C_TO_STRING_NOSLASHESCAPE);
        _cleanup_free_ char *tmp = NULL;
        if (asprintf(&tmp, ".%s.aisb-%ld", name, (long) getpid()) < 0)
                return error_oom(err);
        (void) unlinkat(dirfd, tmp, 0);
        _cleanup_close_ int fd = openat(dirfd, tmp,
                                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK |
                                                O_CLOEXEC | O_NOCTTY,
                                        0600);
        if (fd < 0)
                return aisb_error_set(err, -errno, "cannot write %s: %s", name, strerror(errno));
        int r = write_all(fd, text, strlen(text));
        if (r >= 0)
                r = write_all(fd, "\n", 1);
        if (r < 0 || renameat(dirfd, tmp, dirfd, name) < 0) {
                r = r < 0 ? r : -errno;
                (void) unlinkat(dirfd, tmp, 0);
                return aisb_error_set(err, r, "cannot write %s: %s", name, strerror(-r));
        }
        return 0;
}

static int bridge_pi(aisb_ctx *ctx, const aisb_policy *p, int sandbox_dir, const char *base_dir,
                     aisb_error **err)
{
        /* Where pi itself looks: $PI_CODING_AGENT_DIR, else ~/.pi/agent. */
        const char *home = getenv("HOME");
        const char *agent_dir = getenv("PI_CODING_AGENT_DIR");
        _cleanup_free_ char *host_path = NULL;
        if (agent_dir && *agent_dir)
                host_path = strdup(agent_dir);
        else if (home && asprintf(&host_path, "%s/" PI_AGENT_DIR, home) < 0)
                host_path = NULL;
        if (!host_path)
                return aisb_error_set(err, -ENOENT, "HOME is not set: cannot find ~/.pi/agent");
        _cleanup_close_ int host_dir = open(host_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_free_ char *host_settings_name = NULL, *host_models_name = NULL;
        if (asprintf(&host_settings_name, "%s/settings.json", host_path) < 0 ||
            asprintf(&host_models_name, "%s/models.json", host_path) < 0)
                return error_oom(err);

        _cleanup_json_ json_object *host = NULL, *sandbox = NULL, *base = NULL, *merged = NULL;
        int r = 0;
        if (host_dir >= 0)
                r = read_json_at(host_dir, "settings.json", host_settings_name, &host, err);
        if (r < 0)
                return r;
        aisb_error *e = NULL;
        if (read_json_at(sandbox_dir, "settings.json", "the sandbox's settings.json", &sandbox, &e) < 0) {
                aisb_log(ctx, AISB_LOG_WARNING, "%s: taking the host's settings afresh",
                         aisb_error_message(e));
                aisb_error_free(e);
                sandbox = NULL;
        }
        _cleanup_close_ int base_fd = base_dir ? open(base_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
        if (base_fd >= 0 && read_json_at(base_fd, "settings.base.json", "settings.base.json", &base, NULL) < 0)
                base = NULL;

        r = pi_merge_settings(base, host, sandbox, &merged, err);
        if (r < 0)
                return aisb_error_wrap(err, r, "merging pi's settings");
        if (!streq(p->thinking, "host")) {
                r = pi_apply_thinking(merged, p->thinking, err);
                if (r < 0)
                        return r;
        }
        r = write_json_at(sandbox_dir, "settings.json", merged, err);
        if (r >= 0 && base_fd >= 0)
                r = write_json_at(base_fd, "settings.base.json", merged, err);
        if (r < 0)
                return r;

        /* models.json: the host's, with every literal key and header value turned into a
         * variable the run must pass; the literal itself never leaves the host. */
        _cleanup_json_ json_object *models = NULL, *rewritten = NULL;
        if (host_dir >= 0)
                r = read_json_at(host_dir, "models.json", host_models_name, &models, err);
        if (r < 0 || !models)
                return r;
        pi_key *keys = NULL;
        size_t n_keys = 0;
        r = pi_rewrite_models(models, &rewritten, &keys, &n_keys, err);
        /* A key may come from a --secret too: the sandbox then holds its placeholder, and the
         * gate puts the value into pi's requests to the provider. */
        _cleanup_free_ env_entry *vars = calloc(p->n_env + p->n_secrets + 1, sizeof *vars);
        if (r >= 0 && !vars)
                r = error_oom(err);
        for (size_t i = 0; vars && i < p->n_env; i++)
                vars[i] = p->env[i];
        for (size_t i = 0; vars && i < p->n_secrets; i++)
                vars[p->n_env + i] = (env_entry) { .name = p->secrets[i].name, .value = p->secrets[i].placeholder };
        if (r >= 0)
                r = pi_keys_check(keys, n_keys, vars, p->n_env + p->n_secrets, err);
        pi_keys_free(keys, n_keys);
        if (r < 0)
                return r;
        return write_json_at(sandbox_dir, "models.json", rewritten, err);
}

int harness_agents_dir(const aisb_policy *p, char **ret, const char **why)
{
        const char *reason = NULL;
        _cleanup_free_ char *dir = NULL;
        const char *home = getenv("HOME");
        if (p->no_agents)
                reason = "no-agents is set";
        else if (p->agents_dir) {
                if (!(dir = strdup(p->agents_dir)))
                        return -ENOMEM;
        } else if (!home || !*home)
                reason = "HOME is not set";
        else if (asprintf(&dir, "%s/.agents", home) < 0) {
                dir = NULL;
                return -ENOMEM;
        }
        struct stat st;
        if (dir && (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))) {
                reason = "it does not exist";
                free(dir);
                dir = NULL;
        }
        if (why)
                *why = reason;
        *ret = steal_pointer(&dir);
        return 0;
}

int aisb_policy_agents_dir(const aisb_policy *p, char **ret_dir, aisb_error **err)
{
        const char *why = NULL;
        char *dir = NULL;
        if (harness_agents_dir(p, &dir, &why) < 0)
                return error_oom(err);
        if (!dir) {
                const char *home = getenv("HOME");
                if (why && streq(why, "it does not exist"))
                        return aisb_error_set(err, -ENOENT, "runs mount no agents directory: %s%s does not exist",
                                              p->agents_dir ? p->agents_dir : home,
                                              p->agents_dir ? "" : "/.agents");
                return aisb_error_set(err, -ENOENT, "runs mount no agents directory: %s", why);
        }
        *ret_dir = dir;
        return 0;
}

int harness_bridge_prepare(aisb_ctx *ctx, const aisb_policy *p, run_dir *rd, harness_bridge *ret,
                           aisb_error **err)
{
        harness_bridge b = {};
        int r = harness_agents_dir(p, &b.agents_dir, NULL);
        if (r < 0)
                return error_oom(err);
        /* Every sandbox reads what it holds: said once each time it changes. */
        skills_warn_if_changed(ctx, b.agents_dir);
        if (!harness_bridge_applies(p)) {
                *ret = b;
                return 0;
        }

        _cleanup_close_ int sandbox_dir = -1;
        _cleanup_free_ char *base_dir = NULL;
        if (p->ephemeral_home) {
                /* A fresh home is a sized tmpfs that exists only once the sandbox starts: the
                 * bridged files wait in the run's own directory, mounted read-only, and the
                 * entrypoint copies them into ~/.pi/agent as the user. Nothing the sandbox
                 * writes lands on the host. */
                if (asprintf(&b.seed_dir, "%s/pi-agent", rd->path) < 0) {
                        r = error_oom(err);
                        goto fail;
                }
                if (mkdirat(rd->fd, "pi-agent", 0700) < 0) {
                        r = aisb_error_set(err, -errno, "cannot create %s: %s", b.seed_dir, strerror(errno));
                        goto fail;
                }
                sandbox_dir = openat(rd->fd, "pi-agent", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        } else {
                _cleanup_free_ char *mountpoint = NULL, *sub = NULL;
                r = podman_volume_mountpoint(ctx, p->home_volume, &mountpoint, err);
                if (r < 0)
                        goto fail;
                _cleanup_close_ int root = open(mountpoint, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (root < 0) {
                        r = aisb_error_set(err, -errno, "cannot open the home volume at %s: %s",
                                           mountpoint, strerror(errno));
                        goto fail;
                }
                sandbox_dir = open_dir_nofollow(root, PI_AGENT_DIR, true);
                if (asprintf(&sub, "pi/%s", p->home_volume) < 0) {
                        r = error_oom(err);
                        goto fail;
                }
                r = state_dir(sub, &base_dir, err);
                if (r < 0)
                        goto fail;
        }
        if (sandbox_dir < 0) {
                r = aisb_error_set(err, sandbox_dir < 0 ? sandbox_dir : -EIO,
                                   "cannot open ~/.pi/agent in the sandbox's home (a symlink there is refused)");
                goto fail;
        }
        r = bridge_pi(ctx, p, sandbox_dir, base_dir, err);
        if (r < 0)
                goto fail;
        *ret = b;
        return 0;
fail:
        harness_bridge_done(&b);
        return r;
}

int harness_describe(const aisb_policy *p, buffer *b)
{
        const char *home = getenv("HOME");
        const char *agent_dir = getenv("PI_CODING_AGENT_DIR");
        _cleanup_free_ char *host_path = agent_dir && *agent_dir ? strdup(agent_dir) : NULL;
        if (!host_path && home && asprintf(&host_path, "%s/" PI_AGENT_DIR, home) < 0)
                host_path = NULL;
        int r = buffer_printf(b, "bridge=pi from %s\n", host_path ? host_path : "(no HOME)");
        _cleanup_close_ int dir = host_path ? open(host_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
        _cleanup_json_ json_object *settings = NULL, *models = NULL, *rewritten = NULL;
        if (dir >= 0)
                (void) read_json_at(dir, "settings.json", "settings.json", &settings, NULL);
        if (settings) {
                r = r < 0 ? r : buffer_printf(b, "bridge-settings=");
                bool first = true;
                json_object_object_foreach(settings, key, value) {
                        (void) value;
                        r = r < 0 ? r : buffer_printf(b, "%s%s", first ? "" : ",", key);
                        first = false;
                }
                r = r < 0 ? r : buffer_printf(b, " (merged per key)\n");
        } else
                r = r < 0 ? r : buffer_printf(b, "bridge-settings=none on the host\n");
        r = r < 0 ? r : buffer_printf(b, "bridge-thinking=%s\n", p->thinking);
        if (dir >= 0)
                (void) read_json_at(dir, "models.json", "models.json", &models, NULL);
        pi_key *keys = NULL;
        size_t n_keys = 0;
        aisb_error *refused = NULL;
        if (models && pi_rewrite_models(models, &rewritten, &keys, &n_keys, &refused) < 0) {
                /* What a run would refuse with (names and types, never a value). */
                r = r < 0 ? r : buffer_printf(b, "bridge-models=refused: %s\n", aisb_error_message(refused));
                aisb_error_free(refused);
        } else if (models) {
                /* Names only: the variable and where models.json uses it, never a value. */
                for (size_t i = 0; i < n_keys; i++) {
                        bool passed = false;
                        for (size_t k = 0; k < p->n_env; k++)
                                passed |= streq(p->env[k].name, keys[i].variable) && p->env[k].value[0];
                        r = r < 0 ? r : buffer_printf(b, "bridge-key=%s for ", keys[i].variable);
                        r = r < 0 ? r : pi_key_describe(&keys[i], b);
                        r = r < 0 ? r : buffer_printf(b, " (%s)\n", passed ? "passed" : "missing: add --env");
                }
                pi_keys_free(keys, n_keys);
        } else
                r = r < 0 ? r : buffer_printf(b, "bridge-models=none on the host\n");
        r = r < 0 ? r : buffer_printf(b, "bridge-auth=never copied\n");
        return r;
}
