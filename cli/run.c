/* SPDX-License-Identifier: MIT */
/*
 * "aisb run" and "aisb build": parse the sandbox options, build the policy, make one
 * library call. Terminal handling (raw mode, window size) and signals live here, not in the
 * library: they belong to whoever owns the terminal.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <unistd.h>

#include "commands.h"
#include "options.h"

#define BUILD_TAIL_LINES 20

typedef struct build_display {
        bool terminal;
        bool quiet;
        bool verbose;
        bool raw; /* the terminal is in raw mode: log lines end with \r\n */
        const cli_flags *flags;
        bool line_open;
        aisb_ctx *ctx; /* for the answers to questions */
        /* The last lines of the steps' output that were not shown, for a failed build. */
        char *tail[BUILD_TAIL_LINES];
        size_t n_tail;
} build_display;

static void print_build_line(const char *line)
{
        fputs("build: ", stderr);
        cli_put(stderr, line);
        fputc('\n', stderr);
}

static void drop_build_tail(build_display *d)
{
        for (size_t i = 0; i < BUILD_TAIL_LINES; i++) {
                free(d->tail[i]);
                d->tail[i] = NULL;
        }
        d->n_tail = 0;
}

/* buildah's "COMMIT <name>", after a "[n/m] " stage prefix or none. */
static bool is_commit_line(const char *line)
{
        if (line[0] == '[') {
                const char *end = strstr(line, "] ");
                line = end ? end + 2 : line;
        }
        return strncmp(line, "COMMIT ", 7) == 0;
}

/* On a terminal: one line that shows the current step, rewritten in place. Otherwise the
 * steps as they begin and whether each came from the cache, for logs; the steps' own output
 * too with --verbose, and its last lines if the build fails. Either way through cli_put:
 * what a build prints is the Containerfile's commands' (a package's install script), and
 * none of its control strings may reach the terminal as one. */
static void on_build_line(build_display *d, aisb_log_level level, const char *line)
{
        if (d->quiet)
                return;
        /* A progress line redrawn with carriage returns shows what a terminal would: its
         * last state. */
        char *copy = strdup(line);
        if (!copy)
                return;
        size_t n = strlen(copy);
        while (n > 0 && copy[n - 1] == '\r')
                copy[--n] = 0;
        const char *cr = strrchr(copy, '\r');
        line = cr ? cr + 1 : copy;
        /* Kept when not shown as a line of its own: on a terminal, or without --verbose. */
        if (level < AISB_LOG_INFO && (d->terminal || !d->verbose)) {
                free(d->tail[d->n_tail % BUILD_TAIL_LINES]);
                d->tail[d->n_tail++ % BUILD_TAIL_LINES] = strdup(line);
        }
        /* The image is being written: every step succeeded, none of their output is a
         * failure's to show. */
        if (level >= AISB_LOG_INFO && is_commit_line(line))
                drop_build_tail(d);
        if (!d->terminal) {
                if (level >= AISB_LOG_INFO || d->verbose)
                        print_build_line(line);
                free(copy);
                return;
        }
        /* Shown as cli_put shows it, then cut to the width: an escape counts as the text it
         * became, and the line stays one line. */
        char *shown = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&shown, &size);
        if (f)
                cli_put(f, line);
        free(copy);
        if (!f || fclose(f) != 0) {
                free(shown);
                return;
        }
        struct winsize ws = {};
        size_t width = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10 ? ws.ws_col : 80;
        size_t cut = size < width - 8 ? size : width - 8;
        /* Not inside a character: no lone lead byte before the next line's \r. */
        while (cut > 0 && cut < size && ((unsigned char) shown[cut] & 0xc0) == 0x80)
                cut--;
        fprintf(stderr, "\r\033[Kbuild: %.*s", (int) cut, shown);
        free(shown);
        d->line_open = true;
}

