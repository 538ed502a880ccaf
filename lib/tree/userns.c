/* SPDX-License-Identifier: MIT */
#include "userns.h"

#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "fileio.h"
#include "tree-walk.h"
#include "util.h"

#define USERNS_REMOVE_DEPTH 32

int userns_podman_open(void)
{
        const char *runtime = getenv("XDG_RUNTIME_DIR");
        if (!runtime || runtime[0] != '/')
                return -ESRCH;
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/libpod/tmp/pause.pid", runtime) < 0)
                return -ENOMEM;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != getuid())
                return -ESRCH;
        char text[32];
        ssize_t n = read(fd, text, sizeof text - 1);
        if (n <= 0)
                return -ESRCH;
        text[n] = 0;
        unsigned long long pid;
        text[strcspn(text, "\n")] = 0;
        if (parse_uint(text, 4194304, &pid) < 0 || pid < 2)
                return -ESRCH;
        char ns[64];
        snprintf(ns, sizeof ns, "/proc/%llu/ns/user", pid);
        int userns = open(ns, O_RDONLY | O_CLOEXEC);
        if (userns < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        /* Whatever process the file names: only a namespace this user made is joined (and
         * only such a one could be: setns asks for CAP_SYS_ADMIN in it). */
        uid_t owner;
        if (ioctl(userns, NS_GET_OWNER_UID, &owner) < 0 || owner != getuid()) {
                close(userns);
                return -EPERM;
        }
        return userns;
}

typedef struct removal {
        unsigned depth;
        int first;
} removal;

static int remove_raw(int dir, const char *name, unsigned depth);

static int remove_entry(int fd, const char *name, unsigned char type, uint64_t ino, void *userdata)
{
        removal *m = userdata;
        int r = remove_raw(fd, name, m->depth + 1);
        if (r < 0 && !m->first)
                m->first = r;
        return 0;
}

/* In the child after fork: system calls and the stack only (the parent may have had threads
 * holding the allocator's locks). */
static int remove_raw(int dir, const char *name, unsigned depth)
{
        if (unlinkat(dir, name, 0) == 0 || errno == ENOENT)
                return 0;
        if (errno != EISDIR && errno != EPERM)
                return -errno;
        if (depth >= USERNS_REMOVE_DEPTH)
                return -ENOTEMPTY;
        int fd = tree_open_child(dir, name);
        if (fd < 0)
                return fd;
        char buf[2048] __attribute__((aligned(8)));
        removal m = { .depth = depth };
        (void) tree_dir_each(fd, buf, sizeof buf, remove_entry, &m);
        close(fd);
        if (unlinkat(dir, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                return m.first ? m.first : -errno;
        return 0;
}

int userns_remove(int userns, int dir, const char *name)
{
        pid_t pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                /* Root of the namespace, with its capabilities over the ids it maps. */
                if (setns(userns, CLONE_NEWUSER) < 0)
                        _exit(100);
                int r = remove_raw(dir, name, 0);
                _exit(r == 0 ? 0 : r == -ENOTEMPTY ? 101 : 102);
        }
        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (!WIFEXITED(status))
                return -EIO;
        switch (WEXITSTATUS(status)) {
        case 0: return 0;
        case 100: return -EPERM;
        case 101: return -ENOTEMPTY;
        default: return -EIO;
        }
}
