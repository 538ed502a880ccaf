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

/* The CLI's own options. The policy's (--memory, --net, ...) are libaisb's keys: their
 * names, values, help and defaults come from aisb_policy_key_at(), never from here. */
static const cli_option cli_options[] = {
        { "strict-args", NULL, "an unknown option is an error instead of a harness argument", true },
        { "dry-run", NULL, "print the API requests of the run's plan (secret values redacted); start nothing", true },
        { "print-policy", NULL, "print the effective policy as key=value lines and exit", true },
        { "print-containerfile", NULL, "print the generated Containerfile and exit", true },
        { "print-ruleset", NULL, "print the egress ruleset (nft syntax) and exit", false },
        { "print-entrypoint", NULL, "print the entrypoint's plan (steps, capabilities, seccomp) and exit", false },
        { "config", "FILE", "read this config file instead of ~/.config/ai-sandbox/config", true },
        { "socket", "PATH", "use this podman API socket", true },
        { "quiet", NULL, "no progress messages", true },
        { "verbose", NULL, "also what the host says on every run (podman's warnings about it), and every line of an image build when not on a terminal", true },
        { "unfiltered-output", NULL, "let the sandbox's control strings reach this terminal: OSC (title, clipboard write and read, links, files), DCS (tmux passthrough, queries), SOS, PM, APC, ESC k", false },
        { "help", NULL, "show this help", true },
        {},
};

/* An option on the command line: a policy key, or one of the CLI's own. */
typedef struct option_ref {
        const aisb_policy_key *key;
        const cli_option *own;
} option_ref;

/* The keys that are options: all but those the config file alone takes (the project is the
 * current directory; the entrypoint and the user's allowlist are the installation's). */
static bool key_is_option(const aisb_policy_key *k)
{
        return !(k->flags & AISB_POLICY_KEY_CONFIG_ONLY);
}

/* A boolean that defaults to true is useful on the command line only as --NAME=false. */
static bool key_value_optional(const aisb_policy_key *k)
{
        return (k->flags & AISB_POLICY_KEY_BOOLEAN) && k->default_text && strcmp(k->default_text, "true") == 0;
}

static bool find(const char *name, size_t len, option_ref *ret)
{
        for (size_t i = 0; i < aisb_policy_key_count(); i++) {
                const aisb_policy_key *k = aisb_policy_key_at(i);
                if (key_is_option(k) && strlen(k->name) == len && strncmp(k->name, name, len) == 0) {
                        *ret = (option_ref) { .key = k };
                        return true;
                }
        }
        for (const cli_option *o = cli_options; o->name; o++)
                if (strlen(o->name) == len && strncmp(o->name, name, len) == 0) {
                        *ret = (option_ref) { .own = o };
                        return true;
                }
        return false;
}

static const char *option_name(const option_ref *o)
{
        return o->key ? o->key->name : o->own->name;
}

static bool option_build_ok(const option_ref *o)
{
        return o->key ? (o->key->flags & AISB_POLICY_KEY_IMAGE) != 0 : o->own->build_ok;
}

/* Whether a value must follow, as =VALUE or as the next argument. */
static bool option_needs_value(const option_ref *o)
{
        return o->key ? !(o->key->flags & AISB_POLICY_KEY_BOOLEAN) : o->own->argument != NULL;
}

/* Whether =VALUE may follow: a value it needs, or the optional one of --read-only=false. */
static bool option_may_take_value(const option_ref *o)
{
        return option_needs_value(o) || (o->key && key_value_optional(o->key));
}

/* "SIZE", "[=BOOL]" for what the usage error and the help call the value; NULL for none. */
static const char *option_argument(const option_ref *o)
{
        if (o->own)
                return o->own->argument;
        if (key_value_optional(o->key))
                return "[=BOOL]";
        return o->key->flags & AISB_POLICY_KEY_BOOLEAN ? NULL : o->key->placeholder;
}

