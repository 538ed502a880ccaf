/* SPDX-License-Identifier: MIT */
/*
 * Learn, then lock: the allowlist lines that would have let a project's last run through,
 * from what its gate refused (the session log keeps the names and the refused requests, as
 * egress.h reads them back), for the user to accept into their own allowlist or the
 * project's. Every line proposed is a name the allowlist parser takes as it is; an address
 * the gate refused is reported, never proposed. Nothing is written without being asked, and
 * the project's file is appended to through descriptors that follow no link.
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "egress.h"
#include "jsonutil.h"
#include "policy.h"
#include "userdirs.h"
#include "fileio.h"

#define LEARN_LOG_READ_MAX (4 * 1024 * 1024)

/* The session log's last record of this project that has an egress summary. */
static int last_record(const aisb_policy *p, json_object **ret, aisb_error **err)
{
        _cleanup_free_ char *path = NULL;
        int r = aisb_session_log_path(&path, err);
        if (r < 0)
                return r;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        struct stat st;
        if (fd < 0 && errno == ENOENT)
                return 0;
        if (fd < 0 || fstat(fd, &st) < 0)
                return aisb_error_set(err, -errno, "%s: %s", path, strerror(errno));
        if (!S_ISREG(st.st_mode))
                return aisb_error_set(err, -EINVAL, "%s is not a regular file", path);
        /* The end of it: the last run is there. */
        if (st.st_size > LEARN_LOG_READ_MAX)
                (void) lseek(fd, st.st_size - LEARN_LOG_READ_MAX, SEEK_SET);
        _cleanup_free_ char *text = NULL;
        r = read_full_fd(fd, LEARN_LOG_READ_MAX, &text, NULL);
        if (r < 0)
                return aisb_error_set(err, r, "%s: %s", path, strerror(-r));
        json_object *found = NULL;
        for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                json_object *o = json_tokener_parse(line), *v;
                const char *project = o && json_object_object_get_ex(o, "project", &v) ? json_object_get_string(v) : NULL;
                if (o && project && streq(project, p->project ? p->project : "") &&
                    json_object_object_get_ex(o, "egress", NULL)) {
                        json_object_put(found);
                        found = o;
                } else
                        json_object_put(o);
        }
        *ret = found;
        return found ? 1 : 0;
}

/* What a refused line is to learn from: a name the allowlist takes as it is (proposed), an
 * address (reported, never proposed: an address entry is an nftables rule straight to it,
 * past the gate, which refuses every address), or nothing. */
typedef enum learned {
        LEARNED_NOTHING,
        LEARNED_NAME,
        LEARNED_ADDRESS,
} learned;

static learned learn_kind(const char *line)
{
        allowlist probe = {};
        int r = allowlist_add(&probe, line, "learned", NULL);
        learned k = r < 0 ? LEARNED_NOTHING : probe.entries[0].kind == ALLOW_DOMAIN ? LEARNED_NAME : LEARNED_ADDRESS;
        allowlist_done(&probe);
        return k;
}

/* A line kept once. */
static int keep(char ***lines, const char *line)
{
        for (size_t i = 0; *lines && (*lines)[i]; i++)
                if (streq((*lines)[i], line))
                        return 0;
        return strv_push(lines, line);
}

static int propose(char ***names, char ***addresses, const char *line)
{
        switch (learn_kind(line)) {
        case LEARNED_NAME:
                return keep(names, line);
        case LEARNED_ADDRESS:
                return keep(addresses, line);
        default:
                return 0;
        }
}

/* "GET https://host:port/path" -> "host[:port] GET /path". */
static int request_line(const char *request, char **ret)
{
        const char *space = strchr(request, ' '), *scheme = space ? strstr(space, "://") : NULL;
        if (!space || !scheme)
                return 0;
        const char *host = scheme + 3, *path = strchr(host, '/');
        if (!path)
                return 0;
        size_t host_len = (size_t) (path - host);
        /* The scheme's own port is no port to name. */
        const char *colon = memchr(host, ':', host_len);
        if (colon && (((size_t) (path - colon) == 3 && strncmp(colon, ":80", 3) == 0) ||
                      ((size_t) (path - colon) == 4 && strncmp(colon, ":443", 4) == 0)))
                host_len = (size_t) (colon - host);
        return asprintf(ret, "%.*s %.*s %s", (int) host_len, host, (int) (space - request), request, path) < 0
                       ? -ENOMEM
                       : 1;
}

