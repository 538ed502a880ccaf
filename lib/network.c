/* SPDX-License-Identifier: MIT */
/*
 * How a sandbox reaches the outside, per mode: nothing (none); everything (full); or only the
 * allowlist (allow), in one of three ways: through the gate on the host's loopback (the
 * default), through a proxy the user already runs (--proxy), or with the allowlisted names
 * resolved here and pinned as address rules (--no-gate). In every allow variant the
 * entrypoint's default-drop ruleset admits exactly those destinations and nothing else.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "aisb-private.h"
#include "project.h"

/* Shown in printed rulesets when no gate is running yet: the real port is picked at start. */
#define PLACEHOLDER_GATE_PORT 3128

void sandbox_network_done(sandbox_network *n)
{
        strv_free(n->entrypoint_args);
        strv_free(n->env);
        allowlist_done(&n->list);
        gate_info_done(&n->gate);
        *n = (sandbox_network) {};
}

static int copy_entry(allowlist *to, const allow_entry *e)
{
        allow_entry *grown = realloc(to->entries, (to->n + 1) * sizeof *grown);
        if (!grown)
                return -ENOMEM;
        to->entries = grown;
        allow_entry c = *e;
        c.host = strdup(e->host);
        c.origin = strdup(e->origin);
        if (!c.host || !c.origin) {
                free(c.host);
                free(c.origin);
                return -ENOMEM;
        }
        to->entries[to->n++] = c;
        return 0;
}

static char *user_allowlist_path(const aisb_policy *p)
{
        if (p->user_allowlist)
                return *p->user_allowlist ? strdup(p->user_allowlist) : NULL;
        const char *xdg = getenv("XDG_CONFIG_HOME");
        const char *home = getenv("HOME");
        char *path = NULL;
        if (xdg && xdg[0] == '/') {
                if (asprintf(&path, "%s/ai-sandbox/allow", xdg) < 0)
                        return NULL;
        } else if (home && home[0] == '/') {
                if (asprintf(&path, "%s/.config/ai-sandbox/allow", home) < 0)
                        return NULL;
        }
        return path;
}

int policy_allowlist(const aisb_policy *p, const project_settings *settings, allowlist *ret,
                     aisb_error **err)
{
        allowlist l = {};
        int r = 0;
        for (size_t i = 0; r >= 0 && i < p->allow.n; i++)
                r = copy_entry(&l, &p->allow.entries[i]);
        if (r < 0) {
                allowlist_done(&l);
                return aisb_error_set(err, r, "out of memory");
        }
        /* The project's file first, then the user's: the first origin of a duplicate is the
         * one reported. The project's comes from the run's snapshot of .ai-sandbox (read
         * without following links), or is read the same way here. It may name domains
         * only: whoever wrote the repository (or the agent, for the next run) wrote it, and an
         * address becomes a direct rule that nothing checks, where a name still meets the gate. */
        if (p->project) {
                project_settings own = {};
                if (!settings) {
                        r = project_settings_read(p->project, false, &own, err);
                        settings = &own;
                }
                const project_file *f = r >= 0 ? project_settings_find(settings, "allow") : NULL;
                _cleanup_free_ char *origin = NULL;
                if (f && asprintf(&origin, "%s/" PROJECT_SETTINGS_DIR "/allow", p->project) < 0)
                        r = aisb_error_set(err, -ENOMEM, "out of memory");
                else if (f && memchr(f->data, 0, f->size))
                        r = aisb_error_set(err, -EINVAL, "%s: a NUL byte: not a text file", origin);
                else if (f)
                        r = allowlist_parse_text(&l, f->data, f->size, origin,
                                                 ALLOWLIST_FILE_DOMAINS_ONLY, err);
                project_settings_done(&own);
        }
        _cleanup_free_ char *user = user_allowlist_path(p);
        if (r >= 0 && user)
                r = allowlist_load_file(&l, user, ALLOWLIST_FILE_OPTIONAL, err);
        /* After the merge: the flag may come after the entries it concerns. */
        if (r >= 0)
                r = allowlist_check_host_ranges(&l, p->insecure_allow_host_ranges, err);
        if (r >= 0 && allowlist_count_addresses(&l) > 0 && !p->insecure_allow_host_ranges) {
                _cleanup_strv_free_ char **own = NULL;
                if (host_own_addresses(&own) < 0)
                        r = aisb_error_set(err, -ENOMEM, "out of memory");
                else
                        r = allowlist_check_host_addresses(&l, (const char *const *) own, false, err);
        }
        if (r < 0) {
                allowlist_done(&l);
                return r;
        }
        *ret = l;
        return 0;
}

