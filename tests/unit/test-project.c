/* SPDX-License-Identifier: MIT */
/* What the host reads of the project's .ai-sandbox, and a run's private directory: links,
 * FIFOs and oversized files planted by the agent are never followed, waited on or swallowed. */
#include <check.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "internal.h"
#include "project.h"
#include "../suite-table.h"
#include "unit.h"
#include "fileio.h"
#include "mode-sweep.h"
#include "tree-walk.h"
#include <sys/xattr.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

static char project[64];
static char settings[128];

static void setup(void)
{
        snprintf(project, sizeof project, "/tmp/aisb-test-project-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(project));
        snprintf(settings, sizeof settings, "%s/.ai-sandbox", project);
}

static void teardown(void)
{
        char cmd[256];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", project);
        ck_assert_int_eq(system(cmd), 0);
}

static void put(const char *name, const char *text)
{
        char path[256];
        snprintf(path, sizeof path, "%s/%s", settings, name);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write_all(fd, text, strlen(text)), 0);
        close(fd);
}

static void expect_refused(const char *needle)
{
        project_settings s = {};
        aisb_error *err = NULL;
        ck_assert_int_lt(project_settings_read(project, false, &s, &err), 0);
        ck_assert_msg(strstr(aisb_error_message(err), needle), "'%s' lacks '%s'", aisb_error_message(err), needle);
        ck_assert_uint_eq(s.n_files, 0);
        aisb_error_free(err);
}

START_TEST(test_absent_and_plain)
{
        project_settings s = {};
        ck_assert_int_eq(project_settings_read(project, false, &s, NULL), 0);
        ck_assert(!s.present);
        ck_assert_ptr_null(project_settings_find(&s, "allow"));

        ck_assert_int_eq(mkdir(settings, 0755), 0);
        put("allow", "example.com\n");
        put("notes", "anything\n");
        ck_assert_int_eq(project_settings_read(project, false, &s, NULL), 0);
        ck_assert(s.present);
        ck_assert_uint_eq(s.n_files, 2);
        const project_file *f = project_settings_find(&s, "allow");
        ck_assert_ptr_nonnull(f);
        ck_assert_str_eq(f->data, "example.com\n");
        project_settings_done(&s);
}
END_TEST

/* A symlinked .ai-sandbox would make the host read (and mount) whatever it points at. */
START_TEST(test_settings_link_refused)
{
        char target[128];
        snprintf(target, sizeof target, "%s/elsewhere", project);
        ck_assert_int_eq(mkdir(target, 0755), 0);
        ck_assert_int_eq(symlink(target, settings), 0);
        expect_refused("not a directory");
}
END_TEST

/* What the agent may plant instead of a file: a link (the host would read its target) and a
 * FIFO (which must not hang the host: open is non-blocking and only regular files are read).
 * Named allow it is refused; under any other name it is left out. */
static int plant_link(const char *path)
{
        return symlink("/etc/hostname", path);
}

static int plant_fifo(const char *path)
{
        return mkfifo(path, 0644);
}

static int (*const plants[])(const char *path) = { plant_link, plant_fifo };

START_TEST(test_planted_file)
{
        ck_assert_int_eq(mkdir(settings, 0755), 0);
        char path[160];
        snprintf(path, sizeof path, "%s/other", settings);
        ck_assert_int_eq(plants[_i](path), 0);
        put("allow", "example.com\n");
        project_settings s = {};
        ck_assert_int_eq(project_settings_read(project, false, &s, NULL), 0);
        ck_assert_uint_eq(s.n_files, 1);
        ck_assert_ptr_null(project_settings_find(&s, "other"));
        project_settings_done(&s);
        snprintf(path, sizeof path, "%s/allow", settings);
        ck_assert_int_eq(unlink(path), 0);
        ck_assert_int_eq(plants[_i](path), 0);
        expect_refused("must be a regular file");
}
END_TEST

START_TEST(test_bounds)
{
        ck_assert_int_eq(mkdir(settings, 0755), 0);
        char path[160];
        snprintf(path, sizeof path, "%s/allow", settings);
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(ftruncate(fd, PROJECT_SETTINGS_MAX_FILE + 1), 0);
        close(fd);
        expect_refused("larger than");
        ck_assert_int_eq(unlink(path), 0);
        for (int i = 0; i <= PROJECT_SETTINGS_MAX_FILES; i++) {
                char name[32];
                snprintf(name, sizeof name, "f%d", i);
                put(name, "x");
        }
        expect_refused("more than");
}
END_TEST

