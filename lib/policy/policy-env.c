/* SPDX-License-Identifier: MIT */
/*
 * What the sandbox's environment gets: variables named with --env (a bare NAME read from the
 * caller's environment), NAME=VALUE lines of an --env-file (the user's own, mode 0600),
 * --secret credentials that only the run's gate holds, and the few variables every sandbox
 * inherits. A name goes one way only: a secret's value never sits in the sandbox's
 * environment.
 */
#include <ctype.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "fileio.h"
#include "policy-keys.h"

int env_name_valid(const char *name)
{
        if (!name || !(isalpha((unsigned char) name[0]) || name[0] == '_'))
                return 0;
        for (const char *p = name; *p; p++)
                if (!(isalnum((unsigned char) *p) || *p == '_'))
                        return 0;
        return strlen(name) <= 255;
}

void env_entries_free(env_entry *e, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(e[i].name);
                free_secret(e[i].value);
        }
        free(e);
}

/* Whether an --env (or, with secret, a --secret) uses name. */
static bool name_used(const aisb_policy *p, const char *name, bool secret)
{
        for (size_t i = 0; i < (secret ? p->n_secrets : p->n_env); i++)
                if (streq(secret ? p->secrets[i].name : p->env[i].name, name))
                        return true;
        return false;
}

/* Add or replace NAME; takes ownership of value. */
static int env_put(env_entry **entries, size_t *n, const char *name, char *value)
{
        for (size_t i = 0; i < *n; i++)
                if (streq((*entries)[i].name, name)) {
                        free_secret((*entries)[i].value);
                        (*entries)[i].value = value;
                        return 0;
                }
        char *copy = strdup(name);
        env_entry *r = copy ? realloc(*entries, (*n + 1) * sizeof **entries) : NULL;
        if (!r) {
                free(copy);
                free_secret(value);
                return -ENOMEM;
        }
        r[*n] = (env_entry) { .name = copy, .value = value };
        *entries = r;
        (*n)++;
        return 0;
}

/* NAME=value (a copy) added or replaced; -ENOMEM. */
static int env_set(aisb_policy *p, const char *name, const char *value)
{
        char *copy = strdup(value);
        return copy ? env_put(&p->env, &p->n_env, name, copy) : -ENOMEM;
}

int policy_env_file_parse(const char *text, size_t size, const char *origin,
                          env_entry **entries, size_t *n, aisb_error **err)
{
        unsigned line_no = 0;
        const char *end = text + size;
        for (const char *line = text; line < end;) {
                const char *nl = memchr(line, '\n', (size_t) (end - line));
                const char *line_end = nl ? nl : end;
                line_no++;
                const char *p = line;
                while (p < line_end && (*p == ' ' || *p == '\t'))
                        p++;
                size_t len = (size_t) (line_end - p);
                if (len > 0 && p[len - 1] == '\r')
                        len--;
                if (len > 0 && p[0] != '#') {
                        if (memchr(p, 0, len))
                                return aisb_error_set(err, -EINVAL, "%s:%u: NUL byte in line", origin, line_no);
                        const char *eq = memchr(p, '=', len);
                        if (!eq)
                                return aisb_error_set(err, -EINVAL,
                                                      "%s:%u: expected NAME=VALUE", origin,
                                                      line_no);
                        _cleanup_free_ char *name = strndup(p, (size_t) (eq - p));
                        if (!name)
                                return -ENOMEM;
                        if (!env_name_valid(name))
                                return aisb_error_set(err, -EINVAL,
                                                      "%s:%u: invalid variable name (use letters, digits and _)",
                                                      origin, line_no);
                        char *value = strndup(eq + 1, len - (size_t) (eq + 1 - p));
                        if (!value || env_put(entries, n, name, value) < 0)
                                return error_oom(err);
                }
                line = nl ? nl + 1 : end;
        }
        return 0;
}

int policy_add_env(aisb_policy *p, const char *spec, aisb_error **err)
{
        const char *eq = strchr(spec, '=');
        _cleanup_free_ char *name = eq ? strndup(spec, (size_t) (eq - spec)) : strdup(spec);
        if (!name)
                return -ENOMEM;
        if (!env_name_valid(name))
                return aisb_error_set(err, -EINVAL,
                                      "env: '%s' is not a variable name (use NAME or NAME=VALUE)",
                                      name);
        if (name_used(p, name, true))
                return aisb_error_set(err, -EINVAL,
                                      "env: %s is a --secret: the sandbox holds a placeholder for it, never its "
                                      "value; pass it one way",
                                      name);
        const char *value = eq ? eq + 1 : getenv(name);
        if (!value)
                return aisb_error_set(err, -ENOENT,
                                      "env: %s is not set in this environment; export it or pass --env %s=VALUE",
                                      name, name);
        return env_set(p, name, value) < 0 ? error_oom(err) : 0;
}

