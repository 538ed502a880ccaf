/* SPDX-License-Identifier: MIT */
/*
 * A credential the gate holds for a run (gate-squid.h): "--secret NAME@HOST..." read into
 * the hosts, the header and the value squid's configuration puts into requests there.
 */
#include <sys/random.h>

#include "gate-squid.h"

/* The header each well-known API expects its key in. */
static const struct {
        const char *host, *header, *scheme;
} secret_headers[] = {
        { "api.anthropic.com", "x-api-key", NULL },
        { "api.openai.com", "Authorization", "Bearer" },
        { "generativelanguage.googleapis.com", "x-goog-api-key", NULL },
        { "api.mistral.ai", "Authorization", "Bearer" },
        { "openrouter.ai", "Authorization", "Bearer" },
        { "api.github.com", "Authorization", "Bearer" },
};

int gate_random_hex(size_t n_bytes, char **ret)
{
        uint8_t random[32];
        if (n_bytes > sizeof random)
                return -EINVAL;
        if (getrandom(random, n_bytes, 0) != (ssize_t) n_bytes)
                return errno ? -errno : -EIO;
        char *hex = malloc(2 * n_bytes + 1);
        for (size_t i = 0; hex && i < n_bytes; i++)
                snprintf(hex + 2 * i, 3, "%02x", random[i]);
        explicit_bzero(random, sizeof random);
        *ret = hex;
        return hex ? 0 : -ENOMEM;
}

void gate_secret_done(gate_secret *s)
{
        free(s->name);
        strv_free(s->hosts);
        free(s->header);
        free(s->scheme);
        free_secret(s->value);
        free(s->placeholder);
        *s = (gate_secret) {};
}

#define WHY(...) (snprintf(why, whylen, __VA_ARGS__), -EINVAL)

int gate_secret_parse(const char *spec, const char *value, gate_secret *ret, char *why, size_t whylen)
{
        _cleanup_(gate_secret_done) gate_secret g = {};
        _cleanup_free_ char *copy = strdup(spec);
        if (!copy)
                return -ENOMEM;
        char *at = strchr(copy, '@');
        if (!at || at == copy)
                return WHY("expected NAME@HOST[,HOST...][/HEADER[:SCHEME]]");
        *at = 0;
        char *hosts = at + 1, *header = strchr(hosts, '/');
        if (header)
                *header++ = 0;
        g.name = strdup(copy);
        if (!g.name)
                return -ENOMEM;
        if (!*hosts)
                return WHY("no host after '@'");
        char *save = NULL;
        for (char *h = strtok_r(hosts, ",", &save); h; h = strtok_r(NULL, ",", &save)) {
                allowlist probe = {};
                aisb_error *e = NULL;
                int r = allowlist_add(&probe, h, "--secret", &e);
                bool domain = r >= 0 && probe.entries[0].kind == ALLOW_DOMAIN && probe.entries[0].port == 0 &&
                              h[0] != '*';
                _cleanup_free_ char *canonical = domain ? strdup(probe.entries[0].host) : NULL;
                allowlist_done(&probe);
                if (!domain) {
                        r = WHY("'%.64s' is no host name: %s", h, e ? aisb_error_message(e) : "a name, without port or '*.'");
                        aisb_error_free(e);
                        return r;
                }
                if (!canonical || strv_push(&g.hosts, canonical) < 0)
                        return -ENOMEM;
        }
        if (!g.hosts)
                return WHY("no host after '@'");
        const char *scheme = NULL;
        if (header) {
                char *colon = strchr(header, ':');
                if (colon) {
                        *colon = 0;
                        scheme = colon + 1;
                }
                if (!*header || strspn(header, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") !=
                                        strlen(header) || strlen(header) > 64)
                        return WHY("'%.64s' is no header name (letters, digits and -)", header);
                /* Headers that say where a request goes or how it is framed are not credentials. */
                static const char *const framing[] = { "Host", "Proxy-Authorization", "Proxy-Connection",
                                                       "Connection", "Content-Length", "Transfer-Encoding",
                                                       "Upgrade", "TE", "Trailer", "Keep-Alive", "Expect" };
                for (size_t i = 0; i < ELEMENTSOF(framing); i++)
                        if (strcasecmp(header, framing[i]) == 0)
                                return WHY("%s is no header for a credential", framing[i]);
                if (scheme && (!*scheme || strspn(scheme, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") !=
                                                   strlen(scheme) || strlen(scheme) > 32))
                        return WHY("'%.32s' is no scheme (letters only, e.g. Bearer)", scheme);
        } else {
                header = (char *) "Authorization";
                scheme = "Bearer";
                for (size_t i = 0; i < ELEMENTSOF(secret_headers); i++)
                        if (streq(g.hosts[0], secret_headers[i].host)) {
                                header = (char *) secret_headers[i].header;
                                scheme = secret_headers[i].scheme;
                        }
        }
        /* The value goes inside a quoted squid.conf token that squid also reads for its own
         * %-codes: only what needs neither quoting nor escaping. */
        size_t n = value ? strlen(value) : 0;
        if (n == 0)
                return WHY("%s is empty", g.name);
        if (n > 4096)
                return WHY("%s is longer than 4096 characters", g.name);
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) value[i] <= 0x20 || (unsigned char) value[i] >= 0x7f || strchr("\"'%\\", value[i]))
                        return WHY("%s holds a character the gate cannot put in a header as it is (a blank, "
                                   "a quote, %%, \\ or a control or non-ASCII one)",
                                   g.name);
        _cleanup_free_ char *hex = NULL;
        int r = gate_random_hex(16, &hex);
        if (r < 0)
                return r == -ENOMEM ? r : WHY("no random bytes for the placeholder: %s", strerror(-r));
        g.header = strdup(header);
        g.scheme = scheme ? strdup(scheme) : NULL;
        g.value = strdup(value);
        if (asprintf(&g.placeholder, "aisb-secret-%s", hex) < 0)
                g.placeholder = NULL;
        if (!g.header || (scheme && !g.scheme) || !g.value || !g.placeholder)
                return -ENOMEM;
        *ret = g;
        g = (gate_secret) {};
        return 0;
}
