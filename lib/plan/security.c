/* SPDX-License-Identifier: MIT */
/*
 * The sandbox's first process is aisb-entrypoint (entrypoint/): it installs and verifies the
 * egress ruleset, drops every privilege, loads the seccomp filter and execs the command.
 * Here, on the library's side: the capabilities the container must start with for it, and
 * what every container of aisb's is held to (plan.c makes the argv).
 */
#include "security.h"

/* The minimal set, each proved necessary (docs/entrypoint.md): NET_ADMIN for the ruleset,
 * SETGID/SETUID for the drop to the user, SETPCAP to empty the bounding set. */
const char *const entrypoint_capabilities[] = { "CAP_NET_ADMIN", "CAP_SETUID", "CAP_SETGID",
                                                "CAP_SETPCAP", NULL };

/* --ruleset-only (aisb kube's init container): the ruleset, nothing else. */
static const char *const netfilter_capabilities[] = { "CAP_NET_ADMIN", NULL };

const char *const entrypoint_trust_env[] = { "SSL_CERT_FILE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "REQUESTS_CA_BUNDLE",
                                             "PIP_CERT", "NODE_EXTRA_CA_CERTS", NULL };

const security_spec security_sandbox = { .cap_add = entrypoint_capabilities, .as_root = true };
const security_spec security_gate = { .read_only_root = true };
const security_spec security_netfilter = { .cap_add = netfilter_capabilities, .as_root = true,
                                           .read_only_root = true };
const security_spec security_pod = { .read_only_root = true };
