/* SPDX-License-Identifier: MIT */
/*
 * Who listens on a loopback port (port-owners.h), from the kernel's socket tables: another
 * local user can bind a port on the loopback too, so a gate counts as up only while the
 * listening socket on its port is the user's own.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>

#include "fileio.h"
#include "port-owners.h"

/* /proc/net/tcp of a very busy host stays far below this (a line is 150 bytes). */
#define PROC_NET_TCP_MAX (64 * 1024 * 1024)

int proc_net_tcp_line(const char *line, unsigned port, uid_t *ret_uid, bool *ret_exact)
{
        char address[40];
        unsigned local_port, state, uid;
        if (sscanf(line, " %*u: %39[0-9A-Fa-f]:%x %*x:%*x %x %*x:%*x %*x:%*x %*x %u", address,
                   &local_port, &state, &uid) != 4)
                return 0;
        if (local_port != port || state != 0x0A /* TCP_LISTEN */)
                return 0;
        /* The kernel prints each 32-bit word of the address as the number its bytes make in
         * this host's order: compare with the same words in memory. */
        uint32_t words[4] = {};
        size_t n_words = strlen(address) / 8;
        if (strlen(address) % 8 || (n_words != 1 && n_words != 4))
                return 0;
        for (size_t i = 0; i < n_words; i++) {
                char word[9];
                memcpy(word, address + 8 * i, 8);
                word[8] = 0;
                words[i] = (uint32_t) strtoul(word, NULL, 16);
        }
        uint32_t v4;
        if (n_words == 1)
                v4 = words[0];
        else if (words[0] == 0 && words[1] == 0 && words[2] == htonl(0xffff))
                v4 = words[3]; /* ::ffff:a.b.c.d */
        else if (words[0] == 0 && words[1] == 0 && words[2] == 0 && words[3] == 0)
                v4 = htonl(INADDR_ANY); /* ::, which may take IPv4 connections too */
        else
                return 0;
        if (v4 != htonl(INADDR_LOOPBACK) && v4 != htonl(INADDR_ANY))
                return 0;
        *ret_uid = (uid_t) uid;
        *ret_exact = v4 == htonl(INADDR_LOOPBACK);
        return 1;
}

typedef struct owners_reading {
        unsigned port;
        uid_t uid;
        port_owners *owners;
} owners_reading;

static int owners_line(char *line, void *userdata)
{
        owners_reading *o = userdata;
        uid_t owner;
        bool exact;
        if (proc_net_tcp_line(line, o->port, &owner, &exact) != 1)
                return 0;
        if (owner == o->uid && exact)
                o->owners->ours = true;
        else if (owner != o->uid && !o->owners->stranger) {
                o->owners->stranger = true;
                o->owners->stranger_uid = owner;
        }
        return 0;
}

int proc_net_tcp_owners(const char *text, unsigned port, uid_t uid, port_owners *owners)
{
        owners_reading o = { .port = port, .uid = uid, .owners = owners };
        for (const char *line = text; line && *line;) {
                const char *end = strchr(line, '\n');
                size_t n = end ? (size_t) (end - line) : strlen(line);
                _cleanup_free_ char *l = strndup(line, n);
                if (!l)
                        return -ENOMEM;
                (void) owners_line(l, &o);
                line += n + (end ? 1 : 0);
        }
        return 0;
}

int port_owners_read(unsigned port, port_owners *ret)
{
        *ret = (port_owners) {};
        owners_reading o = { .port = port, .uid = getuid(), .owners = ret };
        static const char *const tables[] = { "/proc/net/tcp", "/proc/net/tcp6" };
        int r = 0;
        for (size_t i = 0; i < ELEMENTSOF(tables); i++) {
                _cleanup_close_ int fd = open(tables[i], O_RDONLY | O_CLOEXEC);
                if (fd < 0) {
                        /* No IPv6 in this kernel: nothing listens there. */
                        if (errno != ENOENT || i == 0)
                                r = -errno;
                        continue;
                }
                int k = read_lines(fd, PROC_NET_TCP_MAX, 512, owners_line, &o);
                if (k < 0)
                        r = k;
        }
        return r;
}

/* Whether the gate's port is up and ours: a listening socket of this user bound to
 * 127.0.0.1:port. Connecting proves less: another local user's listener there (taken while
 * the gate was down, or before squid could bind it) accepts just as well, and would then see
 * all the sandboxes' traffic. */
bool gate_port_ours(unsigned port)
{
        port_owners o;
        return port > 0 && port_owners_read(port, &o) == 0 && o.ours;
}
