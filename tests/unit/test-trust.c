/* SPDX-License-Identifier: MIT */
/*
 * What the host trusts on a shared machine: a podman socket's path (path_check_trusted) with
 * real directories, modes, symlinks and, as root, real owners; who listens on the gate's
 * port, from /proc/net/tcp text; lines read bounded.
 *
 * Run with --as-root, the cases that need other owners (chown) run instead; without root they
 * cannot, and the program exits 77 saying so.
 */
#include <arpa/inet.h>
#include <check.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "internal.h"
#include "fake-podman.h"
#include "unit.h"
#include "../suite-table.h"
#include "fileio.h"
#include "pathtrust.h"

/* The user the root cases check for, and a stranger; neither needs to exist. */
#define USER_UID 4242
#define STRANGER_UID 65534

static char base[64];

static void make_base(void)
{
        snprintf(base, sizeof base, "/tmp/aisb-unit-trust.XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(base));
}

static void remove_base(void)
{
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
        ck_assert_int_eq(system(cmd), 0);
}

/* base/rel, in a static buffer per call site's need. */
static const char *at(const char *rel)
{
        static char paths[8][256];
        static int next;
        char *p = paths[next++ % 8];
        snprintf(p, 256, "%s/%s", base, rel);
        return p;
}

static void make_socket(const char *path)
{
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ck_assert_int_ge(fd, 0);
        struct sockaddr_un a = { .sun_family = AF_UNIX };
        ck_assert_uint_lt(strlen(path), sizeof a.sun_path);
        strcpy(a.sun_path, path);
        ck_assert_int_eq(bind(fd, (struct sockaddr *) &a, sizeof a), 0);
        close(fd);
}

/* base/podman (made with mode) and a socket in it, as podman's run directory holds one. */
static void podman_socket(mode_t mode)
{
        ck_assert_int_eq(mkdir(at("podman"), mode), 0);
        make_socket(at("podman/podman.sock"));
}

static void expect_trusted(const char *path, uid_t uid)
{
        char why[512];
        int r = path_check_trusted(path, uid, why, sizeof why);
        ck_assert_msg(r == 0, "%s: %d (%s)", path, r, why);
}

static void expect_untrusted(const char *path, uid_t uid, int code, const char *needle)
{
        char why[512];
        int r = path_check_trusted(path, uid, why, sizeof why);
        ck_assert_msg(r == code, "%s: %d, expected %d (%s)", path, r, code, why);
        ck_assert_msg(strstr(why, needle), "'%s' lacks '%s'", why, needle);
}

/* ---- without root: the caller's own directories ---- */

START_TEST(test_private_dir_in_tmp)
{
        podman_socket(0700);
        /* /tmp is world-writable but root's and sticky; our directory below it is ours. */
        expect_trusted(at("podman/podman.sock"), getuid());
        expect_trusted("/", getuid());
}
END_TEST

START_TEST(test_writable_by_others)
{
        podman_socket(0700);
        ck_assert_int_eq(chmod(at("podman"), 0777), 0);
        expect_untrusted(at("podman/podman.sock"), getuid(), -EPERM, "is writable by others (mode 0777)");
        ck_assert_int_eq(chmod(at("podman"), 0757), 0);
        expect_untrusted(at("podman/podman.sock"), getuid(), -EPERM, at("podman"));
        /* Sticky, but not root's: a directory anyone can fill that is not a system one. */
        if (getuid() != 0) {
                ck_assert_int_eq(chmod(at("podman"), 01777), 0);
                expect_untrusted(at("podman/podman.sock"), getuid(), -EPERM, "mode 1777");
        }
        /* The socket's own mode says who may connect, not who may replace it. */
        ck_assert_int_eq(chmod(at("podman"), 0700), 0);
        ck_assert_int_eq(chmod(at("podman/podman.sock"), 0777), 0);
        expect_trusted(at("podman/podman.sock"), getuid());
}
END_TEST

START_TEST(test_symlinks)
{
        ck_assert_int_eq(mkdir(at("real"), 0700), 0);
        ck_assert_int_eq(mkdir(at("open"), 0700), 0);
        make_socket(at("real/podman.sock"));
        make_socket(at("open/podman.sock"));
        ck_assert_int_eq(chmod(at("open"), 0777), 0);
        ck_assert_int_eq(symlink(at("real"), at("link")), 0);
        ck_assert_int_eq(symlink(at("open"), at("bad")), 0);
        ck_assert_int_eq(symlink("podman.sock", at("real/alias.sock")), 0);
        expect_trusted(at("link/podman.sock"), getuid());
        expect_trusted(at("real/alias.sock"), getuid());
        /* Our own symlink, leading to a directory others can write: where it leads counts. */
        expect_untrusted(at("bad/podman.sock"), getuid(), -EPERM, "is writable by others");
        ck_assert_int_eq(symlink(at("loop2"), at("loop1")), 0);
        ck_assert_int_eq(symlink(at("loop1"), at("loop2")), 0);
        expect_untrusted(at("loop1/podman.sock"), getuid(), -ELOOP, "");
}
END_TEST

START_TEST(test_missing_and_relative)
{
        expect_untrusted(at("absent/podman.sock"), getuid(), -ENOENT, at("absent"));
        expect_untrusted("run/podman.sock", getuid(), -EINVAL, "not an absolute path");
}
END_TEST

/* A socket named with --socket in a directory others can write: refused before a byte is
 * sent, since the create request would carry every secret to whoever listens there. */
START_TEST(test_named_socket_refused)
{
        fake_podman *fp = fake_podman_start();
        ck_assert_ptr_nonnull(fp);
        char dir[256];
        snprintf(dir, sizeof dir, "%s", fake_podman_socket(fp));
        *strrchr(dir, '/') = 0;
        ck_assert_int_eq(chmod(dir, 0777), 0);
        aisb_ctx *ctx = NULL;
        ck_assert_int_eq(aisb_ctx_new(&ctx, NULL), 0);
        ck_assert_int_eq(aisb_ctx_set_socket(ctx, fake_podman_socket(fp), NULL), 0);
        aisb_error *err = NULL;
        ck_assert_int_eq(aisb_ctx_connect(ctx, &err), -EPERM);
        ck_assert_msg(strstr(aisb_error_message(err), "is not safe to use") &&
                              strstr(aisb_error_message(err), "is writable by others (mode 0777)"),
                      "%s", aisb_error_message(err));
        aisb_error_free(err);
        ck_assert_uint_eq(fake_podman_request_count(fp), 0);

        /* Made private again, the same socket is used. */
        ck_assert_int_eq(chmod(dir, 0700), 0);
        ck_assert_int_eq(aisb_ctx_connect(ctx, NULL), 0);
        aisb_ctx_free(ctx);
        fake_podman_stop(fp);
}
END_TEST

/* ---- who listens on the gate's port: /proc/net/tcp and tcp6 text ---- */

#define PORT 41485 /* A20D */

/* The address words as this host's kernel prints them (each 32-bit word in host order). */
static char lo4[9], any4[9], mapped_lo6[33], any6[33], lo6[33];

static void addresses(void)
{
        snprintf(lo4, sizeof lo4, "%08X", (unsigned) htonl(INADDR_LOOPBACK));
        snprintf(any4, sizeof any4, "%08X", 0u);
        snprintf(mapped_lo6, sizeof mapped_lo6, "%08X%08X%08X%08X", 0u, 0u, (unsigned) htonl(0xffff),
                 (unsigned) htonl(INADDR_LOOPBACK));
        snprintf(any6, sizeof any6, "%032X", 0u);
        snprintf(lo6, sizeof lo6, "%08X%08X%08X%08X", 0u, 0u, 0u, (unsigned) htonl(1));
}

/* One line of the table, as the kernel formats it. */
static char *row(int sl, const char *address, unsigned port, unsigned state, unsigned uid)
{
        char *line = NULL;
        ck_assert_int_ge(asprintf(&line, "%4d: %s:%04X %s:0000 %02X 00000000:00000000 00:00000000 00000000 %5u        0 374893 1 00000000737a1fec 100 0 0 10 0",
                                  sl, address, port, strlen(address) == 8 ? "00000000" : "00000000000000000000000000000000",
                                  state, uid), 0);
        return line;
}

static port_owners owners_of(const char *const *lines)
{
        buffer b = {};
        ck_assert_int_eq(buffer_printf(&b, "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"), 0);
        for (size_t i = 0; lines[i]; i++)
                ck_assert_int_eq(buffer_printf(&b, "%s\n", lines[i]), 0);
        port_owners o = {};
        ck_assert_int_eq(proc_net_tcp_owners(b.data, PORT, 1001, &o), 0);
        buffer_free(&b);
        return o;
}

START_TEST(test_listener_ours)
{
        addresses();
        /* The real table of a host with the gate up (other sockets around it). */
        char *ssh = row(0, any4, 2024, 0x0A, 0), *gate = row(1, lo4, PORT, 0x0A, 1001);
        char *conn = row(2, lo4, PORT, 0x01, 1001); /* an established connection to it */
        port_owners o = owners_of((const char *const[]) { ssh, gate, conn, NULL });
        ck_assert(o.ours);
        ck_assert(!o.stranger);
        uid_t uid = 0;
        bool exact = false;
        ck_assert_int_eq(proc_net_tcp_line(gate, PORT, &uid, &exact), 1);
        ck_assert_int_eq(uid, 1001);
        ck_assert(exact);
        ck_assert_int_eq(proc_net_tcp_line(gate, PORT + 1, &uid, &exact), 0);
        ck_assert_int_eq(proc_net_tcp_line(conn, PORT, &uid, &exact), 0);
        free(ssh), free(gate), free(conn);
}
END_TEST

START_TEST(test_listener_stranger)
{
        addresses();
        /* Another user's listener on the gate's address and port: connecting works, and it
         * is not the gate. */
        char *theirs = row(0, lo4, PORT, 0x0A, 1005);
        port_owners o = owners_of((const char *const[]) { theirs, NULL });
        ck_assert(!o.ours);
        ck_assert(o.stranger);
        ck_assert_int_eq(o.stranger_uid, 1005);
        /* On the wildcard address: it takes 127.0.0.1 connections when nothing more exact
         * listens. */
        char *wild = row(0, any4, PORT, 0x0A, 1005);
        o = owners_of((const char *const[]) { wild, NULL });
        ck_assert(!o.ours && o.stranger);
        /* Ours on the wildcard is not the gate either: squid binds 127.0.0.1. */
        char *our_wild = row(0, any4, PORT, 0x0A, 1001);
        o = owners_of((const char *const[]) { our_wild, NULL });
        ck_assert(!o.ours && !o.stranger);
        /* Nothing on the port at all. */
        char *other_port = row(0, lo4, PORT + 1, 0x0A, 1001);
        o = owners_of((const char *const[]) { other_port, NULL });
        ck_assert(!o.ours && !o.stranger);
        free(theirs), free(wild), free(our_wild), free(other_port);
}
END_TEST

START_TEST(test_listener_ipv6)
{
        addresses();
        /* tcp6 only: another user on [::] (dual-stack: it would take 127.0.0.1 too). */
        char *any = row(0, any6, PORT, 0x0A, 1005);
        port_owners o = owners_of((const char *const[]) { any, NULL });
        ck_assert(!o.ours && o.stranger);
        /* A v4-mapped bind of 127.0.0.1 is a bind of 127.0.0.1. */
        char *mapped = row(0, mapped_lo6, PORT, 0x0A, 1001);
        o = owners_of((const char *const[]) { mapped, NULL });
        ck_assert(o.ours && !o.stranger);
        char *mapped_theirs = row(0, mapped_lo6, PORT, 0x0A, 1005);
        o = owners_of((const char *const[]) { mapped_theirs, NULL });
        ck_assert(!o.ours && o.stranger);
        /* ::1 is not where the sandboxes connect. */
        char *loopback6 = row(0, lo6, PORT, 0x0A, 1005);
        o = owners_of((const char *const[]) { loopback6, NULL });
        ck_assert(!o.ours && !o.stranger);
        free(any), free(mapped), free(mapped_theirs), free(loopback6);
}
END_TEST

START_TEST(test_listener_malformed)
{
        uid_t uid = 0;
        bool exact = false;
        static const char *const bad[] = {
                "",
                "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid",
                "   0: 0100007F:A20D 00000000:0000 0A",
                "   0: 0100007F0:A20D 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1001 0 1",
                "   0: 0100007:A20D 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1001 0 1",
                "   0: 0100007F:A20D 00000000:0000 0A 00000000:00000000 00:00000000 00000000  uid 0 1",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                ck_assert_msg(proc_net_tcp_line(bad[i], PORT, &uid, &exact) == 0, "accepted: %s", bad[i]);
}
END_TEST

/* ---- read_lines: bounded, for logs another party writes ---- */

typedef struct collected {
        char text[4096];
        int count;
} collected;

static int collect(char *line, void *userdata)
{
        collected *c = userdata;
        strncat(c->text, line, sizeof c->text - strlen(c->text) - 2);
        strcat(c->text, "|");
        c->count++;
        return 0;
}

static collected lines_of(const char *data, size_t size, size_t max, size_t line_max)
{
        char path[] = "/tmp/aisb-unit-lines.XXXXXX";
        int fd = mkstemp(path);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(unlink(path), 0);
        ck_assert_int_eq(write_all(fd, data, size), 0);
        ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
        collected c = {};
        ck_assert_int_eq(read_lines(fd, max, line_max, collect, &c), 0);
        close(fd);
        return c;
}

START_TEST(test_read_lines)
{
        collected c = lines_of("a\nbb\n\nccc", 10, 1000, 16);
        ck_assert_str_eq(c.text, "a|bb||ccc|");
        /* A line longer than line_max is skipped whole; the next one still counts. */
        char big[200];
        memset(big, 'x', sizeof big);
        big[150] = '\n';
        memcpy(big + 151, "after\n", 7);
        c = lines_of(big, 157, 1000, 16);
        ck_assert_str_eq(c.text, "after|");
        /* Only max bytes are read: a line the cap cuts is not counted. */
        c = lines_of("one\ntwo\nthree\n", 15, 10, 16);
        ck_assert_str_eq(c.text, "one|two|");
}
END_TEST

/* ---- as root: other owners ---- */

static void own(const char *path, uid_t uid, gid_t gid)
{
        ck_assert_msg(lchown(path, uid, gid) == 0, "lchown %s: %s", path, strerror(errno));
}

START_TEST(test_owner_user_passes)
{
        own(base, USER_UID, USER_UID);
        podman_socket(0700);
        own(at("podman"), USER_UID, USER_UID);
        own(at("podman/podman.sock"), USER_UID, USER_UID);
        expect_trusted(at("podman/podman.sock"), USER_UID);
        /* Root's directories and sockets are trusted too. */
        own(at("podman"), 0, 0);
        own(at("podman/podman.sock"), 0, 0);
        expect_trusted(at("podman/podman.sock"), USER_UID);
}
END_TEST

START_TEST(test_owner_stranger_refused)
{
        podman_socket(0755);
        /* podman's /tmp/podman-run-UID, made first by another user. */
        own(base, STRANGER_UID, STRANGER_UID);
        own(at("podman"), STRANGER_UID, STRANGER_UID);
        own(at("podman/podman.sock"), STRANGER_UID, STRANGER_UID);
        char want[300];
        snprintf(want, sizeof want, "%s belongs to uid %u", base, STRANGER_UID);
        expect_untrusted(at("podman/podman.sock"), USER_UID, -EPERM, want);
        /* Only the socket is theirs, in the user's own directory. */
        own(base, USER_UID, USER_UID);
        own(at("podman"), USER_UID, USER_UID);
        snprintf(want, sizeof want, "podman.sock belongs to uid %u", STRANGER_UID);
        expect_untrusted(at("podman/podman.sock"), USER_UID, -EPERM, want);
}
END_TEST

START_TEST(test_group_writable)
{
        own(base, USER_UID, 100);
        ck_assert_int_eq(chmod(base, 0770), 0);
        make_socket(at("podman.sock"));
        own(at("podman.sock"), USER_UID, USER_UID);
        expect_untrusted(at("podman.sock"), USER_UID, -EPERM, "is writable by others (mode 0770)");
        /* Group root is root. */
        own(base, USER_UID, 0);
        expect_trusted(at("podman.sock"), USER_UID);
}
END_TEST

START_TEST(test_sticky_root_dir)
{
        own(base, 0, 0);
        ck_assert_int_eq(chmod(base, 01777), 0);
        ck_assert_int_eq(mkdir(at("mine"), 0700), 0);
        ck_assert_int_eq(mkdir(at("theirs"), 0700), 0);
        make_socket(at("mine/podman.sock"));
        make_socket(at("theirs/podman.sock"));
        own(at("mine"), USER_UID, USER_UID);
        own(at("mine/podman.sock"), USER_UID, USER_UID);
        own(at("theirs"), STRANGER_UID, STRANGER_UID);
        expect_trusted(at("mine/podman.sock"), USER_UID);
        expect_untrusted(at("theirs/podman.sock"), USER_UID, -EPERM, "theirs belongs to uid 65534");
        /* The same directory, user-owned sticky: not a system directory, refused. */
        own(base, USER_UID, USER_UID);
        expect_untrusted(at("mine/podman.sock"), USER_UID, -EPERM, "mode 1777");
}
END_TEST

START_TEST(test_symlink_owner)
{
        own(base, USER_UID, USER_UID);
        ck_assert_int_eq(mkdir(at("real"), 0700), 0);
        own(at("real"), USER_UID, USER_UID);
        make_socket(at("real/podman.sock"));
        own(at("real/podman.sock"), USER_UID, USER_UID);
        ck_assert_int_eq(symlink(at("real"), at("link")), 0);
        own(at("link"), USER_UID, USER_UID);
        expect_trusted(at("link/podman.sock"), USER_UID);
        /* A stranger's symlink, even to a good place, is not followed. */
        own(at("link"), STRANGER_UID, STRANGER_UID);
        expect_untrusted(at("link/podman.sock"), USER_UID, -EPERM, "link belongs to uid 65534");
        /* Nor when the user's own symlink leads through it, in a /tmp-like directory where the
         * stranger could point it elsewhere later: every link on the way counts. */
        own(base, 0, 0);
        ck_assert_int_eq(chmod(base, 01777), 0);
        ck_assert_int_eq(symlink("link", at("mine")), 0);
        own(at("mine"), USER_UID, USER_UID);
        expect_untrusted(at("mine/podman.sock"), USER_UID, -EPERM, "link belongs to uid 65534");
        own(at("link"), USER_UID, USER_UID);
        expect_trusted(at("mine/podman.sock"), USER_UID);
}
END_TEST

static Suite *trust_suite(bool as_root)
{
        Suite *s = suite_create("trust");
        if (as_root) {
                suite_add_tests(s, "owners", make_base, remove_base, test_owner_user_passes, test_owner_stranger_refused,
                                test_group_writable, test_sticky_root_dir, test_symlink_owner);
                return s;
        }
        suite_add_tests(s, "paths", make_base, remove_base, test_private_dir_in_tmp, test_writable_by_others, test_symlinks,
                        test_missing_and_relative, test_named_socket_refused);
        suite_add_tests(s, "listeners", NULL, NULL, test_listener_ours, test_listener_stranger, test_listener_ipv6,
                        test_listener_malformed, test_read_lines);
        return s;
}

int main(int argc, char **argv)
{
        bool as_root = argc > 1 && streq(argv[1], "--as-root");
        if (as_root && geteuid() != 0) {
                fprintf(stderr, "skipped: these cases chown files to other users, which needs root\n");
                return getenv("CI") && streq(getenv("CI"), "true") ? EXIT_FAILURE : 77;
        }
        return unit_run(trust_suite(as_root));
}
