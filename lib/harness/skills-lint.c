/* SPDX-License-Identifier: MIT */
/* aisb skill-lint: the agents directory's files (skills-walk.c's walk) and the history of each git
 * repository in it, read by git inside a sandbox, never on the host. */
#include <fcntl.h>
#include <limits.h>

#include "image.h"
#include "podman.h"
#include "policy.h"
#include "run.h"
#include "skills-walk.h"

/* ---- history, read by git in a sandbox ---- */

/* What the history sandbox may print; beyond it, history is not read. */
#define SKILLS_HISTORY_MAX (64 * 1024 * 1024)
#define SKILLS_HISTORY_TIMEOUT_S 300

/* The sandbox's script: for each repository (the arguments after the bound), a marker line,
 * then its history as patches of added and removed lines only. git's own options pin what
 * its output looks like whatever the repository configures (prefixes, quoting, colour,
 * external diff and textconv drivers, renames), and head bounds it. The paths arrive as
 * arguments, never inside the script. */
static const char history_script[] =
        "limit=$1; shift; i=0\n"
        "for r in \"$@\"; do\n"
        "  printf 'aisb-repo %d\\n' \"$i\"\n"
        "  git --no-pager -c core.quotePath=true -c diff.noprefix=false -c diff.mnemonicPrefix=false"
        " -c safe.directory='*' -C \"/project/$r\" log --all --reflog -p -U0 --no-color --no-ext-diff"
        " --no-textconv --no-renames --no-relative --src-prefix=a/ --dst-prefix=b/"
        " --format='commit %H' 2>/dev/null || printf 'aisb-repo-failed %d\\n' \"$i\"\n"
        "  i=$((i + 1))\n"
        "done | head -c \"$limit\"\n";

/* Read each repository's history (repos relative to dir) with git inside a sandbox of the
 * policy's image: no network, dir mounted read-only, a throwaway home, stopped after
 * SKILLS_HISTORY_TIMEOUT_S; its output bounded by SKILLS_HISTORY_MAX. Findings come with
 * repo (an index into repos), commit and path (in the repository); note_fn hears of each
 * repository git could not read. *ret_truncated when the output reached the bound. -ENOENT
 * when the image is not built (this builds nothing). */
static int skills_history(aisb_ctx *ctx, const aisb_policy *p, const char *dir, char *const *repos,
                   skills_fn fn, skills_note_fn note_fn, void *userdata, unsigned long *ret_commits,
                   bool *ret_truncated, aisb_error **err)
{
        _cleanup_strv_free_ char **command = NULL;
        char limit[32];
        snprintf(limit, sizeof limit, "%d", SKILLS_HISTORY_MAX + 1);
        int r = strv_push(&command, "sh");
        r = r < 0 ? r : strv_push(&command, "-c");
        r = r < 0 ? r : strv_push(&command, history_script);
        r = r < 0 ? r : strv_push(&command, "sh");
        r = r < 0 ? r : strv_push(&command, limit);
        for (size_t i = 0; r >= 0 && repos && repos[i]; i++)
                r = strv_push(&command, repos[i]);
        if (r < 0)
                return error_oom(err);

        aisb_policy *q = NULL;
        r = policy_new_for_image(p, &q, err);
        if (r >= 0)
                r = aisb_policy_set(q, "project", dir, err);
        if (r >= 0)
                r = aisb_policy_set(q, "net", "none", err);
        if (r >= 0)
                r = aisb_policy_set(q, "ephemeral-home", "true", err);
        if (r >= 0)
                r = aisb_policy_set(q, "no-pi-config", "true", err);
        if (r >= 0)
                r = aisb_policy_set(q, "no-agents", "true", err);
        if (r >= 0)
                r = aisb_policy_set_command(q, (const char *const *) command, err);
        if (r < 0) {
                aisb_policy_free(q);
                return r;
        }
        q->project_read_only = true;
        /* Like doctor: this builds nothing unasked. */
        _cleanup_free_ char *tag = NULL;
        r = aisb_ctx_connect(ctx, err);
        r = r < 0 ? r : aisb_image_tag(q, &tag, err);
        r = r < 0 ? r : podman_image_exists(ctx, tag, err);
        if (r == 0)
                r = aisb_error_set(err, -ENOENT, "the sandbox image is not built yet: run \"aisb build\" first");
        run_capture out = { .max = SKILLS_HISTORY_MAX };
        int code = -1;
        if (r > 0)
                r = run_captured(ctx, q, SKILLS_HISTORY_TIMEOUT_S, run_capture_stdout, &out, &code, err);
        aisb_policy_free(q);
        if (r >= 0 && code != 0)
                r = aisb_error_set(err, -EIO, "git in the sandbox failed (exit %d)", code);
        if (r < 0) {
                buffer_free(&out.b);
                return r;
        }
        /* Header lines only ever start a line: content lines start with + - or space. */
        unsigned long commits = 0;
        size_t n_repos = strv_length((const char *const *) repos);
        const char *text = out.b.data ? out.b.data : "";
        for (const char *l = text; l && *l;) {
                unsigned long long failed;
                if (startswith(l, "commit "))
                        commits++;
                else if (startswith(l, "aisb-repo-failed ") && note_fn &&
                         sscanf(l + 17, "%llu", &failed) == 1 && failed < n_repos)
                        note_fn(repos[failed],
                                "git could not read its history (a .git pointing outside the directory, "
                                "or a broken repository)",
                                userdata);
                l = strchr(l, '\n');
                l = l ? l + 1 : NULL;
        }
        r = skills_scan_history(text, out.b.size, fn, userdata);
        if (out.b.data)
                explicit_bzero(out.b.data, out.b.size);
        buffer_free(&out.b);
        if (r < 0)
                return aisb_error_set(err, r, "reading the history: %s", strerror(-r));
        *ret_commits = commits;
        *ret_truncated = out.truncated;
        return r;
}

