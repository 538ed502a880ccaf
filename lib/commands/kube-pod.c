/* SPDX-License-Identifier: MIT */
/*
 * aisb kube's sandbox: the plan's create body rendered as a pod. Its variables,
 * the entrypoint's argv and command, its mounts (the project, the settings' and the bridged
 * files' ConfigMaps, scratch directories, on one machine the protected paths and the host's
 * directories) come from the plan; a mount a pod has no counterpart for is refused, never left
 * out. The entrypoint runs in its external mode: it checks that the pod started without
 * privileges instead of dropping them, and the network is the NetworkPolicy's.
 */
#include <arpa/inet.h>
#include <limits.h>

#include "jsonutil.h"
#include "kube.h"

/* The sandbox's, and for a client of the gate the label its NetworkPolicy admits. */
static json_object *sandbox_labels(const kube_names *n, bool gate)
{
        return kube_labels("aisb.sandbox", n->sandbox, gate ? n->gate_hash : NULL);
}

static json_object *quantities(const aisb_policy *p)
{
        char cpu[32], memory[32], storage[32];
        snprintf(cpu, sizeof cpu, "%llum", p->cpus_milli);
        snprintf(memory, sizeof memory, "%llu", p->memory);
        snprintf(storage, sizeof storage, "%llu", 3 * p->tmp_size);
        return json_built(JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRING("cpu", cpu), JSON_BUILD_PAIR_STRING("memory", memory),
                                            JSON_BUILD_PAIR_STRING("ephemeral-storage", storage)));
}

/* requests = limits: the Guaranteed class, and no burst past what the policy says. */
static json_object *resources(const aisb_policy *p)
{
        return json_built(JSON_BUILD_OBJECT(JSON_BUILD_PAIR_TAKE("limits", quantities(p)),
                                            JSON_BUILD_PAIR_TAKE("requests", quantities(p))));
}

/* --netfilter init: the same entrypoint, as root with NET_ADMIN alone, installs and verifies
 * the ruleset the plan's network would have (ruleset_args: the gate's address, from its
 * Service's variable on a cluster, read when the init container starts; the fixed one for
 * podman; and each address entry) in the pod's network namespace and exits; the containers
 * after it share that namespace and cannot change it. */
static json_object *netfilter_init_containers(const aisb_policy *p, const kube_options *ko, const kube_plan *k)
{
        _cleanup_strv_free_ char **argv = NULL;
        entrypoint_spec es = { .no_ids = true, .net_args = (const char *const *) k->plan.net.ruleset_args,
                               .ruleset_only = true };
        if (plan_entrypoint_argv(&es, &argv) < 0)
                return NULL;
        return json_built(JSON_BUILD_ARRAY(JSON_BUILD_OBJECT(
                JSON_BUILD_PAIR_STRING("name", "netfilter"), JSON_BUILD_PAIR_STRING("image", k->image),
                JSON_BUILD_PAIR_STRING("imagePullPolicy", kube_pull_policy(ko)), JSON_BUILD_PAIR_STRV("command", argv),
                JSON_BUILD_PAIR_TAKE("securityContext", kube_security(&security_netfilter)),
                JSON_BUILD_PAIR_TAKE_IF(!ko->podman, "resources", resources(p)))));
}

static json_object *env_value(const char *name, const char *value)
{
        return json_built(JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRING("name", name), JSON_BUILD_PAIR_STRING("value", value)));
}

/* A string member of a libpod mount (container.h), or "". */
static const char *mount_field(json_object *m, const char *key)
{
        json_object *v = NULL;
        return json_object_object_get_ex(m, key, &v) ? json_object_get_string(v) : "";
}

static bool mount_read_only(json_object *m)
{
        json_object *options = NULL;
        (void) json_object_object_get_ex(m, "options", &options);
        for (size_t i = 0; options && i < json_object_array_length(options); i++)
                if (streq(json_object_get_string(json_object_array_get_idx(options, i)), "ro"))
                        return true;
        return false;
}

