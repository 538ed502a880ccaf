/* SPDX-License-Identifier: MIT */
/*
 * aisb diff, apply, discard and undo: what a review run (aisb run --review) kept apart, shown
 * and taken into the project or dropped; and a plain run put back.
 *
 * A path is the agent's to name: it may hold a newline or an escape sequence, so every path
 * printed goes through cli_put, and a file's diff reaches a terminal with its controls shown
 * as \xNN (to a file or pipe it stays the patch it is, for patch -p1 or git apply).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "commands.h"
#include "json-output.h"
#include "options.h"

/* Exit code of apply and undo when a path was not taken (a conflict, a refusal, a failure). */
#define EXIT_NOT_ALL 1

/* RUN, as the first argument: a sandbox's name (aisb-...) or the 8 hex digits that end one. */
static bool looks_like_run(const char *s)
{
        if (strncmp(s, "aisb-", 5) == 0)
                return true;
        if (strlen(s) != 8)
                return false;
        for (const char *p = s; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

static const char *type_name(char type)
{
        switch (type) {
        case 'f': return "file";
        case 'd': return "dir";
        case 'l': return "link";
        case 'o': return "other";
        default: return "-";
        }
}

/* A diff's text: to a terminal without its controls (tabs and newlines kept), else as it is. */
static void put_patch(FILE *out, const char *text, bool raw)
{
        if (raw)
                fputs(text, out);
        else
                cli_put_keeping(out, text, "\t\n");
}

/* One change as a line: what, its type, its path (a link's target, a mode), and a note. */
static void print_change_line(FILE *out, const aisb_change *c)
{
        fprintf(out, "%-*s %-5s ", c->action ? 13 : 9, c->action ? c->action : c->change, type_name(c->type));
        cli_put(out, c->path);
        if (c->type == 'd' && c->mode)
                fprintf(out, "/");
        if (c->target) {
                fputs(" -> ", out);
                cli_put(out, c->target);
        }
        if (!c->action && c->change && strcmp(c->change, "mode") == 0)
                fprintf(out, " (mode %04o)", c->mode);
        if (c->mode_stripped && !c->refused)
                fputs(" (setuid, setgid or sticky dropped)", out);
        if (c->action && c->reason) {
                fputs(": ", out);
                cli_put(out, c->reason);
        } else if (!c->action && c->refused) {
                fputs(" (never applied: ", out);
                cli_put(out, c->refused);
                putc(')', out);
        } else if (!c->action && c->protected_path)
                fputs(" (protected: applied only when named)", out);
        putc('\n', out);
}

static json_object *change_json(const aisb_change *c)
{
        json_object *o = json_object_new_object();
        char mode[8];
        snprintf(mode, sizeof mode, "%04o", c->mode);
        json_object_object_add(o, "path", json_object_new_string(c->path));
        json_object_object_add(o, "change", json_object_new_string(c->change));
        json_object_object_add(o, "type", c->type ? json_object_new_string(type_name(c->type)) : NULL);
        json_object_object_add(o, "mode", c->type ? json_object_new_string(mode) : NULL);
        json_object_object_add(o, "size", json_object_new_int64((int64_t) c->size));
        json_object_object_add(o, "target", c->target ? json_object_new_string(c->target) : NULL);
        json_object_object_add(o, "mode_stripped", json_object_new_boolean(c->mode_stripped));
        json_object_object_add(o, "refused", c->refused ? json_object_new_string(c->refused) : NULL);
        json_object_object_add(o, "protected", json_object_new_boolean(c->protected_path));
        if (!c->action) {
                json_object_object_add(o, "patch", c->patch ? json_object_new_string(c->patch) : NULL);
                json_object_object_add(o, "patch_note", c->patch_note ? json_object_new_string(c->patch_note) : NULL);
        }
        if (c->action) {
                json_object_object_add(o, "action", json_object_new_string(c->action));
                json_object_object_add(o, "reason", c->reason ? json_object_new_string(c->reason) : NULL);
        }
        return o;
}

typedef struct shown {
        bool json, summary_only, raw;
        size_t n;
        char **patches; /* printed after the summary */
        size_t n_patches;
        bool failed;
} shown;

static int on_change(const aisb_change *c, void *userdata)
{
        shown *s = userdata;
        s->n++;
        if (s->json) {
                json_object *o = change_json(c);
                cli_print_json(stdout, o);
                json_object_put(o);
                return 0;
        }
        print_change_line(stdout, c);
        if (!s->summary_only && c->patch) {
                char **more = realloc(s->patches, (s->n_patches + 1) * sizeof *more);
                char *copy = more ? strdup(c->patch) : NULL;
                if (more)
                        s->patches = more;
                if (!copy) {
                        s->failed = true;
                        return 1;
                }
                s->patches[s->n_patches++] = copy;
        } else if (!s->summary_only && c->patch_note && c->type == 'f') {
                /* The path escaped even when the patch goes out as it is: a newline in it would
                 * start a line of the patch's own. */
                char *note = NULL;
                size_t size = 0;
                FILE *f = open_memstream(&note, &size);
                if (f) {
                        fputs("# ", f);
                        cli_put(f, c->path);
                        fprintf(f, ": %s, not shown\n", c->patch_note);
                }
                if (f && fclose(f) == 0) {
                        char **more = realloc(s->patches, (s->n_patches + 1) * sizeof *more);
                        if (more) {
                                s->patches = more;
                                s->patches[s->n_patches++] = note;
                        } else
                                free(note);
                } else if (f)
                        free(note);
        }
        return 0;
}

static void usage_diff(FILE *out)
{
        fprintf(out, "Usage: aisb diff [RUN] [--summary] [--json]\n\n"
                     "What a review run (aisb run --review) changed in this project, kept apart until\n"
                     "you apply it: a line per path (added, modified, deleted, replaced by another\n"
                     "type, a directory's mode), then each text file's unified diff. RUN is the run's\n"
                     "name (aisb ps lists them) or its last 8 characters; the newest run otherwise.\n\n"
                     "  --summary   the lines only\n"
                     "  --json      an object per path (path, change, type, mode, size, target,\n"
                     "              refused, protected, patch), one per line\n");
}

int command_diff(int argc, char **argv)
{
        shown s = { .raw = !isatty(STDOUT_FILENO) };
        const char *run = NULL;
        for (int i = 0; i < argc; i++) {
                if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
                        usage_diff(stdout);
                        return 0;
                } else if (strcmp(argv[i], "--json") == 0)
                        s.json = true;
                else if (strcmp(argv[i], "--summary") == 0 || strcmp(argv[i], "--stat") == 0)
                        s.summary_only = true;
                else if (argv[i][0] != '-' && !run)
                        run = argv[i];
                else {
                        fprintf(stderr, "aisb: diff: unknown argument '%s' (aisb diff --help)\n", argv[i]);
                        return EXIT_USAGE;
                }
        }
        aisb_policy *policy = NULL;
        int code = cli_policy_new(&policy);
        if (code)
                return code;
        aisb_error *err = NULL;
        char *name = NULL;
        int r = aisb_review_diff(policy, run, s.summary_only ? 0 : AISB_REVIEW_PATCH, on_change, &s, &name, &err);
        aisb_policy_free(policy);
        if (r < 0)
                return cli_fail(err, aisb_error_code(err) == -ENOENT ? EXIT_NOT_ALL : EXIT_AISB_FAILED);
        if (!s.json) {
                fflush(stdout);
                for (size_t i = 0; i < s.n_patches; i++) {
                        if (i == 0)
                                putchar('\n');
                        put_patch(stdout, s.patches[i], s.raw);
                }
                fprintf(stderr, "aisb: %zu change%s in ", s.n, s.n == 1 ? "" : "s");
                cli_put(stderr, name);
                fprintf(stderr, "%s\n", s.n ? " (aisb apply takes them, aisb discard drops them)" : "");
        }
        for (size_t i = 0; i < s.n_patches; i++)
                free(s.patches[i]);
        free(s.patches);
        free(name);
        if (s.failed) {
                fprintf(stderr, "aisb: out of memory\n");
                return EXIT_AISB_FAILED;
        }
        return 0;
}

typedef struct acted {
        bool json;
        size_t done, not_done, skipped;
} acted;

static int on_action(const aisb_change *c, void *userdata)
{
        acted *a = userdata;
        if (strcmp(c->action, "skipped") == 0)
                a->skipped++;
        else if (strcmp(c->action, "conflict") == 0 || strcmp(c->action, "refused") == 0 ||
                 strcmp(c->action, "failed") == 0)
                a->not_done++;
        else
                a->done++;
        if (a->json) {
                json_object *o = change_json(c);
                cli_print_json(stdout, o);
                json_object_put(o);
        } else
                print_change_line(stdout, c);
        return 0;
}

static void usage_apply(FILE *out)
{
        fprintf(out, "Usage: aisb apply [RUN] [--force] [--dry-run] [--json] [--] [PATH...]\n\n"
                     "Take what a review run changed into this project: all of it, or what is at\n"
                     "or below each PATH. One path at a time, each atomically; a link is made as a\n"
                     "link, never followed; a path through a link in the project is refused; a\n"
                     "FIFO, socket or device is never made; setuid, setgid and sticky are dropped.\n"
                     "A protected path (.git, .vscode, ... as --protect says; a git directory the\n"
                     "agent made) is applied only when a PATH names it. What would make git run or\n"
                     "read elsewhere (a git directory's config, hooks, info, commondir, alternates,\n"
                     "replace refs, ...) is refused unless a PATH names it exactly, with --force.\n"
                     "A path you changed in the project since the run began is a conflict, left\n"
                     "as it is.\n\n"
                     "  --force     apply conflicting paths too, over your changes\n"
                     "  --dry-run   say what would be done, change nothing\n"
                     "  --json      an object per path, one per line\n\n"
                     "RUN: the run's name or its last 8 characters (the newest otherwise); a PATH\n"
                     "that looks like one goes after --. Exit status: 0 all applied, 1 some path\n"
                     "was not (conflict, refused, failed), 2 bad arguments, 125 aisb failed.\n");
}

static void usage_undo(FILE *out)
{
        fprintf(out, "Usage: aisb undo [RUN] [--force] [--dry-run] [--json]\n\n"
                     "Put this project back as it was before its last plain run (or RUN): the\n"
                     "files and directories it changed, made or deleted. A path you changed since\n"
                     "the run ended is a conflict, left as it is. Runs are recorded when the\n"
                     "project is small enough (undo = auto: at most 2000 entries, 64 MiB to\n"
                     "copy) or with undo = on. Undo again to go back one more run.\n\n"
                     "  --force     put back conflicting paths too, over your changes\n"
                     "  --dry-run   say what would be done, change nothing\n"
                     "  --json      an object per path, one per line\n\n"
                     "Exit status: 0 all put back, 1 some path was not (or no run to undo), 2 bad\n"
                     "arguments, 125 aisb failed.\n");
}

/* apply and undo: [RUN] options [--] [PATH...] */
static int act(int argc, char **argv, bool undo)
{
        acted a = {};
        unsigned flags = 0;
        const char *run = NULL;
        char **paths = calloc((size_t) argc + 1, sizeof *paths);
        size_t n = 0;
        bool dashdash = false;
        if (!paths)
                return EXIT_AISB_FAILED;
        for (int i = 0; i < argc; i++) {
                const char *arg = argv[i];
                if (!dashdash && (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)) {
                        (undo ? usage_undo : usage_apply)(stdout);
                        free(paths);
                        return 0;
                } else if (!dashdash && strcmp(arg, "--force") == 0)
                        flags |= AISB_APPLY_FORCE;
                else if (!dashdash && strcmp(arg, "--dry-run") == 0)
                        flags |= AISB_APPLY_DRY_RUN;
                else if (!dashdash && strcmp(arg, "--json") == 0)
                        a.json = true;
                else if (!dashdash && strcmp(arg, "--") == 0)
                        dashdash = true;
                else if (!dashdash && arg[0] == '-') {
                        fprintf(stderr, "aisb: %s: unknown option '%s' (aisb %s --help)\n", undo ? "undo" : "apply", arg,
                                undo ? "undo" : "apply");
                        free(paths);
                        return EXIT_USAGE;
                } else if (!run && !dashdash && n == 0 && looks_like_run(arg))
                        run = arg;
                else if (undo) {
                        fprintf(stderr, "aisb: undo takes no path: it puts back the whole run ('%s')\n", arg);
                        free(paths);
                        return EXIT_USAGE;
                } else
                        paths[n++] = (char *) arg;
        }
        aisb_policy *policy = NULL;
        int code = cli_policy_new(&policy);
        if (code) {
                free(paths);
                return code;
        }
        aisb_error *err = NULL;
        char *name = NULL;
        int r = undo ? aisb_undo(policy, run, flags, on_action, &a, &name, &err)
                     : aisb_review_apply(policy, run, n ? (const char *const *) paths : NULL, flags, on_action, &a,
                                         &name, &err);
        aisb_policy_free(policy);
        free(paths);
        if (r < 0) {
                int e = aisb_error_code(err);
                return cli_fail(err, e == -ENOENT && run == NULL && n == 0 ? EXIT_NOT_ALL
                                     : e == -EINVAL || e == -ENOENT ? EXIT_USAGE
                                     : e == -EBUSY || e == -ESRCH ? EXIT_NOT_ALL : EXIT_AISB_FAILED);
        }
        const bool dry = flags & AISB_APPLY_DRY_RUN;
        fflush(stdout);
        fprintf(stderr, "aisb: %s ", undo ? "undo of" : "apply of");
        cli_put(stderr, name);
        fprintf(stderr, ": %zu path%s %s", a.done, a.done == 1 ? "" : "s",
                dry ? "would change" : undo ? "put back" : "applied");
        if (a.not_done)
                fprintf(stderr, ", %zu not (%s)", a.not_done,
                        flags & AISB_APPLY_FORCE ? "see above" : "see above; --force overrides a conflict");
        if (a.skipped)
                fprintf(stderr, ", %zu protected path%s skipped (name %s to apply)", a.skipped,
                        a.skipped == 1 ? "" : "s", a.skipped == 1 ? "it" : "them");
        fputc('\n', stderr);
        if (!undo && !dry && a.not_done == 0 && a.skipped == 0 && n == 0) {
                fputs("aisb: the layer stays until \"aisb discard ", stderr);
                cli_put(stderr, name);
                fputs("\"\n", stderr);
        }
        free(name);
        return r > 0 ? EXIT_NOT_ALL : 0;
}

int command_apply(int argc, char **argv)
{
        return act(argc, argv, false);
}

int command_undo(int argc, char **argv)
{
        return act(argc, argv, true);
}

int command_discard(int argc, char **argv)
{
        const char *run = NULL;
        for (int i = 0; i < argc; i++) {
                if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
                        printf("Usage: aisb discard [RUN]\n\n"
                               "Drop what a review run kept apart: its layer goes, the project stays as it\n"
                               "is. RUN: the run's name or its last 8 characters (the newest otherwise).\n");
                        return 0;
                } else if (argv[i][0] != '-' && !run)
                        run = argv[i];
                else {
                        fprintf(stderr, "aisb: discard: unknown argument '%s' (aisb discard --help)\n", argv[i]);
                        return EXIT_USAGE;
                }
        }
        aisb_policy *policy = NULL;
        int code = cli_policy_new(&policy);
        if (code)
                return code;
        aisb_ctx *ctx = NULL;
        aisb_error *err = NULL;
        char *name = NULL;
        int r = aisb_ctx_new(&ctx, &err);
        if (r >= 0)
                r = aisb_review_discard(ctx, policy, run, &name, &err);
        aisb_ctx_free(ctx);
        aisb_policy_free(policy);
        if (r < 0) {
                int e = aisb_error_code(err);
                return cli_fail(err, e == -ENOENT || e == -EBUSY ? EXIT_NOT_ALL : EXIT_AISB_FAILED);
        }
        fputs("aisb: discarded ", stderr);
        cli_put(stderr, name);
        fputc('\n', stderr);
        free(name);
        return 0;
}
