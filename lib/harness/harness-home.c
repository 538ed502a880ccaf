/* SPDX-License-Identifier: MIT */
/*
 * What the home volume carries from one run into the next. The agent writes the sandbox's
 * home, and every harness loads code and instructions from it at start: pi's extensions and
 * SYSTEM.md, claude's rules, hooks and memory, codex's AGENTS.override.md, hooks.json and .env,
 * the shell's rc files and git's configuration, which every harness's commands read. Before
 * each run those paths are made the host's again: what aisb bridges from the host (harness.c)
 * is written afresh, and what it does not is moved aside, into ~/.aisb-moved/STAMP/ in the
 * same volume, where nothing loads it, with one warning line naming it. What each harness
 * keeps as its own data (sessions, logins, history) stays.
 *
 * pi's directory is a carry-list: what is not on it goes. claude's and codex's are lists of
 * what goes: both write data of their own there that no list of theirs names (their binaries
 * are not open to read), and a carry-list would take it from them at every run. The lists,
 * and why each entry is there, are docs/bridges.md's.
 */
#include <dirent.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"
#include "harness-backend.h"
#include "tree-walk.h"
#include "util.h"

/* A directory below the home and what of it goes: with carry, every entry not named (a
 * carry-list); without, the entries named. each: the rule applies in each subdirectory of dir
 * instead (claude's per-project memory). */
typedef struct home_rule {
        const char *dir;
        bool carry, each;
        const char *const *names;
} home_rule;

/* pi 0.73.1 (its agent directory, docs/bridges.md): settings.json and models.json are the
 * bridge's; auth.json holds the logins, sessions/ the transcripts; keybindings.json and themes/
 * are data. Everything else there is code or instructions pi loads at start: extensions/,
 * git/ (packages' checkouts), bin/ (first on every command's PATH), tools/, skills/, prompts/,
 * AGENTS.md, SYSTEM.md, APPEND_SYSTEM.md. */
static const char *const pi_carry[] = { "settings.json", "models.json", "auth.json", "sessions", "keybindings.json",
                                        "themes", "pi-debug.log", NULL };
/* claude 2.1.332: what it loads at start or before each command that aisb does not bridge
 * (the write-deny list of claude's own sandbox has each); commands/, agents/ and skills/ are
 * the host's, mounted over these when it has them. CLAUDE.md is the bridge's. */
static const char *const claude_reset[] = {
        "rules", "output-styles", "plugins", "cowork_plugins", "hooks", "workflows", "routines", "jobs", "daemon",
        "daemon.json", "scheduled_tasks.json", "loop.md", "shell-snapshots", "session-env", "agent-memory", "memory",
        "dev-mods", "local", "remote-settings.json", "policy-limits.json", "commands", "agents", "skills", NULL,
};
static const char *const claude_project_reset[] = { "memory", NULL };
/* codex 0.171: AGENTS.override.md wins over the bridged AGENTS.md; hooks.json, .env (read into
 * codex's own environment first), skills/, rules/ (what runs unasked), memories/,
 * shell_snapshots/ (sourced before commands), prompts/, agents/, plugins/. */
static const char *const codex_reset[] = {
        "AGENTS.override.md", "hooks.json", ".env", "skills", "rules", "memories", "shell_snapshots", "prompts",
        "agents", "plugins", NULL,
};
static const char *const codex_tmp_reset[] = { "plugins", "marketplaces", NULL };
/* What bash reads as it starts (--shell's interactive shell, codex's `bash -lc`, claude's and
 * codex's snapshots of ~/.bashrc), git's configuration, which every git command reads,
 * ~/.agents, which every harness reads skills from (the host's is mounted over it), npm's
 * (script-shell, node-options, a prefix that moves pi's packages) and less's (LESSOPEN, which
 * runs when git pages). */
static const char *const shell_reset[] = { ".bashrc", ".bash_profile", ".bash_login", ".profile", ".bash_logout",
                                           ".bash_aliases", ".inputrc", ".gitconfig", ".agents", ".npmrc",
                                           ".lesskey", NULL };
static const char *const config_reset[] = { "git", "lesskey", NULL };

static const home_rule rules[] = {
        { ".pi/agent", true, false, pi_carry },
        { ".claude", false, false, claude_reset },
        { ".claude/projects", false, true, claude_project_reset },
        { ".codex", false, false, codex_reset },
        { ".codex/.tmp", false, false, codex_tmp_reset },
        { "", false, false, shell_reset },
        { ".config", false, false, config_reset },
};

#define MOVED_DIR ".aisb-moved"
#define SHOWN_MAX 6