/* The one rewritten line erased, so that whatever comes next starts a line of its own. */
static void close_build_line(build_display *d)
{
        if (d->line_open)
                fputs("\r\033[K", stderr);
        d->line_open = false;
}

/* After a failed build, the steps' last output lines that were not shown. */
static void end_build_display(build_display *d, bool failed)
{
        close_build_line(d);
        size_t first = d->n_tail > BUILD_TAIL_LINES ? d->n_tail - BUILD_TAIL_LINES : 0;
        for (size_t i = first; failed && i < d->n_tail; i++)
                if (d->tail[i % BUILD_TAIL_LINES])
                        print_build_line(d->tail[i % BUILD_TAIL_LINES]);
        drop_build_tail(d);
}

static void on_request(const char *text, void *userdata)
{
        cli_put_lines(stdout, text);
        fputc('\n', stdout);
}

static void print_build_help(void)
{
        printf("Usage: aisb build [OPTIONS]\n\n"
               "Build (or find) the sandbox image for these options and print its tag.\n\n"
               "Options:\n");
        cli_print_options(stdout, true);
}

static void print_run_help(void)
{
        printf("Usage: aisb run [OPTIONS] [HARNESS ARGS...]\n"
               "       aisb run [OPTIONS] -- COMMAND [ARGS...]\n\n"
               "Run the harness (pi) or COMMAND in a rootless podman sandbox: only the current\n"
               "directory is mounted (at /project), no host environment passes in unless named,\n"
               "no capabilities, no-new-privileges, seccomp, resource caps, and an egress\n"
               "ruleset installed by aisb-entrypoint before the command starts.\n\n"
               "Options are read until the first argument aisb does not know; that argument and\n"
               "all after it go to the harness. After --, they replace the command entirely.\n\n"
               "Options:\n");
        cli_print_options(stdout, false);
        printf("\nExit status: the command's own; %d for bad options or config, or a policy that\n"
               "cannot run; %d when aisb or podman failed; 128+N when stopped by signal N; 77 when\n"
               "the sandbox's ruleset or privilege drop could not be put in force (nothing ran);\n"
               "78 when the entrypoint refused its policy.\n",
               EXIT_USAGE, EXIT_AISB_FAILED);
}

/* --config must be known before the config is read, and the config before the flags. */
static const char *find_config_flag(int argc, char **argv)
{
        for (int i = 0; i < argc && strcmp(argv[i], "--") != 0; i++) {
                if (strncmp(argv[i], "--config=", 9) == 0)
                        return argv[i] + 9;
                if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
                        return argv[i + 1];
        }
        return NULL;
}

/* While the terminal is raw, a newline no longer returns the carriage: end lines with both. */
static void raw_log(aisb_log_level level, const char *message, void *userdata)
{
        const cli_flags *flags = userdata;
        if ((level == AISB_LOG_DEBUG && !flags->verbose) || (level == AISB_LOG_INFO && flags->quiet))
                return;
        fprintf(stderr, "aisb: %s", level == AISB_LOG_WARNING ? "warning: " : "");
        cli_put(stderr, message);
        fputs("\r\n", stderr);
}

/* A message of aisb's own goes on a line of its own: the build's line is erased first, so
 * that the message is not glued to it, and nothing is left open for the end of the display
 * to erase later (the sandbox's output by then). The steps' output is kept for a failure. */
static void display_log(build_display *d, aisb_log_level level, const char *message)
{
        if ((level == AISB_LOG_DEBUG && !d->verbose) || (level == AISB_LOG_INFO && d->quiet))
                return;
        close_build_line(d);
        (d->raw ? raw_log : cli_log)(level, message, (void *) d->flags);
}

