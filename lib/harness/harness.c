/* SPDX-License-Identifier: MIT */
/*
 * The harness feels like the user's own: before a run of one, the host's configuration is
 * bridged into the sandbox's home (settings merged per key against what aisb last wrote, only
 * the keys a carry-list names, credentials never), and the reasoning level is re-applied as
 * policy, so one run cannot lower it for the next. What differs per harness is its backend's
 * (harness-backend.h); the steps every bridge takes, the note it says, the home's policing and
 * the keys held at the gate are here. The merge base lives on the host, out of the agent's
 * reach; every file of the sandbox's is opened as harness-backend.h says.
 */
#include <assert.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <strings.h>
#include <sys/stat.h>

#include "allowlist.h"
#include "fileio.h"
#include "harness-backend.h"
#include "harness-config.h"
#include "harness.h"
#include "podman.h"
#include "security.h"
#include "settings-merge.h"
#include "skills-walk.h"
#include "userdirs.h"

const struct harness_env harness_quiet_env[] = {
        { "PI_SKIP_VERSION_CHECK", "1", HARNESS_PI },
        { "PI_TELEMETRY", "0", HARNESS_PI },
        /* claude's autoupdater, telemetry, error reporting and feedback command. */
        { "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1", HARNESS_CLAUDE },
        {},
};

static const harness_ops *const backends[] = { &harness_pi, &harness_claude, &harness_codex };

void harness_bridge_done(harness_bridge *b)
{
        /* The seed directory is the run directory's, removed with it. */
        free(b->seed_dir);
        free(b->agents_dir);
        *b = (harness_bridge) {};
}

const harness_ops *harness_backend(const aisb_policy *p)
{
        const char *const *cmd = policy_command(p);
        if (p->shell || !cmd[0])
                return NULL;
        const char *slash = strrchr(cmd[0], '/');
        const char *name = slash ? slash + 1 : cmd[0];
        for (size_t i = 0; i < ELEMENTSOF(backends); i++)
                if (streq(name, backends[i]->name))
                        return backends[i];
        return NULL;
}

harness_kind harness_of_command(const aisb_policy *p)
{
        const harness_ops *ops = harness_backend(p);
        return ops ? ops->kind : HARNESS_NONE;
}

bool harness_bridge_applies(const aisb_policy *p)
{
        const harness_ops *ops = harness_backend(p);
        return ops && !p->no_harness_config && !(ops->declined && ops->declined(p));
}

int harness_thinking_check(const aisb_policy *p, aisb_error **err)
{
        const harness_ops *ops = harness_backend(p);
        if (!ops || streq(p->thinking, "host") || (ops->level_bridged && !harness_bridge_applies(p)) ||
            ops->level_valid(p->thinking))
                return 0;
        return aisb_error_set(err, -EINVAL, "thinking: %s has no level '%s' (use one of: %s)", ops->name, p->thinking,
                              ops->levels());
}

const char *harness_thinking_env(const aisb_policy *p)
{
        const harness_ops *ops = harness_backend(p);
        if (!ops || !ops->level_env || streq(p->thinking, "host") || policy_env_named(p, ops->level_env))
                return NULL;
        return ops->level_env;
}

const char *harness_sandbox_dir(const aisb_policy *p)
{
        const harness_ops *ops = harness_backend(p);
        return ops ? ops->sandbox_dir : NULL;
}

/* The host's directory of ops's harness, or NULL in *ret when HOME is unset too. -ENOMEM. */
static int host_dir_path(const harness_ops *ops, char **ret)
{
        const char *dir = getenv(ops->dir_env), *home = getenv("HOME");
        *ret = NULL;
        if (dir && *dir)
                *ret = strdup(dir);
        else if (home && *home && asprintf(ret, "%s/%s", home, ops->home_dir) < 0)
                *ret = NULL;
        else if (!home || !*home)
                return 0;
        return *ret ? 0 : -ENOMEM;
}

/* What one file's merge is told: the host's value already read (and made fit for the
 * sandbox), where the sandbox's and the base are, and policy applied on top. */
typedef struct merge_job {
        const char *name;      /* in the sandbox's directory */
        const char *base_name; /* in the state directory (always JSON) */
        const config_syntax *syntax;
        json_object *host; /* NULL: none on the host */
        settings_policy policy;
} merge_job;

