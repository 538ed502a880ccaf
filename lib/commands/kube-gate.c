/* SPDX-License-Identifier: MIT */
/*
 * aisb kube's gate: squid alone and unprivileged in a pod of its own, since a
 * NetworkPolicy applies per pod, configured by the local gate's generator. On a cluster its
 * NetworkPolicy lets in only its sandboxes and lets out the allowed ports, minus the private,
 * link-local and metadata ranges, with DNS only at the cluster's resolver. podman takes no
 * Service and enforces no NetworkPolicy: there the gate has a fixed address (kube.h).
 */
#include "allowlist.h"
#include "gate-squid.h"
#include "jsonutil.h"
#include "kube.h"

#define KUBE_GATE_UID 13 /* Debian's "proxy" user, whom squid's files belong to */

static json_object *gate_labels(const kube_names *n)
{
        return kube_labels("aisb.gate", n->gate_hash, NULL);
}

/* Egress to the cluster's resolver: kube-dns in kube-system, port 53. */
static json_object *egress_dns(void)
{
        return json_built(JSON_BUILD_OBJECT(
                JSON_BUILD_PAIR("to", JSON_BUILD_ARRAY(JSON_BUILD_OBJECT(
                                              JSON_BUILD_PAIR_TAKE("namespaceSelector",
                                                                   kube_selector("kubernetes.io/metadata.name", "kube-system")),
                                              JSON_BUILD_PAIR_TAKE("podSelector", kube_selector("k8s-app", "kube-dns"))))),
                JSON_BUILD_PAIR("ports", JSON_BUILD_ARRAY(JSON_BUILD_TAKE(kube_port("UDP", 53)),
                                                          JSON_BUILD_TAKE(kube_port("TCP", 53))))));
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
                _cleanup_free_ char *name = NULL, *ip = NULL;
                if (allowlist_parse_add_host(p->add_hosts[i], &name, &ip, err) < 0)
                        return -EINVAL;
                if (strv_pushf(&cidrs, "%s/%u", ip, strchr(ip, ':') ? 128 : 32) < 0)
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
        char *conf, *hosts;
        const char *image; /* the plan's */
} gate_parts;

static void gate_parts_done(gate_parts *g)
{
        strv_free(g->add_cidrs);
        free(g->conf);
        free(g->hosts);
}

static int gate_parts_make(const aisb_policy *p, const kube_plan *k, gate_parts *g, aisb_error **err)
{
        const allowlist *l = &k->facts.net.list;
        g->image = k->gate_image;
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
        return r;
}

static json_object *gate_config_map(const kube_names *n, const gate_parts *g)
{
        return kube_object("v1", "ConfigMap", kube_metadata(n->gate, gate_labels(n), false), "data",
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
                JSON_BUILD_PAIR_STRING("imagePullPolicy", kube_pull_policy(ko)),
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
                                        JSON_BUILD_TAKE(kube_volume_mount(kube_volume_name(v_config, n->gate, "config"),
                                                                          "/etc/aisb-gate", true, NULL)),
                                        JSON_BUILD_TAKE(kube_volume_mount(kube_volume_name(v_logs, n->gate, "logs"),
                                                                          "/var/log/squid", false, NULL)),
                                        JSON_BUILD_TAKE(kube_volume_mount(kube_volume_name(v_run, n->gate, "run"), "/run",
                                                                          false, NULL)),
                                        JSON_BUILD_TAKE(kube_volume_mount(kube_volume_name(v_tmp, n->gate, "tmp"), "/tmp",
                                                                          false, NULL))))));
}

/* Its configuration from the ConfigMap; its logs and spool in memory. */
static json_object *gate_volumes(const kube_names *n)
{
        char v_config[64], v_logs[64], v_run[64], v_tmp[64];
        return json_built(JSON_BUILD_ARRAY(
                JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRING("name", kube_volume_name(v_config, n->gate, "config")),
                                  JSON_BUILD_PAIR("configMap", JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRING("name", n->gate)))),
                JSON_BUILD_TAKE(kube_empty_dir(kube_volume_name(v_logs, n->gate, "logs"), NULL, 256ULL << 20)),
                JSON_BUILD_TAKE(kube_empty_dir(kube_volume_name(v_run, n->gate, "run"), "Memory", 16ULL << 20)),
                JSON_BUILD_TAKE(kube_empty_dir(kube_volume_name(v_tmp, n->gate, "tmp"), "Memory", 64ULL << 20))));
}

