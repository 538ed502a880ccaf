/* SPDX-License-Identifier: MIT */
/*
 * What the host trusts on a shared machine: a podman socket's path (path_check_trusted) with
 * real directories, modes, symlinks and, as root, real owners; and who listens on the gate's
 * port, from /proc/net/tcp text.
 *
 * Run with --as-root, the cases that need other owners (chown) run instead; without root they
 * cannot, and the program exits 77 saying so.
 */
#include <check.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "aisb-private.h"
#include "fake-podman.h"

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
        make_base();
        ck_assert_int_eq(mkdir(at("podman"), 0700), 0);
        make_socket(at("podman/podman.sock"));
        /* /tmp is world-writable but root's and sticky; our directory below it is ours. */
        expect_trusted(at("podman/podman.sock"), getuid());
        expect_trusted("/", getuid());
        remove_base();
}
END_TEST

START_TEST(test_writable_by_others)
{
        make_base();
        ck_assert_int_eq(mkdir(at("podman"), 0700), 0);
        make_socket(at("podman/podman.sock"));
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
        remove_base();
}
END_TEST

START_TEST(test_symlinks)
{
        make_base();
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
        remove_base();
}
END_TEST

START_TEST(test_missing_and_relative)
{
        make_base();
        expect_untrusted(at("absent/podman.sock"), getuid(), -ENOENT, at("absent"));
        expect_untrusted("run/podman.sock", getuid(), -EINVAL, "not an absolute path");
        remove_base();
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

/* ---- as root: other owners ---- */

static void own(const char *path, uid_t uid, gid_t gid)
{
        ck_assert_msg(lchown(path, uid, gid) == 0, "lchown %s: %s", path, strerror(errno));
}

START_TEST(test_owner_user_passes)
{
        make_base();
        own(base, USER_UID, USER_UID);
        ck_assert_int_eq(mkdir(at("podman"), 0700), 0);
        make_socket(at("podman/podman.sock"));
        own(at("podman"), USER_UID, USER_UID);
        own(at("podman/podman.sock"), USER_UID, USER_UID);
        expect_trusted(at("podman/podman.sock"), USER_UID);
        /* Root's directories and sockets are trusted too. */
        own(at("podman"), 0, 0);
        own(at("podman/podman.sock"), 0, 0);
        expect_trusted(at("podman/podman.sock"), USER_UID);
        remove_base();
}
END_TEST

START_TEST(test_owner_stranger_refused)
{
        make_base();
        ck_assert_int_eq(mkdir(at("podman"), 0755), 0);
        make_socket(at("podman/podman.sock"));
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
        remove_base();
}
END_TEST

START_TEST(test_group_writable)
{
        make_base();
        own(base, USER_UID, 100);
        ck_assert_int_eq(chmod(base, 0770), 0);
        make_socket(at("podman.sock"));
        own(at("podman.sock"), USER_UID, USER_UID);
        expect_untrusted(at("podman.sock"), USER_UID, -EPERM, "is writable by others (mode 0770)");
        /* Group root is root. */
        own(base, USER_UID, 0);
        expect_trusted(at("podman.sock"), USER_UID);
        remove_base();
}
END_TEST

START_TEST(test_sticky_root_dir)
{
        make_base();
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
        remove_base();
}
END_TEST

START_TEST(test_symlink_owner)
{
        make_base();
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
        remove_base();
}
END_TEST

static Suite *trust_suite(bool as_root)
{
        Suite *s = suite_create("trust");
        TCase *tc = tcase_create(as_root ? "owners" : "paths");
        if (as_root) {
                tcase_add_test(tc, test_owner_user_passes);
                tcase_add_test(tc, test_owner_stranger_refused);
                tcase_add_test(tc, test_group_writable);
                tcase_add_test(tc, test_sticky_root_dir);
                tcase_add_test(tc, test_symlink_owner);
        } else {
                tcase_add_test(tc, test_private_dir_in_tmp);
                tcase_add_test(tc, test_writable_by_others);
                tcase_add_test(tc, test_symlinks);
                tcase_add_test(tc, test_missing_and_relative);
                tcase_add_test(tc, test_named_socket_refused);
        }
        suite_add_tcase(s, tc);
        return s;
}

int main(int argc, char **argv)
{
        bool as_root = argc > 1 && streq(argv[1], "--as-root");
        if (as_root && geteuid() != 0) {
                fprintf(stderr, "skipped: these cases chown files to other users, which needs root\n");
                return getenv("CI") && streq(getenv("CI"), "true") ? EXIT_FAILURE : 77;
        }
        SRunner *sr = srunner_create(trust_suite(as_root));
        srunner_run_all(sr, CK_NORMAL);
        int failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
