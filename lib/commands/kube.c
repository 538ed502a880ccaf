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
 * Pure apart from reading what the image's content tag covers (the Containerfile's inputs,
 * the entrypoint binary): the same policy prints the same bytes.
 */
#include <arpa/inet.h>
#include <ctype.h>

#include "allowlist.h"
#include "service.h"
#include "security.h"
#include "gate-squid.h"
#include "image.h"
#include "jsonutil.h"
#include "kube.h"
#include "plan.h"
#include "podman.h"
#include "policy.h"
#include "protect.h"
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

typedef struct kube_names {
        char sandbox[64]; /* aisb-SHORT-HASH: the pod, its NetworkPolicy, its env Secret */
        char gate[64];    /* aisb-gate-HASH */
        char gate_hash[17];
} kube_names;

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

static int image_ref(const aisb_policy *p, const kube_options *o, bool gate, char **ret, aisb_error **err)
{
        _cleanup_(image_facts_done) image_facts f = {};
        int r = image_gather(p, gate ? IMAGE_GATE : IMAGE_SANDBOX, &f, err);
        if (r < 0)
                return r;
        _cleanup_free_ char *tag = NULL, *repo = NULL;
        if (!o->image_repo) {
                *ret = steal_pointer(&f.tag);
                return 0;
        }
        if (asprintf(&repo, "%s/%s", o->image_repo, gate ? "aisb-gate" : "aisb") < 0 ||
            image_context_tag(repo, &f.context, &tag) < 0)
                return error_oom(err);
        *ret = steal_pointer(&tag);
        return 0;
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

static int gate_parts_make(const aisb_policy *p, const kube_options *ko, const allowlist *l, gate_parts *g,
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
        if (r >= 0)
                r = image_ref(p, ko, true, &g->image, err);
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
                        json_object *docs, aisb_error **err)
{
        _cleanup_(gate_parts_done) gate_parts g = {};
        int r = gate_parts_make(p, ko, l, &g, err);
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

/* The gate's address as the sandbox's environment holds it: Kubernetes' variables for a
 * Service that exists when the pod starts (the Service comes before the Pod here), so the
 * sandbox needs no DNS. Were the Service missing, the URL stays unexpanded and every request
 * fails: closed, not open. */
static int proxy_url(const kube_names *n, char **ret)
{
        char var[80];
        service_host_variable(n, var);
        return asprintf(ret, "http://$(%s):%u", var, KUBE_GATE_PORT) < 0 ? -ENOMEM : 0;
}

/* The entrypoint's arguments for --netfilter init: the mode, the gate's address (its
 * Service's variable on a cluster, read when the init container starts; the fixed one for
 * podman) and each address entry. */
static int netfilter_net_args(const aisb_policy *p, const kube_options *ko, const allowlist *l, const kube_names *n,
                              bool gate, char ***ret)
{
        _cleanup_strv_free_ char **args = NULL;
        int r = strv_push(&args, "--net");
        if (r >= 0)
                r = strv_push(&args, p->net == SANDBOX_NET_ALLOW ? "allow" : "none");
        if (r >= 0 && gate) {
                _cleanup_free_ char *arg = NULL;
                char var[80];
                service_host_variable(n, var);
                if (ko->podman ? asprintf(&arg, KUBE_PODMAN_GATE_IP ":%u", KUBE_GATE_PORT) < 0
                               : asprintf(&arg, "%s:%u", var, KUBE_GATE_PORT) < 0)
                        return -ENOMEM;
                r = strv_push(&args, ko->podman ? "--allow" : "--allow-env");
                if (r >= 0)
                        r = strv_push(&args, arg);
        }
        for (size_t i = 0; r >= 0 && p->net == SANDBOX_NET_ALLOW && i < l->n; i++) {
                _cleanup_free_ char *arg = NULL;
                if (l->entries[i].kind != ALLOW_ADDRESS)
                        continue;
                r = allowlist_entrypoint_arg(&l->entries[i], &arg);
                if (r >= 0)
                        r = strv_push(&args, "--allow");
                if (r >= 0)
                        r = strv_push(&args, arg);
        }
        if (r < 0)
                return r;
        *ret = steal_pointer(&args);
        return 0;
}

/* --netfilter init: the same entrypoint, as root with NET_ADMIN alone, installs and verifies
 * its default-drop ruleset in the pod's network namespace and exits; the containers after it
 * share that namespace and cannot change it. */
static json_object *netfilter_init_containers(const aisb_policy *p, const kube_options *ko, const allowlist *l,
                                              const kube_names *n, bool gate, const char *image)
{
        _cleanup_strv_free_ char **net_args = NULL, **argv = NULL;
        if (netfilter_net_args(p, ko, l, n, gate, &net_args) < 0)
                return NULL;
        entrypoint_spec es = { .no_ids = true, .net_args = (const char *const *) net_args, .ruleset_only = true };
        if (plan_entrypoint_argv(&es, &argv) < 0)
                return NULL;
        return json_built(JSON_BUILD_ARRAY(JSON_BUILD_OBJECT(
                JSON_BUILD_PAIR_STRING("name", "netfilter"), JSON_BUILD_PAIR_STRING("image", image),
                JSON_BUILD_PAIR_STRING("imagePullPolicy", pull_policy(ko)), JSON_BUILD_PAIR_STRV("command", argv),
                JSON_BUILD_PAIR_TAKE("securityContext", kube_security(&security_netfilter)),
                JSON_BUILD_PAIR_TAKE_IF(!ko->podman, "resources", resources(p)))));
}

/* On one machine the project is the user's own tree: what a run keeps from the agent is kept
 * here too, as mounts of the project volume's subpaths over themselves (read-only, or a git
 * directory over itself so that it cannot be moved aside). A git directory outside the
 * project (a worktree's) is a host path the pod is not given: refused. */
static int protect_for_podman(const aisb_policy *p, const kube_options *ko, protect_plan *plan, aisb_error **err)
{
        if (!ko->podman || !p->project || !p->protect || !p->protect[0])
                return 0;
        int r = protect_plan_make(p->project, p->project_is_cwd, (const char *const *) p->protect, (unsigned) getuid(),
                                  plan, err);
        if (r < 0)
                return r;
        if (plan->outside)
                return aisb_error_set(err, -EOPNOTSUPP,
                                      "kube: the project's .git names %s, outside the project, which the pod is not "
                                      "given; run from the repository's main worktree, or --protect=-.git",
                                      plan->outside[0]);
        return 0;
}

/* What the sandbox's objects are made of, computed before any is built. */
typedef struct sandbox_parts {
        protect_plan plan;
        char *image;
        char *proxy;  /* the gate's URL; NULL: no gate */
        char **argv;  /* the entrypoint in its external mode, then the command */
} sandbox_parts;

static void sandbox_parts_done(sandbox_parts *s)
{
        protect_plan_done(&s->plan);
        free(s->image);
        free(s->proxy);
        strv_free(s->argv);
}

/* Kubernetes expands $(NAME) in a command and turns $$ into $: every '$' of the command
 * doubled, so that it runs as given (and names no variable's value). podman kube play
 * expands nothing: there the words go as they are. */
static int sandbox_argv(const aisb_policy *p, const kube_options *ko, char ***ret)
{
        _cleanup_strv_free_ char **argv = NULL;
        static const char *const external[] = { "--net", "external", NULL };
        entrypoint_spec es = { .uid = KUBE_UID, .gid = KUBE_UID, .net_args = external };
        int r = plan_entrypoint_argv(&es, &argv);
        const char *const *cmd = policy_command(p);
        for (size_t i = 0; r >= 0 && cmd && cmd[i]; i++) {
                _cleanup_(buffer_free) buffer word = {};
                r = buffer_printf(&word, "%s", "");
                for (const char *ch = cmd[i]; *ch && r >= 0; ch++)
                        r = buffer_printf(&word, *ch == '$' && !ko->podman ? "$$" : "%c", *ch);
                if (r >= 0)
                        r = strv_push(&argv, word.data);
        }
        if (r < 0)
                return r;
        *ret = steal_pointer(&argv);
        return 0;
}

static int sandbox_parts_make(const aisb_policy *p, const kube_options *ko, const kube_names *n, bool gate,
                              sandbox_parts *s, aisb_error **err)
{
        int r = protect_for_podman(p, ko, &s->plan, err);
        if (r >= 0)
                r = image_ref(p, ko, false, &s->image, err);
        if (r < 0)
                return r;
        if (gate && (ko->podman ? asprintf(&s->proxy, "http://%s:%u", n->gate, KUBE_GATE_PORT) < 0
                                : proxy_url(n, &s->proxy) < 0)) {
                s->proxy = NULL;
                return error_oom(err);
        }
        if (sandbox_argv(p, ko, &s->argv) < 0)
                return error_oom(err);
        return 0;
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

/* The proxy variables a local run's sandbox gets, with the gate's Service for the proxy. */
static int proxy_env_values(const allowlist *l, const sandbox_parts *s, json_object *env)
{
        _cleanup_strv_free_ char **proxy_env = NULL;
        if (s->proxy && plan_proxy_env(l, s->proxy, false, &proxy_env) < 0)
                return -ENOMEM;
        int r = 0;
        for (size_t i = 0; r >= 0 && proxy_env && proxy_env[i]; i++) {
                _cleanup_free_ char *name = strndup(proxy_env[i], strcspn(proxy_env[i], "="));
                r = json_build_into(env, JSON_BUILD_TAKE(name ? env_value(name, proxy_env[i] + strlen(name) + 1) : NULL));
        }
        return r;
}

/* HOME, the proxy's variables, and the policy's variables: values never, each comes from a
 * Secret the user makes. The terminal's own (TERM, LANG, ...) a pod has none of. */
static json_object *sandbox_env(const aisb_policy *p, const allowlist *l, const kube_names *n, const sandbox_parts *s)
{
        _cleanup_json_ json_object *env = json_built(JSON_BUILD_ARRAY(JSON_BUILD_TAKE(env_value("HOME",
                                                                                                 AISB_SANDBOX_HOME))));
        int r = env ? proxy_env_values(l, s, env) : -ENOMEM;
        for (size_t i = 0; r >= 0 && i < p->n_env; i++) {
                if (policy_env_inherited(p->env[i].name))
                        continue;
                r = json_build_into(env, JSON_BUILD_OBJECT(
                                                 JSON_BUILD_PAIR_STRING("name", p->env[i].name),
                                                 JSON_BUILD_PAIR("valueFrom", JSON_BUILD_OBJECT(JSON_BUILD_PAIR(
                                                                                      "secretKeyRef",
                                                                                      JSON_BUILD_OBJECT(
                                                                                              JSON_BUILD_PAIR_STRING(
                                                                                                      "name", n->sandbox),
                                                                                              JSON_BUILD_PAIR_STRING(
                                                                                                      "key",
                                                                                                      p->env[i].name)))))));
        }
        return r < 0 ? NULL : steal_pointer(&env);
}

/* The project, what is kept from the agent over it, the home and the scratch space. */
static json_object *sandbox_mounts(const aisb_policy *p, const kube_names *n, const sandbox_parts *s)
{
        char v_project[64], v_home[64], v_tmp[64], v_var_tmp[64], v_run[64];
        volume_name(v_project, n->sandbox, "project");
        _cleanup_json_ json_object *mounts = json_object_new_array();
        int r = json_build_into(mounts, JSON_BUILD_TAKE_IF(p->project, volume_mount(v_project, AISB_PROJECT_DIR, false,
                                                                                      NULL)));
        for (size_t i = 0; r >= 0 && i < s->plan.n_mounts; i++) {
                const protect_mount *m = &s->plan.mounts[i];
                r = json_build_into(mounts, JSON_BUILD_TAKE(volume_mount(v_project, m->destination, m->read_only,
                                                                         m->destination +
                                                                                 strlen(AISB_PROJECT_DIR "/"))));
        }
        if (r >= 0)
                r = json_build_into(
                        mounts,
                        JSON_BUILD_TAKE(volume_mount(volume_name(v_home, n->sandbox, "home"), AISB_SANDBOX_HOME, false, NULL)),
                        JSON_BUILD_TAKE(volume_mount(volume_name(v_tmp, n->sandbox, "tmp"), "/tmp", false, NULL)),
                        JSON_BUILD_TAKE(volume_mount(volume_name(v_var_tmp, n->sandbox, "var-tmp"), "/var/tmp", false, NULL)),
                        JSON_BUILD_TAKE(volume_mount(volume_name(v_run, n->sandbox, "run"), "/run", false, NULL)));
        return r < 0 ? NULL : steal_pointer(&mounts);
}

static json_object *sandbox_container(const aisb_policy *p, const kube_options *ko, const allowlist *l,
                                      const kube_names *n, const sandbox_parts *s)
{
        return json_built(JSON_BUILD_OBJECT(
                JSON_BUILD_PAIR_STRING("name", "sandbox"), JSON_BUILD_PAIR_STRING("image", s->image),
                JSON_BUILD_PAIR_STRING("imagePullPolicy", pull_policy(ko)), JSON_BUILD_PAIR_STRV("command", s->argv),
                JSON_BUILD_PAIR_STRING("workingDir", p->project ? AISB_PROJECT_DIR : AISB_SANDBOX_HOME),
                JSON_BUILD_PAIR_TAKE("env", sandbox_env(p, l, n, s)),
                /* podman on a host whose cgroups it cannot delegate fails the pod for any:
                 * its own caps (aisb run's) are the way there. */
                JSON_BUILD_PAIR_TAKE_IF(!ko->podman, "resources", resources(p)),
                JSON_BUILD_PAIR_TAKE("securityContext", kube_security(&security_pod)),
                JSON_BUILD_PAIR_TAKE("volumeMounts", sandbox_mounts(p, n, s))));
}

/* The workspace: the project itself on one machine, a claim on a cluster. */
static json_object *project_volume(const aisb_policy *p, const kube_options *ko, const kube_names *n)
{
        char v_project[64];
        return json_built(JSON_BUILD_OBJECT(
                JSON_BUILD_PAIR_STRING("name", volume_name(v_project, n->sandbox, "project")),
                JSON_BUILD_PAIR_CONDITION(ko->podman, JSON_BUILD_PAIR("hostPath", JSON_BUILD_OBJECT(
                                                                                   JSON_BUILD_PAIR_STRING("path", p->project),
                                                                                   JSON_BUILD_PAIR_STRING("type",
                                                                                                          "Directory")))),
                JSON_BUILD_PAIR_CONDITION(!ko->podman,
                                          JSON_BUILD_PAIR("persistentVolumeClaim",
                                                          JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRING("claimName",
                                                                                                   n->sandbox))))));
}

static json_object *sandbox_volumes(const aisb_policy *p, const kube_options *ko, const kube_names *n)
{
        char v_home[64], v_tmp[64], v_var_tmp[64], v_run[64];
        return json_built(JSON_BUILD_ARRAY(
                JSON_BUILD_TAKE_IF(p->project, project_volume(p, ko, n)),
                JSON_BUILD_TAKE(empty_dir(volume_name(v_home, n->sandbox, "home"), NULL, p->tmp_size)),
                JSON_BUILD_TAKE(empty_dir(volume_name(v_tmp, n->sandbox, "tmp"), NULL, p->tmp_size)),
                JSON_BUILD_TAKE(empty_dir(volume_name(v_var_tmp, n->sandbox, "var-tmp"), NULL, p->tmp_size)),
                JSON_BUILD_TAKE(empty_dir(volume_name(v_run, n->sandbox, "run"), "Memory", 64ULL << 20))));
}

/* The gate's address comes from the Service's variables; nothing else is needed. podman has
 * no Services: a host alias names the gate's fixed address. */
static json_object *pod_spec(const aisb_policy *p, const kube_options *ko, const allowlist *l, const kube_names *n,
                             bool gate, const sandbox_parts *s)
{
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
                JSON_BUILD_PAIR("containers", JSON_BUILD_ARRAY(JSON_BUILD_TAKE(sandbox_container(p, ko, l, n, s)))),
                JSON_BUILD_PAIR_TAKE_IF(ko->netfilter_init, "initContainers",
                                        netfilter_init_containers(p, ko, l, n, gate, s->image)),
                JSON_BUILD_PAIR_TAKE("volumes", sandbox_volumes(p, ko, n))));
}

