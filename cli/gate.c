/* SPDX-License-Identifier: MIT */
/* "aisb gate up|status|logs|down [OPTIONS]": the egress gate of the policy these options
 * (and the config) make, or of every policy for status. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "json-output.h"
#include "options.h"

static void print_gate(const aisb_gate_entry *gate, void *userdata)
{
        const char *name = gate->name, *hash = gate->policy_hash;
        unsigned port = gate->port;
        int answering = gate->answering;
        bool *json = userdata;
        if (*json) {
                json_object *o = json_object_new_object();
                json_object_object_add(o, "name", json_object_new_string(name));
                json_object_object_add(o, "policy", json_object_new_string(hash));
                json_object_object_add(o, "port", json_object_new_int64(port));
                json_object_object_add(o, "answering", json_object_new_boolean(answering));
                cli_print_json(stdout, o);
                json_object_put(o);
        } else
                printf("%-28s 127.0.0.1:%-6u %s\n", name, port, answering ? "up" : "down");
}

/* The log's last 16 MiB at most: squid writes that directory, and so may whoever controls
 * squid; a symlink or a FIFO there is refused, not followed or waited on. */
#define LOG_TAIL_MAX (16 * 1024 * 1024)

static int print_log(const char *path, long lines)
{
        int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        struct stat st;
        if (fd < 0 && errno == ENOENT)
                return 0;
        if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
                close(fd);
                fd = -1;
                errno = EBADFD;
        }
        if (fd < 0) {
                fprintf(stderr, "aisb: cannot read %s: %s\n", path,
                        errno == ELOOP || errno == EBADFD ? "not a regular file (remove it; the gate makes a new one)"
                                                           : strerror(errno));
                return EXIT_AISB_FAILED;
        }
        bool cut = st.st_size > LOG_TAIL_MAX;
        if (cut)
                (void) lseek(fd, st.st_size - LOG_TAIL_MAX, SEEK_SET);
        FILE *f = fdopen(fd, "re");
        if (!f) {
                close(fd);
                fprintf(stderr, "aisb: cannot read %s: %s\n", path, strerror(errno));
                return EXIT_AISB_FAILED;
        }
        /* Keep the last N lines in a ring. */
        char **ring = calloc((size_t) lines, sizeof *ring);
        size_t allocated = 0;
        char *line = NULL;
        long n = 0;
        /* Started mid-file: the first line is a piece of one. */
        if (cut && getline(&line, &allocated, f) < 0)
                n = 0;
        while (ring && getline(&line, &allocated, f) > 0) {
                free(ring[n % lines]);
                ring[n % lines] = strdup(line);
                n++;
        }
        for (long i = n > lines ? n - lines : 0; ring && i < n; i++) {
                /* squid writes this file, and logs what the sandbox asked for. */
                size_t len = strlen(ring[i % lines]);
                bool newline = len > 0 && ring[i % lines][len - 1] == '\n';
                if (newline)
                        ring[i % lines][len - 1] = 0;
                cli_put(stdout, ring[i % lines]);
                if (newline)
                        putchar('\n');
                free(ring[i % lines]);
        }
        free(ring);
        free(line);
        fclose(f);
        return 0;
}

int command_gate(int argc, char **argv)
{
        if (argc < 1 || strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0) {
                printf("Usage: aisb gate up|status|logs|down [OPTIONS]\n\n"
                       "  up      start the gate of this policy's allowlist (if not running)\n"
                       "  status  list every gate: name, port, up or down (--json: one object a line)\n"
                       "  logs    the gate's access log (-n N: the last N lines, default 50)\n"
                       "  down    remove the gate of this policy's allowlist\n\n"
                       "OPTIONS are aisb run's (--allow, --gate-add-host, --config, ...): they pick\n"
                       "the allowlist, and so the gate.\n");
                return argc < 1 ? EXIT_USAGE : 0;
        }
        const char *verb = argv[0];
        bool json = false;
        long lines = 50;
        /* Our own flags first, then the sandbox options. */
        int i = 1;
        for (; i < argc; i++) {
                if (strcmp(argv[i], "--json") == 0)
                        json = true;
                else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
                        char *end;
                        lines = strtol(argv[++i], &end, 10);
                        if (*end || lines <= 0 || lines > 1000000) {
                                fprintf(stderr, "aisb: -n takes a number of lines\n");
                                return EXIT_USAGE;
                        }
                } else
                        break;
        }
        aisb_error *err = NULL;
        aisb_policy *policy = NULL;
        aisb_ctx *ctx = NULL;
        cli_flags flags = {};
        char what[32];
        snprintf(what, sizeof what, "gate %s", verb);
        int code = cli_policy_options_only(argc - i, argv + i, what, &policy, &flags);
        if (!code)
                code = cli_ctx_for(&flags, &ctx);
        if (code)
                goto out;

        if (strcmp(verb, "up") == 0) {
                char *name = NULL;
                unsigned port = 0;
                if (aisb_gate_up(ctx, policy, &name, &port, &err) < 0)
                        code = cli_fail(err, aisb_error_code(err) == -EINVAL ? EXIT_USAGE : EXIT_AISB_FAILED);
                else
                        printf("%s 127.0.0.1:%u\n", name, port);
                free(name);
        } else if (strcmp(verb, "status") == 0) {
                if (aisb_gate_list(ctx, print_gate, &json, &err) < 0)
                        code = cli_fail(err, EXIT_AISB_FAILED);
        } else if (strcmp(verb, "logs") == 0) {
                char *path = NULL;
                if (aisb_gate_log_path(policy, &path, &err) < 0)
                        code = cli_fail(err, EXIT_USAGE);
                else
                        code = print_log(path, lines);
                free(path);
        } else if (strcmp(verb, "down") == 0) {
                if (aisb_gate_down(ctx, policy, &err) < 0)
                        code = cli_fail(err, aisb_error_code(err) == -EINVAL ? EXIT_USAGE : EXIT_AISB_FAILED);
        } else {
                fprintf(stderr, "aisb: unknown gate command '%s' (up, status, logs, down)\n", verb);
                code = EXIT_USAGE;
        }
out:
        aisb_ctx_free(ctx);
        aisb_policy_free(policy);
        return code;
}