static int on_event(const aisb_event *event, void *userdata)
{
        build_display *d = userdata;
        if (event->type == AISB_EVENT_LOG)
                display_log(d, event->level, event->text);
        else if (event->type == AISB_EVENT_BUILD_OUTPUT)
                on_build_line(d, event->level, event->text);
        else if (event->type == AISB_EVENT_ASK && d->raw) {
                close_build_line(d);
                cli_ask_on_terminal(d->ctx, event->question, STDIN_FILENO, stdout);
        } else if (event->type == AISB_EVENT_ASK)
                cli_ask_elsewhere(event->question, false);
        return 0;
}

typedef struct run_state {
        int signal_fd;
        int stop_signal;
} run_state;

static int on_control(aisb_control_request *request, void *userdata)
{
        run_state *st = userdata;
        struct signalfd_siginfo si;
        if (read(request->fd, &si, sizeof si) != (ssize_t) sizeof si)
                return AISB_CONTROL_NONE;
        if (si.ssi_signo == SIGWINCH) {
                struct winsize ws = {};
                if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) < 0)
                        return AISB_CONTROL_NONE;
                request->rows = ws.ws_row;
                request->cols = ws.ws_col;
                return AISB_CONTROL_RESIZE;
        }
        st->stop_signal = (int) si.ssi_signo;
        return AISB_CONTROL_STOP;
}

/* What a command's steps return to say that it goes on: any other value is its exit code. */
#define SANDBOX_GO_ON (-1)

/* How a command reads its argv: aisb build takes only the options that shape the image and
 * nothing after them; run and inspect take every option, then a command or the harness's
 * arguments. */
typedef struct sandbox_syntax {
        bool build_options; /* cli_parse_options()'s set for aisb build */
        void (*print_help)(void);
} sandbox_syntax;

static const sandbox_syntax run_syntax = { .build_options = false, .print_help = print_run_help };
static const sandbox_syntax build_syntax = { .build_options = true, .print_help = print_build_help };

/* The policy that the config and a command's options make, and its flags. SANDBOX_GO_ON with
 * *ret_policy the caller's, or the exit code (0 after --help) with nothing to free. */
static int sandbox_parse(int argc, char **argv, const sandbox_syntax *syntax, aisb_policy **ret_policy,
                         cli_flags *flags)
{
        aisb_error *err = NULL;
        aisb_policy *policy = NULL;
        int rest = 0;
        bool dashdash = false;

        int code = cli_policy_new(&policy);
        if (code)
                return code;
        /* A broken config must not hide --help: report it only after the flags. */
        int config_code = cli_load_config(policy, find_config_flag(argc, argv));
        code = cli_parse_options(argc, argv, syntax->build_options, policy, flags, &rest, &dashdash);
        if (flags->help) {
                syntax->print_help();
                code = 0;
        } else if (config_code || code) {
                code = config_code ? config_code : code;
        } else if (syntax->build_options || rest >= argc) {
                if (!syntax->build_options && dashdash) {
                        fprintf(stderr, "aisb: -- must be followed by a command\n");
                        code = EXIT_USAGE;
                } else {
                        code = SANDBOX_GO_ON;
                }
        } else {
                /* After --, the command; otherwise arguments for the harness. */
                int r = dashdash ? aisb_policy_set_command(policy, (const char *const *) argv + rest, &err)
                                 : aisb_policy_set_harness_args(policy, (const char *const *) argv + rest, &err);
                code = r < 0 ? cli_fail(err, EXIT_USAGE) : SANDBOX_GO_ON;
        }
        /* The harness's key, held by the gate unless the run passes it itself. */
        if (code == SANDBOX_GO_ON && !syntax->build_options && aisb_policy_hold_harness_keys(policy, NULL, &err) < 0)
                code = cli_fail(err, EXIT_USAGE);
        if (code != SANDBOX_GO_ON) {
                aisb_policy_free(policy);
                return code;
        }
        *ret_policy = policy;
        return SANDBOX_GO_ON;
}

typedef int (*policy_printer)(const aisb_policy *policy, char **ret_text, aisb_error **err);

