/* SPDX-License-Identifier: MIT */
/*
 * How a sandbox reaches the outside, per mode: nothing (none); everything (full); or only the
 * allowlist (allow), in one of three ways: through the gate on the host's loopback (the
 * default), through a proxy the user already runs (--proxy), or with the allowlisted names
 * resolved at start and pinned as address rules (--no-gate). In every allow variant the
 * entrypoint's default-drop ruleset admits exactly those destinations and nothing else.
 * network_gather() does the reading and resolving, network_plan() the rest, purely.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "gate-squid.h"
#include "network.h"
#include "project.h"
#include "userdirs.h"
#include "hostaddr.h"

void sandbox_network_done(sandbox_network *n)
{
        strv_free(n->entrypoint_args);
        strv_free(n->ruleset_args);
        free(n->proxy_host);
        free(n->proxy_key);
        *n = (sandbox_network) {};
}

void network_inputs_done(network_inputs *in)
{
        allowlist_done(&in->list);
        strv_free(in->pinned);
        free(in->proxy_host);
        *in = (network_inputs) {};
}

/* An option of the entrypoint's and its value. */
static int push_option(char ***args, const char *option, const char *value)
{
        int r = strv_push(args, option);
        return r < 0 ? r : strv_push(args, value);
}

static int push_address_entries(sandbox_network *n, const allowlist *l)
{
        for (size_t i = 0; i < l->n; i++) {
                if (l->entries[i].kind != ALLOW_ADDRESS)
                        continue;
                _cleanup_free_ char *arg = NULL;
                int r = allowlist_entrypoint_arg(&l->entries[i], &arg);
                if (r < 0 || (r = push_option(&n->entrypoint_args, "--allow", arg)) < 0)
                        return r;
        }
        return 0;
}

/* Whether ip (text) is one of this host's own addresses. */
static bool host_own_address(const char *ip)
{
        _cleanup_strv_free_ char **own = NULL;
        return host_own_addresses(&own) >= 0 && strv_contains((const char *const *) own, ip);
}

/* --no-gate: each name resolved here, now, to be pinned as address rules. A name is no way
 * around the host ranges an address entry may not cover: whoever owns a name (the project's
 * file names some) chooses what it resolves to. */
static int pin_domains(const allowlist *l, bool insecure_allow_host_ranges, char ***pinned,
                       aisb_error **err)
{
        for (size_t i = 0; i < l->n; i++) {
                const allow_entry *e = &l->entries[i];
                if (e->kind != ALLOW_DOMAIN)
                        continue;
                struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_family = AF_UNSPEC };
                struct addrinfo *res = NULL;
                int g = getaddrinfo(e->host, NULL, &hints, &res);
                if (g != 0)
                        return aisb_error_set(err, -EHOSTUNREACH, "--no-gate: cannot resolve %s (%s): %s",
                                              e->host, e->origin, gai_strerror(g));
                int r = 0;
                for (struct addrinfo *a = res; a && r >= 0; a = a->ai_next) {
                        char ip[INET6_ADDRSTRLEN];
                        const void *addr = a->ai_family == AF_INET
                                                   ? (const void *) &((struct sockaddr_in *) a->ai_addr)->sin_addr
                                                   : (const void *) &((struct sockaddr_in6 *) a->ai_addr)->sin6_addr;
                        if (!inet_ntop(a->ai_family, addr, ip, sizeof ip))
                                continue;
                        uint8_t bytes[16] = {};
                        memcpy(bytes, addr, a->ai_family == AF_INET ? 4 : 16);
                        /* A name is no way around the host ranges; and, as the gate does,
                         * whoever controls a name's DNS chooses where it points, so a name
                         * reaches only public addresses. The user's own networks are named by
                         * address (--allow, or the user's file). */
                        const char *host = allowlist_host_range(a->ai_family, bytes,
                                                                a->ai_family == AF_INET ? 32 : 128);
                        const char *local = host ? NULL : gate_local_range(a->ai_family, bytes);
                        if (!host && !local && host_own_address(ip))
                                local = "one of this host's own addresses";
                        if ((host || local) && !insecure_allow_host_ranges) {
                                r = aisb_error_set(err, -EINVAL,
                                                   host ? "--no-gate: %s (%s) resolves to %s, which reaches the host "
                                                          "itself (%s): refused unless --insecure-allow-host-ranges"
                                                        : "--no-gate: %s (%s) resolves to %s (%s), where a name's owner "
                                                          "could point it at your own networks: give the address itself "
                                                          "with --allow, or use the gate",
                                                   e->host, e->origin, ip, host ? host : local);
                                break;
                        }
                        const unsigned ports[] = { e->port ? e->port : 80, e->port ? 0 : 443 };
                        for (size_t k = 0; k < ELEMENTSOF(ports) && r >= 0; k++) {
                                if (!ports[k])
                                        continue;
                                _cleanup_free_ char *dest = NULL;
                                if (asprintf(&dest, a->ai_family == AF_INET6 ? "[%s]:%u" : "%s:%u", ip,
                                             ports[k]) < 0) {
                                        r = error_oom(err);
                                        break;
                                }
                                /* getaddrinfo repeats addresses per protocol: once is enough. */
                                if (!strv_contains((const char *const *) *pinned, dest) && strv_push(pinned, dest) < 0)
                                        r = error_oom(err);
                        }
                }
                freeaddrinfo(res);
                if (r < 0)
                        return r;
        }
        return 0;
}

