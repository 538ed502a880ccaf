/* SPDX-License-Identifier: MIT */
/*
 * The container's specification: the one JSON body that says what the sandbox may see and
 * do, rendered from the plan (plan.h). Pure (no I/O), so unit tests check it key by key and
 * a dry run prints it exactly (from the plan's redacted environment).
 */
#include "config.h"
#include "container.h"
#include "harness.h"
#include "jsonutil.h"
#include "project.h"
#include "protect.h"

const char *const container_cap_drop[] = { "ALL", NULL };

json_object *container_mount(const char *type, const char *source, const char *destination,
                             const char *const *options)
{
        return json_built(JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRING("type", type),
                                            JSON_BUILD_PAIR_STRING("source", source),
                                            JSON_BUILD_PAIR_STRING("destination", destination),
                                            JSON_BUILD_PAIR_STRV("options", options)));
}

static json_object *bind_mount(const char *source, const char *destination, const char *const *options)
{
        return container_mount("bind", source, destination, options);
}

static json_object *tmpfs_mount(const char *destination, unsigned long long size, const char *mode)
{
        char size_option[64], mode_option[32];
        snprintf(size_option, sizeof size_option, "size=%llu", size);
        snprintf(mode_option, sizeof mode_option, "mode=%s", mode);
        const char *const options[] = { size_option, mode_option, "rw", "nosuid", "nodev", NULL };
        return container_mount("tmpfs", "tmpfs", destination, options);
}

/* Nothing of the host's environment except what the plan holds (NAME=VALUE each). */
static json_object *env_object(const char *const *env)
{
        _cleanup_json_ json_object *o = json_object_new_object();
        int r = o ? 0 : -ENOMEM;
        for (size_t i = 0; r >= 0 && env && env[i]; i++) {
                const char *eq = strchr(env[i], '=');
                _cleanup_free_ char *name = eq ? strndup(env[i], (size_t) (eq - env[i])) : NULL;
                r = json_build_into(o, JSON_BUILD_PAIR_STRING(name, eq ? eq + 1 : NULL));
        }
        return r < 0 ? NULL : steal_pointer(&o);
}

/* The project and what is bound over it: the settings' copy, the protected paths. */
static int project_mounts(const container_spec *spec, json_object *mounts)
{
        const aisb_policy *p = spec->policy;
        const run_mounts *rm = spec->mounts;
        const char *settings_copy = rm ? rm->settings_copy : NULL;
        static const char *const rw[] = { "rbind", "rw", NULL }, *const ro[] = { "rbind", "ro", NULL };
        /* The project's settings decide what the next run may reach: the sandbox reads the
         * copy this run took of them, and can neither change them nor create them where
         * there were none. */
        static const char *const settings_ro[] = { "rbind", "ro", "nosuid", "nodev", "noexec", NULL };
        int r = 0;
        const bool review = rm && rm->review_upper;
        /* A review run's project is an overlay (review_volumes), not a bind. */
        if (p->project && !review)
                r = json_build_into(mounts, JSON_BUILD_TAKE(bind_mount(p->project, AISB_PROJECT_DIR,
                                                                       p->project_read_only ? ro : rw)));
        if (r >= 0 && p->project && settings_copy)
                r = json_build_into(mounts, JSON_BUILD_TAKE(bind_mount(settings_copy,
                                                                       AISB_PROJECT_DIR "/" PROJECT_SETTINGS_DIR,
                                                                       settings_ro)));
        /* Over the project: what the host's own tools act on, read-only; a git directory a
         * bind of itself, so that it cannot be moved aside (protect.h). */
        for (size_t i = 0; r >= 0 && rm && rm->protect && i < rm->protect->n_mounts; i++) {
                const protect_mount *m = &rm->protect->mounts[i];
                /* In a review run a git directory's writes go to the layer too: the binds that
                 * keep it writable in place would write the user's repository. */
                if (review && !m->read_only)
                        continue;
                const char *const opts[] = { "rbind", m->read_only ? "ro" : "rw", "nosuid", "nodev", NULL };
                r = json_build_into(mounts, JSON_BUILD_TAKE(bind_mount(m->source, m->destination, opts)));
        }
        return r;
}

