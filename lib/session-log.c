/* SPDX-License-Identifier: MIT */
/*
 * The session log: one JSON line per run in the state directory (time, project, policy,
 * image, net, exit, the names of the environment passed, what --unsafe-create-patch changed,
 * the egress summary), never a value.
 */
#include <fcntl.h>
#include <time.h>

#include "jsonutil.h"
#include "session-log.h"
#include "userdirs.h"
#include "fileio.h"

#define SESSION_LOG "sessions.log"

int session_log_append(const aisb_policy *p, const char *image, int exit_code, const char *const *patched,
                       const egress_summary *egress)
{
        _cleanup_free_ char *dir = NULL, *path = NULL, *hash = NULL;
        if (state_dir(NULL, &dir, NULL) < 0 || asprintf(&path, "%s/" SESSION_LOG, dir) < 0)
                return -ENOMEM;
        (void) policy_hash(p, image ? image : "", &hash);
        _cleanup_json_ json_object *o = json_object_new_object();
        int r = json_add_int64(o, "time", (int64_t) time(NULL));
        r |= json_add_string(o, "project", p->project ? p->project : "");
        r |= json_add_string(o, "policy", hash ? hash : "");
        r |= json_add_string(o, "image", image ? image : "");
        r |= json_add_string(o, "net", policy_net_name(p->net));
        r |= json_add_int64(o, "exit", exit_code);
        /* Names of what was passed, never values. */
        json_object *env = json_object_new_array();
        for (size_t i = 0; i < p->n_env; i++)
                r |= json_append_string(env, p->env[i].name);
        r |= json_add(o, "env", env);
        if (patched)
                r |= json_add(o, "create_patch", json_string_array(patched));
        if (egress) {
                const char *denied[ELEMENTSOF(egress->denied_names) + 1] = {};
                const char *failed[ELEMENTSOF(egress->failed_names) + 1] = {};
                const char *requests[ELEMENTSOF(egress->denied_requests) + 1] = {};
                for (size_t i = 0; i < egress->n_denied_names; i++)
                        denied[i] = egress->denied_names[i];
                for (size_t i = 0; i < egress->n_denied_requests; i++)
                        requests[i] = egress->denied_requests[i];
                for (size_t i = 0; i < egress->n_failed_names; i++)
                        failed[i] = egress->failed_names[i];
                json_object *e = json_object_new_object();
                r |= json_add_int64(e, "allowed", (int64_t) egress->allowed);
                r |= json_add_int64(e, "denied", (int64_t) egress->denied);
                r |= json_add(e, "denied_names", json_string_array(denied));
                r |= json_add(e, "denied_requests", json_string_array(requests));
                r |= json_add_int64(e, "failed", (int64_t) egress->failed);
                r |= json_add(e, "failed_names", json_string_array(failed));
                r |= json_add(e, "shared_gate", json_object_new_boolean(egress->shared_gate));
                r |= json_add(o, "egress", e);
        }
        if (r < 0)
                return -ENOMEM;
        const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                                JSON_C_TO_STRING_NOSLASHESCAPE);
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        /* One write of a whole line: concurrent runs never interleave within a record. */
        _cleanup_free_ char *line = NULL;
        if (!text || asprintf(&line, "%s\n", text) < 0)
                return -ENOMEM;
        return write_all(fd, line, strlen(line));
}

int aisb_session_log_path(char **ret_path, aisb_error **err)
{
        _cleanup_free_ char *dir = NULL;
        int r = state_dir(NULL, &dir, err);
        if (r < 0)
                return r;
        if (asprintf(ret_path, "%s/" SESSION_LOG, dir) < 0)
                return error_oom(err);
        return 0;
}
