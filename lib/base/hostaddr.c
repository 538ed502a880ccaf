/* SPDX-License-Identifier: MIT */
#include "hostaddr.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>

int host_own_addresses(char ***ret)
{
        struct ifaddrs *list = NULL;
        if (getifaddrs(&list) < 0)
                return -errno;
        _cleanup_strv_free_ char **addresses = NULL;
        int r = 0;
        for (struct ifaddrs *i = list; i && r >= 0; i = i->ifa_next) {
                if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6))
                        continue;
                char text[INET6_ADDRSTRLEN];
                const void *addr = i->ifa_addr->sa_family == AF_INET
                                           ? (const void *) &((struct sockaddr_in *) i->ifa_addr)->sin_addr
                                           : (const void *) &((struct sockaddr_in6 *) i->ifa_addr)->sin6_addr;
                if (inet_ntop(i->ifa_addr->sa_family, addr, text, sizeof text))
                        r = strv_push(&addresses, text);
        }
        freeifaddrs(list);
        if (r < 0)
                return r;
        *ret = steal_pointer(&addresses);
        return 0;
}