/* What a run's memory-backed directories are in a pod: emptyDirs, /run in memory (the
 * entrypoint's and the runtime's few files), the rest on the node's disk, counted in the
 * container's ephemeral storage (resources). The home is fresh in every pod, whichever the
 * local plan has (its home volume, or an ephemeral home's tmpfs): nothing of one pod's home
 * reaches the next, and the harness's settings come from the bridge's ConfigMap. */
static const struct scratch_dir {
        const char *path, *what, *medium;
} scratch_dirs[] = {
        { AISB_SANDBOX_HOME, "home", NULL },
        { "/tmp", "tmp", NULL },
        { "/var/tmp", "var-tmp", NULL },
        { "/run", "run", "Memory" },
};

/* The pod's volumes and the sandbox's volumeMounts, rendered from the plan's mounts. */
typedef struct pod_volumes {
        json_object *mounts, *volumes;
        char **names; /* of the volumes in volumes */
        unsigned n_host;
} pod_volumes;

static void pod_volumes_done(pod_volumes *v)
{
        json_object_put(v->mounts);
        json_object_put(v->volumes);
        strv_free(v->names);
}

/* A volume (name: its "name"), once; taken. */
static int add_volume(pod_volumes *v, const char *name, json_object *volume)
{
        _cleanup_json_ json_object *o = volume;
        for (size_t i = 0; v->names && v->names[i]; i++)
                if (streq(v->names[i], name))
                        return 0;
        int r = o ? strv_push(&v->names, name) : -ENOMEM;
        return r < 0 ? r : json_build_into(v->volumes, JSON_BUILD_TAKE(steal_pointer(&o)));
}

static int add_mount(pod_volumes *v, const char *name, const char *path, bool read_only, const char *sub_path)
{
        return json_build_into(v->mounts, JSON_BUILD_TAKE(kube_volume_mount(name, path, read_only, sub_path)));
}

static json_object *config_map_volume(const char *name)
{
        return json_built(JSON_BUILD_OBJECT(
                JSON_BUILD_PAIR_STRING("name", name),
                JSON_BUILD_PAIR("configMap", JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRING("name", name)))));
}

/* The workspace: the project itself on one machine, a claim on a cluster. */
static json_object *project_volume(const aisb_policy *p, const kube_options *ko, const kube_names *n, const char *name)
{
        return json_built(JSON_BUILD_OBJECT(
                JSON_BUILD_PAIR_STRING("name", name),
                JSON_BUILD_PAIR_CONDITION(ko->podman, JSON_BUILD_PAIR("hostPath", JSON_BUILD_OBJECT(
                                                                                   JSON_BUILD_PAIR_STRING("path", p->project),
                                                                                   JSON_BUILD_PAIR_STRING("type",
                                                                                                          "Directory")))),
                JSON_BUILD_PAIR_CONDITION(!ko->podman,
                                          JSON_BUILD_PAIR("persistentVolumeClaim",
                                                          JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRING("claimName",
                                                                                                   n->sandbox))))));
}

static int scratch_volume(const aisb_policy *p, const kube_names *n, pod_volumes *v, const char *path,
                          const char *size_option)
{
        unsigned long long size = p->tmp_size;
        if (size_option && startswith(size_option, "size=") && parse_uint(size_option + 5, ULLONG_MAX, &size) < 0)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(scratch_dirs); i++) {
                if (!streq(scratch_dirs[i].path, path))
                        continue;
                char name[64];
                kube_volume_name(name, n->sandbox, scratch_dirs[i].what);
                int r = add_volume(v, name, kube_empty_dir(name, scratch_dirs[i].medium, size));
                return r < 0 ? r : add_mount(v, name, path, false, NULL);
        }
        return -EOPNOTSUPP;
}

