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
#include <assert.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "allowlist.h"
#include "harness-carry.h"
#include "security.h"
#include "harness-config.h"
#include "harness.h"
#include "jsonutil.h"
#include "pi-config.h"
#include "podman.h"
#include "skills-walk.h"
#include "userdirs.h"
#include "fileio.h"
#include "harness-home.h"
#include "toml-json.h"

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
        harness_kind k = harness_of_command(p);
        return k != HARNESS_NONE && !p->no_harness_config && !(k == HARNESS_PI && p->no_pi_config);
}

/* claude's effort levels (claude --help: --effort). */
static const char *const claude_levels[] = { "low", "medium", "high", "xhigh", "max" };

int harness_thinking_check(const aisb_policy *p, aisb_error **err)
{
        if (streq(p->thinking, "host"))
                return 0;
        switch (harness_of_command(p)) {
        case HARNESS_PI:
                if (harness_bridge_applies(p) && !pi_thinking_level_valid(p->thinking))
                        return aisb_error_set(err, -EINVAL, "thinking: pi has no level '%s' (use one of: %s)",
                                              p->thinking, pi_thinking_levels());
                return 0;
        case HARNESS_CODEX:
                /* The level goes into the bridged config.toml: declined with it. */
                if (harness_bridge_applies(p) && !codex_thinking_level_valid(p->thinking))
                        return aisb_error_set(err, -EINVAL, "thinking: codex has no level '%s' (use one of: %s)",
                                              p->thinking, codex_thinking_levels());
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

/* Where each harness keeps its configuration: its own variable names the directory, else
 * HOME/home_dir; in the sandbox it is always AISB_SANDBOX_HOME/home_dir. seed: the run
 * directory's copy for an ephemeral home; base: the state directory's "base/VOLUME", which
 * holds what aisb last wrote (the merge base). */
static const struct harness_info {
        const char *name, *dir_env, *home_dir, *sandbox_dir, *seed, *base;
} harness_infos[] = {
        [HARNESS_PI] = { "pi", "PI_CODING_AGENT_DIR", ".pi/agent", AISB_SANDBOX_HOME "/.pi/agent", "pi-agent", "pi" },
        [HARNESS_CLAUDE] = { "claude", "CLAUDE_CONFIG_DIR", ".claude", AISB_SANDBOX_HOME "/.claude", "claude-config",
                             "claude" },
        [HARNESS_CODEX] = { "codex", "CODEX_HOME", ".codex", AISB_SANDBOX_HOME "/.codex", "codex-config", "codex" },
};

const char *harness_sandbox_dir(const aisb_policy *p)
{
        harness_kind k = harness_of_command(p);
        return k == HARNESS_NONE ? NULL : harness_infos[k].sandbox_dir;
}

/* The host's directory for harness k, or NULL in *ret when HOME is unset too. -ENOMEM. */
static int host_dir_path(harness_kind k, char **ret)
{
        const char *dir = getenv(harness_infos[k].dir_env), *home = getenv("HOME");
        *ret = NULL;
        if (dir && *dir)
                *ret = strdup(dir);
        else if (home && *home && asprintf(ret, "%s/%s", home, harness_infos[k].home_dir) < 0)
                *ret = NULL;
        else if (!home || !*home)
                return 0;
        return *ret ? 0 : -ENOMEM;
}

/* Read dirfd/name, at most PIBRIDGE_JSON_MAX bytes. 0 with *ret NULL when absent. Never
 * waits: a FIFO (or anything but a regular file) planted there is refused at once, not opened
 * for a writer that never comes. */
static int read_text_at(int dirfd, const char *name, const char *origin, bool follow, char **ret, size_t *ret_size,
                        aisb_error **err)
{
        *ret = NULL;
        *ret_size = 0;
        _cleanup_close_ int fd = openat(dirfd, name,
                                        O_RDONLY | (follow ? 0 : O_NOFOLLOW) | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
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
        int r = read_full_fd(fd, PIBRIDGE_JSON_MAX, ret, ret_size);
        if (r < 0)
                return aisb_error_set(err, r, "cannot read %s: %s", origin, strerror(-r));
        return 0;
}

/* A configuration file's syntax: JSON (pi, claude) or TOML (codex), both read into json-c. */
typedef struct config_syntax {
        int (*parse)(const char *text, size_t size, const char *origin, json_object **ret, aisb_error **err);
        int (*format)(json_object *o, char **ret_text, aisb_error **err);
} config_syntax;

static int json_format(json_object *o, char **ret_text, aisb_error **err)
{
        const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
                                                                JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!text || asprintf(ret_text, "%s\n", text) < 0)
                return error_oom(err);
        return 0;
}

static const config_syntax syntax_json = { pi_parse_json, json_format },
                           syntax_toml = { toml_parse_json, toml_format_json };

static int read_config_at(int dirfd, const char *name, const char *origin, bool follow, const config_syntax *syntax,
                          json_object **ret, aisb_error **err)
{
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        *ret = NULL;
        int r = read_text_at(dirfd, name, origin, follow, &text, &size, err);
        if (r < 0 || !text)
                return r;
        return syntax->parse(text, size, origin, ret, err);
}

/* A file of the host's (the user's harness directory, aisb's state directory), which the
 * agent cannot write: a link there is followed (a dotfile manager's), to a regular file. */
static int read_json_at(int dirfd, const char *name, const char *origin, json_object **ret, aisb_error **err)
{
        return read_config_at(dirfd, name, origin, true, &syntax_json, ret, err);
}

/* name + "." + tag + 16 random hex digits: a name nobody can have made ready beforehand. */
static char *random_name(const char *name, const char *tag)
{
        uint8_t bytes[8];
        if (getrandom(bytes, sizeof bytes, 0) != sizeof bytes)
                return NULL;
        char *ret = NULL;
        if (asprintf(&ret, "%s.%s%02x%02x%02x%02x%02x%02x%02x%02x", name, tag, bytes[0], bytes[1], bytes[2], bytes[3],
                     bytes[4], bytes[5], bytes[6], bytes[7]) < 0)
                return NULL;
        return ret;
}

/* Move dirfd/name aside, within dirfd, and say where: what the agent left where the bridge
 * writes (a directory where a file goes, a file or a link where a directory goes). The
 * agent's content is kept, under name.aisb-moved-RANDOM. */
static int move_aside(aisb_ctx *ctx, int dirfd, const char *name, const char *shown)
{
        _cleanup_free_ char *aside = random_name(name, "aisb-moved-");
        if (!aside)
                return -ENOMEM;
        if (renameat(dirfd, name, dirfd, aside) < 0)
                return -errno;
        aisb_log(ctx, AISB_LOG_WARNING, "%s in the sandbox's home was not what aisb writes there: moved to %s", shown,
                 aside);
        return 0;
}

/* Write text to dirfd/name through a new file of a random name and a rename, so that nothing
 * the agent planted is followed or written through. A directory at name is moved aside. */
static int write_text_at(aisb_ctx *ctx, int dirfd, const char *name, const char *text, aisb_error **err)
{
        _cleanup_free_ char *tmp = NULL;
        _cleanup_close_ int fd = -1;
        for (int attempt = 0; fd < 0 && attempt < 8; attempt++) {
                free(tmp);
                tmp = random_name(name, "aisb-new-");
                if (!tmp)
                        return error_oom(err);
                fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY,
                            0600);
                if (fd < 0 && errno != EEXIST)
                        break;
        }
        if (fd < 0)
                return aisb_error_set(err, -errno, "cannot write %s: %s", name, strerror(errno));
        int r = write_all(fd, text, strlen(text));
        if (r >= 0 && renameat(dirfd, tmp, dirfd, name) < 0) {
                r = -errno;
                if ((r == -EISDIR || r == -ENOTEMPTY || r == -EEXIST) && move_aside(ctx, dirfd, name, name) >= 0)
                        r = renameat(dirfd, tmp, dirfd, name) < 0 ? -errno : 0;
        }
        if (r < 0) {
                (void) unlinkat(dirfd, tmp, 0);
                return aisb_error_set(err, r, "cannot write %s: %s", name, strerror(-r));
        }
        return 0;
}

/* dirfd/name, a directory of ours made usable: opened with O_NOFOLLOW, made if absent, moved
 * aside first if it is anything else (a file, a link), and given u+rwx if the agent took
 * them away (it is the user's own, as the whole home is). A negative errno otherwise. */
static int open_sandbox_dir(aisb_ctx *ctx, int dirfd, const char *name, const char *shown)
{
        for (int attempt = 0; attempt < 3; attempt++) {
                if (mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
                        return -errno;
                int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
                if (fd < 0 && (errno == ENOTDIR || errno == ELOOP)) {
                        int r = move_aside(ctx, dirfd, name, shown);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (fd < 0 && errno == EACCES) {
                        /* No read permission: through an O_PATH descriptor, which needs none. */
                        _cleanup_close_ int path = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        struct stat st;
                        if (path < 0 || fstat(path, &st) < 0 || st.st_uid != geteuid() ||
                            fd_chmod(path, (st.st_mode & 07777) | 0700) < 0)
                                return -EACCES;
                        continue;
                }
                if (fd < 0)
                        return -errno;
                struct stat st;
                if (fstat(fd, &st) == 0 && (st.st_mode & 0700) != 0700 && st.st_uid == geteuid())
                        (void) fchmod(fd, (st.st_mode & 07777) | 0700);
                return fd;
        }
        return -ELOOP;
}

/* ~/path in the home volume's root, each component as open_sandbox_dir makes it. */
static int open_sandbox_home_dir(aisb_ctx *ctx, int root, const char *path)
{
        _cleanup_free_ char *copy = strdup(path), *shown = NULL;
        if (!copy)
                return -ENOMEM;
        int fd = fcntl(root, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return -errno;
        char *save = NULL;
        for (char *c = strtok_r(copy, "/", &save); fd >= 0 && c; c = strtok_r(NULL, "/", &save)) {
                char *longer = NULL;
                if (asprintf(&longer, "%s/%s", shown ? shown : "~", c) < 0) {
                        close(fd);
                        return -ENOMEM;
                }
                free(shown);
                shown = longer;
                int next = open_sandbox_dir(ctx, fd, c, shown);
                close(fd);
                fd = next;
        }
        return fd;
}

static int write_config_at(aisb_ctx *ctx, int dirfd, const char *name, const config_syntax *syntax, json_object *o,
                           aisb_error **err)
{
        _cleanup_free_ char *text = NULL;
        int r = syntax->format(o, &text, err);
        return r < 0 ? r : write_text_at(ctx, dirfd, name, text, err);
}

/* The host's file name, if there, copied over the sandbox's each run (instructions such as
 * CLAUDE.md and AGENTS.md: the host's copy is the user's). When the host has none, the home's
 * reset has moved the sandbox's aside: it would be the agent's instructions to every later
 * run (bridged_absent). */
static int copy_from_host(aisb_ctx *ctx, int host_dir, const char *host_path, const char *name, int sandbox_dir,
                          aisb_error **err)
{
        _cleanup_free_ char *origin = NULL, *text = NULL;
        size_t size = 0;
        if (asprintf(&origin, "%s/%s", host_path, name) < 0)
                return error_oom(err);
        int r = host_dir < 0 ? 0 : read_text_at(host_dir, name, origin, true, &text, &size, err);
        if (r < 0 || !text)
                return r; /* none: the home's reset moved the sandbox's aside */
        if (memchr(text, '\0', size))
                return aisb_error_set(err, -EINVAL, "%s holds a NUL byte: not a text file", origin);
        return write_text_at(ctx, sandbox_dir, name, text, err);
}

/* What one file's merge is told: the host's value already read (and made fit for the
 * sandbox), where the sandbox's and the base are, and policy applied on top. */
typedef struct merge_job {
        const char *name;      /* in the sandbox's directory */
        const char *base_name; /* in the state directory (always JSON) */
        const config_syntax *syntax;
        json_object *host;     /* NULL: none on the host */
        /* on top of the merge; host: the host's file (NULL: none) */
        int (*policy)(json_object *merged, json_object *host, const aisb_policy *p, aisb_error **err);
} merge_job;

static int merge_file(aisb_ctx *ctx, const aisb_policy *p, const merge_job *j, int sandbox_dir, int base_fd,
                      aisb_error **err)
{
        _cleanup_json_ json_object *sandbox = NULL, *base = NULL, *merged = NULL;
        _cleanup_free_ char *origin = NULL;
        if (asprintf(&origin, "the sandbox's %s", j->name) < 0)
                return error_oom(err);
        aisb_error *e = NULL;
        if (read_config_at(sandbox_dir, j->name, origin, false, j->syntax, &sandbox, &e) < 0) {
                aisb_log(ctx, AISB_LOG_WARNING, "%s: taking the host's settings afresh", aisb_error_message(e));
                aisb_error_free(e);
                e = NULL;
                sandbox = NULL;
        }
        if (base_fd >= 0 && read_json_at(base_fd, j->base_name, j->base_name, &base, NULL) < 0)
                base = NULL;
        int r = pi_merge_settings(base, j->host, sandbox, &merged, err);
        if (r < 0)
                return aisb_error_wrap(err, r, "merging %s", j->name);
        if (j->policy && (r = j->policy(merged, j->host, p, err)) < 0)
                return r;
        _cleanup_free_ char *text = NULL;
        r = j->syntax->format(merged, &text, &e);
        if (r == -EINVAL && sandbox) {
                /* Something of the sandbox's that the syntax cannot write back (a TOML key
                 * toml++ would write unquoted): the host's settings afresh, as for a file
                 * that does not parse, so that no run of the agent's fails the next. */
                aisb_log(ctx, AISB_LOG_WARNING, "%s: %s: taking the host's settings afresh", origin,
                         aisb_error_message(e));
                aisb_error_free(e);
                e = NULL;
                json_object_put(merged);
                merged = NULL;
                r = pi_merge_settings(base, j->host, NULL, &merged, err);
                if (r < 0)
                        return aisb_error_wrap(err, r, "merging %s", j->name);
                if (j->policy && (r = j->policy(merged, j->host, p, err)) < 0)
                        return r;
                r = j->syntax->format(merged, &text, &e);
        }
        if (r < 0) {
                r = aisb_error_set(err, r, "%s: %s", j->name, aisb_error_message(e));
                aisb_error_free(e);
                return r;
        }
        r = write_text_at(ctx, sandbox_dir, j->name, text, err);
        if (r < 0 || base_fd < 0)
                return r;
        /* The next merge's base: the host's settings with policy applied, what aisb writes
         * for a key the sandbox has not edited. Not the merged result: a key the sandbox
         * edited would then look untouched next time and follow the host again. */
        _cleanup_json_ json_object *next_base = NULL;
        if (j->host)
                r = json_object_deep_copy(j->host, &next_base, NULL) < 0 ? error_oom(err) : 0;
        else
                r = (next_base = json_object_new_object()) ? 0 : error_oom(err);
        if (r >= 0 && j->policy)
                r = j->policy(next_base, j->host, p, err);
        return r < 0 ? r : write_config_at(ctx, base_fd, j->base_name, &syntax_json, next_base, err);
}

/* The keys of a harness's settings that make it run a command or load code or instructions
 * (research of each harness's docs and source, docs/bridges.md): the host's, whatever the
 * sandbox's say, so that no run's agent adds one for every later run. */
static const char *const pi_host_keys[] = {
        "packages", "extensions", "skills", "prompts", "themes", "npmCommand", "shellPath", "shellCommandPrefix",
        "sessionDir", NULL,
};
/* env whole: claude copies it over its environment (BASH_ENV, NODE_OPTIONS, PATH, ...); the
 * run's own variables are written into it after (claude_policy). */
static const char *const claude_host_keys[] = {
        "env", "hooks", "statusLine", "subagentStatusLine", "fileSuggestion", "apiKeyHelper", "awsAuthRefresh",
        "awsCredentialExport", "gcpAuthRefresh", "otelHeadersHelper", "proxyAuthHelper", "processWrapper",
        "enabledPlugins", "extraKnownMarketplaces", "outputStyle", "agent", "additionalDirectories",
        "autoMemoryDirectory", "plansDirectory", "claudeMdExcludes", "enableAllProjectMcpServers",
        "enabledMcpjsonServers", "disableAllHooks", "disableSkillShellExecution", NULL,
};
static const char *const codex_host_keys[] = {
        "mcp_servers", "notify", "hooks", "model_provider", "model_providers", "openai_base_url", "chatgpt_base_url",
        "profile", "profiles", "otel", "shell_environment_policy", "instructions", "developer_instructions",
        "model_instructions_file", "experimental_compact_prompt_file", "project_doc_fallback_filenames",
        "project_root_markers", "skills", "plugins", "marketplaces", "js_repl_node_path", "allow_login_shell",
        "sqlite_home", "log_dir", NULL,
};

static int pin_host_keys(json_object *merged, json_object *host, const char *const *keys, aisb_error **err)
{
        for (const char *const *k = keys; *k; k++)
                if (harness_pin_key(merged, host, NULL, *k) < 0)
                        return error_oom(err);
        return 0;
}

/* pi's level, and its thinkingBudgets (tokens per level) as the host has them: a budget is
 * the level's size, so the sandbox's could shrink the level policy sets. */
static int pi_policy(json_object *merged, json_object *host, const aisb_policy *p, aisb_error **err)
{
        int r = pin_host_keys(merged, host, pi_host_keys, err);
        if (r < 0 || streq(p->thinking, "host"))
                return r;
        if (harness_pin_key(merged, host, NULL, "thinkingBudgets") < 0)
                return error_oom(err);
        return pi_apply_thinking(merged, p->thinking, err);
}

/* The value the run gives name in the sandbox's environment: its --env's, else dflt. */
static const char *run_env_value(const aisb_policy *p, const char *name, const char *dflt)
{
        for (size_t i = 0; i < p->n_env; i++)
                if (streq(p->env[i].name, name))
                        return p->env[i].value;
        return dflt;
}

/* claude's environment as the run sets it (its quiet variables, its level), into its settings. */
static int claude_policy(json_object *merged, json_object *host, const aisb_policy *p, aisb_error **err)
{
        int r = pin_host_keys(merged, host, claude_host_keys, err);
        if (r < 0)
                return r;
        const char *env[2 * 16 + 1] = {};
        size_t n = 0;
        for (const struct harness_env *q = harness_quiet_env; q->name; q++)
                if (startswith(q->name, "CLAUDE_")) {
                        env[n++] = q->name;
                        env[n++] = run_env_value(p, q->name, q->value);
                }
        bool level = !streq(p->thinking, "host");
        const char *effort = run_env_value(p, "CLAUDE_CODE_EFFORT_LEVEL", level ? p->thinking : NULL);
        if (effort) {
                env[n++] = "CLAUDE_CODE_EFFORT_LEVEL";
                env[n++] = effort;
        }
        for (const char *const *v = claude_level_variables; *v; v++) {
                const char *value = run_env_value(p, *v, NULL);
                if (value) {
                        env[n++] = *v;
                        env[n++] = value;
                }
        }
        assert(n < ELEMENTSOF(env));
        return claude_settings_apply_policy(merged, host, env, level || policy_env_named(p, "CLAUDE_CODE_EFFORT_LEVEL"),
                                            err);
}

static int codex_policy(json_object *merged, json_object *host, const aisb_policy *p, aisb_error **err)
{
        int r = pin_host_keys(merged, host, codex_host_keys, err);
        return r < 0 ? r : codex_config_apply_policy(merged, p->thinking, err);
}

/* Whether the run passes variable name itself (--env or --secret). */
static bool run_passes(const aisb_policy *p, const char *name)
{
        for (size_t i = 0; i < p->n_secrets; i++)
                if (streq(p->secrets[i].name, name))
                        return true;
        return policy_env_named(p, name);
}

/* What of the host's files stayed there, for the one line a run says of it. */
typedef struct bridge_note {
        buffer held;     /* "N keys of FILE, N of FILE": on no carry-list */
        buffer withheld; /* "FILE: KEY, KEY; FILE: KEY": carried, but credentials */
        unsigned files;  /* 1 << carry_file of each file with keys held */
        int total;       /* keys held, of every file */
} bridge_note;

/* A host file of f's (o, NULL: none) as the sandbox gets it, in place: only the keys f's
 * carry-list and the run's bridge-carry name (the rest stays on the host: their count, their
 * names appended to held); then, but for pi's models.json (whose keys pi_rewrite_models turns
 * into variables), without what looks like a credential (named in removed), a key bridge-carry
 * names by its whole path going by its value only. -ENOMEM. */
static int carry_for_sandbox(const aisb_policy *p, carry_file f, json_object *o, buffer *held, buffer *removed)
{
        const char *const *extra = (const char *const *) p->bridge_carry;
        _cleanup_strv_free_ char **named = NULL;
        int n = o ? harness_carry(o, f, extra, held) : 0;
        if (n < 0 || carry_named_paths(f, extra, &named) < 0 ||
            (o && f != CARRY_PI_MODELS && harness_scrub_credentials(o, (const char *const *) named, removed) < 0))
                return -ENOMEM;
        return n;
}

/* carry_for_sandbox, told in note: how many keys stayed on the host, and the credentials
 * withheld by name unless the run passes that variable itself ("env.NAME" set with --env or
 * --secret is not news). */
static int carry_host(const aisb_policy *p, carry_file f, json_object *o, const char *origin, bridge_note *note,
                      aisb_error **err)
{
        _cleanup_(buffer_free) buffer removed = {};
        int held = carry_for_sandbox(p, f, o, NULL, &removed);
        if (held < 0)
                return error_oom(err);
        int r = held > 0 ? buffer_printf(&note->held, "%s%d %s of %s", note->held.size ? ", " : "", held,
                                         held == 1 ? "key" : "keys", origin)
                         : 0;
        note->files |= held > 0 ? 1u << f : 0;
        note->total += held;
        _cleanup_free_ char *list = removed.size ? strndup(removed.data, removed.size) : NULL;
        char *save = NULL;
        bool first = true;
        for (char *name = list ? strtok_r(list, ", ", &save) : NULL; r >= 0 && name; name = strtok_r(NULL, ", ", &save))
                if (!(startswith(name, "env.") && run_passes(p, name + 4))) {
                        r = first ? buffer_printf(&note->withheld, "%s%s: %s", note->withheld.size ? "; " : "", origin,
                                                  name)
                                  : buffer_printf(&note->withheld, ", %s", name);
                        first = false;
                }
        return r < 0 ? error_oom(err) : 0;
}

static int bridge_pi(aisb_ctx *ctx, const aisb_policy *p, int host_dir, const char *host_path, int sandbox_dir,
                     int base_fd, bridge_note *note, aisb_error **err)
{
        _cleanup_free_ char *host_settings_name = NULL, *host_models_name = NULL;
        if (asprintf(&host_settings_name, "%s/settings.json", host_path) < 0 ||
            asprintf(&host_models_name, "%s/models.json", host_path) < 0)
                return error_oom(err);
        _cleanup_json_ json_object *host = NULL;
        int r = host_dir >= 0 ? read_json_at(host_dir, "settings.json", host_settings_name, &host, err) : 0;
        if (r < 0)
                return r;
        /* pi's settings name no credential of their own, but one may sit in a value (a
         * package's git URL with a token in it): withheld as claude's and codex's are. */
        r = carry_host(p, CARRY_PI, host, host_settings_name, note, err);
        if (r < 0)
                return r;
        merge_job job = { "settings.json", "settings.base.json", &syntax_json, host, pi_policy };
        r = merge_file(ctx, p, &job, sandbox_dir, base_fd, err);
        if (r < 0)
                return r;

        /* models.json: the host's, with every literal key and header value turned into a
         * variable the run must pass; the literal itself never leaves the host. */
        _cleanup_json_ json_object *models = NULL, *rewritten = NULL;
        if (host_dir >= 0)
                r = read_json_at(host_dir, "models.json", host_models_name, &models, err);
        if (r < 0 || !models)
                return r; /* none: the home's reset moved the sandbox's aside (its "!command" keys run) */
        r = carry_host(p, CARRY_PI_MODELS, models, host_models_name, note, err);
        if (r < 0)
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
        return write_config_at(ctx, sandbox_dir, "models.json", &syntax_json, rewritten, err);
}

/* claude: settings.json's carried keys merged per key, without credentials; CLAUDE.md copied.
 * Never .credentials.json. commands/, agents/ and skills/ are mounted read-only
 * (harness_mounts). */
static int bridge_claude(aisb_ctx *ctx, const aisb_policy *p, int host_dir, const char *host_path,
                         int sandbox_dir, int base_fd, bridge_note *note, aisb_error **err)
{
        _cleanup_free_ char *origin = NULL;
        if (asprintf(&origin, "%s/settings.json", host_path) < 0)
                return error_oom(err);
        _cleanup_json_ json_object *host = NULL;
        int r = host_dir >= 0 ? read_json_at(host_dir, "settings.json", origin, &host, err) : 0;
        if (r < 0)
                return r;
        r = carry_host(p, CARRY_CLAUDE, host, origin, note, err);
        if (r < 0)
                return r;
        merge_job job = { "settings.json", "settings.base.json", &syntax_json, host, claude_policy };
        r = merge_file(ctx, p, &job, sandbox_dir, base_fd, err);
        return r < 0 ? r : copy_from_host(ctx, host_dir, host_path, "CLAUDE.md", sandbox_dir, err);
}

/* The profile a codex command names (--profile NAME, -p NAME, -pNAME, --profile=NAME), whose
 * file (0.171: NAME.config.toml beside config.toml) it reads, into *ret (NULL: none named).
 * -EINVAL for a name that is no plain file name: aisb could not police what codex reads. */
static int codex_profile_file(const aisb_policy *p, char **ret, aisb_error **err)
{
        const char *const *cmd = policy_command(p);
        const char *name = NULL;
        *ret = NULL;
        for (size_t i = 1; cmd[0] && cmd[i]; i++) {
                if ((streq(cmd[i], "--profile") || streq(cmd[i], "-p")) && cmd[i + 1])
                        name = cmd[++i];
                else if (startswith(cmd[i], "--profile="))
                        name = cmd[i] + strlen("--profile=");
                else if (startswith(cmd[i], "-p") && cmd[i][2] != '-')
                        name = cmd[i] + 2;
                else if (streq(cmd[i], "--"))
                        break;
        }
        if (!name)
                return 0;
        if (!*name || strlen(name) > 128 || name[0] == '.' ||
            strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") != strlen(name))
                return aisb_error_set(err, -EINVAL,
                                      "codex --profile '%.128s': not a name aisb can bridge (letters, digits, '.', '_', '-')",
                                      name);
        return asprintf(ret, "%s.config.toml", name) < 0 ? error_oom(err) : 0;
}

/* One config file of codex's, name: the host's carried keys (none when host_dir < 0 or it has
 * none) merged per key without credentials, policy on top. */
static int bridge_codex_file(aisb_ctx *ctx, const aisb_policy *p, int host_dir, const char *host_path,
                             const char *name, int sandbox_dir, int base_fd, bridge_note *note, aisb_error **err)
{
        _cleanup_free_ char *origin = NULL, *base_name = NULL;
        if (asprintf(&origin, "%s/%s", host_path, name) < 0 ||
            asprintf(&base_name, "%.*s.base.json", (int) (strlen(name) - strlen(".toml")), name) < 0)
                return error_oom(err);
        _cleanup_json_ json_object *host = NULL;
        int r = host_dir >= 0 ? read_config_at(host_dir, name, origin, true, &syntax_toml, &host, err) : 0;
        if (r < 0)
                return r;
        r = carry_host(p, CARRY_CODEX, host, origin, note, err);
        if (r < 0)
                return r;
        merge_job job = { name, base_name, &syntax_toml, host, codex_policy };
        return merge_file(ctx, p, &job, sandbox_dir, base_fd, err);
}

/* codex: config.toml merged per key without credentials, with policy on top
 * (codex_config_apply_policy), and so the profile file the command names: the host's merged,
 * or the sandbox's own with policy on top, so that no profile of the agent's making lowers a
 * later run; AGENTS.md copied. Never auth.json. */
static int bridge_codex(aisb_ctx *ctx, const aisb_policy *p, int host_dir, const char *host_path,
                        int sandbox_dir, int base_fd, bridge_note *note, aisb_error **err)
{
        _cleanup_free_ char *profile = NULL;
        int r = codex_profile_file(p, &profile, err);
        if (r >= 0)
                r = bridge_codex_file(ctx, p, host_dir, host_path, "config.toml", sandbox_dir, base_fd, note, err);
        if (r >= 0 && profile)
                r = bridge_codex_file(ctx, p, host_dir, host_path, profile, sandbox_dir, base_fd, note, err);
        return r < 0 ? r : copy_from_host(ctx, host_dir, host_path, "AGENTS.md", sandbox_dir, err);
}

static int bridge(aisb_ctx *ctx, const aisb_policy *p, harness_kind k, int sandbox_dir, int base_fd,
                  aisb_error **err)
{
        _cleanup_free_ char *host_path = NULL;
        if (host_dir_path(k, &host_path) < 0)
                return error_oom(err);
        if (!host_path)
                return aisb_error_set(err, -ENOENT, "HOME is not set: cannot find ~/%s", harness_infos[k].home_dir);
        _cleanup_close_ int host_dir = open(host_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        bridge_note note = {};
        int r = k == HARNESS_PI       ? bridge_pi(ctx, p, host_dir, host_path, sandbox_dir, base_fd, &note, err)
                : k == HARNESS_CLAUDE ? bridge_claude(ctx, p, host_dir, host_path, sandbox_dir, base_fd, &note, err)
                                      : bridge_codex(ctx, p, host_dir, host_path, sandbox_dir, base_fd, &note, err);
        /* One line: what stayed on the host, and how to carry it. */
        _cleanup_(buffer_free) buffer line = {};
        int said = 0;
        if (r >= 0 && note.held.size)
                said = buffer_printf(&line, "%.*s %s on the host (on no carry-list: aisb inspect names them; carry one "
                                     "with bridge-carry = ", (int) note.held.size, note.held.data,
                                     note.total == 1 ? "stays" : "stay");
        for (carry_file f = CARRY_PI; r >= 0 && said >= 0 && f <= CARRY_CODEX; f++)
                if (note.files & 1u << f)
                        said = buffer_printf(&line, "%s%s:KEY%s", note.files & ((1u << f) - 1) ? " or " : "",
                                             carry_file_name(f), note.files >> (f + 1) ? "" : ")");
        if (r >= 0 && said >= 0 && note.withheld.size)
                said = buffer_printf(&line, "%s%.*s not bridged (credentials stay on the host; pass a key with --secret, "
                                     "docs/bridges.md)", line.size ? "; " : "", (int) note.withheld.size,
                                     note.withheld.data);
        if (r >= 0 && said < 0)
                r = error_oom(err);
        else if (r >= 0 && line.size)
                aisb_log(ctx, note.withheld.size ? AISB_LOG_WARNING : AISB_LOG_INFO, "%.*s", (int) line.size, line.data);
        buffer_free(&note.held);
        buffer_free(&note.withheld);
        return r;
}

/* claude's directories of markdown it reads (slash commands, subagents, skills): the host's,
 * read-only, as ~/.agents is. */
static const char *const claude_read_only[] = { "commands", "agents", "skills" };

int harness_mounts(const aisb_policy *p, harness_mount ret[static HARNESS_MOUNTS_MAX], size_t *ret_n)
{
        *ret_n = 0;
        if (!harness_bridge_applies(p) || harness_of_command(p) != HARNESS_CLAUDE)
                return 0;
        _cleanup_free_ char *host_path = NULL;
        if (host_dir_path(HARNESS_CLAUDE, &host_path) < 0)
                return -ENOMEM;
        for (size_t i = 0; host_path && i < ELEMENTSOF(claude_read_only); i++) {
                static const char *const destinations[] = { AISB_SANDBOX_HOME "/.claude/commands",
                                                            AISB_SANDBOX_HOME "/.claude/agents",
                                                            AISB_SANDBOX_HOME "/.claude/skills" };
                _cleanup_free_ char *dir = NULL;
                struct stat st;
                if (asprintf(&dir, "%s/%s", host_path, claude_read_only[i]) < 0) {
                        harness_mounts_done(ret, *ret_n);
                        return -ENOMEM;
                }
                if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                ret[(*ret_n)++] = (harness_mount) { .source = steal_pointer(&dir), .destination = destinations[i] };
        }
        return 0;
}

void harness_mounts_done(harness_mount *m, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(m[i].source);
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

/* pi's auth.json: an api_key entry whose key is "!command" pi runs at its start (its
 * resolve-config-value, 0.73.1), before any request. The number of entries taken out. */
static int pi_auth_commands(json_object *o)
{
        int n = 0;
        json_object_object_foreach(o, name, entry) {
                json_object *key;
                if (json_object_is_type(entry, json_type_object) && json_object_object_get_ex(entry, "key", &key) &&
                    json_object_is_type(key, json_type_string) && json_object_get_string(key)[0] == '!') {
                        json_object_object_del(o, name);
                        n++;
                }
        }
        return n;
}

/* ~/.claude.json: the MCP servers claude starts (spawns) at its start, the user's and each
 * project's. */
static int claude_state_servers(json_object *o)
{
        int n = json_object_object_get_ex(o, "mcpServers", NULL) ? 1 : 0;
        json_object_object_del(o, "mcpServers");
        json_object *projects;
        if (json_object_object_get_ex(o, "projects", &projects) && json_object_is_type(projects, json_type_object)) {
                json_object_object_foreach(projects, name, project) {
                        (void) name;
                        if (json_object_is_type(project, json_type_object) &&
                            json_object_object_get_ex(project, "mcpServers", NULL)) {
                                json_object_object_del(project, "mcpServers");
                                n++;
                        }
                }
        }
        return n;
}

/* What pi and claude run from the home's own state at start (its logins and state live there,
 * so the file stays): each entry that runs a command taken out, every run whatever the command,
 * said. A file that cannot be read as JSON goes aside whole. */
static int police_home_state(aisb_ctx *ctx, int root, aisb_error **err)
{
        static const struct {
                const char *dir, *name, *shown, *what;
                int (*take)(json_object *o);
        } files[] = {
                { ".pi/agent", "auth.json", "~/.pi/agent/auth.json", "keys that are commands pi runs at its start",
                  pi_auth_commands },
                { "", ".claude.json", "~/.claude.json", "MCP servers claude starts", claude_state_servers },
        };
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                _cleanup_close_ int dir = open_dir_nofollow(root, files[i].dir, false);
                if (dir < 0)
                        continue; /* not there, or a link the reset moved aside */
                _cleanup_json_ json_object *o = NULL;
                aisb_error *e = NULL;
                int r = read_config_at(dir, files[i].name, files[i].shown, false, &syntax_json, &o, &e);
                aisb_error_free(e);
                if (r < 0) {
                        r = move_aside(ctx, dir, files[i].name, files[i].shown);
                        if (r < 0)
                                return aisb_error_set(err, r, "%s cannot be read or moved aside: %s", files[i].shown,
                                                      strerror(-r));
                        continue;
                }
                if (!o || !json_object_is_type(o, json_type_object))
                        continue;
                int n = files[i].take(o);
                if (n == 0)
                        continue;
                r = write_config_at(ctx, dir, files[i].name, &syntax_json, o, err);
                if (r < 0)
                        return r;
                aisb_log(ctx, AISB_LOG_WARNING, "%s held %s (left by an earlier run): %d taken out", files[i].shown,
                         files[i].what, n);
        }
        return 0;
}

/* The files the bridges copy from the host that the host has none of, as paths below the
 * sandbox's home: the sandbox's copy would be the agent's, and it loads at start (pi's
 * models.json runs its "!command" keys; CLAUDE.md and AGENTS.md are instructions). */
static int bridged_absent(char ***ret)
{
        static const struct {
                harness_kind k;
                const char *name;
        } files[] = { { HARNESS_PI, "models.json" }, { HARNESS_CLAUDE, "CLAUDE.md" }, { HARNESS_CODEX, "AGENTS.md" } };
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                _cleanup_free_ char *host = NULL, *file = NULL, *rel = NULL;
                if (host_dir_path(files[i].k, &host) < 0)
                        return -ENOMEM;
                struct stat st;
                if (host && asprintf(&file, "%s/%s", host, files[i].name) < 0)
                        return -ENOMEM;
                if (file && stat(file, &st) == 0 && S_ISREG(st.st_mode))
                        continue;
                if (asprintf(&rel, "%s/%s", harness_infos[files[i].k].home_dir, files[i].name) < 0 ||
                    strv_push(ret, rel) < 0)
                        return -ENOMEM;
        }
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
        /* The home volume, whatever the command: what a harness or the shell would load from it
         * at start is the host's or nothing (harness-home.h). */
        _cleanup_close_ int root = -1, sandbox_dir = -1, base_fd = -1;
        if (!p->ephemeral_home) {
                _cleanup_free_ char *mountpoint = NULL;
                r = podman_volume_mountpoint(ctx, p->home_volume, &mountpoint, err);
                if (r < 0)
                        goto fail;
                root = open(mountpoint, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (root < 0) {
                        r = aisb_error_set(err, -errno, "cannot open the home volume at %s: %s",
                                           mountpoint, strerror(errno));
                        goto fail;
                }
                _cleanup_strv_free_ char **absent = NULL;
                r = bridged_absent(&absent);
                r = r < 0 ? error_oom(err) : harness_home_reset(ctx, root, (const char *const *) absent, NULL, err);
                if (r >= 0)
                        r = police_home_state(ctx, root, err);
                if (r < 0)
                        goto fail;
        }
        if (!harness_bridge_applies(p)) {
                *ret = b;
                return 0;
        }
        harness_kind k = harness_of_command(p);
        const struct harness_info *info = &harness_infos[k];
        harness_mount mounts[HARNESS_MOUNTS_MAX];
        size_t n_mounts = 0;
        if (harness_mounts(p, mounts, &n_mounts) < 0)
                return error_oom(err);
        for (size_t i = 0; i < n_mounts; i++)
                skills_warn_if_changed(ctx, mounts[i].source);
        harness_mounts_done(mounts, n_mounts);

        if (p->ephemeral_home) {
                /* A fresh home is a sized tmpfs that exists only once the sandbox starts: the
                 * bridged files wait in the run's own directory, mounted read-only, and the
                 * entrypoint copies them into the harness's directory as the user. Nothing the
                 * sandbox writes lands on the host. */
                if (asprintf(&b.seed_dir, "%s/%s", rd->path, info->seed) < 0) {
                        r = error_oom(err);
                        goto fail;
                }
                if (mkdirat(rd->fd, info->seed, 0700) < 0) {
                        r = aisb_error_set(err, -errno, "cannot create %s: %s", b.seed_dir, strerror(errno));
                        goto fail;
                }
                sandbox_dir = openat(rd->fd, info->seed, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sandbox_dir < 0)
                        sandbox_dir = -errno;
        } else {
                _cleanup_free_ char *sub = NULL, *base_dir = NULL;
                sandbox_dir = open_sandbox_home_dir(ctx, root, info->home_dir);
                if (asprintf(&sub, "%s/%s", info->base, p->home_volume) < 0) {
                        r = error_oom(err);
                        goto fail;
                }
                r = state_dir(sub, &base_dir, err);
                if (r < 0)
                        goto fail;
                base_fd = open(base_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        }
        if (sandbox_dir < 0) {
                r = aisb_error_set(err, sandbox_dir < 0 ? sandbox_dir : -EIO, "cannot open ~/%s in the sandbox's home: %s",
                                   info->home_dir, strerror(sandbox_dir < 0 ? -sandbox_dir : EIO));
                goto fail;
        }
        r = bridge(ctx, p, k, sandbox_dir, base_fd, err);
        if (r < 0)
                goto fail;
        *ret = b;
        return 0;
fail:
        harness_bridge_done(&b);
        return r;
}

/* "bridge-settings=KEY,KEY (merged per key)" for an object read from the host, or why none. */
static int describe_keys(buffer *b, const char *what, json_object *o)
{
        if (!o)
                return buffer_printf(b, "bridge-%s=none on the host\n", what);
        int r = buffer_printf(b, "bridge-%s=", what);
        bool first = true;
        json_object_object_foreach(o, key, value) {
                (void) value;
                r = r < 0 ? r : buffer_printf(b, "%s%s", first ? "" : ",", key);
                first = false;
        }
        return r < 0 ? r : buffer_printf(b, " (merged per key)\n");
}

/* What of o (a host file, f's, as file) crosses as carry_host makes it, into said: the keys
 * that stay on the host and those withheld as credentials, by name. */
static int describe_carry(const aisb_policy *p, carry_file f, json_object *o, const char *file, buffer *said)
{
        _cleanup_(buffer_free) buffer held = {}, removed = {};
        int n = carry_for_sandbox(p, f, o, &held, &removed);
        if (n < 0)
                return n;
        int r = n > 0 ? buffer_printf(said, "bridge-held=%s: %d (%.*s; on no carry-list: bridge-carry = %s:KEY carries one)\n",
                                      file, n, (int) held.size - 2, held.data, carry_file_name(f))
                      : 0;
        if (removed.size >= 2)
                r = r < 0 ? r : buffer_printf(said, "bridge-withheld=%.*s (credentials)\n", (int) removed.size - 2, removed.data);
        return r;
}

static int describe_pi(const aisb_policy *p, int dir, buffer *b)
{
        _cleanup_json_ json_object *settings = NULL, *models = NULL, *rewritten = NULL;
        _cleanup_(buffer_free) buffer said = {};
        if (dir >= 0)
                (void) read_json_at(dir, "settings.json", "settings.json", &settings, NULL);
        int r = describe_carry(p, CARRY_PI, settings, "settings.json", &said);
        r = r < 0 ? r : describe_keys(b, "settings", settings);
        r = r < 0 || !said.size ? r : buffer_printf(b, "%.*s", (int) said.size, said.data);
        r = r < 0 ? r : buffer_printf(b, "bridge-thinking=%s\n", p->thinking);
        if (dir >= 0)
                (void) read_json_at(dir, "models.json", "models.json", &models, NULL);
        r = r < 0 || !models ? r : describe_carry(p, CARRY_PI_MODELS, models, "models.json", b);
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
                        const char *how = "missing: add --env";
                        for (size_t k = 0; k < p->n_env; k++)
                                if (streq(p->env[k].name, keys[i].variable) && p->env[k].value[0])
                                        how = "passed";
                        for (size_t k = 0; k < p->n_secrets; k++)
                                if (streq(p->secrets[k].name, keys[i].variable))
                                        how = "held by the gate";
                        r = r < 0 ? r : buffer_printf(b, "bridge-key=%s for ", keys[i].variable);
                        r = r < 0 ? r : pi_key_describe(&keys[i], b);
                        r = r < 0 ? r : buffer_printf(b, " (%s)\n", how);
                }
                pi_keys_free(keys, n_keys);
        } else
                r = r < 0 ? r : buffer_printf(b, "bridge-models=none on the host\n");
        return r < 0 ? r : buffer_printf(b, "bridge-auth=never copied\n");
}

/* claude's and codex's: the keys merged, those withheld (names), the files copied and
 * mounted, what is never copied. */
static int describe_other(const aisb_policy *p, harness_kind k, int dir, buffer *b)
{
        bool claude = k == HARNESS_CLAUDE;
        _cleanup_json_ json_object *config = NULL;
        aisb_error *e = NULL;
        int r = 0;
        if (dir >= 0 && read_config_at(dir, claude ? "settings.json" : "config.toml", claude ? "settings.json" : "config.toml", true,
                                       claude ? &syntax_json : &syntax_toml, &config, &e) < 0) {
                r = buffer_printf(b, "bridge-settings=refused: %s\n", aisb_error_message(e));
                aisb_error_free(e);
        }
        _cleanup_(buffer_free) buffer said = {};
        r = r < 0 ? r : describe_carry(p, claude ? CARRY_CLAUDE : CARRY_CODEX, config,
                                       claude ? "settings.json" : "config.toml", &said);
        if (!e)
                r = r < 0 ? r : describe_keys(b, "settings", config);
        r = r < 0 || !said.size ? r : buffer_printf(b, "%.*s", (int) said.size, said.data);
        if (claude)
                r = r < 0 ? r : buffer_printf(b, "bridge-thinking=%s (CLAUDE_CODE_EFFORT_LEVEL)\n", p->thinking);
        else
                r = r < 0 ? r : buffer_printf(b, "bridge-thinking=%s (model_reasoning_effort)\n"
                                                 "bridge-policy=sandbox_mode danger-full-access, "
                                                 "check_for_update_on_startup false\n", p->thinking);
        const char *doc = claude ? "CLAUDE.md" : "AGENTS.md";
        struct stat st;
        bool present = dir >= 0 && fstatat(dir, doc, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
        r = r < 0 ? r : buffer_printf(b, "bridge-copied=%s\n", present ? doc : "none on the host");
        harness_mount mounts[HARNESS_MOUNTS_MAX];
        size_t n = 0;
        if (harness_mounts(p, mounts, &n) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                r = r < 0 ? r : buffer_printf(b, "bridge-mount=%s (read-only at %s)\n", mounts[i].source, mounts[i].destination);
        harness_mounts_done(mounts, n);
        return r < 0 ? r : buffer_printf(b, "bridge-auth=never copied (%s)\n", claude ? ".credentials.json" : "auth.json");
}

int harness_describe(const aisb_policy *p, buffer *b)
{
        harness_kind k = harness_of_command(p);
        if (k == HARNESS_NONE)
                return 0;
        _cleanup_free_ char *host_path = NULL;
        if (host_dir_path(k, &host_path) < 0)
                return -ENOMEM;
        int r = buffer_printf(b, "bridge=%s from %s\n", harness_infos[k].name, host_path ? host_path : "(no HOME)");
        _cleanup_close_ int dir = host_path ? open(host_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
        if (r < 0)
                return r;
        return k == HARNESS_PI ? describe_pi(p, dir, b) : describe_other(p, k, dir, b);
}

/* The host of an https:// URL (libcurl's parser), in the canonical form the gate writes a
 * secret's host in when it is a name (an address stays as written: the gate refuses it), or
 * NULL: another scheme, or no URL. */
static char *https_host(const char *url)
{
        CURLU *u = url ? curl_url() : NULL;
        char *scheme = NULL, *host = NULL, *ret = NULL;
        if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
            curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK && strcasecmp(scheme, "https") == 0 &&
            curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK)
                ret = allowlist_domain_canonical(host) ?: strdup(host);
        curl_free(scheme);
        curl_free(host);
        curl_url_cleanup(u);
        return ret;
}

/* The string at o.a.b (b may be NULL), or NULL. */
static const char *json_string_at(json_object *o, const char *a, const char *b)
{
        if (!json_object_object_get_ex(o, a, &o) || (b && !json_object_object_get_ex(o, b, &o)) ||
            !json_object_is_type(o, json_type_string))
                return NULL;
        return json_object_get_string(o);
}

/* The host's configuration file of harness k, read as a bridge would (NULL when absent or
 * unreadable: the run's bridge says why): claude's settings.json, codex's config.toml, pi's
 * models.json. */
static json_object *host_config(harness_kind k)
{
        static const char *const names[] = { [HARNESS_PI] = "models.json", [HARNESS_CLAUDE] = "settings.json",
                                             [HARNESS_CODEX] = "config.toml" };
        _cleanup_free_ char *path = NULL;
        if (host_dir_path(k, &path) < 0 || !path)
                return NULL;
        _cleanup_close_ int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        json_object *o = NULL;
        if (dir < 0 || read_config_at(dir, names[k], path, true, k == HARNESS_CODEX ? &syntax_toml : &syntax_json, &o,
                                      NULL) < 0)
                return NULL;
        return o;
}

/* Hold value under variable (value NULL: the variable's here) at the host of url, in header
 * (scheme: NULL or its scheme): one secret, when the value is set, the policy does not pass
 * variable itself, url is https and nothing fills that header there yet (a --secret of the
 * user's wins). -EINVAL: a value or name the gate cannot hold. */
static int hold(aisb_policy *p, const char *variable, const char *value, const char *url, const char *header,
                const char *scheme, char ***held, aisb_error **err)
{
        if (!value)
                value = getenv(variable);
        if (!value || !*value || run_passes(p, variable))
                return 0;
        _cleanup_free_ char *host = https_host(url), *spec = NULL;
        if (!host || policy_secret_fills(p, host, header))
                return 0;
        if (asprintf(&spec, "%s@%s/%s%s%s", variable, host, header, scheme ? ":" : "", scheme ? scheme : "") < 0)
                return error_oom(err);
        int r = policy_add_secret(p, spec, value, err);
        if (r < 0)
                return aisb_error_wrap(err, r, "holding %s at the gate (no-harness-keys declines it)", variable);
        return held ? (strv_push(held, variable) < 0 ? error_oom(err) : 0) : 0;
}

/* How pi sends a provider's key, by the provider's "api", and where pi's built-in providers
 * are and which variable holds their key (pi-ai's env-api-keys.ts and models.generated.ts). */
static const struct {
        const char *api, *header, *scheme;
} pi_apis[] = {
        { "anthropic-messages", "x-api-key", NULL },
        { "google-generative-ai", "x-goog-api-key", NULL },
        { "openai-completions", "Authorization", "Bearer" },
        { "openai-responses", "Authorization", "Bearer" },
        { "mistral-conversations", "Authorization", "Bearer" },
};
static const struct {
        const char *provider, *variable, *url, *api;
} pi_builtins[] = {
        { "anthropic", "ANTHROPIC_API_KEY", "https://api.anthropic.com", "anthropic-messages" },
        { "openai", "OPENAI_API_KEY", "https://api.openai.com/v1", "openai-responses" },
        { "google", "GEMINI_API_KEY", "https://generativelanguage.googleapis.com/v1beta", "google-generative-ai" },
        { "mistral", "MISTRAL_API_KEY", "https://api.mistral.ai", "mistral-conversations" },
        { "openrouter", "OPENROUTER_API_KEY", "https://openrouter.ai/api/v1", "openai-completions" },
        { "groq", "GROQ_API_KEY", "https://api.groq.com/openai/v1", "openai-completions" },
        { "xai", "XAI_API_KEY", "https://api.x.ai/v1", "openai-completions" },
        { "deepseek", "DEEPSEEK_API_KEY", "https://api.deepseek.com", "openai-completions" },
        { "cerebras", "CEREBRAS_API_KEY", "https://api.cerebras.ai/v1", "openai-completions" },
};

/* How pi sends a key over api, or NULL: an api of no single header. */
static const typeof(pi_apis[0]) *pi_api(const char *api)
{
        for (size_t a = 0; api && a < ELEMENTSOF(pi_apis); a++)
                if (streq(api, pi_apis[a].api))
                        return &pi_apis[a];
        return NULL;
}

/* A pi key, unless the gate cannot hold it (it stays the run's to pass: pi_keys_check names it). */
static int hold_pi(aisb_policy *p, const char *variable, const char *value, const char *url, const char *header,
                   const char *scheme, char ***held, aisb_error **err)
{
        _cleanup_error_ aisb_error *e = NULL;
        int r = hold(p, variable, value, url, header, scheme, held, &e);
        if (r == -EINVAL)
                return 0;
        return r < 0 ? aisb_error_set(err, r, "%s", aisb_error_message(e)) : 0;
}

/* pi: each provider of the host's models.json whose apiKey or header value is a variable set
 * here or a literal, at its baseUrl's host (the built-in provider's when it names one), in the
 * header its api sends; then the variables of pi's built-in providers set here. A "!command"
 * key stays the run's to pass. */
static int hold_pi_keys(aisb_policy *p, char ***held, aisb_error **err)
{
        _cleanup_json_ json_object *models = p->no_harness_config || p->no_pi_config ? NULL : host_config(HARNESS_PI);
        _cleanup_json_ json_object *rewritten = NULL;
        pi_key *keys = NULL;
        size_t n_keys = 0;
        json_object *providers = NULL;
        if (!models || !json_object_object_get_ex(models, "providers", &providers) ||
            pi_rewrite_models(models, &rewritten, &keys, &n_keys, NULL) < 0)
                n_keys = 0;
        int r = 0;
        for (size_t i = 0; r >= 0 && i < n_keys; i++) {
                const pi_key *k = &keys[i];
                json_object *provider = NULL, *field = NULL;
                if (k->source == PIBRIDGE_KEY_COMMAND ||
                    (k->field != PIBRIDGE_FIELD_API_KEY && k->field != PIBRIDGE_FIELD_HEADER) ||
                    !json_object_object_get_ex(providers, k->provider, &provider))
                        continue;
                const char *url = json_string_at(provider, "baseUrl", NULL), *api = json_string_at(provider, "api", NULL);
                for (size_t b = 0; b < ELEMENTSOF(pi_builtins); b++)
                        if (streq(k->provider, pi_builtins[b].provider)) {
                                url = url ? url : pi_builtins[b].url;
                                api = api ? api : pi_builtins[b].api;
                        }
                const char *value = NULL;
                if (k->source == PIBRIDGE_KEY_LITERAL) {
                        (void) (k->field == PIBRIDGE_FIELD_API_KEY ? json_object_object_get_ex(provider, "apiKey", &field)
                                                                   : json_object_object_get_ex(provider, "headers", &field) &&
                                                                             json_object_object_get_ex(field, k->header, &field));
                        value = json_object_get_string(field);
                }
                if (k->field == PIBRIDGE_FIELD_HEADER) {
                        r = hold_pi(p, k->variable, value, url, k->header, NULL, held, err);
                        continue;
                }
                const typeof(pi_apis[0]) *how = pi_api(api);
                if (how)
                        r = hold_pi(p, k->variable, value, url, how->header, how->scheme, held, err);
        }
        pi_keys_free(keys, n_keys);
        for (size_t b = 0; r >= 0 && b < ELEMENTSOF(pi_builtins); b++) {
                const typeof(pi_apis[0]) *how = pi_api(pi_builtins[b].api);
                r = hold_pi(p, pi_builtins[b].variable, NULL, pi_builtins[b].url, how->header, how->scheme, held, err);
        }
        return r;
}

/* The secrets for harness k's key (hold() each). */
static int hold_keys(aisb_policy *p, harness_kind k, char ***held, aisb_error **err)
{
        if (k == HARNESS_PI)
                return hold_pi_keys(p, held, err);
        _cleanup_json_ json_object *config = host_config(k);
        if (k == HARNESS_CLAUDE) {
                /* Where claude goes: the run's ANTHROPIC_BASE_URL, else the bridged settings'. */
                const char *url = run_env_value(p, "ANTHROPIC_BASE_URL", NULL);
                if (!url && !p->no_harness_config)
                        url = json_string_at(config, "env", "ANTHROPIC_BASE_URL");
                if (!url)
                        url = "https://api.anthropic.com";
                int r = hold(p, "ANTHROPIC_API_KEY", NULL, url, "x-api-key", NULL, held, err);
                return r < 0 ? r : hold(p, "ANTHROPIC_AUTH_TOKEN", NULL, url, "Authorization", "Bearer", held, err);
        }
        /* codex's provider (model_provider, its built-in "openai" unless set) and its env_key. */
        const char *id = p->no_harness_config ? NULL : json_string_at(config, "model_provider", NULL);
        json_object *providers = NULL, *provider = NULL;
        if (id && json_object_object_get_ex(config, "model_providers", &providers))
                (void) json_object_object_get_ex(providers, id, &provider);
        const char *variable = "OPENAI_API_KEY", *url = "https://api.openai.com/v1";
        if (id && !provider && !streq(id, "openai"))
                return 0; /* another of codex's own (a local model): no key of ours */
        if (provider) {
                variable = json_string_at(provider, "env_key", NULL);
                url = json_string_at(provider, "base_url", NULL);
        }
        return variable && url ? hold(p, variable, NULL, url, "Authorization", "Bearer", held, err) : 0;
}

int aisb_policy_hold_harness_keys(aisb_policy *p, char ***ret_held, aisb_error **err)
{
        if (!p)
                return aisb_error_set(err, -EINVAL, "no policy given");
        _cleanup_strv_free_ char **held = NULL;
        harness_kind k = harness_of_command(p);
        if (!p->no_harness_keys && k != HARNESS_NONE) {
                int r = hold_keys(p, k, &held, err);
                if (r < 0)
                        return r;
        }
        if (ret_held)
                *ret_held = steal_pointer(&held);
        return 0;
}

int harness_bridge_fresh(aisb_ctx *ctx, const aisb_policy *p, int dir, aisb_error **err)
{
        /* No merge base and no sandbox's copy: the host's settings with policy on top. */
        return harness_bridge_applies(p) ? bridge(ctx, p, harness_of_command(p), dir, -1, err) : 0;
}