/* The run's copy is private, holds exactly the snapshot, and goes with the run. */
START_TEST(test_run_dir)
{
        ck_assert_int_eq(mkdir(settings, 0755), 0);
        put("allow", "example.com\n");
        project_settings s = {};
        ck_assert_int_eq(project_settings_read(project, false, &s, NULL), 0);
        put("allow", "changed.example\n"); /* after the snapshot: not what the run uses */

        run_dir d = RUN_DIR_NULL;
        char *copy = NULL;
        ck_assert_int_eq(run_dir_create(&d, NULL), 0);
        struct stat st;
        ck_assert_int_eq(lstat(d.path, &st), 0);
        ck_assert_uint_eq(st.st_mode & 0777, 0700);
        ck_assert_int_eq(run_dir_write_settings(&d, "ai-sandbox", &s, &copy, NULL), 0);
        char path[512], text[64] = "";
        snprintf(path, sizeof path, "%s/allow", copy);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_gt(read(fd, text, sizeof text - 1), 0);
        close(fd);
        ck_assert_str_eq(text, "example.com\n");
        char *path_copy = strdup(d.path);
        run_dir_remove(&d);
        ck_assert_int_lt(lstat(path_copy, &st), 0);
        run_dir_remove(&d);
        free(path_copy);
        free(copy);
        project_settings_done(&s);
}
END_TEST

/* A run creates the directory where there is none (its copy is mounted over it, so no
 * sandbox can create one), and never follows a link to do so. */
START_TEST(test_created_for_a_run)
{
        project_settings s = {};
        ck_assert_int_eq(project_settings_read(project, true, &s, NULL), 0);
        ck_assert(s.present);
        ck_assert_uint_eq(s.n_files, 0);
        struct stat st;
        ck_assert_int_eq(lstat(settings, &st), 0);
        ck_assert(S_ISDIR(st.st_mode));
        ck_assert_int_eq(st.st_uid, geteuid());
        ck_assert_int_eq(rmdir(settings), 0);
        char target[128];
        snprintf(target, sizeof target, "%s/elsewhere", project);
        ck_assert_int_eq(symlink(target, settings), 0); /* dangling: mkdir must not make it */
        aisb_error *err = NULL;
        ck_assert_int_lt(project_settings_read(project, true, &s, &err), 0);
        ck_assert(strstr(aisb_error_message(err), "not a directory"));
        aisb_error_free(err);
        ck_assert_int_lt(lstat(target, &st), 0);
}
END_TEST

/* cd'ing into a link a sandbox planted in its project leads elsewhere: refused, naming it. */
START_TEST(test_reached_through_a_planted_link)
{
        char outside[128], link[160], pwd[200];
        snprintf(outside, sizeof outside, "%s/outside", project);
        snprintf(link, sizeof link, "%s/inner/web", project);
        ck_assert_int_eq(mkdir(outside, 0755), 0);
        char inner[160];
        snprintf(inner, sizeof inner, "%s/inner", project);
        ck_assert_int_eq(mkdir(inner, 0755), 0);
        ck_assert_int_eq(symlink(outside, link), 0);
        ck_assert_int_eq(chdir(outside), 0);
        char *real = realpath(outside, NULL);
        snprintf(pwd, sizeof pwd, "%s", link);
        setenv("PWD", pwd, 1);
        /* No .ai-sandbox above the link: a link of the user's own, fine. */
        ck_assert_int_eq(project_check_reached(real, NULL), 0);
        ck_assert_int_eq(mkdir(settings, 0755), 0);
        aisb_error *err = NULL;
        ck_assert_int_eq(project_check_reached(real, &err), -EINVAL);
        ck_assert(strstr(aisb_error_message(err), link));
        aisb_error_free(err);
        /* The real path, or a $PWD that is not where we are: nothing to say. */
        setenv("PWD", real, 1);
        ck_assert_int_eq(project_check_reached(real, NULL), 0);
        setenv("PWD", "/", 1);
        ck_assert_int_eq(project_check_reached(real, NULL), 0);
        ck_assert_int_eq(chdir("/"), 0);
        free(real);
}
END_TEST