/* A path of the host's, at dest, as a hostPath volume of its own (type NULL: not checked). */
static int host_path_mount(pod_volumes *v, const kube_names *n, const char *kind, const char *source,
                           const char *type, const char *dest, bool ro)
{
        char what[24], name[64];
        snprintf(what, sizeof what, "%s%u", kind, v->n_host++);
        kube_volume_name(name, n->sandbox, what);
        int r = add_volume(v, name, json_built(JSON_BUILD_OBJECT(
                                            JSON_BUILD_PAIR_STRING("name", name),
                                            JSON_BUILD_PAIR("hostPath", JSON_BUILD_OBJECT(
                                                                                JSON_BUILD_PAIR_STRING("path", source),
                                                                                JSON_BUILD_PAIR_CONDITION(type, JSON_BUILD_PAIR_STRING("type", type)))))));
        return r < 0 ? r : add_mount(v, name, dest, ro, NULL);
}

/* The ConfigMap named like the pod and then what, mounted read-only: whole at dest, or with
 * files a file of them each at dest/NAME, by subPath. */
static int config_map_mount(pod_volumes *v, const kube_names *n, const char *what, const char *dest,
                            const project_settings *files)
{
        char name[64];
        kube_volume_name(name, n->sandbox, what);
        int r = add_volume(v, name, config_map_volume(name));
        if (!files)
                return r < 0 ? r : add_mount(v, name, dest, true, NULL);
        for (size_t i = 0; r >= 0 && i < files->n_files; i++) {
                _cleanup_free_ char *path = NULL;
                r = asprintf(&path, "%s/%s", dest, files->files[i].name) < 0
                            ? -ENOMEM
                            : add_mount(v, name, path, true, files->files[i].name);
        }
        return r;
}

/* One mount of the plan's, as the pod has it: the project (its volume), the run's copy of
 * its settings and the bridged files (ConfigMaps: a file each, by subPath, for the seed,
 * whose copy takes regular files only), a protected path (its own path of the host's, over
 * itself), a scratch directory (scratch_dirs), and on one machine a path of the
 * host's (the agents directory, a harness's read-only directories) as itself. */
static int render_mount(const aisb_policy *p, const kube_options *ko, const kube_plan *k, json_object *m,
                        pod_volumes *v, aisb_error **err)
{
        const kube_names *n = &k->names;
        const char *type = mount_field(m, "type"), *source = mount_field(m, "source"),
                   *dest = mount_field(m, "destination");
        bool ro = mount_read_only(m);
        char name[64];
        int r;
        if (streq(type, "tmpfs")) {
                json_object *options = NULL;
                (void) json_object_object_get_ex(m, "options", &options);
                r = scratch_volume(p, n, v, dest, json_object_get_string(json_object_array_get_idx(options, 0)));
        } else if (streq(dest, AISB_PROJECT_DIR)) {
                kube_volume_name(name, n->sandbox, "project");
                r = add_volume(v, name, project_volume(p, ko, n, name));
                r = r < 0 ? r : add_mount(v, name, dest, ro, NULL);
        } else if (streq(dest, AISB_PROJECT_DIR "/" PROJECT_SETTINGS_DIR)) {
                r = config_map_mount(v, n, "settings", dest, NULL);
        } else if (startswith(dest, AISB_PROJECT_DIR "/") && p->project && ko->podman) {
                /* A path of its own, not a subPath of the project's: podman 4.3 ignores
                 * subPath and would mount the whole project there (the entrypoint's check of
                 * the mount refuses that). The entrypoint checks it is what the plan found. */
                r = host_path_mount(v, n, "protect", source, NULL, dest, ro);
        } else if (streq(dest, AISB_SEED_IN_SANDBOX)) {
                /* podman writes a ConfigMap's keys as regular files, and podman 4.3 ignores
                 * subPath: the whole map at the seed's place there. */
                r = config_map_mount(v, n, "harness", dest, ko->podman ? NULL : &k->seed);
        } else if (streq(type, "bind") && ko->podman) {
                r = host_path_mount(v, n, "host", source, "Directory", dest, ro);
        } else
                r = -EOPNOTSUPP;
        if (r == -EOPNOTSUPP || r == -EINVAL)
                return aisb_error_set(err, -EOPNOTSUPP, "kube: %s (%s at %s) has no counterpart in a pod", source, type,
                                      dest);
        return r < 0 ? error_oom(err) : 0;
}

