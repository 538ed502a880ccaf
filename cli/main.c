/* SPDX-License-Identifier: MIT */
/* aisb: a command table over libaisb. */
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include "aisb.h"
#include "commands.h"
#include "options.h"

typedef struct command {
        const char *name;
        int (*run)(int argc, char **argv);
        const char *help;
} command;

static const command commands[] = {
        { "run", command_run, "run the harness or a command in a sandbox" },
        { "build", command_build, "build the sandbox image without running" },
        { "gate", command_gate, "the egress gate: up, status, logs, down" },
        { "ps", command_ps, "list sandboxes and gates" },
        { "clean", command_clean, "remove what aisb left behind (only aisb's own)" },
        { "log", command_log, "the session log: one record per run" },
        { "inspect", command_inspect, "what a run would be: policy, mounts, allowlist, bridge" },
        { "kube", command_kube, "the same sandbox as Kubernetes objects (printed, never applied)" },
        { "diff", command_diff, "what a review run (run --review) changed, kept apart" },
        { "apply", command_apply, "take a review run's changes (all, or some paths) into the project" },
        { "discard", command_discard, "drop a review run's changes" },
        { "undo", command_undo, "put the project back as it was before its last plain run" },
        { "ask", command_ask, "the questions your runs wait on (names no entry lists), and answers" },
        { "allow", command_allow, "the allowlist lines the last run was refused (--write to add them)" },
        { "doctor", command_doctor, "check this host, with the fix for each problem" },
        { "skill-lint", command_skill_lint, "credentials in ~/.agents, which every sandbox reads" },
        { "alias", command_alias, "print (or --install) alias pi='aisb run'" },
        {},
};

static void usage(FILE *out)
{
        fprintf(out, "Usage: aisb COMMAND [OPTIONS]\n\nCommands:\n");
        for (const command *c = commands; c->name; c++)
                fprintf(out, "  %-11s %s\n", c->name, c->help);
        fprintf(out, "\n  --help      this text; aisb COMMAND --help for a command's options\n"
                     "  --version   print the version\n");
}

/* aisb holds secrets: --env values, the create request that carries them. Another process of
 * the same user must not read them out of its memory or environment (ptrace, /proc/PID/mem,
 * /proc/PID/environ), and a crash must not write them to a core file. Process-wide, so here
 * and not in the library. A program that execs (the podman service aisb may start) is
 * dumpable again; the soft core limit of 0 it inherits is most systems' default anyway. */
static void protect_secrets(void)
{
        (void) prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
        struct rlimit core;
        if (getrlimit(RLIMIT_CORE, &core) == 0) {
                core.rlim_cur = 0;
                (void) setrlimit(RLIMIT_CORE, &core);
        }
}

int main(int argc, char **argv)
{
        protect_secrets();
        if (argc < 2) {
                usage(stderr);
                return EXIT_USAGE;
        }
        if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
            strcmp(argv[1], "help") == 0) {
                usage(stdout);
                return 0;
        }
        if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
                printf("aisb %s\n", aisb_version());
                return 0;
        }
        for (const command *c = commands; c->name; c++)
                if (strcmp(argv[1], c->name) == 0)
                        return c->run(argc - 2, argv + 2);
        fprintf(stderr, "aisb: unknown command '%s' (see aisb --help)\n", argv[1]);
        return EXIT_USAGE;
}
