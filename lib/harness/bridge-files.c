/* SPDX-License-Identifier: MIT */
/*
 * The bridge's file access (harness-backend.h says how): the host's files read, the
 * sandbox's home written, without ever following what the agent planted there.
 */
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "harness-backend.h"
#include "fileio.h"
#include "settings-merge.h"
#include "toml-json.h"

/* dirfd/name's text, at most SETTINGS_JSON_MAX bytes (follow: a link there is followed), as
 * origin in messages. 0 with *ret NULL when absent. Never waits: a FIFO or anything but a
 * regular file planted there is refused at once, not opened for a writer that never comes. */
static int read_text(int dirfd, const char *name, const char *origin, bool follow, char **ret, size_t *ret_size,
                     aisb_error **err)
{
        *ret = NULL;
        *ret_size = 0;
        _cleanup_close_ int fd = openat(dirfd, name,
                                        O_RDONLY | (follow ? 0 : O_NOFOLLOW) | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                if (errno == ENOENT)
                        return 0;
                if (errno == EACCES)
                        return aisb_error_set(err, -EACCES, "cannot read %s: permission denied (chmod u+r %s)",
                                              origin, origin);
                if (errno == ELOOP)
                        return aisb_error_set(err, -EINVAL, "%s is a symlink, which is not followed", origin);
                return aisb_error_set(err, -errno, "cannot open %s: %s", origin, strerror(errno));
        }
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return aisb_error_set(err, -EINVAL, "%s is not a regular file", origin);
        if (st.st_size > (off_t) SETTINGS_JSON_MAX)
                return aisb_error_set(err, -EFBIG, "%s is larger than %u bytes", origin, SETTINGS_JSON_MAX);
        int r = read_full_fd(fd, SETTINGS_JSON_MAX, ret, ret_size);
        if (r < 0)
                return aisb_error_set(err, r, "cannot read %s: %s", origin, strerror(-r));
        return 0;
}

static int json_format(json_object *o, char **ret_text, aisb_error **err)
{
        const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
                                                                JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!text || asprintf(ret_text, "%s\n", text) < 0)
                return error_oom(err);
        return 0;
}

const config_syntax bridge_json = { settings_parse_json, json_format },
                    bridge_toml = { toml_parse_json, toml_format_json };

int bridge_read_config(int dirfd, const char *name, const char *origin, bool follow, const config_syntax *syntax,
                       json_object **ret, aisb_error **err)
{
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        *ret = NULL;
        int r = read_text(dirfd, name, origin, follow, &text, &size, err);
        if (r < 0 || !text)
                return r;
        return syntax->parse(text, size, origin, ret, err);
}

int bridge_read_json(int dirfd, const char *name, const char *origin, json_object **ret, aisb_error **err)
{
        return bridge_read_config(dirfd, name, origin, true, &bridge_json, ret, err);
}

/* name + "." + tag + 16 random hex digits: a name nobody can have made ready beforehand. */
static char *random_name(const char *name, const char *tag)
{
        uint8_t bytes[8];
        if (getrandom(bytes, sizeof bytes, 0) != sizeof bytes)
                return NULL;
        char *ret = NULL;
        if (asprintf(&ret, "%s.%s%02x%02x%02x%02x%02x%02x%02x%02x", name, tag, bytes[0], bytes[1], bytes[2], bytes[3],
                     bytes[4], bytes[5], bytes[6], bytes[7]) < 0)
                return NULL;
        return ret;
}

/* What the agent left where the bridge writes (a directory where a file goes, a file or a
 * link where a directory goes): its content is kept. */
int bridge_move_aside(aisb_ctx *ctx, int dirfd, const char *name, const char *shown)
{
        _cleanup_free_ char *aside = random_name(name, "aisb-moved-");
        if (!aside)
                return -ENOMEM;
        if (renameat(dirfd, name, dirfd, aside) < 0)
                return -errno;
        aisb_log(ctx, AISB_LOG_WARNING, "%s in the sandbox's home was not what aisb writes there: moved to %s", shown,
                 aside);
        return 0;
}