/* A text about the policy on stdout, or the printer's failure. */
static int print_policy_text(const aisb_policy *policy, policy_printer printer)
{
        aisb_error *err = NULL;
        char *text = NULL;
        if (printer(policy, &text, &err) < 0)
                return cli_fail(err, EXIT_AISB_FAILED);
        /* The project's path and its allowlist's origins are in it. */
        cli_put_lines(stdout, text);
        free(text);
        return 0;
}

/* --print-policy, --print-containerfile, --print-ruleset, --print-entrypoint: that text
 * instead of the run or the build (the first of them asked); SANDBOX_GO_ON for none. */
static int print_requested(const aisb_policy *policy, const cli_flags *flags)
{
        policy_printer printer = flags->print_policy          ? aisb_policy_format
                                 : flags->print_containerfile ? aisb_policy_containerfile
                                 : flags->print_ruleset       ? aisb_policy_ruleset
                                 : flags->print_entrypoint    ? aisb_policy_entrypoint_plan
                                                              : NULL;
        return printer ? print_policy_text(policy, printer) : SANDBOX_GO_ON;
}

/* The library's context for a build or a run: its log and the build's steps through the
 * display, the dry run, the podman socket. SANDBOX_GO_ON or the exit code. */
static int sandbox_ctx_new(const cli_flags *flags, build_display *display, aisb_ctx **ret_ctx)
{
        aisb_error *err = NULL;
        aisb_ctx *ctx = NULL;
        if (aisb_ctx_new(&ctx, &err) < 0)
                return cli_fail(err, EXIT_AISB_FAILED);
        aisb_ctx_set_event_fn(ctx, on_event, display);
        display->ctx = ctx;
        if (flags->dry_run)
                aisb_ctx_set_dry_run(ctx, on_request, NULL);
        if (flags->socket && aisb_ctx_set_socket(ctx, flags->socket, &err) < 0) {
                aisb_ctx_free(ctx);
                return cli_fail(err, EXIT_AISB_FAILED);
        }
        *ret_ctx = ctx;
        return SANDBOX_GO_ON;
}

/* aisb build: the image, built or found, and its tag on stdout (a dry run shows its requests
 * instead). */
static int build_image(const aisb_policy *policy, const cli_flags *flags)
{
        build_display display = { .terminal = isatty(STDERR_FILENO), .quiet = flags->quiet,
                                  .verbose = flags->verbose, .flags = flags };
        aisb_ctx *ctx = NULL;
        int code = sandbox_ctx_new(flags, &display, &ctx);
        if (code != SANDBOX_GO_ON)
                return code;
        aisb_error *err = NULL;
        char *tag = NULL;
        int built = 0;
        int r = aisb_image_ensure(ctx, policy, &tag, &built, &err);
        end_build_display(&display, r < 0);
        if (r < 0) {
                code = cli_fail(err, EXIT_AISB_FAILED);
        } else {
                if (!flags->dry_run)
                        printf("%s\n", tag);
                code = 0;
        }
        free(tag);
        aisb_ctx_free(ctx);
        return code;
}

/* aisb run: the image, then the sandbox on this terminal until its command ends; its exit
 * code is the command's. */