typedef struct reset {
        aisb_ctx *ctx;
        int root;
        int moved_fd;       /* ~/.aisb-moved/STAMP, made at the first move */
        char stamp[32];
        char name[48];      /* STAMP-RANDOM */
        size_t moved;
        buffer shown;       /* the first SHOWN_MAX, "~/path" each */
} reset;

/* Whether dir/name is a directory with nothing in it (nothing to load). */
static bool empty_dir(int dir, const char *name)
{
        int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return false;
        DIR *d = fdopendir(fd);
        if (!d) {
                close(fd);
                return false;
        }
        bool empty = true;
        for (struct dirent *de; empty && (de = readdir(d));)
                empty = streq(de->d_name, ".") || streq(de->d_name, "..");
        closedir(d);
        return empty;
}

/* ~/.aisb-moved/STAMP/REL's directory, made: the same tree as the home's. */
static int moved_parent(reset *s, const char *rel)
{
        if (s->moved_fd < 0) {
                int top = tree_open_dir(s->root, MOVED_DIR, true, 0700);
                if (top == -ELOOP || top == -ENOTDIR) {
                        /* The agent's link or file at the name: moved out of the way too. */
                        uint8_t bytes[4];
                        char aside[64];
                        if (getrandom(bytes, sizeof bytes, 0) != sizeof bytes)
                                return -EIO;
                        snprintf(aside, sizeof aside, MOVED_DIR ".%02x%02x%02x%02x", bytes[0], bytes[1], bytes[2],
                                 bytes[3]);
                        if (renameat2(s->root, MOVED_DIR, s->root, aside, RENAME_NOREPLACE) < 0)
                                return -errno;
                        top = tree_open_dir(s->root, MOVED_DIR, true, 0700);
                }
                if (top < 0)
                        return top;
                /* A name nobody could make ready (a link there would stop every run). */
                uint8_t bytes[4];
                if (getrandom(bytes, sizeof bytes, 0) != sizeof bytes) {
                        close(top);
                        return -EIO;
                }
                snprintf(s->name, sizeof s->name, "%s-%02x%02x%02x%02x", s->stamp, bytes[0], bytes[1], bytes[2],
                         bytes[3]);
                if (mkdirat(top, s->name, 0700) < 0) {
                        int e = -errno;
                        close(top);
                        return e;
                }
                s->moved_fd = tree_open_dir(top, s->name, false, 0);
                close(top);
                if (s->moved_fd < 0)
                        return s->moved_fd;
        }
        return tree_open_dir(s->moved_fd, rel, true, 0700);
}

/* dir/name (rel below the home, "" for its root) moved aside, unless an empty directory. */
static int move(reset *s, int dir, const char *rel, const char *name)
{
        struct stat st;
        if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (S_ISDIR(st.st_mode) && empty_dir(dir, name))
                return 0;
        _cleanup_close_ int to = moved_parent(s, rel);
        if (to < 0)
                return to;
        if (renameat(dir, name, to, name) < 0)
                return -errno;
        s->moved++;
        int r = 0;
        if (s->moved <= SHOWN_MAX)
                r = buffer_printf(&s->shown, "%s~/%s%s%s", s->shown.size ? " " : "", rel, *rel ? "/" : "", name);
        return r < 0 ? -ENOMEM : 0;
}

typedef struct one_level {
        reset *s;
        const home_rule *rule;
        const char *rel;
        int r;
} one_level;

static int apply_rule(reset *s, const home_rule *rule, int dir, const char *rel);

/* An entry of a directory a rule names, one level down only. */
static int entry(const tree_entry *e, void *userdata)
{
        one_level *l = userdata;
        int r = 0;
        if (l->rule->each) {
                if (e->type == DT_DIR && e->self >= 0) {
                        _cleanup_free_ char *sub = NULL;
                        if (asprintf(&sub, "%s/%s", l->rel, e->name) < 0)
                                return -ENOMEM;
                        home_rule inner = { .names = l->rule->names };
                        r = apply_rule(l->s, &inner, e->self, sub);
                }
        } else if (!strv_contains((const char *const *) l->rule->names, e->name))
                r = move(l->s, e->dir, l->rel, e->name);
        if (r == -ENOMEM)
                return r;
        if (r < 0 && !l->r)
                l->r = r;
        return TREE_SKIP;
}

static int apply_rule(reset *s, const home_rule *rule, int dir, const char *rel)
{
        if (rule->carry || rule->each) {
                one_level l = { .s = s, .rule = rule, .rel = rel };
                int r = tree_walk(dir, 0, TREE_WALK_FIX_ACCESS, entry, &l);
                return r < 0 ? r : l.r;
        }
        int first = 0;
        for (const char *const *n = rule->names; *n; n++) {
                int r = move(s, dir, rel, *n);
                if (r == -ENOMEM)
                        return r;
                if (r < 0 && !first)
                        first = r;
        }
        return first;
}

