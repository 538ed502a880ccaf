/* SPDX-License-Identifier: MIT */
/*
 * aisb kube: the policy aisb run would enforce, as Kubernetes objects a cluster enforces.
 *
 * A cluster's "restricted" Pod Security Standard refuses NET_ADMIN, so the in-container
 * ruleset cannot be the enforcement there: the network is the NetworkPolicies' (the
 * sandbox's pod reaches only its gate and the address entries; the gate reaches the outside
 * on the allowed ports, minus the private, link-local and metadata ranges, and DNS only at
 * the cluster's resolver), and the entrypoint runs in its external mode, which checks that
 * the pod started without privileges instead of dropping them. The gate is its own pod
 * (NetworkPolicy applies per pod), with the squid configuration the local gate's generator
 * writes. Everything is built with json-c and printed as JSON documents between "---"
 * lines: YAML 1.2 takes JSON as it is, and no YAML emitter of our own can get quoting wrong.
 *
 * The sandbox is a rendering of the plan a run of the same policy has (plan.h): its
 * variables, the entrypoint's argv, its mounts and protected paths, the allowlist, with a
 * cluster's facts where they are not this machine's (kube_plan_make). What the plan has that
 * a pod cannot is refused in one line, never left out (kube_check_policy, kube_check_plan).
 * The harness's bridged configuration is what the local bridge writes for a fresh home, in a
 * ConfigMap the entrypoint's seed copies into the home, as for an ephemeral home.
 *
 * It reads what a run's plan reads (the allowlists, the project's settings and protected
 * paths, the harness's host configuration) and what the image's content tag covers, and
 * writes nothing but a directory of its own for the bridge's files, removed at once: the
 * same policy on the same machine prints the same bytes.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <limits.h>

#include "allowlist.h"
#include "fileio.h"
#include "service.h"
#include "security.h"
#include "gate-squid.h"
#include "harness.h"
#include "image.h"
#include "jsonutil.h"
#include "kube.h"
#include "plan.h"
#include "podman.h"
#include "policy.h"
#include "project.h"
#include "digest.h"

#define KUBE_UID 1000
#define KUBE_GATE_PORT 3128
#define KUBE_GATE_UID 13 /* Debian's "proxy" user, whom squid's files belong to */

/* A DNS-1123 label from the project's short name: lowercase letters, digits and '-'. */
static void kube_label(const char *in, char *out, size_t size)
{
        size_t n = 0;
        for (const char *c = in; *c && n + 1 < size; c++) {
                char ch = *c == '_' ? '-' : *c;
                if ((ch == '-' && (n == 0 || out[n - 1] == '-')))
                        continue;
                out[n++] = ch;
        }
        while (n > 0 && out[n - 1] == '-')
                n--;
        out[n] = 0;
        if (n == 0)
                snprintf(out, size, "scratch");
}


/* What the sandbox's objects are made of, as text: the project, the network mode, the
 * allowlist and the names mapped for the gate, the variables' names, the command, the caps,
 * and the options that shape the objects. Nothing of this machine (no path of aisb's own, no
 * terminal variable), so the same policy names the same objects anywhere. */
static int kube_identity(const aisb_policy *p, const kube_options *o, const allowlist *l, char **ret_hex)
{
        _cleanup_(buffer_free) buffer b = {};
        _cleanup_strv_free_ char **entries = NULL, **hosts = strv_copy((const char *const *) p->add_hosts);
        int r = buffer_printf(&b, "project=%s\nnet=%d\n", p->project ? p->project : "", (int) p->net);
        for (size_t i = 0; r >= 0 && i < l->n; i++) {
                _cleanup_free_ char *text = NULL;
                r = allowlist_entry_text(&l->entries[i], &text);
                if (r >= 0)
                        r = strv_push(&entries, text);
        }
        if (r < 0 || (p->add_hosts && !hosts))
                return -ENOMEM;
        strv_sort(entries);
        strv_sort(hosts);
        for (size_t i = 0; r >= 0 && entries && entries[i]; i++)
                r = buffer_printf(&b, "allow=%s\n", entries[i]);
        for (size_t i = 0; r >= 0 && hosts && hosts[i]; i++)
                r = buffer_printf(&b, "gate-add-host=%s\n", hosts[i]);
        for (size_t i = 0; r >= 0 && i < p->n_env; i++)
                if (!policy_env_inherited(p->env[i].name))
                        r = buffer_printf(&b, "env=%s\n", p->env[i].name);
        const char *const *cmd = policy_command(p);
        for (size_t i = 0; r >= 0 && cmd && cmd[i]; i++)
                r = buffer_printf(&b, "command=%zu:%s\n", strlen(cmd[i]), cmd[i]);
        if (r >= 0)
                r = buffer_printf(&b, "memory=%llu\ncpus=%llu\ntmp=%llu\nread-only=%d\n", p->memory, p->cpus_milli,
                                  p->tmp_size, (int) p->read_only);
        if (r >= 0)
                r = buffer_printf(&b, "as-sandbox=%d\npodman=%d\nnetfilter=%d\ntimeout=%llu\nworkspace=%llu\nrepo=%s\n",
                                  (int) o->as_sandbox, (int) o->podman, (int) o->netfilter_init, o->timeout_s,
                                  o->workspace_size, o->image_repo ? o->image_repo : "");
        if (r < 0)
                return -ENOMEM;
        return sha256_hex(b.data, b.size, 12, ret_hex);
}

static int kube_names_make(const aisb_policy *p, const kube_options *o, const allowlist *l, kube_names *ret)
{
        char base[33], short_name[33];
        project_short_name(p->project, base, sizeof base);
        kube_label(base, short_name, sizeof short_name);
        /* The project and all that shapes its objects: another policy for the same project, or
         * another scratch sandbox, is another set of objects, and applying one never widens or
         * removes another's NetworkPolicy. */
        _cleanup_free_ char *hash = NULL, *gate = NULL;
        if (kube_identity(p, o, l, &hash) < 0)
                return -ENOMEM;
        snprintf(ret->sandbox, sizeof ret->sandbox, "aisb-%.32s-%.12s", short_name, hash);
        int r = gate_squid_hash(l, (const char *const *) p->add_hosts, &gate);
        if (r < 0)
                return r;
        snprintf(ret->gate_hash, sizeof ret->gate_hash, "%s", gate);
        snprintf(ret->gate, sizeof ret->gate, "aisb-gate-%s", gate);
        return 0;
}

