/* SPDX-License-Identifier: MIT */
/*
 * The container's specification: the one JSON body that says what the sandbox may see and
 * do, rendered from the plan (plan.h). Pure (no I/O), so unit tests check it key by key and
 * a dry run prints it exactly (from the plan's redacted environment).
 */
#include "config.h"
#include "container.h"
#include "jsonutil.h"
#include "project.h"
#include "protect.h"

static json_object *mount_object(const char *type, const char *source, const char *destination,
                                 const char *const *options)
{
        json_object *m = json_object_new_object();
        if (!m)
                return NULL;
        if (json_add_string(m, "type", type) < 0 || json_add_string(m, "source", source) < 0 ||
            json_add_string(m, "destination", destination) < 0 ||
            json_add(m, "options", json_string_array(options)) < 0) {
                json_object_put(m);
                return NULL;
        }
        return m;
}

static json_object *tmpfs_mount(const char *destination, unsigned long long size, const char *mode)
{
        char size_option[64], mode_option[32];
        snprintf(size_option, sizeof size_option, "size=%llu", size);
        snprintf(mode_option, sizeof mode_option, "mode=%s", mode);
        const char *const options[] = { size_option, mode_option, "rw", "nosuid", "nodev", NULL };
        return mount_object("tmpfs", "tmpfs", destination, options);
}

int container_security(json_object *o, const security_spec *s)
{
        static const char *const drop_all[] = { "ALL", NULL };
        int r = json_add(o, "cap_drop", json_string_array(drop_all));
        if (r >= 0 && s->cap_add)
                r = json_add(o, "cap_add", json_string_array(s->cap_add));
        return r < 0 ? r : json_add_bool(o, "no_new_privileges", true);
}