/* The merge of base, the host's and sandbox, policy on top, as text in *ret_text; a value
 * syntax cannot write back as its error, in *e. */
static int merge_text(const aisb_policy *p, const merge_job *j, json_object *base, json_object *sandbox,
                      char **ret_text, aisb_error **e, aisb_error **err)
{
        _cleanup_json_ json_object *merged = NULL;
        int r = settings_merge(base, j->host, sandbox, &merged, err);
        if (r < 0)
                return aisb_error_wrap(err, r, "merging %s", j->name);
        if (j->policy && (r = j->policy(merged, j->host, p, err)) < 0)
                return r;
        r = j->syntax->format(merged, ret_text, e);
        return r < 0 ? r : 1;
}

static int merge_file(const bridge_run *run, const merge_job *j, aisb_error **err)
{
        _cleanup_json_ json_object *sandbox = NULL, *base = NULL;
        _cleanup_free_ char *origin = NULL;
        if (asprintf(&origin, "the sandbox's %s", j->name) < 0)
                return error_oom(err);
        aisb_error *e = NULL;
        if (bridge_read_config(run->sandbox_dir, j->name, origin, false, j->syntax, &sandbox, &e) < 0) {
                aisb_log(run->ctx, AISB_LOG_WARNING, "%s: taking the host's settings afresh", aisb_error_message(e));
                aisb_error_free(e);
                e = NULL;
                sandbox = NULL;
        }
        if (run->base_fd >= 0 && bridge_read_json(run->base_fd, j->base_name, j->base_name, &base, NULL) < 0)
                base = NULL;
        _cleanup_free_ char *text = NULL;
        int r = merge_text(run->p, j, base, sandbox, &text, &e, err);
        if (r == -EINVAL && e && sandbox) {
                /* Something of the sandbox's that the syntax cannot write back (a TOML key
                 * toml++ would write unquoted): the host's settings afresh, as for a file
                 * that does not parse, so that no run of the agent's fails the next. */
                aisb_log(run->ctx, AISB_LOG_WARNING, "%s: %s: taking the host's settings afresh", origin,
                         aisb_error_message(e));
                aisb_error_free(e);
                e = NULL;
                r = merge_text(run->p, j, base, NULL, &text, &e, err);
        }
        if (r < 0 && e) {
                r = aisb_error_set(err, r, "%s: %s", j->name, aisb_error_message(e));
                aisb_error_free(e);
        }
        if (r < 0)
                return r;
        r = bridge_write_text(run->ctx, run->sandbox_dir, j->name, text, err);
        if (r < 0 || run->base_fd < 0)
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
                r = j->policy(next_base, j->host, run->p, err);
        return r < 0 ? r : bridge_write_config(run->ctx, run->base_fd, j->base_name, &bridge_json, next_base, err);
}

int harness_pin_keys(json_object *merged, json_object *host, const char *const *keys, aisb_error **err)
{
        for (const char *const *k = keys; *k; k++)
                if (harness_pin_key(merged, host, NULL, *k) < 0)
                        return error_oom(err);
        return 0;
}