/* What the last run of p's project was refused: the lines to propose, the addresses to
 * report, whether its gate was shared, when it ran. 0 when there is no such run. */
typedef struct refusals {
        char **names, **addresses;
        bool shared;
        long long time;
} refusals;

static void refusals_done(refusals *f)
{
        strv_free(f->names);
        strv_free(f->addresses);
}

static int refusals_read(const aisb_policy *p, refusals *ret, aisb_error **err)
{
        _cleanup_json_ json_object *record = NULL;
        int r = last_record(p, &record, err);
        if (r <= 0)
                return r;
        json_object *egress = NULL, *v;
        json_object_object_get_ex(record, "egress", &egress);
        egress_summary s;
        egress_summary_from_json(egress, &s);
        ret->time = json_object_object_get_ex(record, "time", &v) ? json_object_get_int64(v) : 0;
        ret->shared = s.shared_gate;
        _cleanup_strv_free_ char **ruled = NULL;
        /* A refused request the gate saw whole asks for that request, not for its whole host. */
        for (size_t i = 0; r >= 0 && i < s.n_denied_requests; i++) {
                _cleanup_free_ char *line = NULL;
                int k = request_line(s.denied_requests[i], &line);
                if (k < 0)
                        return error_oom(err);
                if (k > 0 && learn_kind(line) == LEARNED_NAME) {
                        r = keep(&ret->names, line);
                        line[strcspn(line, " ")] = 0;
                        r = r < 0 ? r : strv_push(&ruled, line);
                }
        }
        for (size_t i = 0; r >= 0 && i < s.n_denied_names; i++) {
                const char *name = s.denied_names[i];
                bool covered = false;
                for (size_t k = 0; ruled && ruled[k]; k++)
                        covered |= streq(ruled[k], name);
                if (!covered)
                        r = propose(&ret->names, &ret->addresses, name);
        }
        return r < 0 ? error_oom(err) : 1;
}

/* Each line to fn; how many. */
static int give(char *const *lines, aisb_allow_fn fn, void *userdata)
{
        for (size_t i = 0; lines && lines[i]; i++)
                fn(lines[i], userdata);
        return (int) strv_length((const char *const *) lines);
}

int aisb_allow_proposals(const aisb_policy *p, aisb_allow_fn fn, void *userdata, long long *ret_time,
                         aisb_error **err)
{
        _cleanup_(refusals_done) refusals f = {};
        int r = refusals_read(p, &f, err);
        if (r > 0 && ret_time)
                *ret_time = f.time;
        return r > 0 ? give(f.names, fn, userdata) : r;
}

int aisb_allow_refused_addresses(const aisb_policy *p, aisb_allow_fn fn, void *userdata, int *ret_shared,
                                 aisb_error **err)
{
        _cleanup_(refusals_done) refusals f = {};
        int r = refusals_read(p, &f, err);
        if (r > 0 && ret_shared)
                *ret_shared = f.shared;
        return r > 0 ? give(f.addresses, fn, userdata) : r;
}

int aisb_allowlist_append(const aisb_policy *p, unsigned flags, const char *const *lines, aisb_error **err)
{
        if (flags & ~(unsigned) AISB_ALLOWLIST_PROJECT)
                return aisb_error_set(err, -EINVAL, "aisb_allowlist_append: unknown flags 0x%x", flags);
        bool project_file = flags & AISB_ALLOWLIST_PROJECT;
        if (project_file && !p->project)
                return aisb_error_set(err, -EINVAL, "this policy has no project: write to the user's allowlist instead");
        return allowlist_file_append(project_file ? p->project : NULL, lines, err);
}