static json_object *labels_object(const char *key, const char *value, const char *gate_client)
{
        return json_built(JSON_BUILD_OBJECT(
                JSON_BUILD_PAIR_STRING("app.kubernetes.io/managed-by", "aisb"), JSON_BUILD_PAIR_STRING(key, value),
                JSON_BUILD_PAIR_CONDITION(gate_client, JSON_BUILD_PAIR_STRING("aisb.gate-client", gate_client))));
}

static json_object *gate_labels(const kube_names *n)
{
        return labels_object("aisb.gate", n->gate_hash, NULL);
}

/* The sandbox's, and for a client of the gate the label its NetworkPolicy admits. */
static json_object *sandbox_labels(const kube_names *n, bool gate)
{
        return labels_object("aisb.sandbox", n->sandbox, gate ? n->gate_hash : NULL);
}

/* An object's metadata (name NULL: a pod template's). podman reads a pod's seccomp profile
 * from an annotation only, not from its spec. */
static json_object *metadata_object(const char *name, json_object *labels, bool podman_seccomp)
{
        return json_built(JSON_BUILD_OBJECT(
                JSON_BUILD_PAIR_CONDITION(name, JSON_BUILD_PAIR_STRING("name", name)),
                JSON_BUILD_PAIR_TAKE("labels", labels),
                JSON_BUILD_PAIR_CONDITION(podman_seccomp,
                                          JSON_BUILD_PAIR("annotations", JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRING(
                                                                                 "seccomp.security.alpha.kubernetes.io/pod",
                                                                                 "runtime/default"))))));
}

/* A Kubernetes object: its kind, its metadata, and its body under body_key ("spec", "data"). */
static json_object *kube_object(const char *api_version, const char *kind, json_object *metadata,
                                const char *body_key, json_object *body)
{
        return json_built(JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRING("apiVersion", api_version),
                                            JSON_BUILD_PAIR_STRING("kind", kind), JSON_BUILD_PAIR_TAKE("metadata", metadata),
                                            JSON_BUILD_PAIR_TAKE(body_key, body)));
}

#define KUBE_RUNTIME_DEFAULT_SECCOMP \
        JSON_BUILD_PAIR("seccompProfile", JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRING("type", "RuntimeDefault")))

/* Kubernetes names capabilities without libpod's CAP_. */
static json_object *kube_capabilities(const char *const *caps)
{
        _cleanup_json_ json_object *a = json_object_new_array();
        int r = a ? 0 : -ENOMEM;
        for (size_t i = 0; r >= 0 && caps[i]; i++)
                r = json_build_into(a, JSON_BUILD_STRING(caps[i] + (strncmp(caps[i], "CAP_", 4) ? 0 : 4)));
        return r < 0 ? NULL : steal_pointer(&a);
}

/* A container's security settings (security.h) as Kubernetes says them: the
 * "restricted" standard and then some for the pods' containers; root of the pod's user with
 * the capabilities it is given for the one that installs the ruleset. */
static json_object *kube_security(const security_spec *s)
{
        static const char *const all[] = { "ALL", NULL };
        return json_built(JSON_BUILD_OBJECT(
                JSON_BUILD_PAIR_BOOL("allowPrivilegeEscalation", false),
                JSON_BUILD_PAIR_BOOL("readOnlyRootFilesystem", s->read_only_root),
                JSON_BUILD_PAIR_CONDITION(s->as_root, JSON_BUILD_PAIR_BOOL("privileged", false)),
                JSON_BUILD_PAIR_CONDITION(s->as_root, JSON_BUILD_PAIR_BOOL("runAsNonRoot", false)),
                JSON_BUILD_PAIR_CONDITION(s->as_root, JSON_BUILD_PAIR_INT64("runAsUser", 0)),
                JSON_BUILD_PAIR_CONDITION(s->as_root, JSON_BUILD_PAIR_INT64("runAsGroup", 0)),
                JSON_BUILD_PAIR_CONDITION(!s->as_root, JSON_BUILD_PAIR_BOOL("runAsNonRoot", true)),
                JSON_BUILD_PAIR_CONDITION(!s->as_root, JSON_BUILD_PAIR_BOOL("privileged", false)),
                JSON_BUILD_PAIR("capabilities",
                                JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRV("drop", all),
                                                  JSON_BUILD_PAIR_TAKE_IF(s->cap_add, "add",
                                                                          kube_capabilities(s->cap_add)))),
                KUBE_RUNTIME_DEFAULT_SECCOMP));
}

static json_object *pod_security(unsigned uid)
{
        return json_built(JSON_BUILD_OBJECT(JSON_BUILD_PAIR_BOOL("runAsNonRoot", true),
                                            JSON_BUILD_PAIR_INT64("runAsUser", uid),
                                            JSON_BUILD_PAIR_INT64("runAsGroup", uid), KUBE_RUNTIME_DEFAULT_SECCOMP));
}

static json_object *empty_dir(const char *name, const char *medium, unsigned long long size)
{
        char text[32];
        snprintf(text, sizeof text, "%llu", size);
        return json_built(JSON_BUILD_OBJECT(
                JSON_BUILD_PAIR_STRING("name", name),
                JSON_BUILD_PAIR("emptyDir", JSON_BUILD_OBJECT(JSON_BUILD_PAIR_CONDITION(medium, JSON_BUILD_PAIR_STRING(
                                                                                                "medium", medium)),
                                                              JSON_BUILD_PAIR_STRING("sizeLimit", text)))));
}

/* A volume's name: its pod's, then what it holds. podman kube play makes a named volume of
 * an emptyDir, by that name: "tmp" alone would be one /tmp for the gate and every sandbox. */
static const char *volume_name(char buf[static 64], const char *owner, const char *what)
{
        snprintf(buf, 64, "%.50s-%.8s", owner, what); /* names are at most 50 (kube_names_make) */
        return buf;
}

/* sub_path NULL: the whole volume. */
static json_object *volume_mount(const char *name, const char *path, bool read_only, const char *sub_path)
{
        return json_built(JSON_BUILD_OBJECT(
                JSON_BUILD_PAIR_STRING("name", name), JSON_BUILD_PAIR_STRING("mountPath", path),
                JSON_BUILD_PAIR_CONDITION(read_only, JSON_BUILD_PAIR_BOOL("readOnly", true)),
                JSON_BUILD_PAIR_CONDITION(sub_path, JSON_BUILD_PAIR_STRING("subPath", sub_path))));
}

static json_object *env_value(const char *name, const char *value)
{
        return json_built(JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRING("name", name), JSON_BUILD_PAIR_STRING("value", value)));
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

static const char *pull_policy(const kube_options *ko)
{
        return ko->image_repo ? "IfNotPresent" : "Never";
}

static json_object *port_object(const char *protocol, unsigned port)
{
        return json_built(JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRING("protocol", protocol),
                                            JSON_BUILD_PAIR_CONDITION(port, JSON_BUILD_PAIR_INT64("port", port))));
}