/* Every mount of the plan's create body, in its order but for the home, which comes after the
 * project's: the body's home volume, or an ephemeral home's tmpfs. */
static int pod_volumes_make(const aisb_policy *p, const kube_options *ko, const kube_plan *k, pod_volumes *v,
                            aisb_error **err)
{
        json_object *mounts = NULL, *home = NULL;
        v->mounts = json_object_new_array();
        v->volumes = json_object_new_array();
        if (!v->mounts || !v->volumes)
                return error_oom(err);
        if (json_object_object_get_ex(k->plan.body, "overlay_volumes", NULL) ||
            json_object_object_get_ex(k->plan.body, "devices", NULL))
                return aisb_error_set(err, -EOPNOTSUPP, "kube: the plan has a layer or a device a pod cannot have");
        (void) json_object_object_get_ex(k->plan.body, "mounts", &mounts);
        bool home_volume = json_object_object_get_ex(k->plan.body, "volumes", &home);
        int r = 0;
        for (int pass = 0; r >= 0 && pass < 3; pass++) {
                if (pass == 1 && home_volume && (r = scratch_volume(p, &k->names, v, AISB_SANDBOX_HOME, NULL)) < 0)
                        return r == -ENOMEM ? error_oom(err) : aisb_error_set(err, r, "kube: the home: %s", strerror(-r));
                for (size_t i = 0; r >= 0 && mounts && i < json_object_array_length(mounts); i++) {
                        json_object *m = json_object_array_get_idx(mounts, i);
                        const char *dest = mount_field(m, "destination");
                        int at = streq(dest, AISB_PROJECT_DIR) || startswith(dest, AISB_PROJECT_DIR "/") ? 0
                                 : streq(dest, AISB_SANDBOX_HOME)                                       ? 1
                                                                                                         : 2;
                        if (at == pass)
                                r = render_mount(p, ko, k, m, v, err);
                }
        }
        return r;
}

/* What the sandbox's objects are made of, computed before any is built. */
typedef struct sandbox_parts {
        pod_volumes volumes;
        char **argv; /* the plan's entrypoint argv, then the command */
} sandbox_parts;

static void sandbox_parts_done(sandbox_parts *s)
{
        pod_volumes_done(&s->volumes);
        strv_free(s->argv);
}

/* The plan's entrypoint argv and command. Kubernetes expands $(NAME) in a command and turns
 * $$ into $: every '$' of the command doubled, so that it runs as given (and names no
 * variable's value). podman kube play expands nothing: there the words go as they are. */
static int sandbox_argv(const kube_options *ko, const kube_plan *k, char ***ret)
{
        _cleanup_strv_free_ char **argv = strv_copy((const char *const *) k->plan.entrypoint);
        json_object *cmd = NULL;
        int r = argv ? 0 : -ENOMEM;
        (void) json_object_object_get_ex(k->plan.body, "command", &cmd);
        for (size_t i = 0; r >= 0 && cmd && i < json_object_array_length(cmd); i++) {
                _cleanup_(buffer_free) buffer word = {};
                r = buffer_printf(&word, "%s", "");
                for (const char *ch = json_object_get_string(json_object_array_get_idx(cmd, i)); *ch && r >= 0; ch++)
                        r = buffer_printf(&word, *ch == '$' && !ko->podman ? "$$" : "%c", *ch);
                if (r >= 0)
                        r = strv_push(&argv, word.data);
        }
        if (r < 0)
                return r;
        *ret = steal_pointer(&argv);
        return 0;
}

static int sandbox_parts_make(const aisb_policy *p, const kube_options *ko, const kube_plan *k, sandbox_parts *s,
                              aisb_error **err)
{
        int r = pod_volumes_make(p, ko, k, &s->volumes, err);
        if (r >= 0 && sandbox_argv(ko, k, &s->argv) < 0)
                return error_oom(err);
        return r;
}