static json_object *gate_deployment(const kube_options *ko, const kube_names *n, const gate_parts *g)
{
        json_object *pod_spec = json_built(JSON_BUILD_OBJECT(
                JSON_BUILD_PAIR_BOOL("automountServiceAccountToken", false),
                JSON_BUILD_PAIR_BOOL("enableServiceLinks", false),
                JSON_BUILD_PAIR_TAKE("securityContext", kube_pod_security(KUBE_GATE_UID)),
                JSON_BUILD_PAIR("containers", JSON_BUILD_ARRAY(JSON_BUILD_TAKE(gate_container(ko, n, g)))),
                JSON_BUILD_PAIR_TAKE("volumes", gate_volumes(n))));
        return kube_object("apps/v1", "Deployment", kube_metadata(n->gate, gate_labels(n), false), "spec",
                           json_built(JSON_BUILD_OBJECT(
                                   JSON_BUILD_PAIR_INT64("replicas", 1),
                                   JSON_BUILD_PAIR_TAKE("selector", kube_selector("aisb.gate", n->gate_hash)),
                                   JSON_BUILD_PAIR("template", JSON_BUILD_OBJECT(
                                                                       JSON_BUILD_PAIR_TAKE("metadata",
                                                                                            kube_metadata(NULL, gate_labels(n),
                                                                                                          ko->podman)),
                                                                       JSON_BUILD_PAIR_TAKE("spec", pod_spec))))));
}

static json_object *gate_service(const kube_names *n)
{
        return kube_object("v1", "Service", kube_metadata(n->gate, gate_labels(n), false), "spec",
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
                JSON_BUILD_TAKE(kube_egress_block("0.0.0.0/0", v4_except, g->ports, g->n_ports, false)),
                JSON_BUILD_TAKE(kube_egress_block("::/0", v6_except, g->ports, g->n_ports, false))));
        int r = egress ? 0 : -ENOMEM;
        for (size_t i = 0; r >= 0 && g->add_cidrs && g->add_cidrs[i]; i++)
                r = json_build_into(egress, JSON_BUILD_TAKE(kube_egress_block(g->add_cidrs[i], NULL, g->ports,
                                                                              g->n_ports, false)));
        return r < 0 ? NULL : steal_pointer(&egress);
}

/* The gate's NetworkPolicy: in, only from its sandboxes; out, gate_egress. */
static json_object *gate_network_policy(const kube_names *n, const gate_parts *g)
{
        json_object *from_sandboxes = json_built(JSON_BUILD_ARRAY(JSON_BUILD_OBJECT(
                JSON_BUILD_PAIR("from", JSON_BUILD_ARRAY(JSON_BUILD_OBJECT(JSON_BUILD_PAIR_TAKE(
                                                "podSelector", kube_selector("aisb.gate-client", n->gate_hash))))),
                JSON_BUILD_PAIR("ports", JSON_BUILD_ARRAY(JSON_BUILD_TAKE(kube_port("TCP", KUBE_GATE_PORT)))))));
        return kube_network_policy(n->gate, gate_labels(n), "aisb.gate", n->gate_hash, from_sandboxes,
                                   gate_egress(g));
}

/* podman takes neither a Service nor a NetworkPolicy. */
int kube_gate_objects(const aisb_policy *p, const kube_options *ko, const kube_plan *k, json_object *docs,
                      aisb_error **err)
{
        const kube_names *n = &k->names;
        _cleanup_(gate_parts_done) gate_parts g = {};
        int r = gate_parts_make(p, k, &g, err);
        if (r < 0)
                return r;
        r = json_build_into(docs, JSON_BUILD_TAKE(gate_config_map(n, &g)), JSON_BUILD_TAKE(gate_deployment(ko, n, &g)),
                            JSON_BUILD_TAKE_IF(!ko->podman, gate_service(n)),
                            JSON_BUILD_TAKE_IF(!ko->podman, gate_network_policy(n, &g)));
        return r < 0 ? error_oom(err) : 0;
}