int host_own_addresses(char ***ret)
{
        struct ifaddrs *list = NULL;
        if (getifaddrs(&list) < 0)
                return -errno;
        _cleanup_strv_free_ char **addresses = NULL;
        int r = 0;
        for (struct ifaddrs *i = list; i && r >= 0; i = i->ifa_next) {
                if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6))
                        continue;
                char text[INET6_ADDRSTRLEN];
                const void *addr = i->ifa_addr->sa_family == AF_INET
                                           ? (const void *) &((struct sockaddr_in *) i->ifa_addr)->sin_addr
                                           : (const void *) &((struct sockaddr_in6 *) i->ifa_addr)->sin6_addr;
                if (inet_ntop(i->ifa_addr->sa_family, addr, text, sizeof text))
                        r = strv_push(&addresses, text);
        }
        freeifaddrs(list);
        if (r < 0)
                return r;
        *ret = steal_pointer(&addresses);
        return 0;
}

static int push_allow(char ***args, const char *dest)
{
        int r = strv_push(args, "--allow");
        return r < 0 ? r : strv_push(args, dest);
}

static int push_address_entries(sandbox_network *n)
{
        for (size_t i = 0; i < n->list.n; i++) {
                if (n->list.entries[i].kind != ALLOW_ADDRESS)
                        continue;
                _cleanup_free_ char *arg = NULL;
                int r = allowlist_entrypoint_arg(&n->list.entries[i], &arg);
                if (r < 0 || (r = push_allow(&n->entrypoint_args, arg)) < 0)
                        return r;
        }
        return 0;
}

static int set_proxy_env(sandbox_network *n, const char *host, unsigned port)
{
        _cleanup_free_ char *url = NULL;
        if (asprintf(&url, "http://%s:%u", host, port) < 0)
                return -ENOMEM;
        static const char *const names[] = { "HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
                                             "https_proxy" };
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                _cleanup_free_ char *kv = NULL;
                if (asprintf(&kv, "%s=%s", names[i], url) < 0 || strv_push(&n->env, kv) < 0)
                        return -ENOMEM;
        }
        /* Node ignores the proxy variables unless told (pi, codex and claude run on it), and
         * then warns on every start that the agent doing it is experimental: the command's
         * output stays the command's. A NODE_OPTIONS of the user's (--env) replaces this. */
        if (strv_push(&n->env, "NODE_USE_ENV_PROXY=1") < 0 ||
            strv_push(&n->env, "NODE_OPTIONS=--disable-warning=UNDICI-EHPA") < 0)
                return -ENOMEM;
        /* Pinned addresses are reached directly, not through the proxy. */
        buffer no_proxy = {};
        int r = buffer_printf(&no_proxy, "localhost,127.0.0.1,::1");
        for (size_t i = 0; r >= 0 && i < n->list.n; i++)
                if (n->list.entries[i].kind == ALLOW_ADDRESS)
                        r = buffer_printf(&no_proxy, ",%s", n->list.entries[i].host);
        _cleanup_free_ char *a = NULL, *b = NULL;
        if (r < 0 || asprintf(&a, "NO_PROXY=%s", no_proxy.data) < 0 ||
            asprintf(&b, "no_proxy=%s", no_proxy.data) < 0 || strv_push(&n->env, a) < 0 ||
            strv_push(&n->env, b) < 0) {
                buffer_free(&no_proxy);
                return -ENOMEM;
        }
        buffer_free(&no_proxy);
        return 0;
}

/* Whether ip (text) is one of this host's own addresses. */
static bool host_own_address(const char *ip)
{
        _cleanup_strv_free_ char **own = NULL;
        if (host_own_addresses(&own) < 0)
                return false;
        for (size_t i = 0; own && own[i]; i++)
                if (streq(own[i], ip))
                        return true;
        return false;
}

/* --no-gate: each name resolved here, now, and pinned as address rules. A name is no way
 * around the host ranges an address entry may not cover: whoever owns a name (the project's
 * file names some) chooses what it resolves to. */