static const network_backend backends[] = {
        /* slirp4netns NATs the sandbox's connections to the host's own addresses to the host. */
        { NETWORK_BACKEND_SLIRP4NETNS, "slirp4netns", NULL },
        /* pasta gives the sandbox the host's own address, so that address is the sandbox's;
         * podman maps the host at 169.254.1.2 (host.containers.internal). */
        { NETWORK_BACKEND_PASTA, "pasta", "169.254.1.2" },
};

const network_backend *network_backend_for(const aisb_policy *p, unsigned podman_major)
{
        network_backend_id id = p->network_backend;
        if (id == NETWORK_BACKEND_AUTO)
                id = podman_major >= 5 ? NETWORK_BACKEND_PASTA : NETWORK_BACKEND_SLIRP4NETNS;
        return &backends[id == NETWORK_BACKEND_PASTA ? 1 : 0];
}

/* --proxy HOST:PORT, with a host address translated to the sandbox's view of it. */
static int resolve_proxy(const char *spec, const network_backend *backend, network_inputs *in,
                         aisb_error **err)
{
        const char *colon = strrchr(spec, ':');
        unsigned long long port;
        if (!colon || colon == spec || parse_uint(colon + 1, 65535, &port) < 0 || port == 0)
                return aisb_error_set(err, -EINVAL, "proxy: '%s' is not HOST:PORT", spec);
        _cleanup_free_ char *host = strndup(spec, (size_t) (colon - spec));
        if (!host)
                return error_oom(err);
        struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_family = AF_INET };
        struct addrinfo *res = NULL;
        int g = getaddrinfo(host, NULL, &hints, &res);
        if (g != 0)
                return aisb_error_set(err, -EHOSTUNREACH, "proxy: cannot resolve %s: %s", host,
                                      gai_strerror(g));
        char ip[INET_ADDRSTRLEN];
        struct in_addr addr = ((struct sockaddr_in *) res->ai_addr)->sin_addr;
        freeaddrinfo(res);
        bool loopback = (ntohl(addr.s_addr) >> 24) == 127;
        if (!inet_ntop(AF_INET, &addr, ip, sizeof ip))
                return aisb_error_set(err, -EINVAL, "proxy: bad address for %s", host);
        in->proxy_host = strdup(loopback ? SANDBOX_HOST_LOOPBACK
                                : backend->host_address && host_own_address(ip) ? backend->host_address
                                                                               : ip);
        in->proxy_port = (unsigned) port;
        in->proxy_loopback = loopback;
        return in->proxy_host ? 0 : error_oom(err);
}