const char *harness_run_env(const aisb_policy *p, const char *name, const char *dflt)
{
        for (size_t i = 0; i < p->n_env; i++)
                if (streq(p->env[i].name, name))
                        return p->env[i].value;
        return dflt;
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
struct bridge_note {
        buffer held;     /* "N keys of FILE, N of FILE": on no carry-list */
        buffer withheld; /* "FILE: KEY, KEY; FILE: KEY": carried, but credentials */
        unsigned files;  /* 1 << carry_file of each file with keys held */
        int total;       /* keys held, of every file */
};

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

/* carry_for_sandbox, told in the note: how many keys stayed on the host, and the credentials
 * withheld by name unless the run passes that variable itself ("env.NAME" set with --env or
 * --secret is not news). */
int bridge_carry_host(const bridge_run *run, carry_file f, json_object *o, const char *origin, aisb_error **err)
{
        bridge_note *note = run->note;
        _cleanup_(buffer_free) buffer removed = {};
        int held = carry_for_sandbox(run->p, f, o, NULL, &removed);
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
                if (!(startswith(name, "env.") && run_passes(run->p, name + 4))) {
                        r = first ? buffer_printf(&note->withheld, "%s%s: %s", note->withheld.size ? "; " : "", origin,
                                                  name)
                                  : buffer_printf(&note->withheld, ", %s", name);
                        first = false;
                }
        return r < 0 ? error_oom(err) : 0;
}

int bridge_settings(const bridge_run *run, const char *name, const config_syntax *syntax, carry_file carry,
                    settings_policy policy, aisb_error **err)
{
        _cleanup_free_ char *origin = NULL, *base_name = NULL;
        const char *dot = strrchr(name, '.');
        if (asprintf(&origin, "%s/%s", run->host_path, name) < 0 ||
            asprintf(&base_name, "%.*s.base.json", (int) (dot - name), name) < 0)
                return error_oom(err);
        _cleanup_json_ json_object *host = NULL;
        int r = run->host_dir >= 0 ? bridge_read_config(run->host_dir, name, origin, true, syntax, &host, err) : 0;
        if (r < 0)
                return r;
        r = bridge_carry_host(run, carry, host, origin, err);
        if (r < 0)
                return r;
        merge_job job = { name, base_name, syntax, host, policy };
        return merge_file(run, &job, err);
}

/* The one line of what stayed on the host, and how to carry it. */
static int say_note(aisb_ctx *ctx, const bridge_note *note)
{
        _cleanup_(buffer_free) buffer line = {};
        int said = 0;
        if (note->held.size)
                said = buffer_printf(&line, "%.*s %s on the host (on no carry-list: aisb inspect names them; carry one "
                                     "with bridge-carry = ", (int) note->held.size, note->held.data,
                                     note->total == 1 ? "stays" : "stay");
        for (carry_file f = CARRY_PI; said >= 0 && f <= CARRY_CODEX; f++)
                if (note->files & 1u << f)
                        said = buffer_printf(&line, "%s%s:KEY%s", note->files & ((1u << f) - 1) ? " or " : "",
                                             carry_file_name(f), note->files >> (f + 1) ? "" : ")");
        if (said >= 0 && note->withheld.size)
                said = buffer_printf(&line, "%s%.*s not bridged (credentials stay on the host; pass a key with --secret, "
                                     "docs/bridges.md)", line.size ? "; " : "", (int) note->withheld.size,
                                     note->withheld.data);
        if (said < 0)
                return -ENOMEM;
        if (line.size)
                aisb_log(ctx, note->withheld.size ? AISB_LOG_WARNING : AISB_LOG_INFO, "%.*s", (int) line.size, line.data);
        return 0;
}

static int bridge(aisb_ctx *ctx, const aisb_policy *p, const harness_ops *ops, int sandbox_dir, int base_fd,
                  aisb_error **err)
{
        _cleanup_free_ char *host_path = NULL;
        if (host_dir_path(ops, &host_path) < 0)
                return error_oom(err);
        if (!host_path)
                return aisb_error_set(err, -ENOENT, "HOME is not set: cannot find ~/%s", ops->home_dir);
        _cleanup_close_ int host_dir = open(host_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        bridge_note note = {};
        bridge_run run = { ctx, p, host_dir, host_path, sandbox_dir, base_fd, &note };
        int r = ops->bridge(&run, err);
        if (r >= 0 && say_note(ctx, &note) < 0)
                r = error_oom(err);
        buffer_free(&note.held);
        buffer_free(&note.withheld);
        return r;
}

int harness_mounts(const aisb_policy *p, harness_mount ret[static HARNESS_MOUNTS_MAX], size_t *ret_n)
{
        const harness_ops *ops = harness_backend(p);
        *ret_n = 0;
        if (!harness_bridge_applies(p) || !ops->read_only)
                return 0;
        _cleanup_free_ char *host_path = NULL;
        if (host_dir_path(ops, &host_path) < 0)
                return -ENOMEM;
        for (const read_only_dir *d = ops->read_only; host_path && d->name; d++) {
                _cleanup_free_ char *dir = NULL;
                struct stat st;
                if (asprintf(&dir, "%s/%s", host_path, d->name) < 0) {
                        harness_mounts_done(ret, *ret_n);
                        return -ENOMEM;
                }
                if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                assert(*ret_n < HARNESS_MOUNTS_MAX);
                ret[(*ret_n)++] = (harness_mount) { .source = steal_pointer(&dir), .destination = d->destination };
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

int harness_gather(const aisb_policy *p, bool check, bool mounts, harness_facts *ret, aisb_error **err)
{
        int r = check ? harness_thinking_check(p, err) : 0;
        if (r < 0)
                return r;
        const harness_ops *ops = harness_backend(p);
        harness_facts f = { .bridges = harness_bridge_applies(p), .sandbox_dir = ops ? ops->sandbox_dir : NULL };
        if (mounts && (harness_agents_dir(p, &f.agents_dir, NULL) < 0 || harness_mounts(p, f.mounts, &f.n_mounts) < 0)) {
                harness_facts_done(&f);
                return error_oom(err);
        }
        f.thinking_env = harness_thinking_env(p);
        for (const struct harness_env *q = harness_quiet_env; q->name; q++)
                if (!policy_env_named(p, q->name)) {
                        assert(f.n_quiet < HARNESS_QUIET_MAX);
                        f.quiet[f.n_quiet++] = q;
                }
        *ret = f;
        return 0;
}

void harness_facts_done(harness_facts *f)
{
        free(f->agents_dir);
        harness_mounts_done(f->mounts, f->n_mounts);
        *f = (harness_facts) {};
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

/* What pi and claude run from the home's own state at start (its logins and state live there,
 * so the file stays): each entry that runs a command taken out, every run whatever the command,
 * said. A file that cannot be read as JSON goes aside whole. */
static int police_home_state(aisb_ctx *ctx, int root, aisb_error **err)
{
        for (size_t i = 0; i < ELEMENTSOF(backends); i++) {
                const home_state *s = backends[i]->state;
                _cleanup_close_ int dir = s ? open_dir_nofollow(root, s->dir, false) : -1;
                if (dir < 0)
                        continue; /* none, not there, or a link the reset moved aside */
                _cleanup_json_ json_object *o = NULL;
                aisb_error *e = NULL;
                int r = bridge_read_config(dir, s->name, s->shown, false, &bridge_json, &o, &e);
                aisb_error_free(e);
                if (r < 0) {
                        r = bridge_move_aside(ctx, dir, s->name, s->shown);
                        if (r < 0)
                                return aisb_error_set(err, r, "%s cannot be read or moved aside: %s", s->shown,
                                                      strerror(-r));
                        continue;
                }
                if (!o || !json_object_is_type(o, json_type_object))
                        continue;
                int n = s->take(o);
                if (n == 0)
                        continue;
                r = bridge_write_config(ctx, dir, s->name, &bridge_json, o, err);
                if (r < 0)
                        return r;
                aisb_log(ctx, AISB_LOG_WARNING, "%s held %s (left by an earlier run): %d taken out", s->shown, s->what,
                         n);
        }
        return 0;
}

/* The files the bridges write whole that the host has none of, as paths below the sandbox's
 * home: the sandbox's copy would be the agent's, and it loads at start (pi's models.json runs
 * its "!command" keys; CLAUDE.md and AGENTS.md are instructions). */
static int bridged_absent(char ***ret)
{
        for (size_t i = 0; i < ELEMENTSOF(backends); i++) {
                const harness_ops *ops = backends[i];
                _cleanup_free_ char *host = NULL, *file = NULL, *rel = NULL;
                if (host_dir_path(ops, &host) < 0)
                        return -ENOMEM;
                struct stat st;
                if (host && asprintf(&file, "%s/%s", host, ops->whole_file) < 0)
                        return -ENOMEM;
                if (file && stat(file, &st) == 0 && S_ISREG(st.st_mode))
                        continue;
                if (asprintf(&rel, "%s/%s", ops->home_dir, ops->whole_file) < 0 || strv_push(ret, rel) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* The home volume, whatever the command: what a harness or the shell would load from it at
 * start is the host's or nothing (harness-home.c). Its root open in *ret_root. */
static int reset_home(aisb_ctx *ctx, const aisb_policy *p, int *ret_root, aisb_error **err)
{
        _cleanup_free_ char *mountpoint = NULL;
        int r = podman_volume_mountpoint(ctx, p->home_volume, &mountpoint, err);
        if (r < 0)
                return r;
        *ret_root = open(mountpoint, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (*ret_root < 0)
                return aisb_error_set(err, -errno, "cannot open the home volume at %s: %s", mountpoint,
                                      strerror(errno));
        _cleanup_strv_free_ char **absent = NULL;
        r = bridged_absent(&absent);
        r = r < 0 ? error_oom(err) : harness_home_reset(ctx, *ret_root, (const char *const *) absent, NULL, err);
        return r < 0 ? r : police_home_state(ctx, *ret_root, err);
}

/* The harness's directory the bridge writes into, in *ret_dir: an ephemeral home's seed in the
 * run directory (its path in b->seed_dir), else ~/home_dir in the home volume, with the merge
 * bases' directory in *ret_base. */
static int open_bridge_dirs(aisb_ctx *ctx, const aisb_policy *p, const harness_ops *ops, run_dir *rd, int root,
                            harness_bridge *b, int *ret_dir, int *ret_base, aisb_error **err)
{
        if (p->ephemeral_home) {
                /* A fresh home is a sized tmpfs that exists only once the sandbox starts: the
                 * bridged files wait in the run's own directory, mounted read-only, and the
                 * entrypoint copies them into the harness's directory as the user. Nothing the
                 * sandbox writes lands on the host. */
                if (asprintf(&b->seed_dir, "%s/%s", rd->path, ops->seed) < 0) {
                        b->seed_dir = NULL;
                        return error_oom(err);
                }
                if (mkdirat(rd->fd, ops->seed, 0700) < 0)
                        return aisb_error_set(err, -errno, "cannot create %s: %s", b->seed_dir, strerror(errno));
                *ret_dir = openat(rd->fd, ops->seed, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (*ret_dir < 0)
                        *ret_dir = -errno;
        } else {
                _cleanup_free_ char *sub = NULL, *base_dir = NULL;
                *ret_dir = bridge_open_home_dir(ctx, root, ops->home_dir);
                if (asprintf(&sub, "%s/%s", ops->base, p->home_volume) < 0)
                        return error_oom(err);
                int r = state_dir(sub, &base_dir, err);
                if (r < 0)
                        return r;
                *ret_base = open(base_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        }
        if (*ret_dir < 0)
                return aisb_error_set(err, *ret_dir, "cannot open ~/%s in the sandbox's home: %s", ops->home_dir,
                                      strerror(-*ret_dir));
        return 0;
}

int harness_bridge_prepare(aisb_ctx *ctx, const aisb_policy *p, run_dir *rd, harness_bridge *ret,
                           aisb_error **err)
{
        _cleanup_(harness_bridge_done) harness_bridge b = {};
        int r = harness_agents_dir(p, &b.agents_dir, NULL);
        if (r < 0)
                return error_oom(err);
        /* Every sandbox reads what it holds: said once each time it changes. */
        skills_warn_if_changed(ctx, b.agents_dir);
        _cleanup_close_ int root = -1, sandbox_dir = -1, base_fd = -1;
        if (!p->ephemeral_home && (r = reset_home(ctx, p, &root, err)) < 0)
                return r;
        if (harness_bridge_applies(p)) {
                const harness_ops *ops = harness_backend(p);
                harness_mount mounts[HARNESS_MOUNTS_MAX];
                size_t n_mounts = 0;
                if (harness_mounts(p, mounts, &n_mounts) < 0)
                        return error_oom(err);
                for (size_t i = 0; i < n_mounts; i++)
                        skills_warn_if_changed(ctx, mounts[i].source);
                harness_mounts_done(mounts, n_mounts);
                r = open_bridge_dirs(ctx, p, ops, rd, root, &b, &sandbox_dir, &base_fd, err);
                if (r < 0 || (r = bridge(ctx, p, ops, sandbox_dir, base_fd, err)) < 0)
                        return r;
        }
        *ret = b;
        b = (harness_bridge) {};
        return 0;
}

int harness_describe_keys(buffer *b, const char *what, json_object *o)
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

int harness_describe_carry(const aisb_policy *p, carry_file f, json_object *o, const char *file, buffer *said)
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

int harness_describe_settings(const harness_ops *ops, const aisb_policy *p, int dir, buffer *b)
{
        _cleanup_json_ json_object *config = NULL;
        aisb_error *e = NULL;
        int r = 0;
        if (dir >= 0 && bridge_read_config(dir, ops->settings, ops->settings, true, ops->syntax, &config, &e) < 0) {
                r = buffer_printf(b, "bridge-settings=refused: %s\n", aisb_error_message(e));
                aisb_error_free(e);
        }
        _cleanup_(buffer_free) buffer said = {};
        r = r < 0 ? r : harness_describe_carry(p, ops->carry, config, ops->settings, &said);
        if (!e)
                r = r < 0 ? r : harness_describe_keys(b, "settings", config);
        r = r < 0 || !said.size ? r : buffer_printf(b, "%.*s", (int) said.size, said.data);
        r = r < 0 ? r : buffer_printf(b, "bridge-thinking=%s (%s)\n", p->thinking, ops->level_where);
        if (ops->policy_said)
                r = r < 0 ? r : buffer_printf(b, "bridge-policy=%s\n", ops->policy_said);
        struct stat st;
        bool present = dir >= 0 && fstatat(dir, ops->whole_file, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
        r = r < 0 ? r : buffer_printf(b, "bridge-copied=%s\n", present ? ops->whole_file : "none on the host");
        harness_mount mounts[HARNESS_MOUNTS_MAX];
        size_t n = 0;
        if (harness_mounts(p, mounts, &n) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                r = r < 0 ? r : buffer_printf(b, "bridge-mount=%s (read-only at %s)\n", mounts[i].source, mounts[i].destination);
        harness_mounts_done(mounts, n);
        return r < 0 ? r : buffer_printf(b, "bridge-auth=never copied (%s)\n", ops->auth_file);
}

int harness_describe(const aisb_policy *p, buffer *b)
{
        const harness_ops *ops = harness_backend(p);
        if (!ops)
                return 0;
        _cleanup_free_ char *host_path = NULL;
        if (host_dir_path(ops, &host_path) < 0)
                return -ENOMEM;
        int r = buffer_printf(b, "bridge=%s from %s\n", ops->name, host_path ? host_path : "(no HOME)");
        _cleanup_close_ int dir = host_path ? open(host_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
        return r < 0 ? r : ops->describe(ops, p, dir, b);
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

const char *harness_json_string(json_object *o, const char *a, const char *b)
{
        if (!json_object_object_get_ex(o, a, &o) || (b && !json_object_object_get_ex(o, b, &o)) ||
            !json_object_is_type(o, json_type_string))
                return NULL;
        return json_object_get_string(o);
}

/* The host's settings file of ops's harness, read as a bridge would (NULL when absent or
 * unreadable: the run's bridge says why). */
static json_object *host_config(const harness_ops *ops)
{
        _cleanup_free_ char *path = NULL;
        if (host_dir_path(ops, &path) < 0 || !path)
                return NULL;
        _cleanup_close_ int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        json_object *o = NULL;
        if (dir < 0 || bridge_read_config(dir, ops->settings, path, true, ops->syntax, &o, NULL) < 0)
                return NULL;
        return o;
}

int harness_hold_secret(aisb_policy *p, const char *variable, const char *value, const char *url, const char *header,
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

int aisb_policy_hold_harness_keys(aisb_policy *p, char ***ret_held, aisb_error **err)
{
        if (!p)
                return aisb_error_set(err, -EINVAL, "no policy given");
        _cleanup_strv_free_ char **held = NULL;
        const harness_ops *ops = harness_backend(p);
        if (!p->no_harness_keys && ops) {
                /* The host's settings only when the bridge takes them: a key goes where they
                 * send the harness. */
                _cleanup_json_ json_object *config = harness_bridge_applies(p) ? host_config(ops) : NULL;
                int r = ops->hold_keys(p, config, &held, err);
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
        return harness_bridge_applies(p) ? bridge(ctx, p, harness_backend(p), dir, -1, err) : 0;
}
