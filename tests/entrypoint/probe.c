/* SPDX-License-Identifier: MIT */
/* aisb-entrypoint-probe: the command the entrypoint tests run inside the sandbox. It reports,
 * one "key=value" per line on stdout, who it runs as and which escapes the kernel refused.
 * Linked statically so the same binary runs on the host and in any container image.
 *
 *   aisb-entrypoint-probe [--marker FILE] [--connect ADDR:PORT ...]
 *
 * --marker creates FILE first: its absence proves the command never ran. --connect tries a
 * TCP connection (2 s) and reports ok or the errno name; nftables' drop on output shows as
 * EPERM without any packet leaving. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

static const char *result(long r)
{
        static char buf[64];
        if (r >= 0)
                return "ok";
        switch (errno) {
        case EPERM: return "EPERM";
        case EACCES: return "EACCES";
        case ENOSYS: return "ENOSYS";
        case EINVAL: return "EINVAL";
        case EAFNOSUPPORT: return "EAFNOSUPPORT";
        case ECONNREFUSED: return "ECONNREFUSED";
        case ETIMEDOUT: return "ETIMEDOUT";
        case ENETUNREACH: return "ENETUNREACH";
        default:
                snprintf(buf, sizeof(buf), "errno%d", errno);
                return buf;
        }
}

static long try_socket(int family, int type, int proto)
{
        int fd = socket(family, type, proto);
        if (fd >= 0)
                close(fd);
        return fd;
}

static const char *try_connect(const char *spec)
{
        char host[128];
        const char *colon = strrchr(spec, ':');
        struct sockaddr_in sin = { .sin_family = AF_INET };
        if (!colon || (size_t) (colon - spec) >= sizeof(host))
                return "badspec";
        memcpy(host, spec, (size_t) (colon - spec));
        host[colon - spec] = '\0';
        if (inet_pton(AF_INET, host, &sin.sin_addr) != 1)
                return "badspec";
        sin.sin_port = htons((uint16_t) atoi(colon + 1));
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return result(-1);
        long r = connect(fd, (struct sockaddr *) &sin, sizeof(sin));
        if (r < 0 && errno == EINPROGRESS) {
                struct pollfd p = { .fd = fd, .events = POLLOUT };
                if (poll(&p, 1, 2000) == 0) {
                        close(fd);
                        errno = ETIMEDOUT;
                        return result(-1);
                }
                int e = 0;
                socklen_t l = sizeof(e);
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &l);
                errno = e;
                r = e ? -1 : 0;
        }
        close(fd);
        return result(r);
}

int main(int argc, char **argv)
{
        for (int i = 1; i + 1 < argc; i += 2)
                if (strcmp(argv[i], "--marker") == 0) {
                        int fd = open(argv[i + 1], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
                        if (fd < 0) {
                                perror("marker");
                                return 1;
                        }
                        close(fd);
                }

        uid_t ru, eu, su;
        gid_t rg, eg, sg;
        getresuid(&ru, &eu, &su);
        getresgid(&rg, &eg, &sg);
        printf("uid=%u,%u,%u\ngid=%u,%u,%u\ngroups=%d\n", ru, eu, su, rg, eg, sg, getgroups(0, NULL));

        FILE *f = fopen("/proc/self/status", "re");
        char line[256];
        while (f && fgets(line, sizeof(line), f)) {
                char key[64], value[128];
                if (sscanf(line, "%63[^:]:%*[ \t]%127s", key, value) == 2 &&
                    (strncmp(key, "Cap", 3) == 0 || strcmp(key, "NoNewPrivs") == 0 || strcmp(key, "Seccomp") == 0))
                        printf("%s=%s\n", key, value);
        }
        if (f)
                fclose(f);

        printf("unshare_user=%s\n", result(unshare(CLONE_NEWUSER)));
        printf("unshare_net=%s\n", result(unshare(CLONE_NEWNET)));
        long pid = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
        if (pid == 0)
                _exit(0);
        printf("clone_newuser=%s\n", result(pid));
        printf("mount=%s\n", result(mount("none", "/tmp", "tmpfs", 0, NULL)));
        printf("socket_raw=%s\n", result(try_socket(AF_INET, SOCK_RAW, IPPROTO_ICMP)));
        printf("socket_packet=%s\n", result(try_socket(AF_PACKET, SOCK_DGRAM, 0)));
        printf("socket_vsock=%s\n", result(try_socket(AF_VSOCK, SOCK_STREAM, 0)));
        printf("socket_tcp=%s\n", result(try_socket(AF_INET, SOCK_STREAM, 0)));
        printf("socket_netlink=%s\n", result(try_socket(AF_NETLINK, SOCK_RAW, 0)));
        for (int i = 1; i + 1 < argc; i += 2)
                if (strcmp(argv[i], "--connect") == 0)
                        printf("connect %s=%s\n", argv[i + 1], try_connect(argv[i + 1]));
        return 0;
}