int network_gather(const aisb_policy *p, const network_backend *backend,
                   const project_settings *settings, network_inputs *ret, aisb_error **err)
{
        _cleanup_(network_inputs_done) network_inputs in = {};
        int r = 0;
        if (p->net != SANDBOX_NET_ALLOW) {
                *ret = in;
                return 0;
        }
        r = policy_allowlist(p, settings, &in.list, err);
        if (r >= 0 && p->proxy)
                r = resolve_proxy(p->proxy, backend, &in, err);
        else if (r >= 0 && p->no_gate)
                r = pin_domains(&in.list, p->insecure_allow_host_ranges, &in.pinned, err);
        if (r < 0)
                return r;
        *ret = in;
        in = (network_inputs) {};
        return 0;
}

bool network_policy_may_need_gate(const aisb_policy *p)
{
        return p->net == SANDBOX_NET_ALLOW && !p->proxy && !p->no_gate;
}

bool network_needs_gate(const aisb_policy *p, const network_inputs *in)
{
        return network_policy_may_need_gate(p) && allowlist_count_domains(&in->list) > 0;
}

/* Where the sandbox's proxy variables point (the plan makes them). */
static int proxy_through(sandbox_network *n, const char *host, unsigned port, const char *key)
{
        n->proxy_host = strdup(host);
        n->proxy_key = key ? strdup(key) : NULL;
        n->proxy_port = port;
        return n->proxy_host && (!key || n->proxy_key) ? 0 : -ENOMEM;
}

static int plan_allow(const aisb_policy *p, const network_inputs *in, sandbox_network *n, aisb_error **err)
{
        int r = push_option(&n->entrypoint_args, "--net", "allow");
        if (r >= 0 && p->proxy) {
                n->host_loopback = in->proxy_loopback;
                _cleanup_free_ char *dest = NULL;
                if (asprintf(&dest, "%s:%u", in->proxy_host, in->proxy_port) < 0)
                        return -ENOMEM;
                r = push_option(&n->entrypoint_args, "--allow", dest);
                r = r < 0 ? r : push_address_entries(n, &in->list);
                return r < 0 ? r : proxy_through(n, in->proxy_host, in->proxy_port, NULL);
        }
        if (r < 0)
                return r;
        if (in->list.n == 0)
                return aisb_error_set(err, -EINVAL,
                                      "--net allow with an empty allowlist reaches nothing: add --allow DOMAIN "
                                      "(or ~/.config/ai-sandbox/allow), or choose --net none");
        if (p->no_gate) {
                for (size_t i = 0; r >= 0 && in->pinned && in->pinned[i]; i++)
                        r = push_option(&n->entrypoint_args, "--allow", in->pinned[i]);
                r = r < 0 ? r : push_address_entries(n, &in->list);
                return r < 0 ? r : strv_push(&n->entrypoint_args, "--allow-dns");
        }
        if (network_needs_gate(p, in)) {
                n->host_loopback = !in->gate_host;
                _cleanup_free_ char *dest = NULL;
                if (asprintf(&dest, "%s:%u", in->gate_address ? in->gate_address : SANDBOX_HOST_LOOPBACK,
                             in->gate_port) < 0 ||
                    push_option(&n->entrypoint_args, in->gate_address_env ? "--allow-env" : "--allow", dest) < 0 ||
                    proxy_through(n, in->gate_host ? in->gate_host : SANDBOX_HOST_LOOPBACK, in->gate_port,
                                  in->gate_key) < 0)
                        return -ENOMEM;
        }
        return push_address_entries(n, &in->list);
}

int network_plan(const aisb_policy *p, const network_backend *backend, const network_inputs *in,
                 sandbox_network *ret, aisb_error **err)
{
        _cleanup_(sandbox_network_done) sandbox_network n = { .nsmode = "none" };
        int r;
        if (p->net == SANDBOX_NET_NONE)
                r = push_option(&n.entrypoint_args, "--net", "none");
        else {
                n.backend = backend;
                n.nsmode = backend->name;
                r = p->net == SANDBOX_NET_FULL ? push_option(&n.entrypoint_args, "--net", "full")
                                               : plan_allow(p, in, &n, err);
        }
        if (r >= 0 && in->external) {
                n.ruleset_args = steal_pointer(&n.entrypoint_args);
                n.host_loopback = false;
                r = push_option(&n.entrypoint_args, "--net", "external");
        }
        if (r == -ENOMEM)
                return error_oom(err);
        if (r < 0)
                return r;
        *ret = n;
        n = (sandbox_network) {};
        return 0;
}