/* Each port over TCP and, with udp, UDP too. */
static json_object *port_list(const unsigned *ports, size_t n_ports, bool udp)
{
        _cleanup_json_ json_object *a = json_object_new_array();
        int r = a ? 0 : -ENOMEM;
        for (size_t i = 0; r >= 0 && i < n_ports; i++)
                r = json_build_into(a, JSON_BUILD_TAKE(port_object("TCP", ports[i])),
                                    JSON_BUILD_TAKE_IF(udp, port_object("UDP", ports[i])));
        return r < 0 ? NULL : steal_pointer(&a);
}

/* An egress rule to an IP block (with exceptions) on these ports (TCP and, for an address
 * entry without a port, UDP too). */
static json_object *egress_block(const char *cidr, const char *const *except, const unsigned *ports, size_t n_ports,
                                 bool udp)
{
        return json_built(JSON_BUILD_OBJECT(
                JSON_BUILD_PAIR("to", JSON_BUILD_ARRAY(JSON_BUILD_OBJECT(JSON_BUILD_PAIR(
                                              "ipBlock",
                                              JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRING("cidr", cidr),
                                                                JSON_BUILD_PAIR_CONDITION(except && except[0],
                                                                                          JSON_BUILD_PAIR_STRV("except",
                                                                                                               except))))))),
                JSON_BUILD_PAIR_TAKE_IF(n_ports, "ports", port_list(ports, n_ports, udp))));
}

static json_object *selector(const char *key, const char *value)
{
        return json_built(JSON_BUILD_OBJECT(JSON_BUILD_PAIR("matchLabels", JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRING(key, value)))));
}

/* Egress to the cluster's resolver: kube-dns in kube-system, port 53. */
static json_object *egress_dns(void)
{
        return json_built(JSON_BUILD_OBJECT(
                JSON_BUILD_PAIR("to", JSON_BUILD_ARRAY(JSON_BUILD_OBJECT(
                                              JSON_BUILD_PAIR_TAKE("namespaceSelector",
                                                                   selector("kubernetes.io/metadata.name", "kube-system")),
                                              JSON_BUILD_PAIR_TAKE("podSelector", selector("k8s-app", "kube-dns"))))),
                JSON_BUILD_PAIR("ports", JSON_BUILD_ARRAY(JSON_BUILD_TAKE(port_object("UDP", 53)),
                                                          JSON_BUILD_TAKE(port_object("TCP", 53))))));
}

/* The ranges a gate never reaches for a name: those of the local gate (gate_local_range),
 * which on a cluster are its pods, services, nodes and the cloud's metadata service. */
static const char *const v4_except[] = { "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8",
                                         "169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24", "192.168.0.0/16",
                                         /* benchmarking and reserved space some clouds give pods */
                                         "198.18.0.0/15", "240.0.0.0/4",
                                         /* Azure's platform address (wire server, DNS) */
                                         "168.63.129.16/32", NULL };
static const char *const v6_except[] = { "::1/128", "fc00::/7", "fe80::/10", "64:ff9b::/96", "64:ff9b:1::/48",
                                         NULL };

/* The ports the allowlist's names are allowed on, sorted: the local gate's own set
 * (gate_squid_ports); more than a NetworkPolicy should list are refused before anything is
 * built. */
#define KUBE_MAX_PORTS 64
static int gate_ports(const allowlist *l, unsigned ports[static KUBE_MAX_PORTS], size_t *ret_n, aisb_error **err)
{
        _cleanup_free_ unsigned *set = NULL;
        size_t n = 0;
        if (gate_squid_ports(l, &set, &n) < 0)
                return error_oom(err);
        if (n > KUBE_MAX_PORTS)
                return aisb_error_set(err, -EOPNOTSUPP, "kube: more than %d ports in the allowlist", KUBE_MAX_PORTS);
        memcpy(ports, set, n * sizeof *ports);
        *ret_n = n;
        return 0;
}

/* Each --gate-add-host address, as the gate's policy lets it out. */
static int gate_add_cidrs(const aisb_policy *p, char ***ret, aisb_error **err)
{
        _cleanup_strv_free_ char **cidrs = NULL;
        for (size_t i = 0; p->add_hosts && p->add_hosts[i]; i++) {
                _cleanup_free_ char *name = NULL, *ip = NULL, *cidr = NULL;
                if (allowlist_parse_add_host(p->add_hosts[i], &name, &ip, err) < 0)
                        return -EINVAL;
                if (asprintf(&cidr, "%s/%u", ip, strchr(ip, ':') ? 128 : 32) < 0 || strv_push(&cidrs, cidr) < 0)
                        return error_oom(err);
        }
        *ret = steal_pointer(&cidrs);
        return 0;
}

/* What the gate's objects are made of, computed before any is built. */
typedef struct gate_parts {
        unsigned ports[KUBE_MAX_PORTS];
        size_t n_ports;
        char **add_cidrs;
        char *conf, *hosts, *image;
} gate_parts;

static void gate_parts_done(gate_parts *g)
{
        strv_free(g->add_cidrs);
        free(g->conf);
        free(g->hosts);
        free(g->image);
}

static int gate_parts_make(const aisb_policy *p, const allowlist *l, const char *image, gate_parts *g,
                           aisb_error **err)
{
        int r = gate_ports(l, g->ports, &g->n_ports, err);
        if (r >= 0)
                r = gate_add_cidrs(p, &g->add_cidrs, err);
        if (r < 0)
                return r;
        /* The configuration: the local gate's generator, listening on the pod's addresses. */
        squid_options so = { .port = KUBE_GATE_PORT, .cluster = true,
                             .hosts_file = p->add_hosts ? "/etc/aisb-gate/hosts" : NULL,
                             .add_hosts = (const char *const *) p->add_hosts,
                             .access_log = "/var/log/squid/access.log", .cache_log = "/var/log/squid/cache.log" };
        r = gate_squid_config(l, &so, &g->conf, err);
        if (r >= 0 && p->add_hosts)
                r = gate_squid_hosts_file((const char *const *) p->add_hosts, &g->hosts, err);
        if (r >= 0 && !(g->image = strdup(image)))
                r = error_oom(err);
        return r;
}

static json_object *gate_config_map(const kube_names *n, const gate_parts *g)
{
        return kube_object("v1", "ConfigMap", metadata_object(n->gate, gate_labels(n), false), "data",
                           json_built(JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRING("squid.conf", g->conf),
                                                        JSON_BUILD_PAIR_CONDITION(g->hosts, JSON_BUILD_PAIR_STRING(
                                                                                                    "hosts", g->hosts)))));
}