static json_object *egress_to_gate(const kube_names *n)
{
        return json_built(JSON_BUILD_OBJECT(
                JSON_BUILD_PAIR("to", JSON_BUILD_ARRAY(JSON_BUILD_OBJECT(JSON_BUILD_PAIR_TAKE(
                                              "podSelector", kube_selector("aisb.gate", n->gate_hash))))),
                JSON_BUILD_PAIR("ports", JSON_BUILD_ARRAY(JSON_BUILD_TAKE(kube_port("TCP", KUBE_GATE_PORT))))));
}

/* Out, only the gate and address entries (--net none: nothing; --net full: anything). */
static json_object *sandbox_egress(const aisb_policy *p, const allowlist *l, const kube_names *n, bool gate)
{
        _cleanup_json_ json_object *egress = json_object_new_array();
        int r = json_build_into(egress, JSON_BUILD_CONDITION(p->net == SANDBOX_NET_FULL, JSON_BUILD_EMPTY_OBJECT),
                                JSON_BUILD_TAKE_IF(gate, egress_to_gate(n)));
        for (size_t i = 0; r >= 0 && p->net == SANDBOX_NET_ALLOW && i < l->n; i++) {
                const allow_entry *e = &l->entries[i];
                if (e->kind != ALLOW_ADDRESS)
                        continue;
                _cleanup_free_ char *cidr = NULL;
                char text[INET6_ADDRSTRLEN];
                inet_ntop(e->family, e->addr, text, sizeof text);
                unsigned port = e->port;
                r = asprintf(&cidr, "%s/%u", text, e->prefix) < 0
                            ? -ENOMEM
                            : json_build_into(egress,
                                              JSON_BUILD_TAKE(kube_egress_block(cidr, NULL, &port, port ? 1 : 0, true)));
        }
        return r < 0 ? NULL : steal_pointer(&egress);
}

/* The sandbox's NetworkPolicy: nothing in; out, sandbox_egress. */
static json_object *sandbox_network_policy(const aisb_policy *p, const allowlist *l, const kube_names *n, bool gate)
{
        return kube_network_policy(n->sandbox, sandbox_labels(n, false), "aisb.sandbox", n->sandbox,
                                   json_object_new_array(), sandbox_egress(p, l, n, gate));
}

/* The plan's environment: a variable of the policy's (--env) from the Secret named like the
 * pod, by name, never by value; every other as the plan has it (HOME, the proxy's, the
 * harness's quiet variables and level). The terminal's own (TERM, LANG, ...) a pod has none
 * of. */
static json_object *sandbox_env(const aisb_policy *p, const kube_plan *k)
{
        _cleanup_json_ json_object *env = json_object_new_array();
        int r = env ? 0 : -ENOMEM;
        for (size_t i = 0; r >= 0 && k->plan.env && k->plan.env[i]; i++) {
                const char *kv = k->plan.env[i];
                _cleanup_free_ char *name = strndup(kv, strcspn(kv, "="));
                if (!name)
                        return NULL;
                bool policy = policy_env_named(p, name);
                if (policy && policy_env_inherited(name))
                        continue;
                if (!policy) {
                        r = json_build_into(env, JSON_BUILD_TAKE(env_value(name, kv + strlen(name) + 1)));
                        continue;
                }
                r = json_build_into(env, JSON_BUILD_OBJECT(
                                                 JSON_BUILD_PAIR_STRING("name", name),
                                                 JSON_BUILD_PAIR("valueFrom", JSON_BUILD_OBJECT(JSON_BUILD_PAIR(
                                                                                      "secretKeyRef",
                                                                                      JSON_BUILD_OBJECT(
                                                                                              JSON_BUILD_PAIR_STRING(
                                                                                                      "name", k->names.sandbox),
                                                                                              JSON_BUILD_PAIR_STRING(
                                                                                                      "key", name)))))));
        }
        return r < 0 ? NULL : steal_pointer(&env);
}

