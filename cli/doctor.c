/* SPDX-License-Identifier: MIT */
/* "aisb doctor [--deep] [--json] [OPTIONS]": what on this host would stop or weaken a
 * sandbox, each with its fix. Exits 1 when something blocks a run. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "commands.h"
#include "json-output.h"
#include "options.h"

static void print_check(const aisb_doctor_check *c, void *userdata)
{
        const char *check = c->name, *detail = c->detail, *fix = c->fix;
        aisb_check_status status = c->status;
        bool json = *(bool *) userdata;
        static const char *const words[] = { "ok", "warn", "fail" };
        if (json) {
                json_object *o = json_object_new_object();
                json_object_object_add(o, "check", json_object_new_string(check));
                json_object_object_add(o, "status", json_object_new_string(words[status]));
                json_object_object_add(o, "detail", json_object_new_string(detail ? detail : ""));
                json_object_object_add(o, "fix", fix ? json_object_new_string(fix) : NULL);
                cli_print_json(stdout, o);
                json_object_put(o);
                return;
        }
        bool color = cli_color(STDOUT_FILENO);
        static const char *const colors[] = { "\033[32m", "\033[33m", "\033[31m" };
        printf("%s%-4s%s %-16s ", color ? colors[status] : "", words[status], color ? "\033[0m" : "", check);
        cli_put(stdout, detail);
        putchar('\n');
        if (fix && status != AISB_CHECK_OK) {
                printf("     %-16s fix: ", "");
                cli_put(stdout, fix);
                putchar('\n');
        }
}

int command_doctor(int argc, char **argv)
{
        bool json = false, deep = false;
        int i = 0;
        for (; i < argc; i++) {
                if (strcmp(argv[i], "--json") == 0)
                        json = true;
                else if (strcmp(argv[i], "--deep") == 0)
                        deep = true;
                else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
                        printf("Usage: aisb doctor [--deep] [--json] [OPTIONS]\n\n"
                               "Check this host for rootless sandboxes: podman and its API socket, rootless\n"
                               "mode, subuid/subgid ranges, the sandbox network, /dev/net/tun, cgroups (are\n"
                               "caps enforced?), the OCI runtime, the storage driver, SELinux/AppArmor, and\n"
                               "uncommitted changes in the project. Each problem comes with its fix.\n"
                               "--deep also runs real sandboxes: the egress ruleset installed, an\n"
                               "allowlisted request through the gate answered, a listed-out one refused.\n"
                               "OPTIONS are aisb run's (the base image and certificates --deep uses).\n"
                               "Each sandbox doctor runs is stopped after 60 s ($AISB_DOCTOR_TIMEOUT).\n"
                               "Exit status 1 when something blocks a run.\n");
                        return 0;
                } else
                        break;
        }
        aisb_error *err = NULL;
        aisb_policy *policy = NULL;
        aisb_ctx *ctx = NULL;
        cli_flags flags = { .quiet = true };
        int code = cli_policy_options_only(argc - i, argv + i, "doctor", &policy, &flags);
        if (!code)
                code = cli_ctx_for(&flags, &ctx);
        if (!code) {
                int failures = aisb_doctor(ctx, policy, deep ? AISB_DOCTOR_DEEP : 0, print_check, &json, &err);
                if (failures < 0)
                        code = cli_fail(err, EXIT_AISB_FAILED);
                else
                        code = failures > 0 ? 1 : 0;
        }
        aisb_ctx_free(ctx);
        aisb_policy_free(policy);
        return code;
}

int command_alias(int argc, char **argv)
{
        const char *shell = NULL;
        bool install = false;
        for (int i = 0; i < argc; i++) {
                if (strcmp(argv[i], "--shell") == 0 && i + 1 < argc)
                        shell = argv[++i];
                else if (strcmp(argv[i], "--install") == 0)
                        install = true;
                else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
                        printf("Usage: aisb alias [--shell bash|zsh] [--install]\n\n"
                               "Print alias pi='aisb run'; with --install, append it to ~/.bashrc or\n"
                               "~/.zshrc unless it is there already.\n");
                        return 0;
                } else {
                        fprintf(stderr, "aisb: unknown alias option %s (see aisb alias --help)\n", argv[i]);
                        return EXIT_USAGE;
                }
        }
        if (!shell) {
                const char *s = getenv("SHELL");
                shell = s && strstr(s, "zsh") ? "zsh" : "bash";
        }
        if (strcmp(shell, "bash") != 0 && strcmp(shell, "zsh") != 0) {
                fprintf(stderr, "aisb: --shell takes bash or zsh\n");
                return EXIT_USAGE;
        }
        static const char line[] = "alias pi='aisb run'";
        if (!install) {
                printf("%s\n", line);
                return 0;
        }
        const char *home = getenv("HOME");
        char *rc = NULL;
        if (!home || asprintf(&rc, "%s/.%src", home, shell) < 0) {
                fprintf(stderr, "aisb: HOME is not set\n");
                return EXIT_USAGE;
        }
        FILE *f = fopen(rc, "re");
        char *l = NULL;
        size_t allocated = 0;
        bool present = false;
        while (f && getline(&l, &allocated, f) > 0)
                present |= strncmp(l, line, sizeof line - 1) == 0;
        free(l);
        if (f)
                fclose(f);
        if (!present) {
                f = fopen(rc, "ae");
                if (!f || fprintf(f, "%s\n", line) < 0 || fclose(f) != 0) {
                        fprintf(stderr, "aisb: cannot append to %s\n", rc);
                        free(rc);
                        return EXIT_AISB_FAILED;
                }
        }
        printf("%s %s\n", present ? "already in" : "added to", rc);
        free(rc);
        return 0;
}