START_TEST(test_home_is_no_project)
{
        char home[128];
        snprintf(home, sizeof home, "%s/home", project);
        ck_assert_int_eq(mkdir(home, 0755), 0);
        setenv("HOME", home, 1);
        char *real = realpath(home, NULL), *top = realpath(project, NULL);
        aisb_error *err = NULL;
        ck_assert_int_eq(project_check_home(real, &err), -EINVAL);
        ck_assert(strstr(aisb_error_message(err), "your home"));
        aisb_error_free(err);
        err = NULL;
        ck_assert_int_eq(project_check_home(top, &err), -EINVAL);
        ck_assert(strstr(aisb_error_message(err), "above your home"));
        aisb_error_free(err);
        ck_assert_int_eq(project_check_home("/", NULL), -EINVAL);
        char below[200];
        snprintf(below, sizeof below, "%s/src", real);
        ck_assert_int_eq(project_check_home(below, NULL), 0);
        snprintf(below, sizeof below, "%s2", real); /* a sibling whose name starts alike */
        ck_assert_int_eq(project_check_home(below, NULL), 0);
        free(real);
        free(top);
}
END_TEST

/* What a run leaves in the project's modes, put right: a file made setuid or setgid since a
 * point in time loses the bits, one writable by others (or the group, with umask 022) loses
 * that, an ACL goes; a sticky directory keeps its write for all; what was so before stays (the
 * user's); a link is never followed; a directory made unsearchable is entered and keeps its
 * mode; one too deep is skipped and the walk goes on past it. */
typedef struct mode_seen {
        char paths[16][64];
        unsigned what[16];
        size_t n;
} mode_seen;

static void mode_seen_fn(const char *path, unsigned mode, unsigned what, void *userdata)
{
        mode_seen *s = userdata;
        ck_assert_uint_ne(what, 0);
        ck_assert_uint_lt(s->n, 16);
        s->what[s->n] = what;
        snprintf(s->paths[s->n++], sizeof s->paths[0], "%s", path ? path : "(null)");
        (void) mode;
}

static mode_t mode_of(const char *rel)
{
        char path[8192];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", project, rel);
        ck_assert_int_eq(lstat(path, &st), 0);
        return st.st_mode & 07777;
}

static void make_file(const char *rel, mode_t mode)
{
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", project, rel);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(fchmod(fd, mode), 0);
        close(fd);
}

static void make_dir(const char *rel, mode_t mode)
{
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", project, rel);
        ck_assert_int_eq(mkdir(path, 0700), 0);
        ck_assert_int_eq(chmod(path, mode), 0);
}

static const char *seen_path(const mode_seen *s, size_t i)
{
        return i < s->n ? s->paths[i] : "";
}