static int run_sandbox(const aisb_policy *policy, const cli_flags *flags)
{
        build_display display = { .terminal = isatty(STDERR_FILENO), .quiet = flags->quiet,
                                  .verbose = flags->verbose, .flags = flags };
        aisb_ctx *ctx = NULL;
        aisb_io *io = NULL;
        aisb_error *err = NULL;
        int code = sandbox_ctx_new(flags, &display, &ctx);
        if (code != SANDBOX_GO_ON)
                return code;

        /* The image first, with signals at their defaults so ^C ends a long build. */
        char *tag = NULL;
        int built = 0;
        /* A dry run of a run shows the image's requests with the rest of its plan. */
        int r = flags->dry_run ? 0 : aisb_image_ensure(ctx, policy, &tag, &built, &err);
        end_build_display(&display, r < 0);
        free(tag);
        if (r < 0) {
                code = cli_fail(err, EXIT_AISB_FAILED);
                goto out;
        }

        if (aisb_io_new(&io, &err) < 0) {
                code = cli_fail(err, EXIT_AISB_FAILED);
                goto out;
        }
        /* What reaches a terminal of ours loses the control strings that would let the agent
         * set its title, use its clipboard or make it type into the sandbox. */
        if (!flags->unfiltered_output)
                aisb_io_set_output_filter(io, (isatty(STDOUT_FILENO) ? AISB_STREAM_STDOUT : 0) |
                                                      (isatty(STDERR_FILENO) ? AISB_STREAM_STDERR : 0));
        /* From create to remove, signals arrive through a signalfd, so a ^C or a SIGTERM
         * removes the sandbox instead of killing aisb and leaving it behind. */
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGWINCH);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        signal(SIGPIPE, SIG_IGN);
        run_state st = { .signal_fd = signalfd(-1, &mask, SFD_CLOEXEC) };
        if (st.signal_fd >= 0)
                aisb_io_set_control(io, st.signal_fd, on_control, &st);

        bool terminal = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO) && !flags->dry_run;
        struct termios saved;
        bool raw = false;
        if (terminal && tcgetattr(STDIN_FILENO, &saved) == 0) {
                struct winsize ws = {};
                (void) ioctl(STDIN_FILENO, TIOCGWINSZ, &ws);
                aisb_io_set_terminal(io, ws.ws_row, ws.ws_col);
                struct termios t = saved;
                cfmakeraw(&t);
                raw = tcsetattr(STDIN_FILENO, TCSADRAIN, &t) == 0;
                display.raw = raw;
        }
        int exit_code = 0;
        r = aisb_run(ctx, policy, io, &exit_code, &err);
        display.raw = false;
        if (raw)
                (void) tcsetattr(STDIN_FILENO, TCSADRAIN, &saved);
        end_build_display(&display, r < 0); /* the gate's image, if its build failed */
        if (st.signal_fd >= 0)
                close(st.signal_fd);
        if (r == -ECANCELED)
                code = 128 + st.stop_signal;
        else if (r == -EPIPE) {
                /* The output's reader went away (| head): the sandbox is gone, and aisb ends
                 * quietly as a program killed by SIGPIPE would, as the shell expects. */
                aisb_error_free(err);
                code = 128 + SIGPIPE;
        } else if (r < 0)
                /* The policy refused before anything started (a bad entry, a key the run
                 * must pass): a usage error. */
                code = cli_fail(err, r == -EINVAL || r == -ENOKEY ? EXIT_USAGE : EXIT_AISB_FAILED);
        else
                code = exit_code;
out:
        aisb_io_free(io);
        aisb_ctx_free(ctx);
        return code;
}

/* aisb run and aisb build: the options parsed into a policy, then the --print-* text asked
 * for, or else the command's own work. */
static int sandbox_command(int argc, char **argv, const sandbox_syntax *syntax,
                           int (*work)(const aisb_policy *policy, const cli_flags *flags))
{
        aisb_policy *policy = NULL;
        cli_flags flags = {};
        int code = sandbox_parse(argc, argv, syntax, &policy, &flags);
        if (code == SANDBOX_GO_ON)
                code = print_requested(policy, &flags);
        if (code == SANDBOX_GO_ON)
                code = work(policy, &flags);
        aisb_policy_free(policy);
        return code;
}

int command_run(int argc, char **argv)
{
        return sandbox_command(argc, argv, &run_syntax, run_sandbox);
}

int command_build(int argc, char **argv)
{
        return sandbox_command(argc, argv, &build_syntax, build_image);
}