/* ---- aisb skill-lint ---- */

typedef struct lint {
        aisb_ctx *ctx;
        aisb_skill_lint_fn fn;
        void *userdata;
        char **repos;
        size_t n_repos;
        unsigned long history_findings;
} lint;

static void lint_note(const char *path, const char *why, void *userdata)
{
        lint *l = userdata;
        aisb_log(l->ctx, AISB_LOG_WARNING, "%s: %s", path, why);
}

static int lint_file_finding(const skills_finding *f, void *userdata)
{
        lint *l = userdata;
        l->fn(&(aisb_skill_lint_finding) { .path = f->path, .line = f->line, .kind = f->kind, .masked = f->masked },
              l->userdata);
        return 0;
}

static int lint_history_finding(const skills_finding *f, void *userdata)
{
        lint *l = userdata;
        const char *repo = f->repo < l->n_repos ? l->repos[f->repo] : "?";
        _cleanup_free_ char *path = NULL;
        if (streq(repo, ".") ? !(path = strdup(f->path)) : asprintf(&path, "%s/%s", repo, f->path) < 0)
                return -ENOMEM;
        l->history_findings++;
        l->fn(&(aisb_skill_lint_finding) { .commit = f->commit, .path = path, .line = f->line, .kind = f->kind,
                                           .masked = f->masked },
              l->userdata);
        return 0;
}

int aisb_skill_lint(aisb_ctx *ctx, const aisb_policy *policy, const char *dir, unsigned flags,
                    aisb_skill_lint_fn fn, void *userdata, char **ret_summary, aisb_error **err)
{
        if (flags & ~(unsigned) AISB_SKILL_LINT_NO_HISTORY)
                return aisb_error_set(err, -EINVAL, "aisb_skill_lint: unknown flags 0x%x", flags);
        _cleanup_close_ int root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (root < 0)
                return aisb_error_set(err, -errno, "cannot open %s: %s", dir, strerror(errno));
        lint l = { .ctx = ctx, .fn = fn, .userdata = userdata };
        skills_walk w = {
                .read_files = true,
                .read_max = SKILLS_READ_MAX_LINT,
                .finding_fn = lint_file_finding,
                .note_fn = lint_note,
                .userdata = &l,
        };
        int r = skills_walk_run(root, &w);
        if (r < 0) {
                skills_walk_done(&w);
                return aisb_error_set(err, r, "cannot read %s: %s", dir, strerror(-r));
        }
        l.repos = w.repos;
        l.n_repos = strv_length((const char *const *) w.repos);

        char history[256];
        if (l.n_repos == 0)
                snprintf(history, sizeof history, "no git repository");
        else if (flags & AISB_SKILL_LINT_NO_HISTORY)
                snprintf(history, sizeof history, "not scanned (--no-history)");
        else {
                unsigned long commits = 0;
                bool truncated = false;
                aisb_error *e = NULL;
                r = skills_history(ctx, policy, dir, w.repos, lint_history_finding, lint_note, &l, &commits,
                                   &truncated, &e);
                if (r < 0) {
                        aisb_log(ctx, AISB_LOG_WARNING, "history not scanned: %s", aisb_error_message(e));
                        snprintf(history, sizeof history, "not scanned");
                        aisb_error_free(e);
                } else {
                        if (truncated)
                                aisb_log(ctx, AISB_LOG_WARNING,
                                         "history: git's output passed %d MiB: what came after is not scanned",
                                         SKILLS_HISTORY_MAX / (1024 * 1024));
                        snprintf(history, sizeof history, "%lu commit%s of %zu repositor%s%s", commits,
                                 commits == 1 ? "" : "s", l.n_repos, l.n_repos == 1 ? "y" : "ies",
                                 truncated ? " (cut short)" : "");
                }
        }
        unsigned long total = w.findings + l.history_findings;
        if (ret_summary &&
            asprintf(ret_summary, "%lu finding%s in %s: %lu file%s read, %lu skipped; history: %s", total,
                     total == 1 ? "" : "s", dir, w.files, w.files == 1 ? "" : "s", w.skipped, history) < 0)
                *ret_summary = NULL;
        skills_walk_done(&w);
        return total > INT_MAX ? INT_MAX : (int) total;
}
