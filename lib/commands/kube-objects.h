/* SPDX-License-Identifier: MIT */
/*
 * The pieces Kubernetes objects are made of, as aisb kube's gate and sandbox both write them:
 * labels and metadata, security contexts, volumes and their mounts, resources, ports and
 * NetworkPolicy rules. Each returns a new json-c object, or NULL when out of memory (the
 * JSON_BUILD_* builders carry that NULL out). Internal to libaisb.
 */
#pragma once

#include <json-c/json.h>

#include "kube-plan.h"
#include "security.h"

json_object *kube_labels(const char *key, const char *value, const char *gate_client);
json_object *kube_metadata(const char *name, json_object *labels, bool podman_seccomp);
/* metadata and body taken. */
json_object *kube_object(const char *api_version, const char *kind, json_object *metadata, const char *body_key,
                         json_object *body);

json_object *kube_security(const security_spec *s);
json_object *kube_pod_security(unsigned uid);

json_object *kube_empty_dir(const char *name, const char *medium, unsigned long long size);
const char *kube_volume_name(char buf[static 64], const char *owner, const char *what);
json_object *kube_volume_mount(const char *name, const char *path, bool read_only, const char *sub_path);

const char *kube_pull_policy(const kube_options *ko);

json_object *kube_port(const char *protocol, unsigned port);
json_object *kube_egress_block(const char *cidr, const char *const *except, const unsigned *ports, size_t n_ports,
                               bool udp);
json_object *kube_selector(const char *key, const char *value);
json_object *kube_network_policy(const char *name, json_object *labels, const char *key, const char *value,
                                 json_object *ingress, json_object *egress);
