/* SPDX-License-Identifier: MIT */
/* "aisb ps", "aisb clean", "aisb log": what runs, what is left, what ran. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "commands.h"
#include "json-output.h"
#include "options.h"

/* A context connected the usual way: the API socket, or a transient service. */
static int open_ctx(aisb_ctx **ret)
{
        aisb_error *err = NULL;
        if (aisb_ctx_new(ret, &err) < 0)
                return cli_fail(err, EXIT_AISB_FAILED);
        static const cli_flags flags;
        aisb_ctx_set_event_fn(*ret, cli_on_event, (void *) &flags);
        return 0;
}

static void age(long long created, char *buf, size_t size)
{
        long long s = (long long) time(NULL) - created;
        if (s < 0)
                s = 0;
        if (s < 120)
                snprintf(buf, size, "%llds", s);
        else if (s < 7200)
                snprintf(buf, size, "%lldm", s / 60);
        else if (s < 172800)
                snprintf(buf, size, "%lldh", s / 3600);
        else
                snprintf(buf, size, "%lldd", s / 86400);
}

static void human_size(unsigned long long n, char *buf, size_t size)
{
        static const char units[] = "KMGT";
        if (n < 1024) {
                snprintf(buf, size, "%lluB", n);
                return;
        }
        double v = (double) n;
        size_t u = 0;
        for (v /= 1024; v >= 1024 && u + 1 < sizeof units - 1; v /= 1024)
                u++;
        snprintf(buf, size, v < 10 ? "%.1f%c" : "%.0f%c", v, units[u]);
}

static void print_entry(const aisb_list_entry *e, void *userdata)
{
        bool json = *(bool *) userdata;
        if (json) {
                json_object *o = json_object_new_object();
                json_object_object_add(o, "name", json_object_new_string(e->name));
                json_object_object_add(o, "kind", json_object_new_string(e->kind));
                json_object_object_add(o, "project", e->project ? json_object_new_string(e->project) : NULL);
                json_object_object_add(o, "net", e->net ? json_object_new_string(e->net) : NULL);
                json_object_object_add(o, "policy", e->policy ? json_object_new_string(e->policy) : NULL);
                json_object_object_add(o, "image", json_object_new_string(e->image));
                json_object_object_add(o, "state", json_object_new_string(e->state));
                json_object_object_add(o, "created", json_object_new_int64(e->created));
                json_object_object_add(o, "orphaned", json_object_new_boolean(e->orphaned));
                if (e->users >= 0)
                        json_object_object_add(o, "users", json_object_new_int(e->users));
                if (e->idle_seconds >= 0)
                        json_object_object_add(o, "idle_seconds", json_object_new_int64(e->idle_seconds));
                if (e->size >= 0)
                        json_object_object_add(o, "size", json_object_new_int64(e->size));
                cli_print_json(stdout, o);
                json_object_put(o);
                return;
        }
        char a[32], size[32] = "-";
        age(e->created, a, sizeof a);
        if (e->size >= 0)
                human_size((unsigned long long) e->size, size, sizeof size);
        printf("%-32s %-7s %-8s %-5s %-16s %-5s %-6s ", e->name, e->kind,
               e->orphaned ? "orphaned" : e->state, e->net ? e->net : "-",
               e->policy ? e->policy : "-", a, size);
        if (e->users >= 0 && e->idle_seconds >= 0) {
                /* A gate: what it serves, and how long since its last request. */
                char idle[32];
                age((long long) time(NULL) - e->idle_seconds, idle, sizeof idle);
                printf("(%d sandbox%s, idle %s)\n", e->users, e->users == 1 ? "" : "es", idle);
                return;
        }
        cli_put(stdout, e->project && *e->project ? e->project : "-");
        putchar('\n');
}