/* aisb inspect, as text or as JSON: what aisb run with these options would do. */
static int inspect_policy(int argc, char **argv, policy_printer printer)
{
        aisb_policy *policy = NULL;
        cli_flags flags = {};
        int code = sandbox_parse(argc, argv, &run_syntax, &policy, &flags);
        if (code == SANDBOX_GO_ON)
                code = print_policy_text(policy, printer);
        aisb_policy_free(policy);
        return code;
}

int command_inspect(int argc, char **argv)
{
        if (argc > 0 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0)) {
                printf("Usage: aisb inspect [--json] [OPTIONS] [-- COMMAND...]\n\n"
                       "What \"aisb run\" with these options would do: the policy, image, mounts,\n"
                       "environment names (never values), the allowlist with each entry's origin,\n"
                       "and what would be bridged into the harness. OPTIONS are aisb run's.\n\n"
                       "  --json  the run's plan as JSON instead: image, name, network, protected\n"
                       "          paths, environment names, the entrypoint's argv and the create\n"
                       "          request (values redacted; the gate's port a placeholder, its\n"
                       "          key and CA stand-ins)\n");
                return 0;
        }
        /* --json first, before the run's options. */
        if (argc > 0 && strcmp(argv[0], "--json") == 0)
                return inspect_policy(argc - 1, argv + 1, aisb_policy_inspect_json);
        return inspect_policy(argc, argv, aisb_policy_inspect);
}

/* What "aisb kube" is asked for besides aisb run's options. */
typedef struct kube_request {
        aisb_kube_options options;
        bool push;
} kube_request;

typedef struct kube_choice {
        const char *word;
        unsigned flags;
} kube_choice;

/* One of aisb kube's own options: a row drives both its parsing and its line of --help. A
 * choice sets, within mask, the flags of the word given; a switch sets mask; the others
 * have a parser, which returns 0 or EXIT_USAGE after saying why. */
typedef struct kube_option {
        cli_option base;
        unsigned mask;
        kube_choice choices[4];
        const char *expected; /* what the usage error says a choice takes */
        int (*parse)(kube_request *k, const char *value);
} kube_option;

static int kube_parse_image_repo(kube_request *k, const char *value)
{
        k->options.image_repo = value;
        return 0;
}

static int kube_parse_push(kube_request *k, const char *value)
{
        k->push = true;
        return 0;
}

static int kube_parse_timeout(kube_request *k, const char *value)
{
        char *end = NULL;
        errno = 0;
        unsigned long long timeout = strtoull(value, &end, 10);
        if (errno || !*value || *end || value[0] == '-' || timeout == 0 || timeout > 31536000ULL) {
                fprintf(stderr, "aisb: --timeout %s: give seconds, 1 to 31536000\n", value);
                return EXIT_USAGE;
        }
        k->options.timeout_s = timeout;
        return 0;
}

static const kube_option kube_option_table[] = {
        { { "as", "pod|sandbox", "the sandbox as a Pod (default) or as a Sandbox of kubernetes-sigs/agent-sandbox "
                                 "around the same pod spec" },
          AISB_KUBE_AS_SANDBOX, { { "pod", 0 }, { "sandbox", AISB_KUBE_AS_SANDBOX } }, "pod or sandbox" },
        { { "target", "cluster|podman", "podman: for \"podman kube play\" on this machine: no Service or NetworkPolicy; "
                                        "the gate at a fixed address of an internal network (docs/kubernetes.md has the "
                                        "commands)" },
          AISB_KUBE_PODMAN, { { "cluster", 0 }, { "podman", AISB_KUBE_PODMAN } }, "cluster or podman" },
        { { "part", "all|gate|sandbox", "only the gate's objects, or only the sandbox's" },
          AISB_KUBE_GATE_ONLY | AISB_KUBE_SANDBOX_ONLY,
          { { "all", 0 }, { "gate", AISB_KUBE_GATE_ONLY }, { "sandbox", AISB_KUBE_SANDBOX_ONLY } },
          "gate or sandbox (or all)" },
        { { "netfilter", "init|none", "init: also an init container that installs the default-drop ruleset in the pod "
                                      "(root and NET_ADMIN: a privileged namespace)" },
          AISB_KUBE_NETFILTER_INIT, { { "init", AISB_KUBE_NETFILTER_INIT }, { "none", 0 } }, "init or none" },
        { { "image-repo", "REPO", "the registry path a cluster pulls the images from (default: the local tags, never "
                                  "pulled)" },
          .parse = kube_parse_image_repo },
        { { "push", NULL, "build (or find) the images and push them to REPO first" }, .parse = kube_parse_push },
        { { "insecure-registry", NULL, "REPO speaks plain HTTP, or its certificate is not trusted" },
          .mask = AISB_KUBE_TLS_NO_VERIFY },
        { { "timeout", "SECONDS", "the pod's activeDeadlineSeconds" }, .parse = kube_parse_timeout },
        {},
};