/* squid alone, unprivileged. podman publishes a containerPort on the host: none there. */
static json_object *gate_container(const kube_options *ko, const kube_names *n, const gate_parts *g)
{
        static const char *const squid_argv[] = { "squid", "-N", "-f", "/etc/aisb-gate/squid.conf", NULL };
        char v_config[64], v_logs[64], v_run[64], v_tmp[64];
        return json_built(JSON_BUILD_OBJECT(
                JSON_BUILD_PAIR_STRING("name", "squid"), JSON_BUILD_PAIR_STRING("image", g->image),
                JSON_BUILD_PAIR_STRING("imagePullPolicy", pull_policy(ko)),
                JSON_BUILD_PAIR_STRV("command", squid_argv),
                JSON_BUILD_PAIR_CONDITION(!ko->podman,
                                          JSON_BUILD_PAIR("ports", JSON_BUILD_ARRAY(JSON_BUILD_OBJECT(
                                                                           JSON_BUILD_PAIR_STRING("name", "proxy"),
                                                                           JSON_BUILD_PAIR_INT64("containerPort",
                                                                                                 KUBE_GATE_PORT),
                                                                           JSON_BUILD_PAIR_STRING("protocol", "TCP"))))),
                JSON_BUILD_PAIR_TAKE("securityContext", kube_security(&security_pod)),
                JSON_BUILD_PAIR("volumeMounts",
                                JSON_BUILD_ARRAY(
                                        JSON_BUILD_TAKE(volume_mount(volume_name(v_config, n->gate, "config"),
                                                                     "/etc/aisb-gate", true, NULL)),
                                        JSON_BUILD_TAKE(volume_mount(volume_name(v_logs, n->gate, "logs"),
                                                                     "/var/log/squid", false, NULL)),
                                        JSON_BUILD_TAKE(volume_mount(volume_name(v_run, n->gate, "run"), "/run", false,
                                                                     NULL)),
                                        JSON_BUILD_TAKE(volume_mount(volume_name(v_tmp, n->gate, "tmp"), "/tmp", false,
                                                                     NULL))))));
}

/* Its configuration from the ConfigMap; its logs and spool in memory. */
static json_object *gate_volumes(const kube_names *n)
{
        char v_config[64], v_logs[64], v_run[64], v_tmp[64];
        return json_built(JSON_BUILD_ARRAY(
                JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRING("name", volume_name(v_config, n->gate, "config")),
                                  JSON_BUILD_PAIR("configMap", JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRING("name", n->gate)))),
                JSON_BUILD_TAKE(empty_dir(volume_name(v_logs, n->gate, "logs"), NULL, 256ULL << 20)),
                JSON_BUILD_TAKE(empty_dir(volume_name(v_run, n->gate, "run"), "Memory", 16ULL << 20)),
                JSON_BUILD_TAKE(empty_dir(volume_name(v_tmp, n->gate, "tmp"), "Memory", 64ULL << 20))));
}

static json_object *gate_deployment(const kube_options *ko, const kube_names *n, const gate_parts *g)
{
        json_object *pod_spec = json_built(JSON_BUILD_OBJECT(
                JSON_BUILD_PAIR_BOOL("automountServiceAccountToken", false),
                JSON_BUILD_PAIR_BOOL("enableServiceLinks", false),
                JSON_BUILD_PAIR_TAKE("securityContext", pod_security(KUBE_GATE_UID)),
                JSON_BUILD_PAIR("containers", JSON_BUILD_ARRAY(JSON_BUILD_TAKE(gate_container(ko, n, g)))),
                JSON_BUILD_PAIR_TAKE("volumes", gate_volumes(n))));
        return kube_object("apps/v1", "Deployment", metadata_object(n->gate, gate_labels(n), false), "spec",
                           json_built(JSON_BUILD_OBJECT(
                                   JSON_BUILD_PAIR_INT64("replicas", 1),
                                   JSON_BUILD_PAIR_TAKE("selector", selector("aisb.gate", n->gate_hash)),
                                   JSON_BUILD_PAIR("template", JSON_BUILD_OBJECT(
                                                                       JSON_BUILD_PAIR_TAKE("metadata",
                                                                                            metadata_object(NULL, gate_labels(n),
                                                                                                            ko->podman)),
                                                                       JSON_BUILD_PAIR_TAKE("spec", pod_spec))))));
}

static json_object *gate_service(const kube_names *n)
{
        return kube_object("v1", "Service", metadata_object(n->gate, gate_labels(n), false), "spec",
                           json_built(JSON_BUILD_OBJECT(
                                   JSON_BUILD_PAIR("selector", JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRING("aisb.gate",
                                                                                                       n->gate_hash))),
                                   JSON_BUILD_PAIR("ports", JSON_BUILD_ARRAY(JSON_BUILD_OBJECT(
                                                                    JSON_BUILD_PAIR_STRING("name", "proxy"),
                                                                    JSON_BUILD_PAIR_STRING("protocol", "TCP"),
                                                                    JSON_BUILD_PAIR_INT64("port", KUBE_GATE_PORT),
                                                                    JSON_BUILD_PAIR_INT64("targetPort", KUBE_GATE_PORT)))))));
}

/* Out: DNS at the cluster's resolver, the allowed ports anywhere but the ranges the gate
 * never reaches, and each --gate-add-host address on them. */
static json_object *gate_egress(const gate_parts *g)
{
        _cleanup_json_ json_object *egress = json_built(JSON_BUILD_ARRAY(
                JSON_BUILD_TAKE(egress_dns()),
                JSON_BUILD_TAKE(egress_block("0.0.0.0/0", v4_except, g->ports, g->n_ports, false)),
                JSON_BUILD_TAKE(egress_block("::/0", v6_except, g->ports, g->n_ports, false))));
        int r = egress ? 0 : -ENOMEM;
        for (size_t i = 0; r >= 0 && g->add_cidrs && g->add_cidrs[i]; i++)
                r = json_build_into(egress, JSON_BUILD_TAKE(egress_block(g->add_cidrs[i], NULL, g->ports, g->n_ports,
                                                                         false)));
        return r < 0 ? NULL : steal_pointer(&egress);
}