int command_ps(int argc, char **argv)
{
        bool json = false;
        for (int i = 0; i < argc; i++) {
                if (strcmp(argv[i], "--json") == 0)
                        json = true;
                else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
                        printf("Usage: aisb ps [--json]\n\nSandboxes, gates and home volumes of this user, review runs'\n"
                               "layers and projects' undo records: name, kind, state, net mode, policy hash,\n"
                               "age, size on disk (layers, undo records), project directory; for a gate, the\n"
                               "sandboxes it serves and how long since its last request.\n");
                        return 0;
                } else {
                        fprintf(stderr, "aisb: ps takes only --json (got %s)\n", argv[i]);
                        return EXIT_USAGE;
                }
        }
        aisb_ctx *ctx = NULL;
        int code = open_ctx(&ctx);
        if (code)
                return code;
        aisb_error *err = NULL;
        /* No table head above an error. */
        if (aisb_ctx_connect(ctx, &err) < 0) {
                code = cli_fail(err, EXIT_AISB_FAILED);
                aisb_ctx_free(ctx);
                return code;
        }
        if (!json)
                printf("%-32s %-7s %-8s %-5s %-16s %-5s %-6s %s\n", "NAME", "KIND", "STATE", "NET", "POLICY",
                       "AGE", "SIZE", "PROJECT");
        if (aisb_list(ctx, print_entry, &json, &err) < 0)
                code = cli_fail(err, EXIT_AISB_FAILED);
        aisb_ctx_free(ctx);
        return code;
}

static void print_removed(const aisb_clean_entry *removed, void *userdata)
{
        bool dry = *(bool *) userdata;
        printf("%s %s %s\n", dry ? "would remove" : "removed", removed->kind, removed->name);
}

int command_clean(int argc, char **argv)
{
        unsigned flags = 0;
        const char *glob = NULL;
        for (int i = 0; i < argc; i++) {
                if (strcmp(argv[i], "--all") == 0)
                        flags |= AISB_CLEAN_ALL;
                else if (strcmp(argv[i], "--dry-run") == 0)
                        flags |= AISB_CLEAN_DRY_RUN;
                else if (strcmp(argv[i], "--volumes") == 0)
                        flags |= AISB_CLEAN_VOLUMES;
                else if (strcmp(argv[i], "--layers") == 0)
                        flags |= AISB_CLEAN_LAYERS;
                else if (strncmp(argv[i], "--volumes=", 10) == 0) {
                        flags |= AISB_CLEAN_VOLUMES;
                        glob = argv[i] + 10;
                } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
                        printf("Usage: aisb clean [--all] [--volumes[=GLOB]] [--layers] [--dry-run]\n\n"
                               "Remove stopped sandboxes, sandboxes whose aisb is gone, stopped gates, the\n"
                               "gate of a run whose aisb is gone (it holds the run's secrets), the state of\n"
                               "every gate that is gone (its configuration zeroed first) and aisb images\n"
                               "nothing uses. --all: running gates and the bootstrap bases too.\n"
                               "--volumes: aisb-* volumes no container uses (GLOB narrows by name).\n"
                               "--layers: the layers of review runs that ended (what was not applied\n"
                               "is lost) and every project's undo records (aisb undo can no longer\n"
                               "undo those runs).\n"
                               "Nothing outside aisb's namespace is touched.\n");
                        return 0;
                } else {
                        fprintf(stderr, "aisb: unknown clean option %s (see aisb clean --help)\n", argv[i]);
                        return EXIT_USAGE;
                }
        }
        aisb_ctx *ctx = NULL;
        int code = open_ctx(&ctx);
        if (code)
                return code;
        bool dry = flags & AISB_CLEAN_DRY_RUN;
        aisb_error *err = NULL;
        /* The image the configured policy runs is not stale: keep it. Its entrypoint is
         * $AISB_ENTRYPOINT's when set, as for a run. */
        aisb_policy *policy = NULL;
        char *keep = NULL;
        if (aisb_policy_new(&policy, NULL) == 0 && aisb_policy_apply_environment(policy, NULL) == 0 &&
            cli_load_config(policy, NULL) == 0)
                (void) aisb_image_tag(policy, &keep, NULL);
        aisb_policy_free(policy);
        if (aisb_clean(ctx, flags, glob, keep, print_removed, &dry, &err) < 0)
                code = cli_fail(err, EXIT_AISB_FAILED);
        free(keep);
        aisb_ctx_free(ctx);
        return code;
}