/* A Pod, or the agent-sandbox Sandbox (agents.x-k8s.io/v1beta1) around the same pod spec,
 * whose template carries the labels the NetworkPolicies select on. */
static json_object *sandbox_pod(const aisb_policy *p, const kube_options *ko, const allowlist *l, const kube_names *n,
                                bool gate, const sandbox_parts *s)
{
        json_object *meta = metadata_object(n->sandbox, sandbox_labels(n, gate), ko->podman),
                    *spec = pod_spec(p, ko, l, n, gate, s);
        if (!ko->as_sandbox)
                return kube_object("v1", "Pod", meta, "spec", spec);
        return kube_object("agents.x-k8s.io/v1beta1", "Sandbox", meta, "spec",
                           json_built(JSON_BUILD_OBJECT(JSON_BUILD_PAIR(
                                   "podTemplate",
                                   JSON_BUILD_OBJECT(JSON_BUILD_PAIR("metadata",
                                                                     JSON_BUILD_OBJECT(JSON_BUILD_PAIR_TAKE(
                                                                             "labels", sandbox_labels(n, gate)))),
                                                     JSON_BUILD_PAIR_TAKE("spec", spec))))));
}

/* The sandbox's NetworkPolicy (none for podman, which enforces none) and its pod. */
static int sandbox_objects(const aisb_policy *p, const kube_options *ko, const allowlist *l, const kube_names *n,
                           bool gate, json_object *docs, aisb_error **err)
{
        _cleanup_(sandbox_parts_done) sandbox_parts s = {};
        int r = sandbox_parts_make(p, ko, n, gate, &s, err);
        if (r < 0)
                return r;
        r = json_build_into(docs, JSON_BUILD_TAKE_IF(!ko->podman, sandbox_network_policy(p, l, n, gate)),
                            JSON_BUILD_TAKE(sandbox_pod(p, ko, l, n, gate, &s)));
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
 * emitted weaker. */
static int kube_check(const aisb_policy *p, const kube_options *o, const allowlist *l, aisb_error **err)
{
        if (p->n_secrets)
                return aisb_error_set(err, -EOPNOTSUPP, "kube: --secret is not supported on Kubernetes yet "
                                                        "(the gate would hold the value); use --env NAME");
        if (gate_squid_intercepts(l, 0))
                return aisb_error_set(err, -EOPNOTSUPP, "kube: allowlist entries with methods or paths are not "
                                                        "supported on Kubernetes yet (the gate would intercept TLS)");
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
        if (o->netfilter_init && p->net == SANDBOX_NET_FULL)
                return aisb_error_set(err, -EOPNOTSUPP, "kube: --netfilter init has no ruleset to install with --net full");
        if (o->podman && o->as_sandbox)
                return aisb_error_set(err, -EOPNOTSUPP, "kube: podman plays no Sandbox: --target podman takes --as pod");
        if (p->net == SANDBOX_NET_ALLOW && l->n == 0)
                return aisb_error_set(err, -EINVAL, "--net allow with an empty allowlist reaches nothing: add "
                                                    "--allow DOMAIN, or choose --net none");
        return 0;
}

int kube_manifests(const aisb_policy *p, const kube_options *ko, char **ret_text, aisb_error **err)
{
        _cleanup_(allowlist_done) allowlist l = {};
        int r = 0;
        if (p->net == SANDBOX_NET_ALLOW) {
                r = policy_allowlist(p, NULL, &l, err);
                if (r < 0)
                        return r;
        }
        r = kube_check(p, ko, &l, err);
        if (r < 0)
                return r;
        kube_names n = {};
        r = kube_names_make(p, ko, &l, &n);
        if (r < 0)
                return aisb_error_set(err, r, "kube: cannot name the objects: %s", strerror(-r));
        bool gate = p->net == SANDBOX_NET_ALLOW && allowlist_count_domains(&l) > 0;
        _cleanup_json_ json_object *docs = json_object_new_array();
        if (!docs)
                return error_oom(err);
        unsigned parts = ko->parts ? ko->parts : KUBE_PART_GATE | KUBE_PART_SANDBOX;
        /* The Service before the Pod: the pod's environment names it. */
        if (gate && (parts & KUBE_PART_GATE) && (r = gate_objects(p, ko, &l, &n, docs, err)) < 0)
                return r;
        if ((parts & KUBE_PART_SANDBOX) && p->project && !ko->podman && workspace_claim(ko, &n, docs) < 0)
                return error_oom(err);
        if ((parts & KUBE_PART_SANDBOX) && (r = sandbox_objects(p, ko, &l, &n, gate, docs, err)) < 0)
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

/* One image built (or found) here and pushed as REPO/NAME:TAG, the name the objects give it. */
static int push_image(aisb_ctx *ctx, const aisb_policy *p, const kube_options *o, bool gate, bool tls_verify,
                      aisb_error **err)
{
        _cleanup_(image_facts_done) image_facts f = {};
        _cleanup_free_ char *remote = NULL;
        int r = image_gather(p, gate ? IMAGE_GATE : IMAGE_SANDBOX, &f, err);
        if (r >= 0)
                r = image_ensure(ctx, &f, NULL, err);
        if (r >= 0)
                r = image_ref(p, o, gate, &remote, err);
        if (r >= 0) {
                aisb_log(ctx, AISB_LOG_INFO, "pushing %s", remote);
                r = podman_image_push(ctx, f.tag, remote, tls_verify, err);
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
        r = push_image(ctx, p, &o, false, tls_verify, err);
        /* The gate's image too, when this policy has a gate. */
        _cleanup_(allowlist_done) allowlist l = {};
        if (r >= 0 && p->net == SANDBOX_NET_ALLOW && policy_allowlist(p, NULL, &l, NULL) >= 0 &&
            allowlist_count_domains(&l) > 0)
                r = push_image(ctx, p, &o, true, tls_verify, err);
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