int policy_add_env_file(aisb_policy *p, const char *path, aisb_error **err)
{
        /* Often a file in the project (.env), which the agent writes: never through a link it
         * put there (another of the user's 0600 files), never blocked on a FIFO. */
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
        if (fd < 0 && errno == ELOOP)
                return aisb_error_set(err, -ELOOP, "env-file: %s is a symbolic link: name the file itself", path);
        if (fd < 0)
                return aisb_error_set(err, -errno, "env-file: cannot open %s: %s", path, strerror(errno));
        struct stat st;
        if (fstat(fd, &st) < 0)
                return aisb_error_set(err, -errno, "env-file: %s: %s", path, strerror(errno));
        if (!S_ISREG(st.st_mode))
                return aisb_error_set(err, -EINVAL, "env-file: %s is not a regular file", path);
        if (st.st_uid != geteuid() || (st.st_mode & 07777) != 0600)
                return aisb_error_set(err, -EPERM,
                                      "env-file: %s must be owned by you and mode 0600 (chmod 600 %s)",
                                      path, path);
        char *text = NULL;
        size_t size;
        int r = read_full_fd(fd, AISB_ENV_FILE_MAX, &text, &size);
        if (r < 0)
                return aisb_error_set(err, r, "env-file: cannot read %s: %s", path, strerror(-r));
        env_entry *parsed = NULL;
        size_t n = 0;
        r = policy_env_file_parse(text, size, path, &parsed, &n, err);
        explicit_bzero(text, size);
        free(text);
        for (size_t i = 0; r >= 0 && i < n; i++)
                if (env_put(&p->env, &p->n_env, parsed[i].name, steal_pointer(&parsed[i].value)) < 0)
                        r = error_oom(err);
        env_entries_free(parsed, n);
        return r < 0 ? r : strv_push(&p->env_files, path);
}

/* --secret NAME@HOST...: NAME's value is read here, from the caller's environment, as a bare
 * --env NAME is; it goes to the run's gate, never into the sandbox. */
int policy_add_secret_named(aisb_policy *p, const char *value, aisb_error **err)
{
        size_t n = strcspn(value, "@");
        _cleanup_free_ char *name = strndup(value, n);
        if (!name)
                return -ENOMEM;
        if (!env_name_valid(name))
                return aisb_error_set(err, -EINVAL, "secret: '%s' is not NAME@HOST[,HOST...][/HEADER[:SCHEME]]", value);
        if (name_used(p, name, false))
                return aisb_error_set(err, -EINVAL,
                                      "secret: %s is passed with --env too: the sandbox would hold its value; "
                                      "pass it one way", name);
        if (name_used(p, name, true))
                return aisb_error_set(err, -EINVAL, "secret: %s is named twice", name);
        const char *real = getenv(name);
        if (!real)
                return aisb_error_set(err, -EINVAL, "secret: %s is not set in this environment (export it)", name);
        return policy_add_secret(p, value, real, err);
}

/* The secret that fills header for host, or NULL. */
static const gate_secret *secret_filling(const aisb_policy *p, const char *host, const char *header)
{
        for (size_t i = 0; i < p->n_secrets; i++)
                for (size_t a = 0; p->secrets[i].hosts[a]; a++)
                        if (strcasecmp(p->secrets[i].hosts[a], host) == 0 && strcasecmp(p->secrets[i].header, header) == 0)
                                return &p->secrets[i];
        return NULL;
}

bool policy_secret_fills(const aisb_policy *p, const char *host, const char *header)
{
        return secret_filling(p, host, header) != NULL;
}

int policy_add_secret(aisb_policy *p, const char *spec, const char *value, aisb_error **err)
{
        gate_secret g = {};
        char why[256];
        int r = gate_secret_parse(spec, value, &g, why, sizeof why);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return aisb_error_set(err, r, "secret: '%s': %s", spec, why);
        /* One secret per header of a host: two would both replace it. */
        for (size_t b = 0; g.hosts[b]; b++) {
                const gate_secret *other = secret_filling(p, g.hosts[b], g.header);
                if (other) {
                        r = aisb_error_set(err, -EINVAL, "secret: %s and %s both fill %s for %s", other->name, g.name,
                                           g.header, g.hosts[b]);
                        gate_secret_done(&g);
                        return r;
                }
        }
        gate_secret *grown = realloc(p->secrets, (p->n_secrets + 1) * sizeof *grown);
        if (!grown) {
                gate_secret_done(&g);
                return -ENOMEM;
        }
        p->secrets = grown;
        p->secrets[p->n_secrets++] = g;
        return 0;
}

/* The only variables a sandbox inherits without being asked. */
static const char *const inherited_env[] = { "TERM", "LANG", "LC_ALL", "LC_CTYPE", "TZ" };

bool policy_env_inherited(const char *name)
{
        for (size_t i = 0; i < ELEMENTSOF(inherited_env); i++)
                if (streq(name, inherited_env[i]))
                        return true;
        return false;
}

bool policy_env_named(const aisb_policy *p, const char *name)
{
        return name_used(p, name, false) || name_used(p, name, true);
}

int policy_env_inherit(aisb_policy *p, const aisb_policy *from)
{
        int r = 0;
        for (size_t i = 0; r >= 0 && !from && i < ELEMENTSOF(inherited_env); i++) {
                const char *value = getenv(inherited_env[i]);
                r = value ? env_set(p, inherited_env[i], value) : 0;
        }
        for (size_t i = 0; r >= 0 && from && i < from->n_env; i++)
                if (policy_env_inherited(from->env[i].name))
                        r = env_set(p, from->env[i].name, from->env[i].value);
        return r;
}