/* The row for an argument: --NAME, or --NAME=VALUE for an option with a value. */
static const kube_option *kube_option_find(const char *arg)
{
        if (strncmp(arg, "--", 2) != 0)
                return NULL;
        const char *name = arg + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t) (eq - name) : strlen(name);
        for (const kube_option *o = kube_option_table; o->base.name; o++)
                if (strlen(o->base.name) == len && strncmp(o->base.name, name, len) == 0 && (o->base.argument || !eq))
                        return o;
        return NULL;
}

static int kube_option_apply(kube_request *k, const kube_option *o, const char *value)
{
        if (o->parse)
                return o->parse(k, value);
        if (!o->base.argument) {
                k->options.flags |= o->mask;
                return 0;
        }
        for (const kube_choice *c = o->choices; c->word; c++)
                if (strcmp(value, c->word) == 0) {
                        k->options.flags = (k->options.flags & ~o->mask) | c->flags;
                        return 0;
                }
        fprintf(stderr, "aisb: --%s %s: %s\n", o->base.name, value, o->expected);
        return EXIT_USAGE;
}

/* aisb kube's own options taken out of argv; the rest (aisb run's, and the command after
 * "--", which is never read as ours) into rest[*ret_n]. 0 or EXIT_USAGE. */
static int kube_split_args(int argc, char **argv, kube_request *k, char **rest, int *ret_n)
{
        bool after_dashdash = false;
        int n = 0;
        for (int i = 0; i < argc; i++) {
                const kube_option *o = after_dashdash ? NULL : kube_option_find(argv[i]);
                if (!o) {
                        after_dashdash |= strcmp(argv[i], "--") == 0;
                        rest[n++] = argv[i];
                        continue;
                }
                const char *eq = strchr(argv[i], '=');
                const char *value = !o->base.argument ? NULL : eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
                if (o->base.argument && !value) {
                        fprintf(stderr, "aisb: --%s needs a value\n", o->base.name);
                        return EXIT_USAGE;
                }
                int code = kube_option_apply(k, o, value);
                if (code)
                        return code;
        }
        *ret_n = n;
        return 0;
}

static void kube_help(void)
{
        printf("Usage: aisb kube [--as pod|sandbox] [--target cluster|podman] [--part all|gate|sandbox]\n"
               "                 [--netfilter init|none] [--push [--insecure-registry]]\n"
               "                 [--image-repo REPO] [--timeout SECONDS] [OPTIONS] [-- COMMAND...]\n\n"
               "The sandbox \"aisb run\" with these OPTIONS would start, as Kubernetes objects on\n"
               "stdout (JSON documents after --- lines, which YAML reads): the gate's ConfigMap,\n"
               "Deployment, Service and NetworkPolicy, the workspace's PersistentVolumeClaim, the\n"
               "sandbox's NetworkPolicy and its Pod. Environment variables are taken by name from\n"
               "a Secret named like the pod, never by value. docs/kubernetes.md has the details.\n\n");
        for (const kube_option *o = kube_option_table; o->base.name; o++)
                cli_print_option(stdout, &o->base);
        printf("\nExit status: 0; %d for bad options or a policy a cluster cannot enforce as it\n"
               "says (one line says which); %d when aisb failed.\n",
               EXIT_USAGE, EXIT_AISB_FAILED);
}

