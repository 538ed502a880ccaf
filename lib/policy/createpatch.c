/* SPDX-License-Identifier: MIT */
/* --unsafe-create-patch: loading, applying and judging a merge patch (createpatch.h). */
#include <fcntl.h>
#include <sys/stat.h>

#include "createpatch.h"
#include "jsonutil.h"
#include "fileio.h"
#include "pathtrust.h"

int create_patch_load(const char *path, const char *project, json_object **ret, aisb_error **err)
{
        _cleanup_free_ char *real = realpath(path, NULL);
        if (!real)
                return aisb_error_set(err, -errno, "unsafe-create-patch: %s: %s", path, strerror(errno));
        size_t n = project ? strlen(project) : 0;
        if (project && strncmp(real, project, n) == 0 && (real[n] == '/' || real[n] == 0))
                return aisb_error_set(err, -EPERM,
                                      "unsafe-create-patch: %s is inside the project, which the sandbox can write: "
                                      "keep the patch outside it (in ~/.config/ai-sandbox, say)",
                                      path);
        char why[256];
        if (path_check_trusted(real, geteuid(), why, sizeof why) < 0)
                return aisb_error_set(err, -EPERM, "unsafe-create-patch: %s: %s", path, why);
        _cleanup_close_ int fd = open(real, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return aisb_error_set(err, -errno, "unsafe-create-patch: %s: %s", path, strerror(errno));
        if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 0022))
                return aisb_error_set(err, -EPERM,
                                      "unsafe-create-patch: %s must be a regular file of yours that no one else can "
                                      "write (chmod go-w %s)",
                                      path, path);
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        int r = read_full_fd(fd, CREATE_PATCH_MAX, &text, &size);
        if (r < 0)
                return aisb_error_set(err, r, "unsafe-create-patch: %s: %s", path,
                                      r == -EFBIG ? "larger than 1 MiB" : strerror(-r));
        json_tokener *tok = json_tokener_new();
        if (!tok)
                return error_oom(err);
        json_object *o = json_tokener_parse_ex(tok, text, (int) size);
        enum json_tokener_error e = json_tokener_get_error(tok);
        size_t used = json_tokener_get_parse_end(tok);
        json_tokener_free(tok);
        while (o && used < size && (text[used] == ' ' || text[used] == '\n' || text[used] == '\t' || text[used] == '\r'))
                used++;
        if (!o || e != json_tokener_success || used != size || !json_object_is_type(o, json_type_object)) {
                json_object_put(o);
                return aisb_error_set(err, -EINVAL, "unsafe-create-patch: %s is not one JSON object (%s)", path,
                                      e != json_tokener_success ? json_tokener_error_desc(e) : "other JSON");
        }
        /* podman decodes the request with Go's encoding/json, which matches a key to a field
         * without regard to case (and folds U+017F to s, U+212A to k): "Entrypoint" would
         * replace the entrypoint while the warning named a field aisb does not know. Fields
         * are written as podman names them, lower case, or not at all. */
        json_object_object_foreach(o, key, value) {
                (void) value;
                if (!*key || strspn(key, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(key)) {
                        char shown[64];
                        size_t k = 0;
                        for (const char *c = key; *c && k + 5 < sizeof shown; c++)
                                k += (unsigned char) *c >= 0x20 && (unsigned char) *c < 0x7f
                                             ? (size_t) snprintf(shown + k, sizeof shown - k, "%c", *c)
                                             : (size_t) snprintf(shown + k, sizeof shown - k, "\\x%02x", (unsigned char) *c);
                        json_object_put(o);
                        return aisb_error_set(err, -EINVAL,
                                              "unsafe-create-patch: %s: field '%s': podman reads field names without "
                                              "regard to case, so write them as podman names them (lower case and _: "
                                              "entrypoint, cap_add, ...)",
                                              path, shown);
                }
        }
        *ret = o;
        return 0;
}

int create_patch_check_place(const char *path, const char *const *writable, aisb_error **err)
{
        _cleanup_free_ char *real = realpath(path, NULL);
        if (!real)
                return aisb_error_set(err, -errno, "unsafe-create-patch: %s: %s", path, strerror(errno));
        for (size_t i = 0; writable && writable[i]; i++) {
                size_t n = strlen(writable[i]);
                if (strncmp(real, writable[i], n) == 0 && (real[n] == '/' || real[n] == 0 || streq(writable[i], "/")))
                        return aisb_error_set(err, -EINVAL,
                                              "unsafe-create-patch: %s is inside %s, which the sandbox can write: "
                                              "keep the patch outside it (in ~/.config/ai-sandbox, say)",
                                              path, writable[i]);
        }
        return 0;
}