/* The gate's NetworkPolicy: in, only from its sandboxes; out, gate_egress. */
static json_object *gate_network_policy(const kube_names *n, const gate_parts *g)
{
        return kube_object(
                "networking.k8s.io/v1", "NetworkPolicy", metadata_object(n->gate, gate_labels(n), false), "spec",
                json_built(JSON_BUILD_OBJECT(
                        JSON_BUILD_PAIR_TAKE("podSelector", selector("aisb.gate", n->gate_hash)),
                        JSON_BUILD_PAIR("policyTypes", JSON_BUILD_ARRAY(JSON_BUILD_STRING("Ingress"),
                                                                        JSON_BUILD_STRING("Egress"))),
                        JSON_BUILD_PAIR("ingress",
                                        JSON_BUILD_ARRAY(JSON_BUILD_OBJECT(
                                                JSON_BUILD_PAIR("from", JSON_BUILD_ARRAY(JSON_BUILD_OBJECT(
                                                                                JSON_BUILD_PAIR_TAKE(
                                                                                        "podSelector",
                                                                                        selector("aisb.gate-client",
                                                                                                 n->gate_hash))))),
                                                JSON_BUILD_PAIR("ports", JSON_BUILD_ARRAY(JSON_BUILD_TAKE(
                                                                                 port_object("TCP", KUBE_GATE_PORT))))))),
                        JSON_BUILD_PAIR_TAKE("egress", gate_egress(g)))));
}

/* The gate's ConfigMap and Deployment, and on a cluster its Service and NetworkPolicy
 * (podman takes neither). */
static int gate_objects(const aisb_policy *p, const kube_options *ko, const allowlist *l, const kube_names *n,
                        const char *image, json_object *docs, aisb_error **err)
{
        _cleanup_(gate_parts_done) gate_parts g = {};
        int r = gate_parts_make(p, l, image, &g, err);
        if (r < 0)
                return r;
        r = json_build_into(docs, JSON_BUILD_TAKE(gate_config_map(n, &g)), JSON_BUILD_TAKE(gate_deployment(ko, n, &g)),
                            JSON_BUILD_TAKE_IF(!ko->podman, gate_service(n)),
                            JSON_BUILD_TAKE_IF(!ko->podman, gate_network_policy(n, &g)));
        return r < 0 ? error_oom(err) : 0;
}

/* The variable Kubernetes gives a pod for the gate's Service: AISB_GATE_HASH_SERVICE_HOST. */
static void service_host_variable(const kube_names *n, char var[static 80])
{
        size_t k = 0;
        for (const char *c = n->gate; *c && k + 14 < 80; c++)
                var[k++] = *c == '-' ? '_' : (char) toupper((unsigned char) *c);
        snprintf(var + k, 80 - k, "_SERVICE_HOST");
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
                JSON_BUILD_PAIR_STRING("imagePullPolicy", pull_policy(ko)), JSON_BUILD_PAIR_STRV("command", argv),
                JSON_BUILD_PAIR_TAKE("securityContext", kube_security(&security_netfilter)),
                JSON_BUILD_PAIR_TAKE_IF(!ko->podman, "resources", resources(p)))));
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
        return json_build_into(v->mounts, JSON_BUILD_TAKE(volume_mount(name, path, read_only, sub_path)));
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
                volume_name(name, n->sandbox, scratch_dirs[i].what);
                int r = add_volume(v, name, empty_dir(name, scratch_dirs[i].medium, size));
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
        volume_name(name, n->sandbox, what);
        int r = add_volume(v, name, json_built(JSON_BUILD_OBJECT(
                                            JSON_BUILD_PAIR_STRING("name", name),
                                            JSON_BUILD_PAIR("hostPath", JSON_BUILD_OBJECT(
                                                                                JSON_BUILD_PAIR_STRING("path", source),
                                                                                JSON_BUILD_PAIR_CONDITION(type, JSON_BUILD_PAIR_STRING("type", type)))))));
        return r < 0 ? r : add_mount(v, name, dest, ro, NULL);
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
                volume_name(name, n->sandbox, "project");
                r = add_volume(v, name, project_volume(p, ko, n, name));
                r = r < 0 ? r : add_mount(v, name, dest, ro, NULL);
        } else if (streq(dest, AISB_PROJECT_DIR "/" PROJECT_SETTINGS_DIR)) {
                volume_name(name, n->sandbox, "settings");
                r = add_volume(v, name, config_map_volume(name));
                r = r < 0 ? r : add_mount(v, name, dest, true, NULL);
        } else if (startswith(dest, AISB_PROJECT_DIR "/") && p->project && ko->podman) {
                /* A path of its own, not a subPath of the project's: podman 4.3 ignores
                 * subPath and would mount the whole project there (the entrypoint's check of
                 * the mount refuses that). The entrypoint checks it is what the plan found. */
                r = host_path_mount(v, n, "protect", source, NULL, dest, ro);
        } else if (streq(dest, AISB_SEED_IN_SANDBOX) && ko->podman) {
                /* podman writes a ConfigMap's keys as regular files, and podman 4.3 ignores
                 * subPath: the whole map at the seed's place. */
                volume_name(name, n->sandbox, "harness");
                r = add_volume(v, name, config_map_volume(name));
                r = r < 0 ? r : add_mount(v, name, dest, true, NULL);
        } else if (streq(dest, AISB_SEED_IN_SANDBOX)) {
                volume_name(name, n->sandbox, "harness");
                r = add_volume(v, name, config_map_volume(name));
                for (size_t i = 0; r >= 0 && i < k->seed.n_files; i++) {
                        _cleanup_free_ char *path = NULL;
                        r = asprintf(&path, "%s/%s", dest, k->seed.files[i].name) < 0
                                    ? -ENOMEM
                                    : add_mount(v, name, path, true, k->seed.files[i].name);
                }
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
                                              "podSelector", selector("aisb.gate", n->gate_hash))))),
                JSON_BUILD_PAIR("ports", JSON_BUILD_ARRAY(JSON_BUILD_TAKE(port_object("TCP", KUBE_GATE_PORT))))));
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
                            : json_build_into(egress, JSON_BUILD_TAKE(egress_block(cidr, NULL, &port, port ? 1 : 0, true)));
        }
        return r < 0 ? NULL : steal_pointer(&egress);
}