/* aisb log --egress: the record of one run (the last one recorded when none is named). */
static int log_egress(const char *run, bool json)
{
        aisb_error *err = NULL;
        char *path = NULL;
        if (aisb_egress_log_path(&path, &err) < 0)
                return cli_fail(err, EXIT_AISB_FAILED);
        FILE *f = fopen(path, "re");
        free(path);
        if (!f && errno != ENOENT)
                return EXIT_AISB_FAILED;
        char *line = NULL, *last = NULL;
        size_t allocated = 0;
        /* Which run: the last line's, unless named. */
        while (!run && f && getline(&line, &allocated, f) > 0) {
                json_object *o = json_tokener_parse(line), *v;
                if (o && json_object_object_get_ex(o, "run", &v)) {
                        free(last);
                        last = strdup(json_object_get_string(v));
                }
                json_object_put(o);
        }
        if (!run)
                run = last;
        if (!run) {
                fprintf(stderr, "aisb: no run's egress is on record\n");
                if (f)
                        fclose(f);
                free(line);
                return 1;
        }
        if (f)
                rewind(f);
        size_t shown = 0;
        while (f && getline(&line, &allocated, f) > 0) {
                json_object *o = json_tokener_parse(line), *v;
                if (!o || !json_object_object_get_ex(o, "run", &v) || strcmp(json_object_get_string(v), run) != 0) {
                        json_object_put(o);
                        continue;
                }
                shown++;
                if (json) {
                        line[strcspn(line, "\n")] = 0;
                        cli_put_json_text(stdout, line);
                        putchar('\n');
                        json_object_put(o);
                        continue;
                }
                long long ms = json_object_object_get_ex(o, "time", &v) ? json_object_get_int64(v) : 0;
                time_t t = (time_t) (ms / 1000);
                char when[32];
                strftime(when, sizeof when, "%H:%M:%S", localtime(&t));
                json_object *decision, *name, *port, *method, *url, *by, *asked, *out, *in;
                json_object_object_get_ex(o, "decision", &decision);
                json_object_object_get_ex(o, "name", &name);
                json_object_object_get_ex(o, "port", &port);
                json_object_object_get_ex(o, "method", &method);
                json_object_object_get_ex(o, "url", &url);
                json_object_object_get_ex(o, "by", &by);
                json_object_object_get_ex(o, "bytes_out", &out);
                json_object_object_get_ex(o, "bytes_in", &in);
                printf("%s.%03lld %-7s ", when, ms % 1000, json_object_get_string(decision));
                cli_put(stdout, json_object_get_string(name));
                printf(":%d ", json_object_get_int(port));
                cli_put(stdout, json_object_get_string(method));
                if (url && json_object_get_string_len(url)) {
                        putchar(' ');
                        cli_put(stdout, json_object_get_string(url));
                }
                fputs(" by ", stdout);
                cli_put(stdout, json_object_get_string(by));
                if (json_object_object_get_ex(o, "asked", &asked)) {
                        fputs(" (asked: ", stdout);
                        cli_put(stdout, json_object_get_string(asked));
                        putchar(')');
                }
                printf(" out=%lld in=%lld\n", (long long) json_object_get_int64(out), (long long) json_object_get_int64(in));
                json_object_put(o);
        }
        if (f)
                fclose(f);
        free(line);
        if (!shown)
                fprintf(stderr, "aisb: no egress of run %s is on record\n", run);
        free(last);
        return shown ? 0 : 1;
}