static int merge_patch(json_object *target, json_object *patch, const char *prefix, char ***changed)
{
        json_object_object_foreach(patch, key, value) {
                _cleanup_free_ char *path = NULL;
                if (asprintf(&path, "%s%s%s", prefix, *prefix ? "." : "", key) < 0)
                        return -ENOMEM;
                json_object *current = NULL;
                bool have = json_object_object_get_ex(target, key, &current);
                if (!value) {
                        if (have) {
                                json_object_object_del(target, key);
                                if (strv_push(changed, path) < 0)
                                        return -ENOMEM;
                        }
                        continue;
                }
                if (json_object_is_type(value, json_type_object)) {
                        if (!have || !json_object_is_type(current, json_type_object)) {
                                current = json_object_new_object();
                                if (!current || json_object_object_add(target, key, current) < 0)
                                        return -ENOMEM;
                        }
                        int r = merge_patch(current, value, path, changed);
                        if (r < 0)
                                return r;
                        continue;
                }
                json_object *copy = NULL;
                if (json_object_deep_copy(value, &copy, NULL) < 0 || json_object_object_add(target, key, copy) < 0) {
                        json_object_put(copy);
                        return -ENOMEM;
                }
                if (strv_push(changed, path) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int create_patch_apply(json_object *target, json_object *patch, char ***changed)
{
        return merge_patch(target, patch, "", changed);
}

static const struct {
        const char *field;
        const char *gives_up;
} fields[] = {
        /* The entrypoint is what installs the ruleset and drops every privilege. */
        { "entrypoint", "T3, T4, T5: the entrypoint's ruleset, privilege drop and seccomp" },
        { "command", "" },
        { "cap_add", "T3: no capabilities" },
        { "cap_drop", "T3: no capabilities" },
        { "privileged", "T1, T3: every device, every capability" },
        { "user", "T3: the sandbox's user" },
        { "userns", "T1, T3: the keep-id user namespace" },
        { "idmappings", "T1, T3: the user namespace" },
        { "groups", "T3: the sandbox's groups" },
        { "no_new_privileges", "T3: no-new-privileges" },
        { "seccomp_policy", "T3: seccomp" },
        { "seccomp_profile_path", "T3: seccomp" },
        { "apparmor_profile", "T3: confinement" },
        { "selinux_opts", "T3: confinement" },
        { "procfs_opts", "T3: /proc" },
        { "mask", "T3: masked kernel paths" },
        { "unmask", "T3: masked kernel paths" },
        { "pidns", "T2, T3: the PID namespace" },
        { "ipcns", "T3: the IPC namespace" },
        { "utsns", "T3: the UTS namespace" },
        { "cgroupns", "T3, T7: the cgroup namespace" },
        { "mounts", "T1: only the project mounted" },
        { "volumes", "T1: only the project mounted" },
        { "image_volumes", "T1: only the project mounted" },
        { "overlay_volumes", "T1: only the project mounted" },
        { "devices", "T1, T3: no host devices" },
        { "read_only_filesystem", "T1: the read-only root" },
        { "read_write_tmpfs", "T1: the read-only root" },
        { "netns", "T4, T6: the network ruleset's namespace" },
        { "network_options", "T4, T6: the sandbox's network" },
        { "networks", "T4, T6: the sandbox's network" },
        { "portmappings", "T4, T6: nothing reaches the sandbox from outside" },
        { "dns_server", "T4: DNS" },
        { "dns_option", "T4: DNS" },
        { "dns_search", "T4: DNS" },
        { "hostadd", "T4: names" },
        { "env", "T2: only named variables pass" },
        { "secret_env", "T2: only named variables pass" },
        { "resource_limits", "T7: resource caps" },
        { "r_limits", "T7: resource caps" },
        { "labels", "" },
        { "annotations", "" },
        { "hostname", "" },
        { "work_dir", "" },
        { "terminal", "" },
        { "stdin", "" },
        { "remove", "" },
        { "name", "" },
        { "image", "T3, T4: the image aisb built (and the entrypoint in it)" },
};

const char *create_patch_gives_up(const char *field)
{
        size_t n = strcspn(field, ".");
        for (size_t i = 0; i < ELEMENTSOF(fields); i++)
                if (strlen(fields[i].field) == n && strncmp(fields[i].field, field, n) == 0)
                        return fields[i].gives_up;
        return NULL;
}

int create_patch_warning(char *const *changed, char **ret)
{
        _cleanup_(buffer_free) buffer names = {};
        _cleanup_(buffer_free) buffer rows = {};
        int r = 0;
        for (size_t i = 0; changed && changed[i]; i++) {
                const char *field = changed[i];
                const char *gives_up = create_patch_gives_up(field);
                r |= buffer_printf(&names, "%s%s", i ? ", " : "", field);
                if (!gives_up)
                        r |= buffer_printf(&rows, "; %s is unknown to aisb (podman ignores what it does not know: "
                                                  "check it applied)", field);
                else if (*gives_up && !strstr(rows.data ? rows.data : "", gives_up))
                        r |= buffer_printf(&rows, "; gives up %s", gives_up);
        }
        if (r < 0 || !names.data)
                return r < 0 ? -ENOMEM : 0;
        char *text = NULL;
        if (asprintf(&text, "--unsafe-create-patch changes %s%s", names.data, rows.data ? rows.data : "") < 0)
                return -ENOMEM;
        *ret = text;
        return 0;
}
