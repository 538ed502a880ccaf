/* SPDX-License-Identifier: MIT */
/* The project's settings read without trusting the project, and a run's private directory
 * (project.h says why). */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "project.h"
#include "fileio.h"

void project_settings_done(project_settings *s)
{
        for (size_t i = 0; i < s->n_files; i++) {
                free(s->files[i].name);
                free(s->files[i].data);
        }
        free(s->files);
        *s = (project_settings) {};
}

const project_file *project_settings_find(const project_settings *s, const char *name)
{
        for (size_t i = 0; i < s->n_files; i++)
                if (streq(s->files[i].name, name))
                        return &s->files[i];
        return NULL;
}

/* One entry of the settings directory: 1 read, 0 not a regular file (left out). */
static int read_entry(int dir, const char *name, const char *shown, project_file *ret,
                      aisb_error **err)
{
        _cleanup_close_ int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0) {
                if (errno == ELOOP || errno == ENXIO || errno == EOPNOTSUPP)
                        return 0; /* a link, or a socket */
                return aisb_error_set(err, -errno, "%s/%s: %s", shown, name, strerror(errno));
        }
        struct stat st;
        if (fstat(fd, &st) < 0)
                return aisb_error_set(err, -errno, "%s/%s: %s", shown, name, strerror(errno));
        if (!S_ISREG(st.st_mode))
                return 0;
        if (st.st_size > PROJECT_SETTINGS_MAX_FILE)
                return aisb_error_set(err, -EFBIG, "%s/%s: larger than %d KiB, not a settings file",
                                      shown, name, PROJECT_SETTINGS_MAX_FILE / 1024);
        _cleanup_free_ char *data = NULL;
        size_t size = 0;
        int r = read_full_fd(fd, PROJECT_SETTINGS_MAX_FILE, &data, &size);
        if (r < 0)
                return aisb_error_set(err, r, "%s/%s: %s", shown, name,
                                      r == -EFBIG ? "grew past its bound while read" : strerror(-r));
        char *copy = strdup(name);
        if (!copy)
                return error_oom(err);
        *ret = (project_file) { .name = copy, .data = steal_pointer(&data), .size = size };
        return 1;
}