int bridge_write_text(aisb_ctx *ctx, int dirfd, const char *name, const char *text, aisb_error **err)
{
        _cleanup_free_ char *tmp = NULL;
        _cleanup_close_ int fd = -1;
        for (int attempt = 0; fd < 0 && attempt < 8; attempt++) {
                free(tmp);
                tmp = random_name(name, "aisb-new-");
                if (!tmp)
                        return error_oom(err);
                fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY,
                            0600);
                if (fd < 0 && errno != EEXIST)
                        break;
        }
        if (fd < 0)
                return aisb_error_set(err, -errno, "cannot write %s: %s", name, strerror(errno));
        int r = write_all(fd, text, strlen(text));
        if (r >= 0 && renameat(dirfd, tmp, dirfd, name) < 0) {
                r = -errno;
                if ((r == -EISDIR || r == -ENOTEMPTY || r == -EEXIST) && bridge_move_aside(ctx, dirfd, name, name) >= 0)
                        r = renameat(dirfd, tmp, dirfd, name) < 0 ? -errno : 0;
        }
        if (r < 0) {
                (void) unlinkat(dirfd, tmp, 0);
                return aisb_error_set(err, r, "cannot write %s: %s", name, strerror(-r));
        }
        return 0;
}

/* dirfd/name, a directory of ours made usable: opened with O_NOFOLLOW, made if absent, moved
 * aside first if it is anything else (a file, a link), and given u+rwx if the agent took
 * them away (it is the user's own, as the whole home is). A negative errno otherwise. */
static int open_sandbox_dir(aisb_ctx *ctx, int dirfd, const char *name, const char *shown)
{
        for (int attempt = 0; attempt < 3; attempt++) {
                if (mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
                        return -errno;
                int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
                if (fd < 0 && (errno == ENOTDIR || errno == ELOOP)) {
                        int r = bridge_move_aside(ctx, dirfd, name, shown);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (fd < 0 && errno == EACCES) {
                        /* No read permission: through an O_PATH descriptor, which needs none. */
                        _cleanup_close_ int path = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        struct stat st;
                        if (path < 0 || fstat(path, &st) < 0 || st.st_uid != geteuid() ||
                            fd_chmod(path, (st.st_mode & 07777) | 0700) < 0)
                                return -EACCES;
                        continue;
                }
                if (fd < 0)
                        return -errno;
                struct stat st;
                if (fstat(fd, &st) == 0 && (st.st_mode & 0700) != 0700 && st.st_uid == geteuid())
                        (void) fchmod(fd, (st.st_mode & 07777) | 0700);
                return fd;
        }
        return -ELOOP;
}

int bridge_open_home_dir(aisb_ctx *ctx, int root, const char *path)
{
        _cleanup_free_ char *copy = strdup(path), *shown = NULL;
        if (!copy)
                return -ENOMEM;
        int fd = fcntl(root, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return -errno;
        char *save = NULL;
        for (char *c = strtok_r(copy, "/", &save); fd >= 0 && c; c = strtok_r(NULL, "/", &save)) {
                char *longer = NULL;
                if (asprintf(&longer, "%s/%s", shown ? shown : "~", c) < 0) {
                        close(fd);
                        return -ENOMEM;
                }
                free(shown);
                shown = longer;
                int next = open_sandbox_dir(ctx, fd, c, shown);
                close(fd);
                fd = next;
        }
        return fd;
}

int bridge_write_config(aisb_ctx *ctx, int dirfd, const char *name, const config_syntax *syntax, json_object *o,
                        aisb_error **err)
{
        _cleanup_free_ char *text = NULL;
        int r = syntax->format(o, &text, err);
        return r < 0 ? r : bridge_write_text(ctx, dirfd, name, text, err);
}

/* When the host has none, the home's reset has moved the sandbox's aside: it would be the
 * agent's instructions to every later run (bridged_absent). */
int bridge_copy_from_host(aisb_ctx *ctx, int host_dir, const char *host_path, const char *name, int sandbox_dir,
                          aisb_error **err)
{
        _cleanup_free_ char *origin = NULL, *text = NULL;
        size_t size = 0;
        if (asprintf(&origin, "%s/%s", host_path, name) < 0)
                return error_oom(err);
        int r = host_dir < 0 ? 0 : read_text(host_dir, name, origin, true, &text, &size, err);
        if (r < 0 || !text)
                return r; /* none: the home's reset moved the sandbox's aside */
        if (memchr(text, '\0', size))
                return aisb_error_set(err, -EINVAL, "%s holds a NUL byte: not a text file", origin);
        return bridge_write_text(ctx, sandbox_dir, name, text, err);
}
