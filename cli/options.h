/* SPDX-License-Identifier: MIT */
/* The sandbox options shared by "aisb run" and "aisb build": every policy key of libaisb
 * (aisb_policy_key_at(), which also gives its help and default) is an option of the same
 * name, and a small table adds the CLI's own. Both drive parsing and --help. */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "aisb.h"

/* Exit codes of the CLI itself; a run otherwise exits with the command's own code. */
#define EXIT_USAGE 2
#define EXIT_AISB_FAILED 125

/* An option of the CLI's own, never a policy key: how to run, what to print. */
typedef struct cli_option {
        const char *name;     /* long name without dashes */
        const char *argument; /* NULL: a switch */
        const char *help;
        bool build_ok;        /* accepted by "aisb build" */
} cli_option;

typedef struct cli_flags {
        bool strict_args;
        bool dry_run;
        bool print_policy;
        bool print_containerfile;
        bool print_ruleset;
        bool print_entrypoint;
        bool help;
        bool quiet;
        bool verbose; /* log level debug too: host facts podman repeats on every run */
        bool unfiltered_output; /* no terminal filter on the sandbox's output */
        const char *config;
        const char *socket;
        bool env_value_warned; /* said once that --env NAME=VALUE shows the value */
} cli_flags;

/* Whether --NAME is an option of "aisb run" that takes its value as the next argument. */
bool cli_option_takes_value(const char *name);

/*
 * Parse sandbox options from argv[0..argc), applying them to policy. Stops at the first
 * positional argument or unknown option (an error under --strict-args), or after "--".
 * *ret_rest is the index of the first unconsumed argument; *ret_dashdash says whether "--"
 * ended the options. Returns 0 or an exit code after printing one line.
 */
int cli_parse_options(int argc, char **argv, bool for_build, aisb_policy *policy,
                      cli_flags *flags, int *ret_rest, bool *ret_dashdash);

void cli_print_options(FILE *out, bool for_build);
/* One option of a command's own table, as the help above lays it out. */
void cli_print_option(FILE *out, const cli_option *o);

/* The user's policy: the library's defaults, then what this process says (the current
 * directory, $AISB_*: aisb_policy_apply_environment()). Prints and returns an exit code on
 * failure, 0 otherwise. */
int cli_policy_new(aisb_policy **ret_policy);

/* Load the user's config file into policy (before flags). Prints and returns an exit code
 * on failure, 0 otherwise. */
int cli_load_config(aisb_policy *policy, const char *explicit_path);

/* For commands that take sandbox options and nothing else (gate, doctor): a policy from the
 * config and argv, strict. Prints and returns an exit code on failure, 0 otherwise. */
int cli_policy_options_only(int argc, char **argv, const char *command, aisb_policy **ret_policy,
                            cli_flags *flags);
/* A context logging through cli_on_event, on flags->socket when given. */
int cli_ctx_for(const cli_flags *flags, aisb_ctx **ret_ctx);

/* Print "aisb: message" for err and return code. */
int cli_fail(aisb_error *err, int code);
/* "aisb: message" on stderr, as flags (may be NULL) say: debug with --verbose only, info
 * unless --quiet, warnings always. */
void cli_log(aisb_log_level level, const char *message, void *userdata);
/* The library's events for a command that shows its messages only: cli_log for each
 * AISB_EVENT_LOG; userdata the const cli_flags. */
int cli_on_event(const aisb_event *event, void *userdata);
/* Write s with every control character (C0, DEL, and C1 in UTF-8) shown as \xNN: what the
 * library says can carry names from places the agent writes (a file name in .ai-sandbox, a
 * host name it asked the gate for), and none of it may reach the terminal as a control. */
void cli_put(FILE *out, const char *s);
/* The same, but the control characters in keep (tabs and newlines, say) stay as they are. */
void cli_put_keeping(FILE *out, const char *s, const char *keep);
/* The same for a text of lines: its newlines stay. */
void cli_put_lines(FILE *out, const char *text);
bool cli_color(int fd);

/* A question on the run's terminal (raw): drawn, answered by one key, the screen put back
 * (ask.c). */
void cli_ask_on_terminal(aisb_ctx *ctx, const aisb_question *q, int in_fd, FILE *out);
/* A question with no terminal to ask on: a line on stderr saying how to answer it. */
void cli_ask_elsewhere(const aisb_question *q, bool raw);