int project_settings_read(const char *project, bool create, project_settings *ret, aisb_error **err)
{
        *ret = (project_settings) {};
        _cleanup_free_ char *shown = NULL;
        if (asprintf(&shown, "%s/" PROJECT_SETTINGS_DIR, project) < 0)
                return error_oom(err);
        _cleanup_close_ int top = open(project, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (top < 0)
                return aisb_error_set(err, -errno, "cannot open the project %s: %s", project, strerror(errno));
        int fd = openat(top, PROJECT_SETTINGS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT && create) {
                /* Where there is none, an empty one of the user's: the run's read-only copy is
                 * mounted over it, so no sandbox can create the file for a later run. It stays:
                 * removing a directory detaches what another run mounted on it. */
                if (mkdirat(top, PROJECT_SETTINGS_DIR, 0755) < 0 && errno != EEXIST)
                        return aisb_error_set(err, -errno, "cannot create %s: %s", shown, strerror(errno));
                fd = openat(top, PROJECT_SETTINGS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        }
        if (fd < 0) {
                if (errno == ENOENT)
                        return 0;
                if (errno == ELOOP || errno == ENOTDIR)
                        return aisb_error_set(err, -EINVAL,
                                              "%s is not a directory (a symbolic link or a file): the project's "
                                              "settings are read only from a real directory; remove or replace it",
                                              shown);
                return aisb_error_set(err, -errno, "cannot open %s: %s", shown, strerror(errno));
        }
        DIR *d = fdopendir(fd);
        if (!d) {
                int r = -errno;
                close(fd);
                return aisb_error_set(err, r, "cannot read %s: %s", shown, strerror(-r));
        }
        project_settings s = { .present = true };
        int r = 0;
        size_t entries = 0;
        for (struct dirent *e; r >= 0 && (errno = 0, e = readdir(d));) {
                if (streq(e->d_name, ".") || streq(e->d_name, ".."))
                        continue;
                if (++entries > PROJECT_SETTINGS_MAX_FILES) {
                        r = aisb_error_set(err, -E2BIG, "%s holds more than %d entries: not settings",
                                           shown, PROJECT_SETTINGS_MAX_FILES);
                        break;
                }
                project_file f = {};
                r = read_entry(dirfd(d), e->d_name, shown, &f, err);
                if (r == 0 && streq(e->d_name, "allow"))
                        r = aisb_error_set(err, -EINVAL,
                                           "%s/allow must be a regular file, not a link or a special file", shown);
                if (r <= 0)
                        continue;
                project_file *grown = realloc(s.files, (s.n_files + 1) * sizeof *grown);
                if (!grown) {
                        free(f.name);
                        free(f.data);
                        r = error_oom(err);
                        break;
                }
                s.files = grown;
                s.files[s.n_files++] = f;
        }
        if (r >= 0 && errno != 0)
                r = aisb_error_set(err, -errno, "cannot read %s: %s", shown, strerror(errno));
        closedir(d);
        if (r < 0) {
                project_settings_done(&s);
                return r;
        }
        *ret = s;
        return 0;
}

/* Whether dir or a directory above it holds .ai-sandbox. */
static bool inside_aisb_project(const char *dir)
{
        _cleanup_free_ char *d = strdup(dir);
        while (d && *d) {
                _cleanup_free_ char *marker = NULL;
                struct stat st;
                if (asprintf(&marker, "%s/" PROJECT_SETTINGS_DIR, streq(d, "/") ? "" : d) < 0)
                        return false;
                if (lstat(marker, &st) == 0 && S_ISDIR(st.st_mode))
                        return true;
                char *slash = strrchr(d, '/');
                if (!slash || streq(d, "/"))
                        break;
                slash[slash == d ? 1 : 0] = 0;
        }
        return false;
}

int project_check_home(const char *project, aisb_error **err)
{
        const char *home = getenv("HOME");
        _cleanup_free_ char *real = home && home[0] == '/' ? realpath(home, NULL) : NULL;
        if (!real)
                return 0;
        size_t n = strlen(project);
        bool above = streq(project, "/") || (strncmp(real, project, n) == 0 && (real[n] == '/' || real[n] == 0));
        if (!above)
                return 0;
        return aisb_error_set(err, -EINVAL,
                              "the project would be %s, %s: everything in it (~/.ssh, ~/.config, aisb's own "
                              "configuration) would be the sandbox's to read and change; cd into a project "
                              "directory, or use --no-cwd",
                              project, streq(real, project) ? "your home" : "above your home");
}

int project_check_reached(const char *project, aisb_error **err)
{
        const char *pwd = getenv("PWD");
        if (!pwd || pwd[0] != '/' || streq(pwd, project))
                return 0;
        _cleanup_free_ char *real = realpath(pwd, NULL);
        if (!real || !streq(real, project))
                return 0; /* $PWD is not where we are: nothing to learn from it */
        _cleanup_free_ char *copy = strdup(pwd), *current = strdup("/");
        if (!copy || !current)
                return error_oom(err);
        char *save = NULL;
        for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
                _cleanup_free_ char *next = NULL;
                if (asprintf(&next, "%s%s%s", current, streq(current, "/") ? "" : "/", c) < 0)
                        return error_oom(err);
                struct stat st;
                bool link = !streq(c, "..") && !streq(c, ".") && lstat(next, &st) == 0 && S_ISLNK(st.st_mode);
                if (link && inside_aisb_project(current))
                        return aisb_error_set(err, -EINVAL,
                                              "the current directory is reached through the symbolic link %s, inside an "
                                              "aisb project whose sandboxes can write it: if %s is what you mean, cd there "
                                              "(cd -P .) and run again",
                                              next, project);
                free(current);
                current = realpath(next, NULL);
                if (!current)
                        return 0;
        }
        return 0;
}

int project_open(const char *path, bool is_cwd, aisb_error **err)
{
        if (!path)
                return aisb_error_set(err, -EINVAL, "no project: run aisb in the project's directory");
        int fd = open(is_cwd ? "." : path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return aisb_error_set(err, -errno, "%s: %s", path, strerror(errno));
        return fd;
}

/* $XDG_RUNTIME_DIR when it is a private directory of ours, else /tmp (mkdtemp's 0700 makes
 * the run directory private there too). */
static const char *run_dir_base(void)
{
        const char *runtime = getenv("XDG_RUNTIME_DIR");
        struct stat st;
        if (runtime && runtime[0] == '/' && lstat(runtime, &st) == 0 && S_ISDIR(st.st_mode) &&
            st.st_uid == geteuid() && (st.st_mode & 0077) == 0)
                return runtime;
        return "/tmp";
}

int run_dir_create(run_dir *ret, aisb_error **err)
{
        *ret = RUN_DIR_NULL;
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/aisb-run-XXXXXX", run_dir_base()) < 0)
                return error_oom(err);
        if (!mkdtemp(path))
                return aisb_error_set(err, -errno, "cannot create a directory for the run in %s: %s",
                                      run_dir_base(), strerror(errno));
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                int r = -errno;
                (void) rmdir(path);
                return aisb_error_set(err, r, "cannot open %s: %s", path, strerror(-r));
        }
        *ret = (run_dir) { .path = steal_pointer(&path), .fd = fd };
        return 0;
}

/* A new file name in dir, of mode 0644 (read inside the sandbox): 0 or a negative errno. */
static int write_new_file(int dir, const char *name, const char *data, size_t size)
{
        _cleanup_close_ int fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        return fd < 0 ? -errno : write_all(fd, data, size);
}

int run_dir_write_settings(run_dir *d, const char *sub, const project_settings *s, char **ret_path,
                           aisb_error **err)
{
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/%s", d->path, sub) < 0)
                return error_oom(err);
        if (mkdirat(d->fd, sub, 0755) < 0)
                return aisb_error_set(err, -errno, "cannot create %s: %s", path, strerror(errno));
        _cleanup_close_ int dir = openat(d->fd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir < 0)
                return aisb_error_set(err, -errno, "cannot open %s: %s", path, strerror(errno));
        for (size_t i = 0; i < s->n_files; i++) {
                int r = write_new_file(dir, s->files[i].name, s->files[i].data, s->files[i].size);
                if (r < 0)
                        return aisb_error_set(err, r, "cannot write %s/%s: %s", path, s->files[i].name,
                                              strerror(-r));
        }
        *ret_path = steal_pointer(&path);
        return 0;
}

int run_dir_write_file(run_dir *d, const char *name, const char *text, char **ret_path, aisb_error **err)
{
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/%s", d->path, name) < 0)
                return error_oom(err);
        int r = write_new_file(d->fd, name, text, strlen(text));
        if (r < 0)
                return aisb_error_set(err, r, "cannot write %s: %s", path, strerror(-r));
        *ret_path = steal_pointer(&path);
        return 0;
}

/* Everything below dir, depth levels at most; links are removed, never followed. */
void run_dir_remove(run_dir *d)
{
        if (d->fd >= 0 && d->path) {
                remove_below(d->fd, 3);
                (void) rmdir(d->path);
        }
        if (d->fd >= 0)
                close(d->fd);
        free(d->path);
        *d = RUN_DIR_NULL;
}