bool cli_option_takes_value(const char *name)
{
        option_ref o;
        return find(name, strlen(name), &o) && option_needs_value(&o);
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
                option_ref o;
                if (!find(name, eq ? (size_t) (eq - name) : strlen(name), &o) ||
                    (for_build && !option_build_ok(&o))) {
                        if (flags->strict_args || for_build) {
                                fprintf(stderr, "aisb: unknown option %s (see aisb %s --help)\n", arg,
                                        for_build ? "build" : "run");
                                return EXIT_USAGE;
                        }
                        break; /* the harness's own option */
                }
                const char *value = eq ? eq + 1 : NULL;
                if (option_needs_value(&o) && !value) {
                        if (i + 1 >= argc) {
                                fprintf(stderr, "aisb: --%s needs a value (%s)\n", option_name(&o),
                                        option_argument(&o));
                                return EXIT_USAGE;
                        }
                        value = argv[++i];
                } else if (!option_may_take_value(&o) && value) {
                        fprintf(stderr, "aisb: --%s takes no value\n", option_name(&o));
                        return EXIT_USAGE;
                }
                i++;
                if (o.own) {
                        set_flag(flags, o.own->name, value);
                        continue;
                }
                aisb_error *err = NULL;
                if (aisb_policy_set(policy, o.key->name, value, &err) < 0)
                        return cli_fail(err, EXIT_USAGE);
                if (strcmp(o.key->name, "env") == 0 && value && strchr(value, '=') && !env_value)
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

static void print_option(FILE *out, const option_ref *o, const char *help)
{
        const char *argument = option_argument(o);
        char left[64];
        snprintf(left, sizeof left, "--%s%s%s", option_name(o),
                 argument && argument[0] != '[' ? " " : "", argument ? argument : "");
        fprintf(out, "  %-26s %s", left, help);
        if (o->key && (o->key->flags & AISB_POLICY_KEY_REPEATABLE))
                fputs(" (repeatable)", out);
        if (o->key && o->key->default_text)
                fprintf(out, " (default %s)", o->key->default_text);
        putc('\n', out);
}

void cli_print_option(FILE *out, const cli_option *own)
{
        option_ref o = { .own = own };
        print_option(out, &o, own->help);
}

void cli_print_options(FILE *out, bool for_build)
{
        for (size_t i = 0; i < aisb_policy_key_count(); i++) {
                option_ref o = { .key = aisb_policy_key_at(i) };
                if (key_is_option(o.key) && (!for_build || option_build_ok(&o)))
                        print_option(out, &o, o.key->help);
        }
        for (const cli_option *own = cli_options; own->name; own++) {
                option_ref o = { .own = own };
                if (!for_build || own->build_ok)
                        print_option(out, &o, own->help);
        }
}

void cli_put(FILE *out, const char *s)
{
        cli_put_keeping(out, s, "");
}

/* The length of the well-formed UTF-8 sequence of two to four bytes at c, or 0. */
static size_t utf8_length(const unsigned char *c)
{
        size_t n = c[0] >= 0xc2 && c[0] <= 0xdf ? 2 : c[0] >= 0xe0 && c[0] <= 0xef ? 3 : c[0] >= 0xf0 && c[0] <= 0xf4 ? 4 : 0;
        for (size_t i = 1; i < n; i++)
                if ((c[i] & 0xc0) != 0x80)
                        return 0; /* stops at the terminating NUL too */
        /* Overlong forms, surrogates, beyond U+10FFFF. */
        if ((c[0] == 0xe0 && c[1] < 0xa0) || (c[0] == 0xed && c[1] > 0x9f) || (c[0] == 0xf0 && c[1] < 0x90) ||
            (c[0] == 0xf4 && c[1] > 0x8f))
                return 0;
        return n;
}

void cli_put_keeping(FILE *out, const char *s, const char *keep)
{
        for (const unsigned char *c = (const unsigned char *) (s ? s : ""); *c;) {
                /* C0 and DEL; the C1 controls as UTF-8 writes them (C2 80..9F); and every byte
                 * that is not well-formed UTF-8 (a lone 9B is CSI to a terminal in 8-bit mode). */
                size_t n = *c < 0x80 ? 1 : utf8_length(c);
                if ((*c < 0x20 && !strchr(keep, *c)) || *c == 0x7f || n == 0)
                        fprintf(out, "\\x%02x", *c);
                else if (c[0] == 0xc2 && c[1] <= 0x9f)
                        fprintf(out, "\\xc2\\x%02x", c[1]);
                else
                        fwrite(c, 1, n, out);
                c += n ? n : 1;
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

int cli_on_event(const aisb_event *event, void *userdata)
{
        if (event->type == AISB_EVENT_LOG)
                cli_log(event->level, event->text, userdata);
        return 0;
}

int cli_policy_new(aisb_policy **ret_policy)
{
        aisb_error *err = NULL;
        aisb_policy *policy = NULL;
        if (aisb_policy_new(&policy, &err) < 0 || aisb_policy_apply_environment(policy, &err) < 0) {
                aisb_policy_free(policy);
                /* A bad $AISB_THINKING is the user's to fix, like a bad flag. */
                return cli_fail(err, aisb_error_code(err) == -EINVAL ? EXIT_USAGE : EXIT_AISB_FAILED);
        }
        *ret_policy = policy;
        return 0;
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
        int r = aisb_policy_load_config(policy, path, AISB_CONFIG_OPTIONAL, &err);
        free(path);
        if (r < 0)
                return cli_fail(err, EXIT_USAGE);
        return 0;
}

int cli_policy_options_only(int argc, char **argv, const char *command, aisb_policy **ret_policy,
                            cli_flags *flags)
{
        aisb_policy *policy = NULL;
        int rest = 0;
        bool dashdash = false;
        int code = cli_policy_new(&policy);
        if (code)
                return code;
        flags->strict_args = true;
        code = cli_load_config(policy, NULL);
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
        aisb_ctx_set_event_fn(ctx, cli_on_event, (void *) flags);
        if (flags->socket && aisb_ctx_set_socket(ctx, flags->socket, &err) < 0) {
                aisb_ctx_free(ctx);
                return cli_fail(err, EXIT_AISB_FAILED);
        }
        *ret_ctx = ctx;
        return 0;
}