/* What a run adds: the seed, the gate's CA, the skills, the harness's read-only directories. */
static int run_extra_mounts(const run_mounts *rm, json_object *mounts)
{
        static const char *const ro[] = { "rbind", "ro", "nosuid", "nodev", "noexec", NULL };
        /* Skills are read, never rewritten, by any run: read-only even for
         * --insecure-keep-root, which has no capability to remount it. */
        static const char *const agents_ro[] = { "rbind", "ro", "nosuid", "nodev", NULL };
        if (!rm)
                return 0;
        int r = json_build_into(
                mounts, JSON_BUILD_TAKE_IF(rm->seed_dir, bind_mount(rm->seed_dir, AISB_SEED_IN_SANDBOX, ro)),
                JSON_BUILD_TAKE_IF(rm->gate_ca, bind_mount(rm->gate_ca, AISB_GATE_CA_IN_SANDBOX, ro)),
                JSON_BUILD_TAKE_IF(rm->agents_dir, bind_mount(rm->agents_dir, AISB_SANDBOX_HOME "/.agents", agents_ro)));
        for (size_t i = 0; r >= 0 && i < rm->n_harness; i++)
                r = json_build_into(mounts, JSON_BUILD_TAKE(bind_mount(rm->harness[i].source,
                                                                       rm->harness[i].destination, agents_ro)));
        return r;
}

/* A review run's project: the overlay whose upper directory is the run's layer (podman mounts
 * it, rootless, in the sandbox's user namespace). */
static json_object *review_volumes(const container_spec *spec)
{
        const run_mounts *rm = spec->mounts;
        _cleanup_free_ char *upper = NULL, *work = NULL;
        if (asprintf(&upper, "upperdir=%s", rm->review_upper) < 0 || asprintf(&work, "workdir=%s", rm->review_work) < 0)
                return NULL;
        const char *const options[] = { upper, work, NULL };
        return json_built(JSON_BUILD_ARRAY(JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRING("source", spec->policy->project),
                                                             JSON_BUILD_PAIR_STRING("destination", AISB_PROJECT_DIR),
                                                             JSON_BUILD_PAIR_STRV("options", options))));
}

static json_object *mounts_array(const container_spec *spec)
{
        const aisb_policy *p = spec->policy;
        _cleanup_json_ json_object *mounts = json_object_new_array();
        int r = mounts ? project_mounts(spec, mounts) : -ENOMEM;
        for (size_t i = 0; r >= 0 && i < p->n_mounts; i++) {
                const char *const opts[] = { "rbind", p->mounts[i].read_only ? "ro" : "rw", NULL };
                r = json_build_into(mounts, JSON_BUILD_TAKE(bind_mount(p->mounts[i].source,
                                                                       p->mounts[i].destination, opts)));
        }
        /* Podman 4.3's API adds none of the CLI's tmpfs for a read-only root: we do, with
         * sizes, so a full /tmp is a cap and not the host's disk. */
        if (r >= 0)
                r = json_build_into(mounts, JSON_BUILD_TAKE(tmpfs_mount("/tmp", p->tmp_size, "1777")),
                                    JSON_BUILD_TAKE(tmpfs_mount("/var/tmp", p->tmp_size, "1777")),
                                    JSON_BUILD_TAKE(tmpfs_mount("/run", 64ULL << 20, "755")),
                                    JSON_BUILD_TAKE_IF(p->ephemeral_home,
                                                       tmpfs_mount(AISB_SANDBOX_HOME, p->tmp_size, "1777")));
        if (r >= 0)
                r = run_extra_mounts(spec->mounts, mounts);
        return r < 0 ? NULL : steal_pointer(&mounts);
}

/* Podman's own syntax for each: SRC[:DST[:PERMS]], or a CDI name it resolves. */
static json_object *devices_array(char *const *devices)
{
        _cleanup_json_ json_object *a = json_object_new_array();
        int r = a ? 0 : -ENOMEM;
        for (size_t i = 0; r >= 0 && devices[i]; i++)
                r = json_build_into(a, JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRING("path", devices[i])));
        return r < 0 ? NULL : steal_pointer(&a);
}

/* The gate listens on the host's loopback; both backends map it to SANDBOX_HOST_LOOPBACK,
 * and the entrypoint's ruleset admits only the gate's port there. */
static json_object *network_options(const sandbox_network *net)
{
        static const char *const slirp[] = { "allow_host_loopback=true", NULL };
        static const char *const pasta[] = { "--map-host-loopback", SANDBOX_HOST_LOOPBACK, NULL };
        bool is_pasta = net->backend && net->backend->id == NETWORK_BACKEND_PASTA;
        return json_built(
                JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRV(is_pasta ? "pasta" : "slirp4netns", is_pasta ? pasta : slirp)));
}