/* The images first: objects that name images nobody can pull are no use. */
static int kube_push_images(const aisb_policy *policy, const kube_request *k, cli_flags *flags)
{
        aisb_ctx *ctx = NULL;
        aisb_error *err = NULL;
        int r = aisb_ctx_new(&ctx, &err);
        if (r >= 0) {
                aisb_ctx_set_event_fn(ctx, cli_on_event, flags);
                if (flags->socket)
                        r = aisb_ctx_set_socket(ctx, flags->socket, &err);
        }
        if (r >= 0)
                r = aisb_kube_push(ctx, policy, &k->options, &err);
        int code = r < 0 ? cli_fail(err, r == -EINVAL ? EXIT_USAGE : EXIT_AISB_FAILED) : 0;
        aisb_ctx_free(ctx);
        return code;
}

static int kube_print(const aisb_policy *policy, const kube_request *k)
{
        char *text = NULL;
        aisb_error *err = NULL;
        int r = aisb_policy_kube(policy, &k->options, &text, &err);
        if (r < 0)
                return cli_fail(err, r == -EOPNOTSUPP || r == -EINVAL ? EXIT_USAGE : EXIT_AISB_FAILED);
        fputs(text, stdout);
        free(text);
        if (fflush(stdout) != 0) {
                fprintf(stderr, "aisb: writing the objects: %s\n", strerror(errno));
                return EXIT_AISB_FAILED;
        }
        return 0;
}

/* aisb kube: its own options (kube_option_table) are taken out first; the rest are aisb
 * run's, so the same options name the same sandbox. */
int command_kube(int argc, char **argv)
{
        if (argc > 0 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0)) {
                kube_help();
                return 0;
        }
        kube_request k = {};
        char **rest = calloc((size_t) argc + 1, sizeof *rest);
        int n = 0, code = 0;
        if (!rest) {
                fprintf(stderr, "aisb: out of memory\n");
                return EXIT_AISB_FAILED;
        }
        code = kube_split_args(argc, argv, &k, rest, &n);
        aisb_policy *policy = NULL;
        aisb_error *err = NULL;
        cli_flags flags = {};
        int after = 0;
        bool dashdash = false;
        if (code == 0)
                code = cli_policy_new(&policy);
        int config_code = code == 0 ? cli_load_config(policy, find_config_flag(n, rest)) : 0;
        if (code == 0)
                code = cli_parse_options(n, rest, false, policy, &flags, &after, &dashdash);
        if (code == 0 && config_code)
                code = config_code;
        if (code == 0 && dashdash && after >= n) {
                fprintf(stderr, "aisb: -- must be followed by a command\n");
                code = EXIT_USAGE;
        }
        if (code == 0 && after < n) {
                int r = dashdash ? aisb_policy_set_command(policy, (const char *const *) rest + after, &err)
                                 : aisb_policy_set_harness_args(policy, (const char *const *) rest + after, &err);
                if (r < 0)
                        code = cli_fail(err, EXIT_USAGE);
        }
        if (code == 0 && (k.push || (k.options.flags & AISB_KUBE_TLS_NO_VERIFY)) && !k.options.image_repo) {
                fprintf(stderr, "aisb: --push needs --image-repo REPO: where to push the images\n");
                code = EXIT_USAGE;
        }
        if (code == 0 && k.push)
                code = kube_push_images(policy, &k, &flags);
        if (code == 0)
                code = kube_print(policy, &k);
        aisb_policy_free(policy);
        free(rest);
        return code;
}