/* The rule's directory rel, each component opened without following a link: in *ret_dir, or
 * -1 when it is not there (nothing to load). A link or a file at a component (to lead the
 * harness elsewhere) goes as a whole, and the rule has nothing left to look at. */
static int open_rule_dir(reset *s, const char *rel, int *ret_dir)
{
        _cleanup_free_ char *copy = strdup(rel);
        if (!copy)
                return -ENOMEM;
        int dir = fcntl(s->root, F_DUPFD_CLOEXEC, 3);
        if (dir < 0)
                return -errno;
        size_t done = 0; /* bytes of rel above the component */
        for (char *c = copy; *c;) {
                char *slash = strchr(c, '/');
                if (slash)
                        *slash = 0;
                int next = openat(dir, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
                if (next < 0 && errno == EACCES) {
                        /* The user's own directory, its permissions taken away: given back. */
                        _cleanup_close_ int path = openat(dir, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        struct stat st;
                        if (path >= 0 && fstat(path, &st) == 0 && st.st_uid == geteuid())
                                (void) fd_chmod(path, (st.st_mode & 07777) | S_IRWXU);
                        next = openat(dir, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
                }
                if (next < 0) {
                        int e = errno;
                        int r = 0;
                        if (e == ELOOP || e == ENOTDIR) {
                                _cleanup_free_ char *up = strndup(rel, done ? done - 1 : 0);
                                r = up ? move(s, dir, up, c) : -ENOMEM;
                        } else if (e != ENOENT)
                                r = -e;
                        close(dir);
                        *ret_dir = -1;
                        return r;
                }
                close(dir);
                dir = next;
                /* One the agent made read-only for its owner: its entries could not be moved. */
                struct stat st;
                if (fstat(dir, &st) == 0 && st.st_uid == geteuid() && (st.st_mode & S_IRWXU) != S_IRWXU)
                        (void) fchmod(dir, (st.st_mode & 07777) | S_IRWXU);
                done += strlen(c) + 1;
                if (!slash)
                        break;
                c = slash + 1;
        }
        *ret_dir = dir;
        return 0;
}

int harness_home_reset(aisb_ctx *ctx, int home_root, const char *const *also, size_t *ret_moved, aisb_error **err)
{
        reset s = { .ctx = ctx, .root = home_root, .moved_fd = -1 };
        time_t now = time(NULL);
        struct tm tm;
        strftime(s.stamp, sizeof s.stamp, "%Y%m%dT%H%M%S", gmtime_r(&now, &tm));
        int r = 0;
        for (size_t i = 0; r != -ENOMEM && i < ELEMENTSOF(rules); i++) {
                int dir = -1;
                int k = open_rule_dir(&s, rules[i].dir, &dir);
                if (k >= 0 && dir >= 0) {
                        k = apply_rule(&s, &rules[i], dir, rules[i].dir);
                        close(dir);
                }
                if (k < 0 && (!r || k == -ENOMEM))
                        r = k;
        }
        for (size_t i = 0; r != -ENOMEM && also && also[i]; i++) {
                const char *slash = strrchr(also[i], '/');
                _cleanup_free_ char *up = strndup(also[i], slash ? (size_t) (slash - also[i]) : 0);
                int dir = -1;
                int k = up ? open_rule_dir(&s, up, &dir) : -ENOMEM;
                if (k >= 0 && dir >= 0) {
                        k = move(&s, dir, up, slash ? slash + 1 : also[i]);
                        close(dir);
                }
                if (k < 0 && (!r || k == -ENOMEM))
                        r = k;
        }
        if (s.moved_fd >= 0)
                close(s.moved_fd);
        if (s.moved > 0)
                aisb_log(ctx, AISB_LOG_WARNING,
                         "the sandbox's home held what a harness or the shell loads at start and aisb does not bridge "
                         "from your own (left by an earlier run): %s%s moved to ~/" MOVED_DIR "/%s, where nothing "
                         "loads it",
                         s.shown.data, s.moved > SHOWN_MAX ? " and more" : "", s.name);
        buffer_free(&s.shown);
        if (ret_moved)
                *ret_moved = s.moved;
        if (r == -ENOMEM)
                return error_oom(err);
        if (r < 0)
                return aisb_error_set(err, r, "the sandbox's home: what a harness loads at start could not all be "
                                      "moved aside (%s); --ephemeral-home runs with a fresh one", strerror(-r));
        return 0;
}