int command_log(int argc, char **argv)
{
        long lines = 20;
        bool json = false, egress_only = false;
        const char *run = NULL;
        for (int i = 0; i < argc; i++) {
                if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
                        char *end;
                        lines = strtol(argv[++i], &end, 10);
                        if (*end || lines <= 0 || lines > 1000000) {
                                fprintf(stderr, "aisb: -n takes a number of records\n");
                                return EXIT_USAGE;
                        }
                } else if (strcmp(argv[i], "--json") == 0)
                        json = true;
                else if (strcmp(argv[i], "--egress") == 0) {
                        egress_only = true;
                        if (i + 1 < argc && argv[i + 1][0] != '-')
                                run = argv[++i];
                } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
                        printf("Usage: aisb log [-n N] [--json]\n"
                               "       aisb log --egress [RUN] [--json]\n\n"
                               "The last N runs (default 20): time, exit code, net mode, egress, project,\n"
                               "policy hash, image. Never a secret value.\n\n"
                               "--egress: every decision of one run's gate (the last run recorded unless\n"
                               "RUN, a sandbox's name as --json shows it, is given): time, allowed, refused\n"
                               "or failed, name and port, method and URL where the gate saw them, what\n"
                               "decided (the allowlist entry, the refusal, or your answer when it asked),\n"
                               "and bytes each way. Exit status 1 when no such record exists.\n");
                        return 0;
                } else {
                        fprintf(stderr, "aisb: unknown log option %s (see aisb log --help)\n", argv[i]);
                        return EXIT_USAGE;
                }
        }
        if (egress_only)
                return log_egress(run, json);
        aisb_error *err = NULL;
        char *path = NULL;
        if (aisb_session_log_path(&path, &err) < 0)
                return cli_fail(err, EXIT_AISB_FAILED);
        FILE *f = fopen(path, "re");
        free(path);
        if (!f)
                return errno == ENOENT ? 0 : EXIT_AISB_FAILED;
        char **ring = calloc((size_t) lines, sizeof *ring);
        char *line = NULL;
        size_t allocated = 0;
        long n = 0;
        while (ring && getline(&line, &allocated, f) > 0) {
                free(ring[n % lines]);
                ring[n % lines] = strdup(line);
                n++;
        }
        fclose(f);
        free(line);
        for (long i = n > lines ? n - lines : 0; ring && i < n; i++) {
                char *l = ring[i % lines];
                json_object *o = json ? NULL : json_tokener_parse(l);
                if (json) {
                        /* JSON as json-c wrote it, which leaves DEL and C1 raw (a project's
                         * path may hold them): escaped here. */
                        l[strcspn(l, "\n")] = 0;
                        cli_put_json_text(stdout, l);
                        putchar('\n');
                } else if (!o) {
                        cli_put_lines(stdout, l);
                } else {
                        json_object *v, *egress;
                        time_t t = json_object_object_get_ex(o, "time", &v) ? (time_t) json_object_get_int64(v) : 0;
                        char when[32];
                        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime(&t));
                        char egress_text[96] = "-";
                        if (json_object_object_get_ex(o, "egress", &egress)) {
                                json_object *a, *d;
                                json_object_object_get_ex(egress, "allowed", &a);
                                json_object_object_get_ex(egress, "denied", &d);
                                snprintf(egress_text, sizeof egress_text, "%lld/%lld",
                                         (long long) json_object_get_int64(a), (long long) json_object_get_int64(d));
                        }
                        json_object *exit_code, *net, *project, *policy;
                        json_object_object_get_ex(o, "exit", &exit_code);
                        json_object_object_get_ex(o, "net", &net);
                        json_object_object_get_ex(o, "project", &project);
                        json_object_object_get_ex(o, "policy", &policy);
                        printf("%s exit=%d net=%s egress=%s policy=%s ", when, json_object_get_int(exit_code),
                               json_object_get_string(net), egress_text, json_object_get_string(policy));
                        cli_put(stdout, json_object_get_string(project));
                        putchar('\n');
                }
                json_object_put(o);
                free(l);
        }
        free(ring);
        return 0;
}
