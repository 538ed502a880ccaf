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

/* Names of what was passed, never values. */
static json_object *env_names(const aisb_policy *p)
{
        _cleanup_json_ json_object *a = json_object_new_array();
        int r = a ? 0 : -ENOMEM;
        for (size_t i = 0; r >= 0 && i < p->n_env; i++)
                r = json_build_into(a, JSON_BUILD_STRING(p->env[i].name));
        return r < 0 ? NULL : steal_pointer(&a);
}

int session_log_append(const aisb_policy *p, const plan_facts *f, const run_plan *plan, int exit_code,
                       const egress_summary *egress)
{
        _cleanup_free_ char *path = NULL;
        if (aisb_session_log_path(&path, NULL) < 0)
                return -ENOMEM;
        _cleanup_json_ json_object *o = NULL;
        int r = json_build(&o, JSON_BUILD_OBJECT(
                                       JSON_BUILD_PAIR_INT64("time", (int64_t) time(NULL)),
                                       JSON_BUILD_PAIR_STRING("run", f->name ? f->name : ""),
                                       JSON_BUILD_PAIR_STRING("project", p->project ? p->project : ""),
                                       JSON_BUILD_PAIR_STRING("policy", plan->policy_hash ? plan->policy_hash : ""),
                                       JSON_BUILD_PAIR_STRING("image", plan->image ? plan->image : ""),
                                       JSON_BUILD_PAIR_STRING("net", f->net_name),
                                       JSON_BUILD_PAIR_INT64("exit", exit_code),
                                       JSON_BUILD_PAIR_TAKE("env", env_names(p)),
                                       JSON_BUILD_PAIR_CONDITION(plan->patched, JSON_BUILD_PAIR_STRV("create_patch", (const char *const *) plan->patched)),
                                       JSON_BUILD_PAIR_TAKE_IF(egress, "egress", egress_summary_json(egress))));
        if (r < 0)
                return r;
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