static int pin_domains(sandbox_network *n, bool insecure_allow_host_ranges, aisb_error **err)
{
        for (size_t i = 0; i < n->list.n; i++) {
                const allow_entry *e = &n->list.entries[i];
                if (e->kind != ALLOW_DOMAIN)
                        continue;
                struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_family = AF_UNSPEC };
                struct addrinfo *res = NULL;
                int g = getaddrinfo(e->host, NULL, &hints, &res);
                if (g != 0)
                        return aisb_error_set(err, -EHOSTUNREACH, "--no-gate: cannot resolve %s (%s): %s",
                                              e->host, e->origin, gai_strerror(g));
                for (struct addrinfo *a = res; a; a = a->ai_next) {
                        char ip[INET6_ADDRSTRLEN];
                        const void *addr = a->ai_family == AF_INET
                                                   ? (const void *) &((struct sockaddr_in *) a->ai_addr)->sin_addr
                                                   : (const void *) &((struct sockaddr_in6 *) a->ai_addr)->sin6_addr;
                        if (!inet_ntop(a->ai_family, addr, ip, sizeof ip))
                                continue;
                        uint8_t bytes[16] = {};
                        memcpy(bytes, addr, a->ai_family == AF_INET ? 4 : 16);
                        const char *what = allowlist_host_range(a->ai_family, bytes,
                                                                a->ai_family == AF_INET ? 32 : 128);
                        if (what && !insecure_allow_host_ranges) {
                                freeaddrinfo(res);
                                return aisb_error_set(err, -EINVAL,
                                                      "--no-gate: %s (%s) resolves to %s, which reaches the "
                                                      "host itself (%s): refused unless "
                                                      "--insecure-allow-host-ranges",
                                                      e->host, e->origin, ip, what);
                        }
                        /* As the gate does: whoever controls a name's DNS chooses where it
                         * points, so a name reaches only public addresses. The user's own
                         * networks are named by address (--allow, or the user's file). */
                        const char *local = allowlist_local_range(a->ai_family, bytes);
                        if (!local && host_own_address(ip))
                                local = "one of this host's own addresses";
                        if (local && !insecure_allow_host_ranges) {
                                freeaddrinfo(res);
                                return aisb_error_set(err, -EINVAL,
                                                      "--no-gate: %s (%s) resolves to %s (%s), where a name's owner "
                                                      "could point it at your own networks: give the address itself "
                                                      "with --allow, or use the gate",
                                                      e->host, e->origin, ip, local);
                        }
                        const unsigned ports[] = { e->port ? e->port : 80, e->port ? 0 : 443 };
                        for (size_t k = 0; k < ELEMENTSOF(ports); k++) {
                                if (!ports[k])
                                        continue;
                                _cleanup_free_ char *dest = NULL;
                                int r = asprintf(&dest, a->ai_family == AF_INET6 ? "[%s]:%u" : "%s:%u",
                                                 ip, ports[k]);
                                if (r < 0) {
                                        freeaddrinfo(res);
                                        return aisb_error_set(err, -ENOMEM, "out of memory");
                                }
                                /* getaddrinfo repeats addresses per protocol: once is enough. */
                                bool seen = false;
                                for (size_t j = 0; n->entrypoint_args && n->entrypoint_args[j]; j++)
                                        seen |= streq(n->entrypoint_args[j], dest);
                                if (!seen && push_allow(&n->entrypoint_args, dest) < 0) {
                                        freeaddrinfo(res);
                                        return aisb_error_set(err, -ENOMEM, "out of memory");
                                }
                        }
                }
                freeaddrinfo(res);
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

const network_backend *network_backend_for(const aisb_ctx *ctx, const aisb_policy *p)
{
        network_backend_id id = p->network_backend;
        if (id == NETWORK_BACKEND_AUTO)
                id = ctx && ctx->connected && ctx->version_major >= 5 ? NETWORK_BACKEND_PASTA
                                                                       : NETWORK_BACKEND_SLIRP4NETNS;
        return &backends[id == NETWORK_BACKEND_PASTA ? 1 : 0];
}


/* --proxy HOST:PORT, with a host address translated to the sandbox's view of it. */
static int resolve_proxy(const char *spec, const network_backend *backend, char **ret_host,
                         unsigned *ret_port, bool *ret_loopback, aisb_error **err)
{
        const char *colon = strrchr(spec, ':');
        unsigned long long port;
        if (!colon || colon == spec || parse_uint(colon + 1, 65535, &port) < 0 || port == 0)
                return aisb_error_set(err, -EINVAL, "proxy: '%s' is not HOST:PORT", spec);
        _cleanup_free_ char *host = strndup(spec, (size_t) (colon - spec));
        if (!host)
                return aisb_error_set(err, -ENOMEM, "out of memory");
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
        *ret_host = strdup(loopback ? SANDBOX_HOST_LOOPBACK
                           : backend->host_address && host_own_address(ip) ? backend->host_address
                                                                          : ip);
        *ret_port = (unsigned) port;
        *ret_loopback = loopback;
        return *ret_host ? 0 : aisb_error_set(err, -ENOMEM, "out of memory");
}

int sandbox_network_resolve(aisb_ctx *ctx, const aisb_policy *p, const project_settings *settings,
                            sandbox_network *ret, aisb_error **err)
{
        sandbox_network n = { .nsmode = "none" };
        int r = 0;
        if (p->net == SANDBOX_NET_NONE) {
                r = strv_push(&n.entrypoint_args, "--net");
                r = r < 0 ? r : strv_push(&n.entrypoint_args, "none");
                goto done;
        }
        n.backend = network_backend_for(ctx, p);
        n.nsmode = n.backend->name;
        if (p->net == SANDBOX_NET_FULL) {
                if (ctx)
                        aisb_log(ctx, AISB_LOG_WARNING, "--net full: the sandbox's network is not restricted");
                r = strv_push(&n.entrypoint_args, "--net");
                r = r < 0 ? r : strv_push(&n.entrypoint_args, "full");
                goto done;
        }

        r = policy_allowlist(p, settings, &n.list, err);
        if (r < 0)
                goto fail;
        r = strv_push(&n.entrypoint_args, "--net");
        r = r < 0 ? r : strv_push(&n.entrypoint_args, "allow");
        if (r < 0)
                goto done;

        if (p->proxy) {
                _cleanup_free_ char *host = NULL;
                unsigned port = 0;
                r = resolve_proxy(p->proxy, n.backend, &host, &port, &n.host_loopback, err);
                if (r < 0)
                        goto fail;
                _cleanup_free_ char *dest = NULL;
                if (asprintf(&dest, "%s:%u", host, port) < 0 || push_allow(&n.entrypoint_args, dest) < 0 ||
                    push_address_entries(&n) < 0 || set_proxy_env(&n, host, port) < 0)
                        r = -ENOMEM;
                goto done;
        }
        if (n.list.n == 0) {
                r = aisb_error_set(err, -EINVAL,
                                   "--net allow with an empty allowlist reaches nothing: add --allow DOMAIN "
                                   "(or ~/.config/ai-sandbox/allow), or choose --net none");
                goto fail;
        }
        if (p->no_gate) {
                r = pin_domains(&n, p->insecure_allow_host_ranges, err);
                if (r < 0)
                        goto fail;
                r = push_address_entries(&n);
                r = r < 0 ? r : strv_push(&n.entrypoint_args, "--allow-dns");
                goto done;
        }
        if (allowlist_count_domains(&n.list) > 0) {
                unsigned port = PLACEHOLDER_GATE_PORT;
                if (ctx) {
                        r = gate_ensure(ctx, p, &n.list, &n.gate, err);
                        if (r < 0) {
                                aisb_error_wrap(err, r, "the gate");
                                goto fail;
                        }
                        port = n.gate.port;
                }
                n.host_loopback = true;
                _cleanup_free_ char *dest = NULL;
                if (asprintf(&dest, SANDBOX_HOST_LOOPBACK ":%u", port) < 0 ||
                    push_allow(&n.entrypoint_args, dest) < 0 ||
                    set_proxy_env(&n, SANDBOX_HOST_LOOPBACK, port) < 0) {
                        r = -ENOMEM;
                        goto done;
                }
        }
        r = push_address_entries(&n);
done:
        if (r < 0) {
                r = aisb_error_set(err, r, "out of memory");
                goto fail;
        }
        *ret = n;
        return 0;
fail:
        sandbox_network_done(&n);
        return r;
}