int container_create_body(const container_spec *spec, json_object **ret)
{
        const aisb_policy *p = spec->policy;
        const sandbox_network *net = spec->net;
        const run_mounts *rm = spec->mounts;
        const char *image = spec->image, *name = spec->name;
        _cleanup_json_ json_object *o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        int r = 0;
        r |= json_add_string(o, "name", name);
        r |= json_add_string(o, "image", image);
        const char *settings_copy = rm ? rm->settings_copy : NULL;
        r |= json_add(o, "entrypoint", json_string_array(spec->entrypoint));
        r |= json_add(o, "command", json_string_array(policy_command(p)));
        r |= json_add_string(o, "work_dir", p->project ? AISB_PROJECT_DIR : AISB_SANDBOX_HOME);
        r |= json_add_string(o, "hostname", "aisb");

        /* Root of the user namespace, with only what the entrypoint needs to install the
         * ruleset and become the user: it drops all of it before the command runs. keep-id
         * maps the user's own uid through, so files in /project stay theirs. */
        r |= json_add_string(o, "user", "0:0");
        json_object *userns = json_object_new_object();
        r |= json_add_string(userns, "nsmode", "keep-id");
        r |= json_add(o, "userns", userns);

        /* Nothing of the host's environment except what the plan holds. */
        json_object *env = json_object_new_object();
        for (size_t i = 0; spec->env && spec->env[i]; i++) {
                const char *eq = strchr(spec->env[i], '=');
                _cleanup_free_ char *name_part = eq ? strndup(spec->env[i], (size_t) (eq - spec->env[i])) : NULL;
                r |= name_part ? json_add_string(env, name_part, eq + 1) : -ENOMEM;
        }
        r |= json_add(o, "env", env);
        r |= container_security(o, &security_sandbox);
        r |= json_add(o, "read_only_filesystem", json_object_new_boolean(p->read_only));
        /* From podman 4.4 a read-only root also makes /dev, /dev/shm and /dev/mqueue read-only
         * unless this says otherwise (podman 5 defaults it to false); 4.3 ignores the field
         * and leaves them writable. Shared memory must work in the sandbox. */
        r |= json_add(o, "read_write_tmpfs", json_object_new_boolean(true));

        json_object *mounts = json_object_new_array();
        if (p->project) {
                static const char *const rw[] = { "rbind", "rw", NULL }, *const ro[] = { "rbind", "ro", NULL };
                r |= json_append(mounts, mount_object("bind", p->project, AISB_PROJECT_DIR,
                                                                p->project_read_only ? ro : rw));
        }
        if (p->project && settings_copy) {
                /* The project's settings decide what the next run may reach: the sandbox
                 * reads the copy this run took of them, and can neither change them nor
                 * create them where there were none. */
                static const char *const ro[] = { "rbind", "ro", "nosuid", "nodev", "noexec", NULL };
                r |= json_append(mounts, mount_object("bind", settings_copy,
                                                                AISB_PROJECT_DIR "/" PROJECT_SETTINGS_DIR, ro));
        }
        /* Over the project: what the host's own tools act on, read-only; a git directory a
         * bind of itself, so that it cannot be moved aside (protect.h). */
        for (size_t i = 0; rm && rm->protect && i < rm->protect->n_mounts; i++) {
                const protect_mount *m = &rm->protect->mounts[i];
                const char *const opts[] = { "rbind", m->read_only ? "ro" : "rw", "nosuid", "nodev", NULL };
                r |= json_append(mounts, mount_object("bind", m->source, m->destination, opts));
        }
        for (size_t i = 0; i < p->n_mounts; i++) {
                const char *const opts[] = { "rbind", p->mounts[i].read_only ? "ro" : "rw", NULL };
                r |= json_append(mounts, mount_object("bind", p->mounts[i].source,
                                                                p->mounts[i].destination, opts));
        }
        /* Podman 4.3's API adds none of the CLI's tmpfs for a read-only root: we do, with
         * sizes, so a full /tmp is a cap and not the host's disk. */
        r |= json_append(mounts, tmpfs_mount("/tmp", p->tmp_size, "1777"));
        r |= json_append(mounts, tmpfs_mount("/var/tmp", p->tmp_size, "1777"));
        r |= json_append(mounts, tmpfs_mount("/run", 64ULL << 20, "755"));
        if (p->ephemeral_home)
                r |= json_append(mounts, tmpfs_mount(AISB_SANDBOX_HOME, p->tmp_size, "1777"));
        if (rm && rm->seed_dir) {
                static const char *const ro[] = { "rbind", "ro", "nosuid", "nodev", "noexec", NULL };
                r |= json_append(mounts, mount_object("bind", rm->seed_dir,
                                                                AISB_SEED_IN_SANDBOX, ro));
        }
        if (rm && rm->gate_ca) {
                static const char *const ro[] = { "rbind", "ro", "nosuid", "nodev", "noexec", NULL };
                r |= json_append(mounts, mount_object("bind", rm->gate_ca, AISB_GATE_CA_IN_SANDBOX, ro));
        }
        if (rm && rm->agents_dir) {
                /* Skills are read, never rewritten, by any run: read-only even for
                 * --insecure-keep-root, which has no capability to remount it. */
                static const char *const ro[] = { "rbind", "ro", "nosuid", "nodev", NULL };
                r |= json_append(mounts, mount_object("bind", rm->agents_dir,
                                                                AISB_SANDBOX_HOME "/.agents", ro));
        }
        r |= json_add(o, "mounts", mounts);
        if (p->devices) {
                /* Podman's own syntax: SRC[:DST[:PERMS]], or a CDI name it resolves. */
                json_object *devices = json_object_new_array();
                for (size_t i = 0; p->devices[i]; i++) {
                        json_object *d = json_object_new_object();
                        r |= json_add_string(d, "path", p->devices[i]);
                        r |= json_append(devices, d);
                }
                r |= json_add(o, "devices", devices);
        }

        if (!p->ephemeral_home) {
                json_object *volumes = json_object_new_array();
                json_object *v = json_object_new_object();
                r |= json_add_string(v, "Name", p->home_volume);
                r |= json_add_string(v, "Dest", AISB_SANDBOX_HOME);
                r |= json_add(v, "Options", json_object_new_array());
                r |= json_append(volumes, v);
                r |= json_add(o, "volumes", volumes);
        }

        json_object *netns = json_object_new_object();
        r |= json_add_string(netns, "nsmode", net->nsmode);
        r |= json_add(o, "netns", netns);
        if (net->host_loopback) {
                /* The gate listens on the host's loopback; both backends map it to
                 * SANDBOX_HOST_LOOPBACK, and the entrypoint's ruleset admits only the gate's
                 * port there. */
                json_object *options = json_object_new_object();
                static const char *const slirp[] = { "allow_host_loopback=true", NULL };
                static const char *const pasta[] = { "--map-host-loopback", SANDBOX_HOST_LOOPBACK, NULL };
                bool is_pasta = net->backend && net->backend->id == NETWORK_BACKEND_PASTA;
                r |= json_add(options, is_pasta ? "pasta" : "slirp4netns",
                                            json_string_array(is_pasta ? pasta : slirp));
                r |= json_add(o, "network_options", options);
        }

        json_object *limits = json_object_new_object();
        json_object *memory = json_object_new_object();
        r |= json_add(memory, "limit", json_object_new_int64((int64_t) p->memory));
        r |= json_add(limits, "memory", memory);
        json_object *pids = json_object_new_object();
        r |= json_add(pids, "limit", json_object_new_int64((int64_t) p->pids_limit));
        r |= json_add(limits, "pids", pids);
        json_object *cpu = json_object_new_object();
        r |= json_add(cpu, "quota", json_object_new_int64((int64_t) p->cpus_milli * 100));
        r |= json_add(cpu, "period", json_object_new_int64(100000));
        r |= json_add(limits, "cpu", cpu);
        r |= json_add(o, "resource_limits", limits);

        json_object *labels = json_object_new_object();
        _cleanup_free_ char *hash = NULL;
        r |= policy_hash(p, image, &hash);
        r |= json_add_string(labels, AISB_LABEL_PREFIX "managed", "true");
        r |= json_add_string(labels, AISB_LABEL_PREFIX "version", AISB_VERSION);
        r |= json_add_string(labels, AISB_LABEL_PREFIX "project", p->project ? p->project : "");
        r |= json_add_string(labels, AISB_LABEL_PREFIX "net", policy_net_name(p->net));
        if (spec->gate_hash)
                r |= json_add_string(labels, AISB_LABEL_PREFIX "gate", spec->gate_hash);
        r |= json_add_string(labels, AISB_LABEL_PREFIX "policy", hash ? hash : "");
        char pid[32];
        snprintf(pid, sizeof pid, "%ld", spec->pid);
        r |= json_add_string(labels, AISB_LABEL_PREFIX "pid", pid);
        r |= json_add(o, "labels", labels);

        r |= json_add(o, "terminal", json_object_new_boolean(spec->terminal));
        r |= json_add(o, "stdin", json_object_new_boolean(true));
        r |= json_add(o, "remove", json_object_new_boolean(false));
        if (r < 0)
                return -ENOMEM;
        *ret = steal_pointer(&o);
        return 0;
}