static int labels_object(const container_spec *spec, json_object **ret)
{
        const aisb_policy *p = spec->policy;
        const char *hash = spec->policy_hash;
        if (!hash)
                return -EINVAL;
        char pid[32];
        snprintf(pid, sizeof pid, "%ld", spec->pid);
        return json_build(ret, JSON_BUILD_OBJECT(
                                       JSON_BUILD_PAIR_STRING(AISB_LABEL_PREFIX "managed", "true"),
                                       JSON_BUILD_PAIR_STRING(AISB_LABEL_PREFIX "version", AISB_VERSION),
                                       JSON_BUILD_PAIR_STRING(AISB_LABEL_PREFIX "project", p->project ? p->project : ""),
                                       JSON_BUILD_PAIR_STRING(AISB_LABEL_PREFIX "net", spec->net_name),
                                       JSON_BUILD_PAIR_CONDITION(spec->gate_hash, JSON_BUILD_PAIR_STRING(
                                                                                          AISB_LABEL_PREFIX "gate",
                                                                                          spec->gate_hash)),
                                       JSON_BUILD_PAIR_STRING(AISB_LABEL_PREFIX "policy", hash),
                                       JSON_BUILD_PAIR_STRING(AISB_LABEL_PREFIX "pid", pid)));
}

int container_create_body(const container_spec *spec, json_object **ret)
{
        const aisb_policy *p = spec->policy;
        const sandbox_network *net = spec->net;
        json_object *labels = NULL;
        int r = labels_object(spec, &labels);
        if (r < 0)
                return r;
        return json_build(
                ret,
                JSON_BUILD_OBJECT(
                        JSON_BUILD_PAIR_STRING("name", spec->name),
                        JSON_BUILD_PAIR_STRING("image", spec->image),
                        JSON_BUILD_PAIR_STRV("entrypoint", spec->entrypoint),
                        JSON_BUILD_PAIR_STRV("command", spec->command),
                        JSON_BUILD_PAIR_STRING("work_dir", p->project ? AISB_PROJECT_DIR : AISB_SANDBOX_HOME),
                        JSON_BUILD_PAIR_STRING("hostname", "aisb"),
                        /* Root of the user namespace, with only what the entrypoint needs to
                         * install the ruleset and become the user: it drops all of it before
                         * the command runs. keep-id maps the user's own uid through, so files
                         * in /project stay theirs. */
                        JSON_BUILD_PAIR_STRING("user", "0:0"),
                        JSON_BUILD_PAIR("userns", JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRING("nsmode", "keep-id"))),
                        JSON_BUILD_PAIR_TAKE("env", env_object(spec->env)),
                        CONTAINER_SECURITY_PAIRS(&security_sandbox),
                        JSON_BUILD_PAIR_BOOL("read_only_filesystem", p->read_only),
                        /* From podman 4.4 a read-only root also makes /dev, /dev/shm and
                         * /dev/mqueue read-only unless this says otherwise (podman 5 defaults
                         * it to false); 4.3 ignores the field and leaves them writable. Shared
                         * memory must work in the sandbox. */
                        JSON_BUILD_PAIR_BOOL("read_write_tmpfs", true),
                        JSON_BUILD_PAIR_TAKE("mounts", mounts_array(spec)),
                        JSON_BUILD_PAIR_TAKE_IF(p->project && spec->mounts && spec->mounts->review_upper,
                                                "overlay_volumes", review_volumes(spec)),
                        JSON_BUILD_PAIR_TAKE_IF(p->devices, "devices", devices_array(p->devices)),
                        JSON_BUILD_PAIR_CONDITION(
                                !p->ephemeral_home,
                                JSON_BUILD_PAIR("volumes", JSON_BUILD_ARRAY(JSON_BUILD_OBJECT(
                                                                   JSON_BUILD_PAIR_STRING("Name", p->home_volume),
                                                                   JSON_BUILD_PAIR_STRING("Dest", AISB_SANDBOX_HOME),
                                                                   JSON_BUILD_PAIR("Options", JSON_BUILD_EMPTY_ARRAY))))),
                        JSON_BUILD_PAIR("netns", JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRING("nsmode", net->nsmode))),
                        JSON_BUILD_PAIR_TAKE_IF(net->host_loopback, "network_options", network_options(net)),
                        JSON_BUILD_PAIR("resource_limits",
                                        JSON_BUILD_OBJECT(
                                                JSON_BUILD_PAIR("memory", JSON_BUILD_OBJECT(JSON_BUILD_PAIR_INT64(
                                                                                  "limit", (int64_t) p->memory))),
                                                JSON_BUILD_PAIR("pids", JSON_BUILD_OBJECT(JSON_BUILD_PAIR_INT64(
                                                                                "limit", (int64_t) p->pids_limit))),
                                                JSON_BUILD_PAIR("cpu", JSON_BUILD_OBJECT(
                                                                               JSON_BUILD_PAIR_INT64(
                                                                                       "quota",
                                                                                       (int64_t) p->cpus_milli * 100),
                                                                               JSON_BUILD_PAIR_INT64("period", 100000))))),
                        JSON_BUILD_PAIR_TAKE("labels", labels),
                        JSON_BUILD_PAIR_BOOL("terminal", spec->terminal),
                        JSON_BUILD_PAIR_BOOL("stdin", true),
                        JSON_BUILD_PAIR_BOOL("remove", false)));
}
