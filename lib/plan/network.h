/* SPDX-License-Identifier: MIT */
/*
 * How a sandbox reaches the outside, in two steps. network_gather() reads what the plan
 * depends on from the outside world: the allowlist files, the host's own addresses, and (for
 * --no-gate and --proxy) names resolved now. network_plan() is pure: from the policy, the
 * backend and those inputs it makes the network namespace mode, the entrypoint's --net and
 * --allow arguments and where the proxy is. Starting the gate is the run's business (run.c):
 * the plan only takes its port.
 */
#pragma once

#include <stdbool.h>

#include "allowlist.h"
#include "error.h"
#include "policy.h"

struct project_settings;

/* The address the sandbox reaches the host's loopback at, whichever the backend:
 * slirp4netns's allow_host_loopback puts it there, pasta's --map-host-loopback is told to. */
#define SANDBOX_HOST_LOOPBACK "10.0.2.2"
/* Shown in printed rulesets when no gate is running yet: the real port is picked at start. */
#define NETWORK_PLACEHOLDER_GATE_PORT 3128

/* How rootless podman gives the sandbox a network: what aisb asks for and what the sandbox
 * then sees (docs/host.md has the table). */
typedef struct network_backend {
        network_backend_id id;
        const char *name;          /* podman's nsmode */
        const char *host_address;  /* where the host's own (non-loopback) addresses are reached */
} network_backend;
/* The backend for this policy on a service of this major version (0: not known, as 4). */
const network_backend *network_backend_for(const aisb_policy *p, unsigned podman_major);

typedef struct network_inputs {
        allowlist list;  /* the merged allowlist (--net allow) */
        char **pinned;   /* --no-gate: "ADDR:PORT" / "[ADDR]:PORT" of each name, resolved */
        char *proxy_host; /* --proxy: as the sandbox reaches it */
        unsigned proxy_port;
        bool proxy_loopback;
        unsigned gate_port; /* set by the caller once a gate serves this run */
        const char *gate_key; /* and the key it asks of its clients, or NULL (gate_info) */
        /* Borrowed, for a gate that is not on the host's loopback (aisb kube: a pod): the host
         * the proxy variables name, and the address the ruleset allows (with gate_address_env,
         * the variable that holds it when the entrypoint starts: --allow-env). NULL: both
         * SANDBOX_HOST_LOOPBACK. */
        const char *gate_host, *gate_address;
        bool gate_address_env;
        /* The network is enforced outside the sandbox (aisb kube: NetworkPolicies, and an init
         * container's ruleset): its entrypoint is told --net external, and the ruleset the
         * arguments would have installed is the plan's ruleset_args. */
        bool external;
} network_inputs;
void network_inputs_done(network_inputs *in);
/* Whether this policy's network, with these inputs, goes through a gate. */
bool network_needs_gate(const aisb_policy *p, const network_inputs *in);
/* The part of that the policy alone decides (allow mode, no proxy, no --no-gate): before
 * the inputs are gathered, whether a run may need the gate's image. */
bool network_policy_may_need_gate(const aisb_policy *p);
/* The merged allowlist, the host-range checks, and the names of --no-gate and --proxy
 * resolved. settings: the run's snapshot of .ai-sandbox (NULL: read it now, the same way). */
int network_gather(const aisb_policy *p, const network_backend *backend,
                   const struct project_settings *settings, network_inputs *ret, aisb_error **err);

typedef struct sandbox_network {
        const char *nsmode;    /* "none", or the backend's name */
        const network_backend *backend; /* NULL with --net none */
        bool host_loopback;    /* the host's loopback mapped at SANDBOX_HOST_LOOPBACK */
        char **entrypoint_args; /* --net MODE [--allow DEST]... [--allow-dns] */
        char **ruleset_args;    /* external: what entrypoint_args would have been; else NULL */
        /* The proxy the sandbox's clients are pointed at (the plan makes the variables):
         * NULL for none; the key a per-run gate asks of its clients, or NULL. */
        char *proxy_host;
        unsigned proxy_port;
        char *proxy_key;
} sandbox_network;
void sandbox_network_done(sandbox_network *n);
/* Pure. -EINVAL for --net allow with nothing allowed; -ENOMEM. */
int network_plan(const aisb_policy *p, const network_backend *backend, const network_inputs *in,
                 sandbox_network *ret, aisb_error **err);