/* The sandbox's NetworkPolicy: nothing in; out, sandbox_egress. */
static json_object *sandbox_network_policy(const aisb_policy *p, const allowlist *l, const kube_names *n, bool gate)
{
        return kube_object(
                "networking.k8s.io/v1", "NetworkPolicy", metadata_object(n->sandbox, sandbox_labels(n, false), false),
                "spec",
                json_built(JSON_BUILD_OBJECT(
                        JSON_BUILD_PAIR_TAKE("podSelector", selector("aisb.sandbox", n->sandbox)),
                        JSON_BUILD_PAIR("policyTypes", JSON_BUILD_ARRAY(JSON_BUILD_STRING("Ingress"),
                                                                        JSON_BUILD_STRING("Egress"))),
                        JSON_BUILD_PAIR("ingress", JSON_BUILD_EMPTY_ARRAY),
                        JSON_BUILD_PAIR_TAKE("egress", sandbox_egress(p, l, n, gate)))));
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
                JSON_BUILD_PAIR_STRING("imagePullPolicy", pull_policy(ko)), JSON_BUILD_PAIR_STRV("command", s->argv),
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
                JSON_BUILD_PAIR_TAKE("securityContext", pod_security(KUBE_UID)),
                JSON_BUILD_PAIR("containers", JSON_BUILD_ARRAY(JSON_BUILD_TAKE(sandbox_container(p, ko, k, s)))),
                JSON_BUILD_PAIR_TAKE_IF(ko->netfilter_init, "initContainers", netfilter_init_containers(p, ko, k)),
                JSON_BUILD_PAIR_TAKE("volumes", json_object_get(s->volumes.volumes))));
}

/* A Pod, or the agent-sandbox Sandbox (agents.x-k8s.io/v1beta1) around the same pod spec,
 * whose template carries the labels the NetworkPolicies select on. */
static json_object *sandbox_pod(const aisb_policy *p, const kube_options *ko, const kube_plan *k, const sandbox_parts *s)
{
        json_object *meta = metadata_object(k->names.sandbox, sandbox_labels(&k->names, k->gate), ko->podman),
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
                                   metadata_object(volume_name(name, n->sandbox, what), sandbox_labels(n, false), false),
                                   "data", steal_pointer(&data));
}

/* The ConfigMaps the pod's volumes name, its NetworkPolicy (none for podman, which enforces
 * none) and the pod. */
static int sandbox_objects(const aisb_policy *p, const kube_options *ko, const kube_plan *k, json_object *docs,
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

/* The workspace: a claim of the project's own, which outlives the pod. */
static int workspace_claim(const kube_options *ko, const kube_names *n, json_object *docs)
{
        char size[32];
        snprintf(size, sizeof size, "%llu", ko->workspace_size ? ko->workspace_size : 10ULL << 30);
        return json_build_into(
                docs,
                JSON_BUILD_TAKE(kube_object(
                        "v1", "PersistentVolumeClaim", metadata_object(n->sandbox, sandbox_labels(n, false), false),
                        "spec",
                        json_built(JSON_BUILD_OBJECT(
                                JSON_BUILD_PAIR("accessModes", JSON_BUILD_ARRAY(JSON_BUILD_STRING("ReadWriteOnce"))),
                                JSON_BUILD_PAIR("resources", JSON_BUILD_OBJECT(JSON_BUILD_PAIR(
                                                                     "requests", JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRING(
                                                                                         "storage", size))))))))));
}

/* What a cluster cannot be given as the policy says: refused, each in one line, rather than
 * emitted weaker. These the policy alone decides, before anything is read. */
static int kube_check_policy(const aisb_policy *p, const kube_options *o, aisb_error **err)
{
        if (p->n_secrets)
                return aisb_error_set(err, -EOPNOTSUPP, "kube: --secret is not supported on Kubernetes yet "
                                                        "(the gate would hold the value); use --env NAME");
        if (p->net == SANDBOX_NET_ALLOW && (p->no_gate || p->proxy))
                return aisb_error_set(err, -EOPNOTSUPP, "kube: --%s has no meaning on Kubernetes: the gate is a pod "
                                                        "there",
                                      p->no_gate ? "no-gate" : "proxy");
        if (p->n_mounts || p->devices)
                return aisb_error_set(err, -EOPNOTSUPP, "kube: --%s names a host path, which a cluster's pod does "
                                                        "not have",
                                      p->n_mounts ? "mount" : "device");
        if (p->keep_root || p->allow_unenforced)
                return aisb_error_set(err, -EOPNOTSUPP, "kube: --%s is refused: the pod starts unprivileged",
                                      p->keep_root ? "insecure-keep-root" : "allow-unenforced");
        if (p->create_patch)
                return aisb_error_set(err, -EOPNOTSUPP, "kube: --unsafe-create-patch is podman's, not a cluster's");
        if (p->review)
                return aisb_error_set(err, -EOPNOTSUPP, "kube: --review keeps a run's changes in a layer on this "
                                                        "machine; a cluster's workspace has none");
        if (p->net == SANDBOX_NET_ALLOW && plan_asks(p, false))
                return aisb_error_set(err, -EOPNOTSUPP, "kube: --ask tty asks on this machine (aisb ask) about names "
                                                        "the allowlist lacks; a cluster's gate cannot: --ask auto");
        if (o->netfilter_init && p->net == SANDBOX_NET_FULL)
                return aisb_error_set(err, -EOPNOTSUPP, "kube: --netfilter init has no ruleset to install with --net full");
        if (o->podman && o->as_sandbox)
                return aisb_error_set(err, -EOPNOTSUPP, "kube: podman plays no Sandbox: --target podman takes --as pod");
        return 0;
}

