/* SPDX-License-Identifier: MIT */
/*
 * The pieces of Kubernetes objects that aisb kube's gate and sandbox share,
 * built with json-c: what the "restricted" Pod Security Standard asks of a pod and more, and
 * the NetworkPolicy rules both pods' policies are made of.
 */
#include "jsonutil.h"
#include "kube.h"

/* aisb's labels: key=value, and gate_client's (a gate's hash) unless NULL. */
json_object *kube_labels(const char *key, const char *value, const char *gate_client)
{
        return json_built(JSON_BUILD_OBJECT(
                JSON_BUILD_PAIR_STRING("app.kubernetes.io/managed-by", "aisb"), JSON_BUILD_PAIR_STRING(key, value),
                JSON_BUILD_PAIR_CONDITION(gate_client, JSON_BUILD_PAIR_STRING("aisb.gate-client", gate_client))));
}

/* An object's metadata (name NULL: a pod template's). podman reads a pod's seccomp profile
 * from an annotation only, not from its spec. */
json_object *kube_metadata(const char *name, json_object *labels, bool podman_seccomp)
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
json_object *kube_object(const char *api_version, const char *kind, json_object *metadata,
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
json_object *kube_security(const security_spec *s)
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

json_object *kube_pod_security(unsigned uid)
{
        return json_built(JSON_BUILD_OBJECT(JSON_BUILD_PAIR_BOOL("runAsNonRoot", true),
                                            JSON_BUILD_PAIR_INT64("runAsUser", uid),
                                            JSON_BUILD_PAIR_INT64("runAsGroup", uid), KUBE_RUNTIME_DEFAULT_SECCOMP));
}

json_object *kube_empty_dir(const char *name, const char *medium, unsigned long long size)
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
const char *kube_volume_name(char buf[static 64], const char *owner, const char *what)
{
        snprintf(buf, 64, "%.50s-%.8s", owner, what); /* names are at most 50 (kube_names_make) */
        return buf;
}

/* sub_path NULL: the whole volume. */
json_object *kube_volume_mount(const char *name, const char *path, bool read_only, const char *sub_path)
{
        return json_built(JSON_BUILD_OBJECT(
                JSON_BUILD_PAIR_STRING("name", name), JSON_BUILD_PAIR_STRING("mountPath", path),
                JSON_BUILD_PAIR_CONDITION(read_only, JSON_BUILD_PAIR_BOOL("readOnly", true)),
                JSON_BUILD_PAIR_CONDITION(sub_path, JSON_BUILD_PAIR_STRING("subPath", sub_path))));
}

const char *kube_pull_policy(const kube_options *ko)
{
        return ko->image_repo ? "IfNotPresent" : "Never";
}

json_object *kube_port(const char *protocol, unsigned port)
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
                r = json_build_into(a, JSON_BUILD_TAKE(kube_port("TCP", ports[i])),
                                    JSON_BUILD_TAKE_IF(udp, kube_port("UDP", ports[i])));
        return r < 0 ? NULL : steal_pointer(&a);
}

/* An egress rule to an IP block (with exceptions) on these ports (TCP and, for an address
 * entry without a port, UDP too). */
json_object *kube_egress_block(const char *cidr, const char *const *except, const unsigned *ports, size_t n_ports,
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

json_object *kube_selector(const char *key, const char *value)
{
        return json_built(JSON_BUILD_OBJECT(JSON_BUILD_PAIR("matchLabels", JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRING(key, value)))));
}

/* A NetworkPolicy over the pods labelled key=value, both ways; ingress and egress taken. */
json_object *kube_network_policy(const char *name, json_object *labels, const char *key, const char *value,
                                 json_object *ingress, json_object *egress)
{
        return kube_object("networking.k8s.io/v1", "NetworkPolicy", kube_metadata(name, labels, false), "spec",
                           json_built(JSON_BUILD_OBJECT(
                                   JSON_BUILD_PAIR_TAKE("podSelector", kube_selector(key, value)),
                                   JSON_BUILD_PAIR("policyTypes", JSON_BUILD_ARRAY(JSON_BUILD_STRING("Ingress"),
                                                                                   JSON_BUILD_STRING("Egress"))),
                                   JSON_BUILD_PAIR_TAKE("ingress", ingress), JSON_BUILD_PAIR_TAKE("egress", egress))));
}