static json_object *sandbox_container(const aisb_policy *p, const kube_options *ko, const kube_plan *k,
                                      const sandbox_parts *s)
{
        json_object *work_dir = NULL;
        (void) json_object_object_get_ex(k->plan.body, "work_dir", &work_dir);
        return json_built(JSON_BUILD_OBJECT(
                JSON_BUILD_PAIR_STRING("name", "sandbox"), JSON_BUILD_PAIR_STRING("image", k->image),
                JSON_BUILD_PAIR_STRING("imagePullPolicy", kube_pull_policy(ko)),
                JSON_BUILD_PAIR_STRV("command", s->argv),
                JSON_BUILD_PAIR_STRING("workingDir", json_object_get_string(work_dir)),
                JSON_BUILD_PAIR_TAKE("env", sandbox_env(p, k)),
                /* podman on a host whose cgroups it cannot delegate fails the pod for any:
                 * its own caps (aisb run's) are the way there. */
                JSON_BUILD_PAIR_TAKE_IF(!ko->podman, "resources", resources(p)),
                JSON_BUILD_PAIR_TAKE("securityContext", kube_security(&security_pod)),
                JSON_BUILD_PAIR_TAKE("volumeMounts", json_object_get(s->volumes.mounts))));
}

/* The gate's address comes from the Service's variables; nothing else is needed. podman has
 * no Services: a host alias names the gate's fixed address. */
static json_object *pod_spec(const aisb_policy *p, const kube_options *ko, const kube_plan *k, const sandbox_parts *s)
{
        const kube_names *n = &k->names;
        bool gate = k->gate;
        return json_built(JSON_BUILD_OBJECT(
                JSON_BUILD_PAIR_STRING("restartPolicy", "Never"),
                JSON_BUILD_PAIR_BOOL("automountServiceAccountToken", false),
                /* Deleted, it goes at once: the agent's command is PID 1 and may ignore
                 * SIGTERM, and "kubectl delete -f" removes its NetworkPolicy first. */
                JSON_BUILD_PAIR_INT64("terminationGracePeriodSeconds", 1),
                JSON_BUILD_PAIR_BOOL("enableServiceLinks", gate && !ko->podman),
                JSON_BUILD_PAIR_CONDITION(gate && ko->podman,
                                          JSON_BUILD_PAIR("hostAliases", JSON_BUILD_ARRAY(JSON_BUILD_OBJECT(
                                                                                 JSON_BUILD_PAIR_STRING("ip",
                                                                                                        KUBE_PODMAN_GATE_IP),
                                                                                 JSON_BUILD_PAIR("hostnames",
                                                                                                 JSON_BUILD_ARRAY(
                                                                                                         JSON_BUILD_STRING(
                                                                                                                 n->gate))))))),
                JSON_BUILD_PAIR_BOOL("hostNetwork", false), JSON_BUILD_PAIR_BOOL("hostPID", false),
                JSON_BUILD_PAIR_BOOL("hostIPC", false),
                JSON_BUILD_PAIR_CONDITION(ko->timeout_s, JSON_BUILD_PAIR_INT64("activeDeadlineSeconds",
                                                                               (int64_t) ko->timeout_s)),
                JSON_BUILD_PAIR_TAKE("securityContext", kube_pod_security(KUBE_UID)),
                JSON_BUILD_PAIR("containers", JSON_BUILD_ARRAY(JSON_BUILD_TAKE(sandbox_container(p, ko, k, s)))),
                JSON_BUILD_PAIR_TAKE_IF(ko->netfilter_init, "initContainers", netfilter_init_containers(p, ko, k)),
                JSON_BUILD_PAIR_TAKE("volumes", json_object_get(s->volumes.volumes))));
}

/* A Pod, or the agent-sandbox Sandbox (agents.x-k8s.io/v1beta1) around the same pod spec,
 * whose template carries the labels the NetworkPolicies select on. */
