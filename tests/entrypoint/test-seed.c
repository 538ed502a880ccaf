/* SPDX-License-Identifier: MIT */
/* Seeding a fresh home from the read-only bridge directory: regular files only, the
 * destination made without following links, bounded. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "seed.h"
#include "suites.h"
#include "../suite-table.h"

static char top[64], src[96], dest[128];

static void setup(void)
{
        snprintf(top, sizeof(top), "/tmp/aisb-seed-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(top));
        snprintf(src, sizeof(src), "%s/src", top);
        snprintf(dest, sizeof(dest), "%s/home/.pi/agent", top);
        ck_assert_int_eq(mkdir(src, 0755), 0);
}

static void teardown(void)
{
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
        ck_assert_int_eq(system(cmd), 0);
}

static void put(const char *dir, const char *name, const char *text)
{
        char path[256];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        FILE *f = fopen(path, "we");
        ck_assert_ptr_nonnull(f);
        ck_assert_int_ge(fputs(text, f), 0);
        ck_assert_int_eq(fclose(f), 0);
}

static void expect_file(const char *name, const char *text)
{
        char path[256], buf[128] = "";
        snprintf(path, sizeof(path), "%s/%s", dest, name);
        FILE *f = fopen(path, "re");
        ck_assert_msg(f != NULL, "%s missing", path);
        ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
        fclose(f);
        ck_assert_str_eq(buf, text);
}

START_TEST(copies_regular_files)
{
        char err[256] = "", path[256];
        put(src, "settings.json", "{}\n");
        put(src, "models.json", "{\"providers\":{}}\n");
        snprintf(path, sizeof(path), "%s/fifo", src);
        ck_assert_int_eq(mkfifo(path, 0644), 0);
        snprintf(path, sizeof(path), "%s/link", src);
        ck_assert_int_eq(symlink("/etc/hostname", path), 0);
        ck_assert_int_eq(seed_copy(src, dest, err, sizeof(err)), 0);
        expect_file("settings.json", "{}\n");
        expect_file("models.json", "{\"providers\":{}}\n");
        struct stat st;
        snprintf(path, sizeof(path), "%s/fifo", dest);
        ck_assert_int_lt(lstat(path, &st), 0);
        snprintf(path, sizeof(path), "%s/link", dest);
        ck_assert_int_lt(lstat(path, &st), 0);
        ck_assert_int_eq(lstat(dest, &st), 0);
        ck_assert_uint_eq(st.st_mode & 0777, 0700);
        /* Seeding again over what is there replaces the files. */
        put(src, "settings.json", "{\"a\":1}\n");
        ck_assert_int_eq(seed_copy(src, dest, err, sizeof(err)), 0);
        expect_file("settings.json", "{\"a\":1}\n");
}
END_TEST

START_TEST(never_through_a_link)
{
        char err[256] = "", home[128], elsewhere[128];
        put(src, "settings.json", "{}\n");
        snprintf(home, sizeof(home), "%s/home", top);
        snprintf(elsewhere, sizeof(elsewhere), "%s/elsewhere", top);
        ck_assert_int_eq(mkdir(elsewhere, 0755), 0);
        ck_assert_int_eq(symlink(elsewhere, home), 0);
        ck_assert_int_lt(seed_copy(src, dest, err, sizeof(err)), 0);
        ck_assert(strstr(err, dest));
        struct stat st;
        char below[160];
        snprintf(below, sizeof(below), "%s/.pi", elsewhere);
        ck_assert_int_lt(lstat(below, &st), 0);
}
END_TEST

START_TEST(bounded)
{
        char err[256] = "";
        for (int i = 0; i <= SEED_MAX_FILES; i++) {
                char name[32];
                snprintf(name, sizeof(name), "f%d", i);
                put(src, name, "x");
        }
        ck_assert_int_lt(seed_copy(src, dest, err, sizeof(err)), 0);
        ck_assert(strstr(err, "more than"));
}
END_TEST

Suite *seed_suite(void)
{
        Suite *s = suite_create("seed");
        suite_add_tests(s, "copy", setup, teardown, copies_regular_files, never_through_a_link, bounded);
        return s;
}
