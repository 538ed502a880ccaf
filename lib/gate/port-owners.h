/* SPDX-License-Identifier: MIT */
/* Who listens on a loopback port: the user, or a stranger who would see the gate's traffic. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/* Who listens on a loopback port, from /proc/net/tcp and tcp6 text. */
typedef struct port_owners {
        bool ours;      /* a LISTEN socket of the user bound to 127.0.0.1:port */
        bool stranger;  /* another uid's LISTEN socket there, or on a wildcard address */
        uid_t stranger_uid;
} port_owners;
/* 1 when the line is a LISTEN socket on port bound to 127.0.0.1 (*ret_exact) or a wildcard
 * (0.0.0.0, ::, ::ffff:0.0.0.0; in tcp6 also ::ffff:127.0.0.1), with its owner; 0 for any
 * other line. */
int proc_net_tcp_line(const char *line, unsigned port, uid_t *ret_uid, bool *ret_exact);
/* Every line of a table's text, added to owners for the user uid. */
int proc_net_tcp_owners(const char *text, unsigned port, uid_t uid, port_owners *owners);
/* Who listens where a connection to 127.0.0.1:port goes, from /proc/net/tcp and tcp6. */
int port_owners_read(unsigned port, port_owners *ret);
/* Whether a listening socket of this user is bound to 127.0.0.1:port. */
bool gate_port_ours(unsigned port);