static json_object *sandbox_pod(const aisb_policy *p, const kube_options *ko, const kube_plan *k, const sandbox_parts *s)
{
        json_object *meta = kube_metadata(k->names.sandbox, sandbox_labels(&k->names, k->gate), ko->podman),
                    *spec = pod_spec(p, ko, k, s);
        if (!ko->as_sandbox)
                return kube_object("v1", "Pod", meta, "spec", spec);
        return kube_object("agents.x-k8s.io/v1beta1", "Sandbox", meta, "spec",
                           json_built(JSON_BUILD_OBJECT(JSON_BUILD_PAIR(
                                   "podTemplate",
                                   JSON_BUILD_OBJECT(JSON_BUILD_PAIR("metadata",
                                                                     JSON_BUILD_OBJECT(JSON_BUILD_PAIR_TAKE(
                                                                             "labels", sandbox_labels(&k->names, k->gate)))),
                                                     JSON_BUILD_PAIR_TAKE("spec", spec))))));
}

/* A ConfigMap of files (the run's copy of the project's settings, the bridged ones), named
 * like the pod and then what it holds; its keys sorted, whatever order a directory lists. */
static json_object *files_config_map(const kube_names *n, const char *what, const project_settings *files)
{
        char name[64];
        _cleanup_json_ json_object *data = json_object_new_object();
        _cleanup_strv_free_ char **keys = NULL;
        int r = data ? 0 : -ENOMEM;
        for (size_t i = 0; r >= 0 && i < files->n_files; i++)
                r = strv_push(&keys, files->files[i].name);
        strv_sort(keys);
        for (size_t i = 0; r >= 0 && keys && keys[i]; i++)
                r = json_build_into(data, JSON_BUILD_PAIR_STRING(keys[i], project_settings_find(files, keys[i])->data));
        return r < 0 ? NULL
                     : kube_object("v1", "ConfigMap",
                                   kube_metadata(kube_volume_name(name, n->sandbox, what), sandbox_labels(n, false), false),
                                   "data", steal_pointer(&data));
}

int kube_sandbox_objects(const aisb_policy *p, const kube_options *ko, const kube_plan *k, json_object *docs,
                           aisb_error **err)
{
        _cleanup_(sandbox_parts_done) sandbox_parts s = {};
        int r = sandbox_parts_make(p, ko, k, &s, err);
        if (r < 0)
                return r;
        r = json_build_into(docs, JSON_BUILD_TAKE_IF(k->facts.settings_copy, files_config_map(&k->names, "settings",
                                                                                              &k->facts.settings)),
                            JSON_BUILD_TAKE_IF(k->facts.seed_dir, files_config_map(&k->names, "harness", &k->seed)),
                            JSON_BUILD_TAKE_IF(!ko->podman, sandbox_network_policy(p, &k->facts.net.list, &k->names,
                                                                                   k->gate)),
                            JSON_BUILD_TAKE(sandbox_pod(p, ko, k, &s)));
        return r < 0 ? error_oom(err) : 0;
}

int kube_workspace_claim(const kube_options *ko, const kube_names *n, json_object *docs)
{
        char size[32];
        snprintf(size, sizeof size, "%llu", ko->workspace_size ? ko->workspace_size : 10ULL << 30);
        return json_build_into(
                docs,
                JSON_BUILD_TAKE(kube_object(
                        "v1", "PersistentVolumeClaim", kube_metadata(n->sandbox, sandbox_labels(n, false), false),
                        "spec",
                        json_built(JSON_BUILD_OBJECT(
                                JSON_BUILD_PAIR("accessModes", JSON_BUILD_ARRAY(JSON_BUILD_STRING("ReadWriteOnce"))),
                                JSON_BUILD_PAIR("resources", JSON_BUILD_OBJECT(JSON_BUILD_PAIR(
                                                                     "requests", JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRING(
                                                                                         "storage", size))))))))));
}
