/* SPDX-License-Identifier: MIT */
/*
 * run-with-policy: embed libaisb. Builds a policy in code, runs a command in the sandbox,
 * and takes the sandbox's output through a callback of its own instead of fds 1 and 2.
 *
 *   run-with-policy [KEY=VALUE...] [-- COMMAND [ARG...]]
 *
 * The policy starts strict (no network, 1g of memory, no project mount, a fresh home);
 * each KEY=VALUE sets one more key, named as in the config file (base-image=..., ca-cert=...,
 * node-source=npm), and may loosen it. Each line the command writes to stdout comes back
 * prefixed with "[sandbox] "; stderr passes through. The program exits with the command's
 * exit status, or 125 when the sandbox could not run.
 *
 * Build against an installed libaisb:  cc run-with-policy.c $(pkg-config --cflags --libs aisb)
 */
#include <stdio.h>
#include <string.h>

#include <aisb.h>

typedef struct output_state {
        int at_line_start; /* the next stdout byte begins a line */
        size_t stdout_bytes;
        size_t stderr_bytes;
} output_state;

/* Called with each chunk the sandbox writes. A chunk may end mid-line, so whether the next
 * byte starts a line is carried from one call to the next. */
static int on_output(const aisb_output *output, void *userdata)
{
        output_state *state = userdata;
        const char *bytes = output->data;
        size_t size = output->size;

        if (output->stream == AISB_STREAM_STDERR) {
                state->stderr_bytes += size;
                fwrite(bytes, 1, size, stderr);
                return 0;
        }
        state->stdout_bytes += size;
        while (size > 0) {
                const char *newline = memchr(bytes, '\n', size);
                size_t length = newline ? (size_t) (newline - bytes) + 1 : size;
                if (state->at_line_start)
                        fputs("[sandbox] ", stdout);
                if (fwrite(bytes, 1, length, stdout) != length)
                        return -5; /* -EIO: aborts the run */
                state->at_line_start = newline != NULL;
                bytes += length;
                size -= length;
        }
        return 0;
}

/* What the library says while it works: its messages (no debug detail) and, only if the
 * image must be built, the build's lines. Every other kind is ignored, as kinds added later
 * will be. */
static int on_event(const aisb_event *event, void *userdata)
{
        (void) userdata;
        if (event->type == AISB_EVENT_LOG && event->level >= AISB_LOG_INFO)
                fprintf(stderr, "run-with-policy: %s\n", event->text);
        else if (event->type == AISB_EVENT_BUILD_OUTPUT)
                fprintf(stderr, "run-with-policy: build: %s\n", event->text);
        return 0; /* nonzero would stop the run */
}

/* Report err, free it, and give the exit status for "could not run". */
static int fail(const char *what, aisb_error *err)
{
        fprintf(stderr, "run-with-policy: %s: %s\n", what, aisb_error_message(err));
        aisb_error_free(err);
        return 125;
}

int main(int argc, char **argv)
{
        static const char *const strict[][2] = {
                { "net", "none" },
                { "memory", "1g" },
                { "pids-limit", "256" },
                { "no-cwd", "true" },
                { "ephemeral-home", "true" },
        };
        static const char *const default_command[] = { "sh", "-c", "echo hello from the sandbox; uname -sm", NULL };
        aisb_error *err = NULL;
        aisb_policy *policy = NULL;
        aisb_ctx *ctx = NULL;
        aisb_io *io = NULL;
        output_state output = { 1, 0, 0 };
        int exit_code = 0, status = 125, i;

        if (aisb_policy_new(&policy, &err) < 0)
                return fail("creating the policy", err);
        /* What aisb(1) takes from its environment: $AISB_ENTRYPOINT, the terminal and locale
         * variables, the current directory (which no-cwd below drops again). */
        if (aisb_policy_apply_environment(policy, &err) < 0) {
                status = fail("reading the environment", err);
                goto out;
        }
        for (i = 0; i < (int) (sizeof strict / sizeof strict[0]); i++)
                if (aisb_policy_set(policy, strict[i][0], strict[i][1], &err) < 0) {
                        status = fail("setting the policy", err);
                        goto out;
                }

        /* KEY=VALUE arguments until "--"; what follows is the command. */
        for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
                char key[64];
                const char *eq = strchr(argv[i], '=');
                if (!eq || eq == argv[i] || (size_t) (eq - argv[i]) >= sizeof key) {
                        fprintf(stderr, "usage: %s [KEY=VALUE...] [-- COMMAND [ARG...]]\n", argv[0]);
                        status = 2;
                        goto out;
                }
                memcpy(key, argv[i], (size_t) (eq - argv[i]));
                key[eq - argv[i]] = '\0';
                if (aisb_policy_set(policy, key, eq + 1, &err) < 0) {
                        status = fail(argv[i], err);
                        goto out;
                }
        }
        if (aisb_policy_set_command(policy, i + 1 < argc ? (const char *const *) argv + i + 1
                                                         : default_command, &err) < 0) {
                status = fail("setting the command", err);
                goto out;
        }

        if (aisb_ctx_new(&ctx, &err) < 0) {
                status = fail("creating the context", err);
                goto out;
        }
        aisb_ctx_set_event_fn(ctx, on_event, NULL);
        if (aisb_io_new(&io, &err) < 0) {
                status = fail("creating the I/O", err);
                goto out;
        }
        aisb_io_set_stdin(io, -1);
        aisb_io_set_output_fn(io, on_output, &output);

        if (aisb_run(ctx, policy, io, &exit_code, &err) < 0) {
                status = fail("running the sandbox", err);
                goto out;
        }
        fflush(stdout);
        fprintf(stderr, "run-with-policy: exit code %d, %zu bytes on stdout, %zu on stderr\n",
                exit_code, output.stdout_bytes, output.stderr_bytes);
        status = exit_code;
out:
        aisb_io_free(io);
        aisb_ctx_free(ctx);
        aisb_policy_free(policy);
        return status;
}