START_TEST(test_mode_sweep)
{
        char path[8192], outside[128];
        mode_t old_mask = umask(022);
        make_file("before", 04755);
        make_file("before-open", 0666);
        usleep(20000); /* past a tick of the coarse clock */
        struct timespec now;
        clock_gettime(CLOCK_REALTIME_COARSE, &now);
        long long since = (long long) now.tv_sec * 1000000000LL + now.tv_nsec;
        usleep(20000);
        make_file("tool", 04755);
        make_file("group", 02750);
        make_file("both", 06711);
        make_file("plain", 0755);
        make_file("open", 0666);
        make_dir("shared", 0777);
        make_dir("tmp", 01777);
        ck_assert_int_eq(chmod(project, 0777), 0); /* the project itself */
        make_dir("hidden", 0700);
        make_file("hidden/deep", 04700);
        snprintf(path, sizeof path, "%s/hidden", project);
        ck_assert_int_eq(chmod(path, 0111), 0);
        /* An ACL naming another user, as the agent sets one with setxattr. */
        make_file("acl", 0644);
        snprintf(path, sizeof path, "%s/acl", project);
        struct { uint32_t version; struct { uint16_t tag, perm; uint32_t id; } e[5]; } __attribute__((packed)) acl = {
                2, { { 0x01, 6, UINT32_MAX }, { 0x02, 6, 65534 }, { 0x04, 4, UINT32_MAX }, { 0x10, 6, UINT32_MAX },
                     { 0x20, 4, UINT32_MAX } } };
        ck_assert_int_eq(setxattr(path, "system.posix_acl_access", &acl, sizeof acl, 0), 0);
        /* A directory deeper than the walk goes, and a setuid file after it in the walk. */
        char deep[8192] = "a";
        for (int i = 1; i < TREE_MAX_DEPTH + 4; i++)
                strcat(deep, "/a");
        snprintf(path, sizeof path, "mkdir -p %s/%s", project, deep);
        ck_assert_int_eq(system(path), 0);
        make_file("zz-late", 04755);
        /* A link to a setuid file outside: neither the link nor its target is touched. */
        snprintf(outside, sizeof outside, "%s.outside", project);
        int fd = open(outside, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(fchmod(fd, 04755), 0);
        close(fd);
        snprintf(path, sizeof path, "%s/link", project);
        ck_assert_int_eq(symlink(outside, path), 0);

        _cleanup_close_ int root = open(project, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(root, 0);
        mode_seen seen = {};
        mode_sweep_result res = {};
        aisb_error *err = NULL;
        ck_assert_int_eq(mode_sweep(root, since, mode_seen_fn, &seen, &res, &err), 0);
        ck_assert_ptr_null(err);
        umask(old_mask);
        ck_assert_uint_eq(res.skipped, 1);
        ck_assert_uint_eq(res.changed, 10);
        /* The project first, then walk order: each directory's names sorted. */
        static const char *const order[] = { ".", "acl", "both", "group", "hidden/deep", "open", "shared", "tmp",
                                             "tool", "zz-late" };
        for (size_t i = 0; i < ELEMENTSOF(order); i++)
                ck_assert_str_eq(seen_path(&seen, i), order[i]);
        ck_assert_uint_eq(seen.what[0], MODE_SWEEP_WRITABLE);
        ck_assert(seen.what[1] & MODE_SWEEP_ACL); /* and its group write: the mask the ACL gave */
        ck_assert_uint_eq(seen.what[2], MODE_SWEEP_SETID);
        ck_assert_uint_eq(seen.what[5], MODE_SWEEP_WRITABLE);
        snprintf(path, sizeof path, "%s/acl", project);
        ck_assert_int_lt(getxattr(path, "system.posix_acl_access", NULL, 0), 0);
        ck_assert_uint_eq(mode_of("tool"), 0755);
        ck_assert_uint_eq(mode_of("group"), 0750);
        ck_assert_uint_eq(mode_of("both"), 0711);
        ck_assert_uint_eq(mode_of("open"), 0644);
        ck_assert_uint_eq(mode_of("shared"), 0755);
        ck_assert_uint_eq(mode_of("tmp"), 01755); /* sticky, but no longer writable by all */
        struct stat top;
        ck_assert_int_eq(stat(project, &top), 0);
        ck_assert_uint_eq(top.st_mode & 07777, 0755);
        ck_assert_uint_eq(mode_of("zz-late"), 0755);
        ck_assert_uint_eq(mode_of("hidden"), 0111); /* looked into, given its mode back */
        snprintf(path, sizeof path, "%s/hidden", project);
        ck_assert_int_eq(chmod(path, 0700), 0);
        ck_assert_uint_eq(mode_of("hidden/deep"), 0700);
        ck_assert_uint_eq(mode_of("plain"), 0755);
        ck_assert_uint_eq(mode_of("before"), 04755);
        ck_assert_uint_eq(mode_of("before-open"), 0666);
        struct stat st;
        ck_assert_int_eq(stat(outside, &st), 0);
        ck_assert_uint_eq(st.st_mode & 07777, 04755);
        unlink(outside);
}
END_TEST

static Suite *project_suite(void)
{
        Suite *s = suite_create("project");
        TCase *read = suite_add_tests(s, "settings", setup, teardown, test_absent_and_plain, test_settings_link_refused,
                                      test_bounds, test_created_for_a_run, test_reached_through_a_planted_link,
                                      test_home_is_no_project);
        tcase_add_loop_test(read, test_planted_file, 0, ELEMENTSOF(plants));
        suite_add_tests(s, "run-dir", setup, teardown, test_run_dir, test_mode_sweep);
        return s;
}

int main(void)
{
        return unit_run(project_suite());
}
