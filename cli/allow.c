/* SPDX-License-Identifier: MIT */
/* aisb allow: learn, then lock. The allowlist lines the last run of this project was refused,
 * printed for review, and with --write added to the user's allowlist or the project's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "options.h"

typedef struct proposals {
        char **lines;
        size_t n;
        int failed;
} proposals;

static void collect(const char *line, void *userdata)
{
        proposals *p = userdata;
        char **grown = realloc(p->lines, (p->n + 2) * sizeof *grown);
        char *copy = grown ? strdup(line) : NULL;
        if (grown)
                p->lines = grown;
        if (!copy) {
                p->failed = 1;
                return;
        }
        p->lines[p->n++] = copy;
        p->lines[p->n] = NULL;
}

int command_allow(int argc, char **argv)
{
        const char *where = NULL;
        for (int i = 0; i < argc; i++) {
                if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
                        printf("Usage: aisb allow [--write user|project]\n\n"
                               "The allowlist lines the last run of this project (the current directory)\n"
                               "was refused: each name the gate refused, or the request itself where the\n"
                               "gate saw it whole (\"api.example.com GET /v1/models\"). Printed for review;\n"
                               "--write user adds them to ~/.config/ai-sandbox/allow, --write project to\n"
                               "the project's .ai-sandbox/allow. Names only: an address the gate refused is\n"
                               "shown, never proposed or written.\n");
                        return 0;
                }
                if (strcmp(argv[i], "--write") == 0 && i + 1 < argc &&
                    (strcmp(argv[i + 1], "user") == 0 || strcmp(argv[i + 1], "project") == 0)) {
                        where = argv[++i];
                        continue;
                }
                fprintf(stderr, "aisb: allow: unknown option '%s' (aisb allow --help)\n", argv[i]);
                return EXIT_USAGE;
        }
        aisb_policy *policy = NULL;
        int code = cli_policy_new(&policy);
        if (code)
                return code;
        aisb_error *err = NULL;
        proposals p = {};
        long long when = 0;
        proposals addresses = {};
        int shared = 0;
        int r = aisb_allow_proposals(policy, collect, &p, &when, &err);
        if (r >= 0)
                r = aisb_allow_refused_addresses(policy, collect, &addresses, &shared, &err);
        if (r < 0) {
                code = cli_fail(err, EXIT_AISB_FAILED);
        } else if (p.failed || addresses.failed) {
                fprintf(stderr, "aisb: out of memory\n");
                code = EXIT_AISB_FAILED;
        } else if (p.n == 0 && addresses.n == 0) {
                fprintf(stderr, "aisb: the last run of this project was refused nothing\n");
        } else {
                time_t t = (time_t) when;
                char stamp[32];
                strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", localtime(&t));
                printf("# what the run of %s was refused\n", stamp);
                if (shared && p.n)
                        printf("# its gate was shared: any local user, or another run with the same allowlist,\n"
                               "# may have asked for some of these; check each before --write\n");
                for (size_t i = 0; i < p.n; i++) {
                        cli_put(stdout, p.lines[i]);
                        putchar('\n');
                }
                /* Reported, never proposed, so never written either. */
                for (size_t i = 0; i < addresses.n; i++) {
                        printf("# not proposed: ");
                        cli_put(stdout, addresses.lines[i]);
                        printf(" (an address entry opens the ruleset to it, past the gate; add it by hand if "
                               "that is meant)\n");
                }
                if (where && p.n == 0)
                        fprintf(stderr, "aisb: nothing to add to the %s allowlist\n", where);
                else if (where && aisb_allowlist_append(policy, strcmp(where, "project") == 0 ? AISB_ALLOWLIST_PROJECT : 0,
                                                        (const char *const *) p.lines, &err) < 0)
                        code = cli_fail(err, EXIT_USAGE);
                else if (where)
                        fprintf(stderr, "aisb: added to the %s allowlist\n", where);
        }
        for (size_t i = 0; i < p.n; i++)
                free(p.lines[i]);
        free(p.lines);
        for (size_t i = 0; i < addresses.n; i++)
                free(addresses.lines[i]);
        free(addresses.lines);
        aisb_policy_free(policy);
        return code;
}
