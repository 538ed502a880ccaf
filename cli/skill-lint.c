/* SPDX-License-Identifier: MIT */
/* "aisb skill-lint [DIR] [--json] [--no-history] [OPTIONS]": credentials in the directory
 * every sandbox reads at /home/sandbox/.agents (docs/skill-lint.md). Exits 1 when something
 * is found, 0 when nothing is, 2 for bad usage, 125 when the scan failed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "commands.h"
#include "json-output.h"
#include "options.h"

static void usage(void)
{
        printf("Usage: aisb skill-lint [DIR] [--json] [--no-history] [OPTIONS]\n\n"
               "Look for credentials in DIR, by default the directory every run mounts read-only at\n"
               "/home/sandbox/.agents (~/.agents, --agents-dir DIR, none with --no-agents): API keys\n"
               "and tokens of well-known formats, private keys, JWTs, passwords in URLs and in\n"
               "config files, and random-looking strings. Its files are read without following\n"
               "links; the history of each git repository in it is read by git inside a sandbox\n"
               "(no network, read-only; needs the image: aisb build), never on the host.\n"
               "Each finding: PATH:LINE: KIND: MASKED (COMMIT:PATH:LINE for history), the value\n"
               "masked to its first characters and length.\n\n"
               "  --json        one JSON object per finding, then a summary object\n"
               "  --no-history  the files only: no sandbox for the history\n"
               "  --agents-dir DIR, --no-agents, --config FILE, --socket PATH: as for aisb run\n"
               "  (and the image options, which choose the history sandbox's image)\n\n"
               "Exit status: 1 when something is found, 0 when nothing is, 2 for bad usage,\n"
               "125 when the scan failed.\n");
}

typedef struct output {
        bool json;
} output;

static void print_finding(const aisb_skill_lint_finding *f, void *userdata)
{
        const char *commit = f->commit, *path = f->path, *kind = f->kind, *masked = f->masked;
        unsigned long line = f->line;
        const output *o = userdata;
        if (o->json) {
                json_object *j = json_object_new_object();
                json_object_object_add(j, "commit", commit ? json_object_new_string(commit) : NULL);
                json_object_object_add(j, "path", json_object_new_string(path));
                json_object_object_add(j, "line", json_object_new_int64((int64_t) line));
                json_object_object_add(j, "kind", json_object_new_string(kind));
                json_object_object_add(j, "masked", json_object_new_string(masked));
                /* A file name is whatever the directory holds: no control reaches the
                 * terminal in JSON either. */
                cli_print_json(stdout, j);
                json_object_put(j);
                return;
        }
        if (commit)
                printf("%.12s:", commit);
        /* A file name is whatever the directory holds: no control character reaches the terminal. */
        cli_put(stdout, path);
        printf(":%lu: %s: ", line, kind);
        cli_put(stdout, masked);
        putchar('\n');
}

/* Whether option takes its value as the next argument (as an option of run). */
static bool takes_value(const char *arg)
{
        return strncmp(arg, "--", 2) == 0 && !strchr(arg, '=') && cli_option_takes_value(arg + 2);
}

int command_skill_lint(int argc, char **argv)
{
        output out = {};
        unsigned flags = 0;
        const char *dir_arg = NULL;
        /* Its own options and DIR out; the rest (run's options) to the policy. */
        char **rest = calloc((size_t) argc + 1, sizeof *rest);
        int n_rest = 0;
        if (!rest)
                return EXIT_AISB_FAILED;
        for (int i = 0; i < argc; i++) {
                const char *a = argv[i];
                if (strcmp(a, "--json") == 0)
                        out.json = true;
                else if (strcmp(a, "--no-history") == 0)
                        flags |= AISB_SKILL_LINT_NO_HISTORY;
                else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
                        usage();
                        free(rest);
                        return 0;
                } else if (a[0] != '-' && !dir_arg)
                        dir_arg = a;
                else if (a[0] != '-') {
                        fprintf(stderr, "aisb: skill-lint takes one directory, got '%s' too\n", a);
                        free(rest);
                        return EXIT_USAGE;
                } else {
                        rest[n_rest++] = argv[i];
                        if (takes_value(a) && i + 1 < argc)
                                rest[n_rest++] = argv[++i];
                }
        }
        aisb_policy *policy = NULL;
        cli_flags cf = { .quiet = true };
        int code = cli_policy_options_only(n_rest, rest, "skill-lint", &policy, &cf);
        free(rest);
        if (code)
                return code;

        aisb_error *err = NULL;
        char *dir = NULL;
        struct stat st;
        if (dir_arg) {
                if (stat(dir_arg, &st) < 0 || !S_ISDIR(st.st_mode)) {
                        fprintf(stderr, "aisb: skill-lint: %s is not a directory\n", dir_arg);
                        aisb_policy_free(policy);
                        return EXIT_USAGE;
                }
                dir = strdup(dir_arg);
        } else if (aisb_policy_agents_dir(policy, &dir, &err) < 0) {
                /* Nothing is mounted: nothing to find. */
                code = aisb_error_code(err) == -ENOENT ? 0 : EXIT_AISB_FAILED;
                fputs("aisb: ", stderr);
                cli_put(stderr, aisb_error_message(err));
                fputs(code ? "\n" : ": nothing to lint\n", stderr);
                aisb_error_free(err);
                aisb_policy_free(policy);
                return code;
        }
        aisb_ctx *ctx = NULL;
        code = dir ? cli_ctx_for(&cf, &ctx) : EXIT_AISB_FAILED;
        char *summary = NULL;
        if (!code) {
                int found = aisb_skill_lint(ctx, policy, dir, flags, print_finding, &out, &summary, &err);
                if (found < 0)
                        code = cli_fail(err, EXIT_AISB_FAILED);
                else {
                        if (out.json) {
                                json_object *j = json_object_new_object();
                                json_object_object_add(j, "summary", json_object_new_string(summary ? summary : ""));
                                json_object_object_add(j, "findings", json_object_new_int(found));
                                cli_print_json(stdout, j);
                                json_object_put(j);
                        } else {
                                fputs("skill-lint: ", stdout);
                                cli_put(stdout, summary ? summary : "");
                                putchar('\n');
                        }
                        code = found > 0 ? 1 : 0;
                }
        }
        free(summary);
        free(dir);
        aisb_ctx_free(ctx);
        aisb_policy_free(policy);
        return code;
}
