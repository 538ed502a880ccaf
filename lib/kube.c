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
#include "context.h"
#include "entrypoint-args.h"
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

/* o, or NULL (o put) when building it failed: the end of every builder here. */
static json_object *built(json_object *o, int r)
{
        if (r < 0) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

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
        for (size_t i = 0; entries && entries[i]; i++)
                r |= buffer_printf(&b, "allow=%s\n", entries[i]);
        for (size_t i = 0; hosts && hosts[i]; i++)
                r |= buffer_printf(&b, "gate-add-host=%s\n", hosts[i]);
        for (size_t i = 0; i < p->n_env; i++)
                if (!policy_env_inherited(p->env[i].name))
                        r |= buffer_printf(&b, "env=%s\n", p->env[i].name);
        const char *const *cmd = policy_command(p);
        for (size_t i = 0; cmd && cmd[i]; i++)
                r |= buffer_printf(&b, "command=%zu:%s\n", strlen(cmd[i]), cmd[i]);
        r |= buffer_printf(&b, "memory=%llu\ncpus=%llu\ntmp=%llu\nread-only=%d\n", p->memory, p->cpus_milli,
                           p->tmp_size, (int) p->read_only);
        r |= buffer_printf(&b, "as-sandbox=%d\npodman=%d\nnetfilter=%d\ntimeout=%llu\nworkspace=%llu\nrepo=%s\n",
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

static json_object *labels_object(const char *key, const char *value)
{
        json_object *o = json_object_new_object();
        int r = json_add_string(o, "app.kubernetes.io/managed-by", "aisb");
        r |= json_add_string(o, key, value);
        return built(o, r);
}

/* podman reads a pod's seccomp profile from this annotation only, not from its spec. */
static int podman_seccomp(json_object *meta)
{
        json_object *a = json_object_new_object();
        int r = json_add_string(a, "seccomp.security.alpha.kubernetes.io/pod", "runtime/default");
        return r < 0 ? (json_object_put(a), r) : json_add(meta, "annotations", a);
}

static json_object *object_head(const char *api_version, const char *kind, const char *name,
                                json_object *labels)
{
        json_object *o = json_object_new_object(), *meta = json_object_new_object();
        int r = json_add_string(o, "apiVersion", api_version);
        r |= json_add_string(o, "kind", kind);
        r |= json_add_string(meta, "name", name);
        r |= json_add(meta, "labels", labels);
        r |= json_add(o, "metadata", meta);
        return built(o, r);
}

/* A container's security settings (entrypoint-args.h) as Kubernetes says them: the
 * "restricted" standard and then some for the pods' containers; root of the pod's user with
 * the capabilities it is given for the one that installs the ruleset. */
static json_object *kube_security(const security_spec *s)
{
        json_object *o = json_object_new_object(), *caps = json_object_new_object(),
                    *seccomp = json_object_new_object();
        static const char *const all[] = { "ALL", NULL };
        int r = json_add_bool(o, "allowPrivilegeEscalation", false);
        r |= json_add_bool(o, "readOnlyRootFilesystem", s->read_only_root);
        if (s->as_root) {
                r |= json_add_bool(o, "privileged", false);
                r |= json_add_bool(o, "runAsNonRoot", false);
                r |= json_add_int64(o, "runAsUser", 0);
                r |= json_add_int64(o, "runAsGroup", 0);
        } else {
                r |= json_add_bool(o, "runAsNonRoot", true);
                r |= json_add_bool(o, "privileged", false);
        }
        r |= json_add(caps, "drop", json_string_array(all));
        if (s->cap_add) {
                /* Kubernetes names them without libpod's CAP_. */
                json_object *add = json_object_new_array();
                for (size_t i = 0; s->cap_add[i]; i++)
                        r |= json_append_string(add, s->cap_add[i] + (strncmp(s->cap_add[i], "CAP_", 4) ? 0 : 4));
                r |= json_add(caps, "add", add);
        }
        r |= json_add(o, "capabilities", caps);
        r |= json_add_string(seccomp, "type", "RuntimeDefault");
        r |= json_add(o, "seccompProfile", seccomp);
        return built(o, r);
}

static json_object *pod_security(unsigned uid)
{
        json_object *o = json_object_new_object(), *seccomp = json_object_new_object();
        int r = json_add_bool(o, "runAsNonRoot", true);
        r |= json_add_int64(o, "runAsUser", uid);
        r |= json_add_int64(o, "runAsGroup", uid);
        r |= json_add_string(seccomp, "type", "RuntimeDefault");
        r |= json_add(o, "seccompProfile", seccomp);
        return built(o, r);
}

static json_object *empty_dir(const char *name, const char *medium, unsigned long long size)
{
        json_object *v = json_object_new_object(), *d = json_object_new_object();
        char text[32];
        snprintf(text, sizeof text, "%llu", size);
        int r = json_add_string(v, "name", name);
        if (medium)
                r |= json_add_string(d, "medium", medium);
        r |= json_add_string(d, "sizeLimit", text);
        r |= json_add(v, "emptyDir", d);
        return built(v, r);
}

/* A volume's name: its pod's, then what it holds. podman kube play makes a named volume of
 * an emptyDir, by that name: "tmp" alone would be one /tmp for the gate and every sandbox. */
static const char *volume_name(char buf[static 64], const char *owner, const char *what)
{
        snprintf(buf, 64, "%.50s-%.8s", owner, what); /* names are at most 50 (kube_names_make) */
        return buf;
}

static json_object *volume_mount(const char *name, const char *path, bool read_only)
{
        json_object *m = json_object_new_object();
        int r = json_add_string(m, "name", name);
        r |= json_add_string(m, "mountPath", path);
        if (read_only)
                r |= json_add_bool(m, "readOnly", true);
        return built(m, r);
}

static json_object *env_value(const char *name, const char *value)
{
        json_object *e = json_object_new_object();
        int r = json_add_string(e, "name", name);
        r |= json_add_string(e, "value", value);
        return built(e, r);
}

/* requests = limits: the Guaranteed class, and no burst past what the policy says. */
static json_object *resources(const aisb_policy *p)
{
        json_object *o = json_object_new_object(), *q = json_object_new_object();
        char cpu[32], memory[32], storage[32];
        snprintf(cpu, sizeof cpu, "%llum", p->cpus_milli);
        snprintf(memory, sizeof memory, "%llu", p->memory);
        snprintf(storage, sizeof storage, "%llu", 3 * p->tmp_size);
        int r = json_add_string(q, "cpu", cpu);
        r |= json_add_string(q, "memory", memory);
        r |= json_add_string(q, "ephemeral-storage", storage);
        r |= json_add(o, "limits", q);
        r |= json_add(o, "requests", json_object_get(q));
        return built(o, r);
}

static int image_ref(const aisb_policy *p, const kube_options *o, bool gate, char **ret, aisb_error **err)
{
        _cleanup_(build_context_done) build_context c = {};
        int r = gate ? image_gate_context(p, &c, err) : image_context(p, &c, err);
        if (r < 0)
                return r;
        const char *local = gate ? "localhost/aisb-gate" : "localhost/aisb";
        _cleanup_free_ char *tag = NULL, *repo = NULL;
        if (o->image_repo && asprintf(&repo, "%s/%s", o->image_repo, gate ? "aisb-gate" : "aisb") < 0)
                return error_oom(err);
        if (image_context_tag(repo ? repo : local, &c, &tag) < 0)
                return error_oom(err);
        *ret = steal_pointer(&tag);
        return 0;
}

static json_object *port_object(const char *protocol, unsigned port)
{
        json_object *o = json_object_new_object();
        int r = json_add_string(o, "protocol", protocol);
        if (port)
                r |= json_add_int64(o, "port", port);
        return built(o, r);
}

/* An egress rule to an IP block (with exceptions) on these ports (TCP and, for an address
 * entry without a port, UDP too). */
static json_object *egress_block(const char *cidr, const char *const *except, const unsigned *ports, size_t n_ports,
                                 bool udp)
{
        json_object *rule = json_object_new_object(), *to = json_object_new_array(),
                    *peer = json_object_new_object(), *block = json_object_new_object(),
                    *port_list = json_object_new_array();
        int r = json_add_string(block, "cidr", cidr);
        if (except && except[0])
                r |= json_add(block, "except", json_string_array(except));
        r |= json_add(peer, "ipBlock", block);
        r |= json_append(to, peer);
        r |= json_add(rule, "to", to);
        for (size_t i = 0; i < n_ports; i++) {
                r |= json_append(port_list, port_object("TCP", ports[i]));
                if (udp)
                        r |= json_append(port_list, port_object("UDP", ports[i]));
        }
        if (n_ports)
                r |= json_add(rule, "ports", port_list);
        else
                json_object_put(port_list);
        return built(rule, r);
}

/* Egress to the cluster's resolver: kube-dns in kube-system, port 53. */
static json_object *egress_dns(void)
{
        json_object *rule = json_object_new_object(), *to = json_object_new_array(),
                    *peer = json_object_new_object(), *ns = json_object_new_object(),
                    *ns_labels = json_object_new_object(), *pod = json_object_new_object(),
                    *pod_labels = json_object_new_object(), *ports = json_object_new_array();
        int r = json_add_string(ns_labels, "kubernetes.io/metadata.name", "kube-system");
        r |= json_add(ns, "matchLabels", ns_labels);
        r |= json_add_string(pod_labels, "k8s-app", "kube-dns");
        r |= json_add(pod, "matchLabels", pod_labels);
        r |= json_add(peer, "namespaceSelector", ns);
        r |= json_add(peer, "podSelector", pod);
        r |= json_append(to, peer);
        r |= json_add(rule, "to", to);
        r |= json_append(ports, port_object("UDP", 53));
        r |= json_append(ports, port_object("TCP", 53));
        r |= json_add(rule, "ports", ports);
        return built(rule, r);
}

static json_object *selector(const char *key, const char *value)
{
        json_object *s = json_object_new_object(), *m = json_object_new_object();
        int r = json_add_string(m, key, value);
        r |= json_add(s, "matchLabels", m);
        return built(s, r);
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

static int compare_ports(const void *a, const void *b)
{
        unsigned x = *(const unsigned *) a, y = *(const unsigned *) b;
        return (x > y) - (x < y);
}

static int gate_objects(const aisb_policy *p, const kube_options *ko, const allowlist *l, const kube_names *n,
                        json_object *docs, aisb_error **err)
{
        /* What can be refused, before anything is built. The allowed ports, sorted. */
        unsigned ports_out[64];
        size_t n_ports = 0;
        for (size_t i = 0; i < l->n; i++) {
                const allow_entry *e = &l->entries[i];
                if (e->kind != ALLOW_DOMAIN)
                        continue;
                unsigned want[2] = { e->port ? e->port : 80, e->port ? 0 : 443 };
                for (size_t k = 0; k < 2; k++) {
                        bool seen = !want[k];
                        for (size_t j = 0; j < n_ports && !seen; j++)
                                seen = ports_out[j] == want[k];
                        if (!seen && n_ports == ELEMENTSOF(ports_out))
                                return aisb_error_set(err, -EOPNOTSUPP, "kube: more than %zu ports in the allowlist",
                                                      ELEMENTSOF(ports_out));
                        if (!seen)
                                ports_out[n_ports++] = want[k];
                }
        }
        qsort(ports_out, n_ports, sizeof *ports_out, compare_ports);
        /* Each --gate-add-host address, as the gate's policy lets it out. */
        _cleanup_strv_free_ char **add_cidrs = NULL;
        for (size_t i = 0; p->add_hosts && p->add_hosts[i]; i++) {
                _cleanup_free_ char *name = NULL, *ip = NULL, *cidr = NULL;
                if (allowlist_parse_add_host(p->add_hosts[i], &name, &ip, err) < 0)
                        return -EINVAL;
                if (asprintf(&cidr, "%s/%u", ip, strchr(ip, ':') ? 128 : 32) < 0 || strv_push(&add_cidrs, cidr) < 0)
                        return error_oom(err);
        }
        /* The configuration: the local gate's generator, listening on the pod's addresses. */
        squid_options so = { .port = KUBE_GATE_PORT, .cluster = true,
                             .hosts_file = p->add_hosts ? "/etc/aisb-gate/hosts" : NULL,
                             .add_hosts = (const char *const *) p->add_hosts,
                             .access_log = "/var/log/squid/access.log", .cache_log = "/var/log/squid/cache.log" };
        _cleanup_free_ char *conf = NULL, *hosts = NULL, *image = NULL;
        int r = gate_squid_config(l, &so, &conf, err);
        if (r >= 0 && p->add_hosts)
                r = gate_squid_hosts_file((const char *const *) p->add_hosts, &hosts, err);
        if (r >= 0)
                r = image_ref(p, ko, true, &image, err);
        if (r < 0)
                return r;

        json_object *cm = object_head("v1", "ConfigMap", n->gate, labels_object("aisb.gate", n->gate_hash));
        json_object *data = json_object_new_object();
        r = json_add_string(data, "squid.conf", conf);
        if (hosts)
                r |= json_add_string(data, "hosts", hosts);
        r |= cm ? json_add(cm, "data", data) : (json_object_put(data), -ENOMEM);
        r |= json_append(docs, cm);

        /* The gate's pod: squid alone, unprivileged, its logs and spool in memory. */
        json_object *dep = object_head("apps/v1", "Deployment", n->gate, labels_object("aisb.gate", n->gate_hash));
        json_object *spec = json_object_new_object(), *tmpl = json_object_new_object(),
                    *tmeta = json_object_new_object(), *pspec = json_object_new_object(),
                    *containers = json_object_new_array(), *c = json_object_new_object(),
                    *volumes = json_object_new_array(), *mounts = json_object_new_array(),
                    *ports = json_object_new_array(), *cm_vol = json_object_new_object(),
                    *cm_src = json_object_new_object();
        static const char *const squid_argv[] = { "squid", "-N", "-f", "/etc/aisb-gate/squid.conf", NULL };
        r |= json_add_int64(spec, "replicas", 1);
        r |= json_add(spec, "selector", selector("aisb.gate", n->gate_hash));
        r |= json_add(tmeta, "labels", labels_object("aisb.gate", n->gate_hash));
        if (ko->podman)
                r |= podman_seccomp(tmeta);
        r |= json_add(tmpl, "metadata", tmeta);
        r |= json_add_bool(pspec, "automountServiceAccountToken", false);
        r |= json_add_bool(pspec, "enableServiceLinks", false);
        r |= json_add(pspec, "securityContext", pod_security(KUBE_GATE_UID));
        r |= json_add_string(c, "name", "squid");
        r |= json_add_string(c, "image", image);
        r |= json_add_string(c, "imagePullPolicy", ko->image_repo ? "IfNotPresent" : "Never");
        r |= json_add(c, "command", json_string_array(squid_argv));
        /* podman publishes a containerPort on the host: none there. */
        if (!ko->podman) {
                json_object *cport = json_object_new_object();
                r |= json_add_string(cport, "name", "proxy");
                r |= json_add_int64(cport, "containerPort", KUBE_GATE_PORT);
                r |= json_add_string(cport, "protocol", "TCP");
                r |= json_append(ports, cport);
                r |= json_add(c, "ports", ports);
        } else
                json_object_put(ports);
        r |= json_add(c, "securityContext", kube_security(&security_pod));
        char v_config[64], v_logs[64], v_run[64], v_tmp[64];
        volume_name(v_config, n->gate, "config");
        volume_name(v_logs, n->gate, "logs");
        volume_name(v_run, n->gate, "run");
        volume_name(v_tmp, n->gate, "tmp");
        r |= json_append(mounts, volume_mount(v_config, "/etc/aisb-gate", true));
        r |= json_append(mounts, volume_mount(v_logs, "/var/log/squid", false));
        r |= json_append(mounts, volume_mount(v_run, "/run", false));
        r |= json_append(mounts, volume_mount(v_tmp, "/tmp", false));
        r |= json_add(c, "volumeMounts", mounts);
        r |= json_append(containers, c);
        r |= json_add(pspec, "containers", containers);
        r |= json_add_string(cm_vol, "name", v_config);
        r |= json_add_string(cm_src, "name", n->gate);
        r |= json_add(cm_vol, "configMap", cm_src);
        r |= json_append(volumes, cm_vol);
        r |= json_append(volumes, empty_dir(v_logs, NULL, 256ULL << 20));
        r |= json_append(volumes, empty_dir(v_run, "Memory", 16ULL << 20));
        r |= json_append(volumes, empty_dir(v_tmp, "Memory", 64ULL << 20));
        r |= json_add(pspec, "volumes", volumes);
        r |= json_add(tmpl, "spec", pspec);
        r |= json_add(spec, "template", tmpl);
        r |= dep ? json_add(dep, "spec", spec) : -ENOMEM;
        r |= json_append(docs, dep);
        if (ko->podman) /* which takes no Service and no NetworkPolicy */
                return r < 0 ? error_oom(err) : 0;

        json_object *svc = object_head("v1", "Service", n->gate, labels_object("aisb.gate", n->gate_hash));
        json_object *sspec = json_object_new_object(), *sports = json_object_new_array(),
                    *sport = json_object_new_object(), *ssel = json_object_new_object();
        r |= json_add_string(sport, "name", "proxy");
        r |= json_add_string(sport, "protocol", "TCP");
        r |= json_add_int64(sport, "port", KUBE_GATE_PORT);
        r |= json_add_int64(sport, "targetPort", KUBE_GATE_PORT);
        r |= json_append(sports, sport);
        r |= json_add_string(ssel, "aisb.gate", n->gate_hash);
        r |= json_add(sspec, "selector", ssel);
        r |= json_add(sspec, "ports", sports);
        r |= svc ? json_add(svc, "spec", sspec) : -ENOMEM;
        r |= json_append(docs, svc);

        /* The gate's NetworkPolicy: in, only from its sandboxes; out, DNS at the cluster's
         * resolver and the allowed ports anywhere but the ranges it never reaches, and each
         * --gate-add-host address on them. */
        json_object *np = object_head("networking.k8s.io/v1", "NetworkPolicy", n->gate,
                                      labels_object("aisb.gate", n->gate_hash));
        json_object *nspec = json_object_new_object(), *types = json_object_new_array(),
                    *ingress = json_object_new_array(), *from_rule = json_object_new_object(),
                    *from = json_object_new_array(), *from_peer = json_object_new_object(),
                    *in_ports = json_object_new_array(), *egress = json_object_new_array();
        r |= json_add(nspec, "podSelector", selector("aisb.gate", n->gate_hash));
        r |= json_append_string(types, "Ingress");
        r |= json_append_string(types, "Egress");
        r |= json_add(nspec, "policyTypes", types);
        r |= json_add(from_peer, "podSelector", selector("aisb.gate-client", n->gate_hash));
        r |= json_append(from, from_peer);
        r |= json_add(from_rule, "from", from);
        r |= json_append(in_ports, port_object("TCP", KUBE_GATE_PORT));
        r |= json_add(from_rule, "ports", in_ports);
        r |= json_append(ingress, from_rule);
        r |= json_add(nspec, "ingress", ingress);
        r |= json_append(egress, egress_dns());
        r |= json_append(egress, egress_block("0.0.0.0/0", v4_except, ports_out, n_ports, false));
        r |= json_append(egress, egress_block("::/0", v6_except, ports_out, n_ports, false));
        for (size_t i = 0; add_cidrs && add_cidrs[i]; i++)
                r |= json_append(egress, egress_block(add_cidrs[i], NULL, ports_out, n_ports, false));
        r |= json_add(nspec, "egress", egress);
        r |= np ? json_add(np, "spec", nspec) : -ENOMEM;
        r |= json_append(docs, np);
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

/* --netfilter init: the same entrypoint, as root with NET_ADMIN alone, installs and verifies
 * its default-drop ruleset in the pod's network namespace and exits; the containers after it
 * share that namespace and cannot change it. The gate's address: its Service's variable on a
 * cluster (read when the init container starts), the fixed one for podman. */
static json_object *netfilter_init_containers(const aisb_policy *p, const kube_options *ko, const allowlist *l,
                                              const kube_names *n, bool gate, const char *image, aisb_error **err)
{
        json_object *list = json_object_new_array(), *c = json_object_new_object();
        _cleanup_strv_free_ char **net_args = NULL, **argv = NULL;
        int r = strv_push(&net_args, "--net");
        r |= strv_push(&net_args, p->net == SANDBOX_NET_ALLOW ? "allow" : "none");
        if (gate) {
                _cleanup_free_ char *arg = NULL;
                char var[80];
                service_host_variable(n, var);
                if (ko->podman ? asprintf(&arg, KUBE_PODMAN_GATE_IP ":%u", KUBE_GATE_PORT) < 0
                               : asprintf(&arg, "%s:%u", var, KUBE_GATE_PORT) < 0)
                        r = -ENOMEM;
                r |= strv_push(&net_args, ko->podman ? "--allow" : "--allow-env");
                r |= arg ? strv_push(&net_args, arg) : -ENOMEM;
        }
        for (size_t i = 0; p->net == SANDBOX_NET_ALLOW && i < l->n; i++) {
                _cleanup_free_ char *arg = NULL;
                if (l->entries[i].kind != ALLOW_ADDRESS)
                        continue;
                r |= allowlist_entrypoint_arg(&l->entries[i], &arg);
                r |= strv_push(&net_args, "--allow");
                r |= arg ? strv_push(&net_args, arg) : -ENOMEM;
        }
        entrypoint_spec es = { .no_ids = true, .net_args = (const char *const *) net_args, .ruleset_only = true };
        if (r >= 0)
                r = plan_entrypoint_argv(&es, &argv);
        r |= json_add_string(c, "name", "netfilter");
        r |= json_add_string(c, "image", image);
        r |= json_add_string(c, "imagePullPolicy", ko->image_repo ? "IfNotPresent" : "Never");
        r |= json_add(c, "command", json_string_array((const char *const *) argv));
        r |= json_add(c, "securityContext", kube_security(&security_netfilter));
        if (!ko->podman)
                r |= json_add(c, "resources", resources(p));
        r |= json_append(list, c);
        if (r < 0)
                (void) error_oom(err);
        return built(list, r);
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

static json_object *protected_mount(const char *volume, const protect_mount *m)
{
        json_object *o = volume_mount(volume, m->destination, m->read_only);
        int r = o ? json_add_string(o, "subPath", m->destination + strlen(AISB_PROJECT_DIR "/")) : -ENOMEM;
        return built(o, r);
}

static int sandbox_objects(const aisb_policy *p, const kube_options *ko, const allowlist *l, const kube_names *n,
                           bool gate, json_object *docs, aisb_error **err)
{
        _cleanup_free_ char *image = NULL, *proxy = NULL;
        _cleanup_(protect_plan_done) protect_plan plan = {};
        int r = protect_for_podman(p, ko, &plan, err);
        if (r < 0)
                return r;
        r = image_ref(p, ko, false, &image, err);
        if (r < 0)
                return r;
        if (gate && (ko->podman ? asprintf(&proxy, "http://%s:%u", n->gate, KUBE_GATE_PORT) < 0
                                : proxy_url(n, &proxy) < 0))
                return error_oom(err);

        /* The sandbox's NetworkPolicy: nothing in; out, only the gate and address entries
         * (--net none: nothing; --net full: anything). */
        json_object *np = object_head("networking.k8s.io/v1", "NetworkPolicy", n->sandbox,
                                      labels_object("aisb.sandbox", n->sandbox));
        json_object *nspec = json_object_new_object(), *types = json_object_new_array(),
                    *egress = json_object_new_array();
        r = json_add(nspec, "podSelector", selector("aisb.sandbox", n->sandbox));
        r |= json_append_string(types, "Ingress");
        r |= json_append_string(types, "Egress");
        r |= json_add(nspec, "policyTypes", types);
        r |= json_add(nspec, "ingress", json_object_new_array());
        if (p->net == SANDBOX_NET_FULL)
                r |= json_append(egress, json_object_new_object());
        if (gate) {
                json_object *rule = json_object_new_object(), *to = json_object_new_array(),
                            *peer = json_object_new_object(), *ports = json_object_new_array();
                r |= json_add(peer, "podSelector", selector("aisb.gate", n->gate_hash));
                r |= json_append(to, peer);
                r |= json_add(rule, "to", to);
                r |= json_append(ports, port_object("TCP", KUBE_GATE_PORT));
                r |= json_add(rule, "ports", ports);
                r |= json_append(egress, rule);
        }
        for (size_t i = 0; p->net == SANDBOX_NET_ALLOW && i < l->n; i++) {
                const allow_entry *e = &l->entries[i];
                if (e->kind != ALLOW_ADDRESS)
                        continue;
                _cleanup_free_ char *cidr = NULL;
                char text[INET6_ADDRSTRLEN];
                inet_ntop(e->family, e->addr, text, sizeof text);
                unsigned port = e->port;
                /* Out of memory here is counted in r: what was built so far is freed with it. */
                r |= asprintf(&cidr, "%s/%u", text, e->prefix) < 0
                             ? -ENOMEM
                             : json_append(egress, egress_block(cidr, NULL, &port, port ? 1 : 0, true));
        }
        r |= json_add(nspec, "egress", egress);
        r |= np ? json_add(np, "spec", nspec) : -ENOMEM;
        if (ko->podman)
                json_object_put(np);
        else
                r |= json_append(docs, np);

        /* The pod. */
        json_object *pod_labels = labels_object("aisb.sandbox", n->sandbox);
        if (gate && pod_labels)
                r |= json_add_string(pod_labels, "aisb.gate-client", n->gate_hash);
        /* A Pod, or the agent-sandbox Sandbox (agents.x-k8s.io/v1beta1) around the same pod
         * spec, whose template carries the labels the NetworkPolicies select on. */
        json_object *pod = ko->as_sandbox
                                   ? object_head("agents.x-k8s.io/v1beta1", "Sandbox", n->sandbox,
                                                 json_object_get(pod_labels))
                                   : object_head("v1", "Pod", n->sandbox, pod_labels);
        if (ko->podman && pod)
                r |= podman_seccomp(json_object_object_get(pod, "metadata"));
        json_object *spec = json_object_new_object(), *containers = json_object_new_array(),
                    *c = json_object_new_object(), *env = json_object_new_array(),
                    *mounts = json_object_new_array(), *volumes = json_object_new_array();
        r |= json_add_string(spec, "restartPolicy", "Never");
        r |= json_add_bool(spec, "automountServiceAccountToken", false);
        /* Deleted, it goes at once: the agent's command is PID 1 and may ignore SIGTERM, and
         * "kubectl delete -f" removes its NetworkPolicy first. */
        r |= json_add_int64(spec, "terminationGracePeriodSeconds", 1);
        /* The gate's address comes from the Service's variables; nothing else is needed.
         * podman has no Services: a host alias names the gate's fixed address. */
        r |= json_add_bool(spec, "enableServiceLinks", gate && !ko->podman);
        if (gate && ko->podman) {
                json_object *aliases = json_object_new_array(), *alias = json_object_new_object(),
                            *names = json_object_new_array();
                r |= json_add_string(alias, "ip", KUBE_PODMAN_GATE_IP);
                r |= json_append_string(names, n->gate);
                r |= json_add(alias, "hostnames", names);
                r |= json_append(aliases, alias);
                r |= json_add(spec, "hostAliases", aliases);
        }
        r |= json_add_bool(spec, "hostNetwork", false);
        r |= json_add_bool(spec, "hostPID", false);
        r |= json_add_bool(spec, "hostIPC", false);
        if (ko->timeout_s)
                r |= json_add_int64(spec, "activeDeadlineSeconds", (int64_t) ko->timeout_s);
        r |= json_add(spec, "securityContext", pod_security(KUBE_UID));

        /* The entrypoint in its external mode, then the command. */
        _cleanup_strv_free_ char **argv = NULL;
        static const char *const external[] = { "--net", "external", NULL };
        entrypoint_spec es = { .uid = KUBE_UID, .gid = KUBE_UID, .net_args = external };
        r |= plan_entrypoint_argv(&es, &argv);
        /* Kubernetes expands $(NAME) in a command and turns $$ into $: every '$' of the
         * command doubled, so that it runs as given (and names no variable's value). podman
         * kube play expands nothing: there the words go as they are. */
        const char *const *cmd = policy_command(p);
        for (size_t i = 0; cmd && cmd[i]; i++) {
                _cleanup_(buffer_free) buffer word = {};
                int k = buffer_printf(&word, "%s", "");
                for (const char *ch = cmd[i]; *ch && k >= 0; ch++)
                        k = buffer_printf(&word, *ch == '$' && !ko->podman ? "$$" : "%c", *ch);
                r |= k < 0 ? k : strv_push(&argv, word.data);
        }
        r |= json_add_string(c, "name", "sandbox");
        r |= json_add_string(c, "image", image);
        r |= json_add_string(c, "imagePullPolicy", ko->image_repo ? "IfNotPresent" : "Never");
        r |= json_add(c, "command", json_string_array((const char *const *) argv));
        r |= json_add_string(c, "workingDir", p->project ? AISB_PROJECT_DIR : AISB_SANDBOX_HOME);
        r |= json_append(env, env_value("HOME", AISB_SANDBOX_HOME));
        /* The proxy variables a local run's sandbox gets, the gate's Service for the proxy. */
        _cleanup_strv_free_ char **proxy_env = NULL;
        if (gate && plan_proxy_env(l, proxy, false, &proxy_env) < 0)
                r = -ENOMEM;
        for (size_t i = 0; proxy_env && proxy_env[i]; i++) {
                _cleanup_free_ char *name = strndup(proxy_env[i], strcspn(proxy_env[i], "="));
                r |= name ? json_append(env, env_value(name, proxy_env[i] + strlen(name) + 1)) : -ENOMEM;
        }
        /* Values never: each variable the policy names comes from a Secret the user makes.
         * The terminal's own (TERM, LANG, ...) a pod has none of. */
        for (size_t i = 0; i < p->n_env; i++) {
                if (policy_env_inherited(p->env[i].name))
                        continue;
                json_object *e = json_object_new_object(), *from = json_object_new_object(),
                            *ref = json_object_new_object();
                r |= json_add_string(e, "name", p->env[i].name);
                r |= json_add_string(ref, "name", n->sandbox);
                r |= json_add_string(ref, "key", p->env[i].name);
                r |= json_add(from, "secretKeyRef", ref);
                r |= json_add(e, "valueFrom", from);
                r |= json_append(env, e);
        }
        r |= json_add(c, "env", env);
        /* podman on a host whose cgroups it cannot delegate fails the pod for any: its
         * own caps (aisb run's) are the way there. */
        if (!ko->podman)
                r |= json_add(c, "resources", resources(p));
        r |= json_add(c, "securityContext", kube_security(&security_pod));
        char v_project[64], v_home[64], v_tmp[64], v_var_tmp[64], v_run[64];
        volume_name(v_project, n->sandbox, "project");
        volume_name(v_home, n->sandbox, "home");
        volume_name(v_tmp, n->sandbox, "tmp");
        volume_name(v_var_tmp, n->sandbox, "var-tmp");
        volume_name(v_run, n->sandbox, "run");
        if (p->project)
                r |= json_append(mounts, volume_mount(v_project, AISB_PROJECT_DIR, false));
        for (size_t i = 0; i < plan.n_mounts; i++)
                r |= json_append(mounts, protected_mount(v_project, &plan.mounts[i]));
        r |= json_append(mounts, volume_mount(v_home, AISB_SANDBOX_HOME, false));
        r |= json_append(mounts, volume_mount(v_tmp, "/tmp", false));
        r |= json_append(mounts, volume_mount(v_var_tmp, "/var/tmp", false));
        r |= json_append(mounts, volume_mount(v_run, "/run", false));
        r |= json_add(c, "volumeMounts", mounts);
        r |= json_append(containers, c);
        r |= json_add(spec, "containers", containers);
        if (ko->netfilter_init)
                r |= json_add(spec, "initContainers", netfilter_init_containers(p, ko, l, n, gate, image, err));
        if (p->project) {
                /* The workspace: the project itself on one machine, a claim on a cluster. */
                json_object *project = json_object_new_object(), *src = json_object_new_object();
                r |= json_add_string(project, "name", v_project);
                if (ko->podman) {
                        r |= json_add_string(src, "path", p->project);
                        r |= json_add_string(src, "type", "Directory");
                        r |= json_add(project, "hostPath", src);
                } else {
                        r |= json_add_string(src, "claimName", n->sandbox);
                        r |= json_add(project, "persistentVolumeClaim", src);
                }
                r |= json_append(volumes, project);
        }
        r |= json_append(volumes, empty_dir(v_home, NULL, p->tmp_size));
        r |= json_append(volumes, empty_dir(v_tmp, NULL, p->tmp_size));
        r |= json_append(volumes, empty_dir(v_var_tmp, NULL, p->tmp_size));
        r |= json_append(volumes, empty_dir(v_run, "Memory", 64ULL << 20));
        r |= json_add(spec, "volumes", volumes);
        if (ko->as_sandbox) {
                json_object *sspec = json_object_new_object(), *tmpl = json_object_new_object(),
                            *tmeta = json_object_new_object();
                r |= json_add(tmeta, "labels", pod_labels);
                r |= json_add(tmpl, "metadata", tmeta);
                r |= json_add(tmpl, "spec", spec);
                r |= json_add(sspec, "podTemplate", tmpl);
                r |= pod ? json_add(pod, "spec", sspec) : -ENOMEM;
        } else
                r |= pod ? json_add(pod, "spec", spec) : -ENOMEM;
        r |= json_append(docs, pod);
        return r < 0 ? error_oom(err) : 0;
}

/* The workspace: a claim of the project's own, which outlives the pod. */
static int workspace_claim(const kube_options *ko, const kube_names *n, json_object *docs)
{
        json_object *pvc = object_head("v1", "PersistentVolumeClaim", n->sandbox,
                                       labels_object("aisb.sandbox", n->sandbox));
        json_object *spec = json_object_new_object(), *modes = json_object_new_array(),
                    *res = json_object_new_object(), *req = json_object_new_object();
        char size[32];
        snprintf(size, sizeof size, "%llu", ko->workspace_size ? ko->workspace_size : 10ULL << 30);
        int r = json_append_string(modes, "ReadWriteOnce");
        r |= json_add(spec, "accessModes", modes);
        r |= json_add_string(req, "storage", size);
        r |= json_add(res, "requests", req);
        r |= json_add(spec, "resources", res);
        r |= pvc ? json_add(pvc, "spec", spec) : -ENOMEM;
        r |= json_append(docs, pvc);
        return r;
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
                const char *text = json_object_to_json_string_ext(json_object_array_get_idx(docs, i),
                                                                  JSON_C_TO_STRING_PRETTY |
                                                                          JSON_C_TO_STRING_SPACED |
                                                                          JSON_C_TO_STRING_NOSLASHESCAPE);
                if (!text || buffer_printf(&b, "---\n%s\n", text) < 0)
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
        _cleanup_(build_context_done) build_context c = {};
        _cleanup_free_ char *local = NULL, *remote = NULL;
        int r = gate ? image_gate_context(p, &c, err) : image_context(p, &c, err);
        if (r >= 0)
                r = image_ensure_context(ctx, p, gate ? "localhost/aisb-gate" : "localhost/aisb", &c, false, &local, NULL, err);
        if (r >= 0)
                r = image_ref(p, o, gate, &remote, err);
        if (r >= 0) {
                aisb_log(ctx, AISB_LOG_INFO, "pushing %s", remote);
                r = podman_image_push(ctx, local, remote, tls_verify, err);
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