/* Files a ConfigMap holds as they are: keys it takes, UTF-8 text, within its size. */
#define KUBE_CONFIG_MAP_MAX (1000 * 1000)
static int config_map_check(const project_settings *files, const char *what, aisb_error **err)
{
        size_t total = 0;
        for (size_t i = 0; i < files->n_files; i++) {
                const project_file *f = &files->files[i];
                total += f->size;
                if (!*f->name || strlen(f->name) > 253 ||
                    strspn(f->name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._") != strlen(f->name))
                        return aisb_error_set(err, -EOPNOTSUPP, "kube: %s/%.64s: not a name a ConfigMap's key takes "
                                                                "(letters, digits, '-', '.', '_')",
                                              what, f->name);
                if (!json_utf8_valid(f->data, f->size))
                        return aisb_error_set(err, -EOPNOTSUPP, "kube: %s/%s is not UTF-8 text, which a ConfigMap "
                                                                "holds as it is",
                                              what, f->name);
        }
        if (total > KUBE_CONFIG_MAP_MAX)
                return aisb_error_set(err, -EOPNOTSUPP, "kube: %s holds %zu bytes, more than a ConfigMap's %d", what,
                                      total, KUBE_CONFIG_MAP_MAX);
        return 0;
}

/* What the plan has that the pod cannot: refused in one line that names it and the option
 * that takes it away. On a cluster, nothing of this machine's files: not the agents
 * directory, a harness's directories, or the protected paths (binds of this machine's tree
 * over itself; a claim is not that tree, and a subPath missing there would be made a
 * directory). With podman a git directory outside the project is a path the pod is not
 * given. */
static int kube_check_plan(const aisb_policy *p, const kube_options *o, const kube_plan *k, aisb_error **err)
{
        const plan_facts *f = &k->facts;
        if (!o->podman && f->agents_dir)
                return aisb_error_set(err, -EOPNOTSUPP, "kube: %s is mounted at ~/.agents, a path of this machine's "
                                                        "a cluster's pod does not have: --no-agents, or --target podman",
                                      f->agents_dir);
        if (!o->podman && f->n_harness_mounts)
                return aisb_error_set(err, -EOPNOTSUPP, "kube: %s is mounted at %s, a path of this machine's a "
                                                        "cluster's pod does not have: --no-harness-config, or --target "
                                                        "podman",
                                      f->harness_mounts[0].source, f->harness_mounts[0].destination);
        if (f->protect.outside)
                return aisb_error_set(err, -EOPNOTSUPP,
                                      "kube: the project's .git names %s, outside the project, which the pod is not "
                                      "given; run from the repository's main worktree, or --protect=-.git",
                                      f->protect.outside[0]);
        if (!o->podman && f->protect.n_mounts)
                return aisb_error_set(err, -EOPNOTSUPP, "kube: %s is protected, a bind of this machine's tree over "
                                                        "itself; a cluster's workspace claim is not that tree: "
                                                        "--protect none, or --target podman",
                                      f->protect.mounts[0].destination);
        int r = f->settings_copy ? config_map_check(&f->settings, PROJECT_SETTINGS_DIR, err) : 0;
        return r < 0 ? r : config_map_check(&k->seed, harness_sandbox_dir(p) ? harness_sandbox_dir(p) : "", err);
}

/* Each regular file of dir, sorted by name. */
static int read_files(int dir, project_settings *ret, aisb_error **err)
{
        _cleanup_strv_free_ char **names = NULL;
        int fd = dup(dir);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d) {
                if (fd >= 0)
                        close(fd);
                return aisb_error_set(err, -errno, "kube: reading the bridged files: %s", strerror(errno));
        }
        int r = 0;
        for (struct dirent *e; r >= 0 && (e = readdir(d));)
                if (e->d_type == DT_REG)
                        r = strv_push(&names, e->d_name);
        closedir(d);
        if (r < 0)
                return error_oom(err);
        strv_sort(names);
        size_t n = strv_length((const char *const *) names);
        if (n && !(ret->files = calloc(n, sizeof *ret->files)))
                return error_oom(err);
        for (size_t i = 0; i < n; i++) {
                project_file *f = &ret->files[ret->n_files];
                r = read_file_at(dir, names[i], KUBE_CONFIG_MAP_MAX + 1, &f->data, &f->size);
                if (r < 0)
                        return aisb_error_set(err, r, "kube: reading the bridged %s: %s", names[i], strerror(-r));
                f->name = strdup(names[i]);
                ret->n_files++;
                if (!f->name)
                        return error_oom(err);
        }
        return 0;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(aisb_ctx *, aisb_ctx_free)

/* The harness's files a fresh home gets from the bridge (harness_bridge_fresh), written in a
 * directory of this process's own, read back and removed: a pod's home is new each start. Its
 * warnings (what of the host's settings stays out) are the local run's to give. */
static int kube_seed(const aisb_policy *p, project_settings *ret, aisb_error **err)
{
        _cleanup_(run_dir_remove) run_dir d = RUN_DIR_NULL;
        _cleanup_(aisb_ctx_freep) aisb_ctx *ctx = NULL;
        int r = run_dir_create(&d, err);
        r = r < 0 ? r : aisb_ctx_new(&ctx, err);
        r = r < 0 ? r : harness_bridge_fresh(ctx, p, d.fd, err);
        return r < 0 ? r : read_files(d.fd, ret, err);
}

void kube_plan_done(kube_plan *k)
{
        plan_facts_done(&k->facts);
        run_plan_done(&k->plan);
        free(k->gate_host);
        free(k->gate_address);
        free(k->image);
        free(k->gate_image);
        project_settings_done(&k->seed);
        *k = (kube_plan) {};
}

/* An image of the plan's facts by the name the objects give it: its local tag, or REPO/NAME:TAG. */
static int image_name(const image_facts *f, const kube_options *o, const char *name, char **ret)
{
        _cleanup_free_ char *repo = NULL;
        if (!o->image_repo)
                return (*ret = strdup(f->tag)) ? 0 : -ENOMEM;
        return asprintf(&repo, "%s/%s", o->image_repo, name) < 0 ? -ENOMEM : image_context_tag(repo, &f->context, ret);
}

int kube_plan_make(const aisb_policy *p, const kube_options *o, kube_plan *ret, aisb_error **err)
{
        _cleanup_(kube_plan_done) kube_plan k = {};
        int r = kube_check_policy(p, o, err);
        r = r < 0 ? r : plan_gather(p, &(plan_gather_options) { .purpose = PLAN_DRY_RUN }, &k.facts, err);
        if (r < 0)
                return r;
        plan_facts *f = &k.facts;
        if (gate_squid_intercepts(&f->net.list, 0))
                return aisb_error_set(err, -EOPNOTSUPP, "kube: allowlist entries with methods or paths are not "
                                                        "supported on Kubernetes yet (the gate would intercept TLS)");
        r = kube_names_make(p, o, &f->net.list, &k.names);
        if (r < 0)
                return aisb_error_set(err, r, "kube: cannot name the objects: %s", strerror(-r));
        /* A cluster's facts where they are not this machine's: the pod's uid, the gate's pod
         * (its Service's address, read from the variable Kubernetes sets, or podman's fixed
         * one), the network enforced outside the sandbox, a home that is fresh each start and
         * seeded with the bridged files, and on a cluster a workspace that is a claim, not the
         * directory whose inode a local run checks. */
        char var[80];
        service_host_variable(&k.names, var);
        k.gate = plan_needs_gate(p, f);
        f->uid = f->gid = KUBE_UID;
        f->gate_port = k.gate ? KUBE_GATE_PORT : 0;
        if (o->podman ? !(k.gate_host = strdup(k.names.gate)) || !(k.gate_address = strdup(KUBE_PODMAN_GATE_IP))
                      : asprintf(&k.gate_host, "$(%s)", var) < 0 || !(k.gate_address = strdup(var)))
                return error_oom(err);
        f->net.gate_host = k.gate_host;
        f->net.gate_address = k.gate_address;
        f->net.gate_address_env = !o->podman;
        f->net.external = true;
        f->seed_dir = harness_bridge_applies(p) ? "(the harness's bridged configuration: a ConfigMap)" : NULL;
        if (!o->podman)
                f->have_project_id = false;
        r = plan_build(p, f, &k.plan, err);
        if (r < 0)
                return r;
        if (image_name(&f->built, o, "aisb", &k.image) < 0 ||
            (k.gate && f->built.gate && image_name(f->built.gate, o, "aisb-gate", &k.gate_image) < 0))
                return error_oom(err);
        if (f->seed_dir && (r = kube_seed(p, &k.seed, err)) < 0)
                return r;
        *ret = k;
        k = (kube_plan) {};
        return 0;
}

int kube_manifests(const aisb_policy *p, const kube_options *ko, char **ret_text, aisb_error **err)
{
        _cleanup_(kube_plan_done) kube_plan k = {};
        int r = kube_plan_make(p, ko, &k, err);
        if (r < 0)
                return r;
        unsigned parts = ko->parts ? ko->parts : KUBE_PART_GATE | KUBE_PART_SANDBOX;
        if ((parts & KUBE_PART_SANDBOX) && (r = kube_check_plan(p, ko, &k, err)) < 0)
                return r;
        _cleanup_json_ json_object *docs = json_object_new_array();
        if (!docs)
                return error_oom(err);
        /* The Service before the Pod: the pod's environment names it. */
        if (k.gate && (parts & KUBE_PART_GATE) &&
            (r = gate_objects(p, ko, &k.facts.net.list, &k.names, k.gate_image, docs, err)) < 0)
                return r;
        if ((parts & KUBE_PART_SANDBOX) && p->project && !ko->podman && workspace_claim(ko, &k.names, docs) < 0)
                return error_oom(err);
        if ((parts & KUBE_PART_SANDBOX) && (r = sandbox_objects(p, ko, &k, docs, err)) < 0)
                return r;
        if (json_object_array_length(docs) == 0)
                return aisb_error_set(err, -EINVAL, "kube: this policy has no gate: nothing to print for the gate alone");

        _cleanup_(buffer_free) buffer b = {};
        for (size_t i = 0; i < json_object_array_length(docs); i++) {
                const char *text = json_text_checked(json_object_array_get_idx(docs, i),
                                                     JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                             JSON_C_TO_STRING_NOSLASHESCAPE);
                _cleanup_free_ char *safe = NULL;
                if (!text || json_text_safe(text, &safe) < 0 || buffer_printf(&b, "---\n%s\n", safe) < 0)
                        return error_oom(err);
        }
        *ret_text = buffer_steal(&b);
        return *ret_text ? 0 : error_oom(err);
}

static int image_repo_check(const char *image_repo, aisb_error **err)
{
        if (!image_repo || !*image_repo || strspn(image_repo, "abcdefghijklmnopqrstuvwxyz0123456789.-_/:") !=
                                                     strlen(image_repo) || strlen(image_repo) > 200)
                return aisb_error_set(err, -EINVAL, "kube: --image-repo '%.64s': a registry path like "
                                                    "registry.example.com/team",
                                      image_repo ? image_repo : "");
        return 0;
}

/* One image of the plan's built (or found) here and pushed as REPO/NAME:TAG, the name the
 * objects give it. */
static int push_image(aisb_ctx *ctx, const image_facts *f, const kube_options *o, const char *name, bool tls_verify,
                      aisb_error **err)
{
        _cleanup_free_ char *remote = NULL;
        int r = image_ensure(ctx, f, NULL, err);
        if (r >= 0 && image_name(f, o, name, &remote) < 0)
                r = error_oom(err);
        if (r >= 0) {
                aisb_log(ctx, AISB_LOG_INFO, "pushing %s", remote);
                r = podman_image_push(ctx, f->tag, remote, tls_verify, err);
        }
        return r;
}

#define KUBE_KNOWN_FLAGS                                                                                      \
        (AISB_KUBE_AS_SANDBOX | AISB_KUBE_PODMAN | AISB_KUBE_GATE_ONLY | AISB_KUBE_SANDBOX_ONLY |                \
         AISB_KUBE_NETFILTER_INIT | AISB_KUBE_TLS_NO_VERIFY)

static int kube_flags_check(unsigned flags, aisb_error **err)
{
        if ((flags & ~(unsigned) KUBE_KNOWN_FLAGS) || ((flags & AISB_KUBE_GATE_ONLY) && (flags & AISB_KUBE_SANDBOX_ONLY)))
                return aisb_error_set(err, -EINVAL, "kube: flags 0x%x: unknown, or both parts alone", flags);
        return 0;
}

int aisb_kube_push(aisb_ctx *ctx, const aisb_policy *p, const aisb_kube_options *options, aisb_error **err)
{
        const char *image_repo = options ? options->image_repo : NULL;
        int r = image_repo_check(image_repo, err);
        if (r < 0)
                return r;
        r = kube_flags_check(options->flags, err);
        if (r < 0)
                return r;
        bool tls_verify = !(options->flags & AISB_KUBE_TLS_NO_VERIFY);
        ctx_operation_begin(ctx);
        _cleanup_(ctx_operation_end) _unused_ aisb_ctx *operation = ctx;
        r = aisb_ctx_connect(ctx, err);
        if (r < 0)
                return r;
        kube_options o = { .image_repo = image_repo };
        /* The images of the plan's facts: the gate's too, when this policy has a gate. */
        _cleanup_(plan_facts_done) plan_facts f = {};
        r = plan_gather(p, &(plan_gather_options) { .purpose = PLAN_DRY_RUN, .network_only = true }, &f, err);
        if (r >= 0)
                r = push_image(ctx, &f.built, &o, "aisb", tls_verify, err);
        if (r >= 0 && plan_needs_gate(p, &f) && f.built.gate)
                r = push_image(ctx, f.built.gate, &o, "aisb-gate", tls_verify, err);
        return r;
}

int aisb_policy_kube(const aisb_policy *p, const aisb_kube_options *options, char **ret_text, aisb_error **err)
{
        static const aisb_kube_options defaults = {};
        const aisb_kube_options *opt = options ? options : &defaults;
        unsigned flags = opt->flags;
        int r = kube_flags_check(flags, err);
        if (r < 0)
                return r;
        kube_options o = { .image_repo = opt->image_repo, .timeout_s = opt->timeout_s,
                           .as_sandbox = flags & AISB_KUBE_AS_SANDBOX, .podman = flags & AISB_KUBE_PODMAN,
                           .netfilter_init = flags & AISB_KUBE_NETFILTER_INIT,
                           .parts = flags & AISB_KUBE_GATE_ONLY      ? KUBE_PART_GATE
                                    : flags & AISB_KUBE_SANDBOX_ONLY ? KUBE_PART_SANDBOX
                                                                     : 0 };
        if (opt->image_repo && image_repo_check(opt->image_repo, err) < 0)
                return -EINVAL;
        return kube_manifests(p, &o, ret_text, err);
}
