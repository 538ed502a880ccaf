/* SPDX-License-Identifier: MIT */
/*
 * The host paths a sandbox sees besides its image: the project (at /project), --mount's
 * bind mounts and --device's nodes. Each is resolved when it is named, refusing what the
 * agent could have chosen: a link it planted in the project, or a mount source inside the
 * project, which it could swap for a link before podman mounts it.
 */
#include <ctype.h>
#include <sys/stat.h>

#include "policy-keys.h"

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

int policy_set_project(aisb_policy *p, char *abs, bool is_cwd, aisb_error **err)
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
        return policy_derive_home_volume(p) < 0 ? error_oom(err) : 0;
}

/* Resolve a --mount source the way the kernel would, refusing a symbolic link inside the
 * project (its target is the agent's pick) and any source inside the project (it is at
 * /project already, and the sandbox could swap it for a link before podman mounts it). */
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

int policy_add_mount(aisb_policy *p, const char *spec, aisb_error **err)
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
int policy_add_device(aisb_policy *p, const char *spec, aisb_error **err)
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
