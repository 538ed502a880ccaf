/* SPDX-License-Identifier: MIT */
/* The policy: every key's checks, environment handling, env files, the config file. */
#include <check.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "internal.h"

static aisb_policy *new_policy(void)
{
        aisb_policy *p = NULL;
        ck_assert_int_eq(aisb_policy_new(&p, NULL), 0);
        return p;
}

static char *write_temp(const char *text, mode_t mode)
{
        char *path = strdup("/tmp/aisb-test-XXXXXX");
        int fd = mkstemp(path);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write_all(fd, text, strlen(text)), 0);
        ck_assert_int_eq(fchmod(fd, mode), 0);
        close(fd);
        return path;
}

/* Set key=value and expect failure with a message containing needle. */
static void expect_refused(aisb_policy *p, const char *key, const char *value, const char *needle)
{
        aisb_error *err = NULL;
        int r = aisb_policy_set(p, key, value, &err);
        ck_assert_msg(r < 0, "%s=%s was accepted", key, value ? value : "(null)");
        ck_assert_ptr_nonnull(err);
        ck_assert_msg(strstr(aisb_error_message(err), needle), "'%s' lacks '%s'",
                      aisb_error_message(err), needle);
        aisb_error_free(err);
}

START_TEST(test_defaults)
{
        aisb_policy *p = new_policy();
        char cwd[4096];
        ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
        ck_assert_str_eq(p->project, cwd);
        ck_assert_int_eq(p->net, SANDBOX_NET_ALLOW);
        ck_assert_uint_eq(p->memory, 4ULL << 30);
        ck_assert_uint_eq(p->cpus_milli, 2000);
        ck_assert_uint_eq(p->pids_limit, 1024);
        ck_assert(p->read_only);
        ck_assert_str_eq(policy_command(p)[0], "pi");
        aisb_policy_free(p);
}
END_TEST

START_TEST(test_values_checked)
{
        aisb_policy *p = new_policy();
        ck_assert_int_eq(aisb_policy_set(p, "memory", "512m", NULL), 0);
        ck_assert_uint_eq(p->memory, 512ULL << 20);
        ck_assert_int_eq(aisb_policy_set(p, "cpus", "1.5", NULL), 0);
        ck_assert_uint_eq(p->cpus_milli, 1500);
        ck_assert_int_eq(aisb_policy_set(p, "cpus", "0.25", NULL), 0);
        ck_assert_uint_eq(p->cpus_milli, 250);
        ck_assert_int_eq(aisb_policy_set(p, "pids-limit", "64", NULL), 0);
        ck_assert_uint_eq(p->pids_limit, 64);
        ck_assert_int_eq(aisb_policy_set(p, "read-only", "false", NULL), 0);
        ck_assert(!p->read_only);
        ck_assert_int_eq(aisb_policy_set(p, "read-only", NULL, NULL), 0);
        ck_assert(p->read_only);
        ck_assert_int_eq(aisb_policy_set(p, "net", "full", NULL), 0);
        ck_assert_int_eq(p->net, SANDBOX_NET_FULL);
        ck_assert_int_eq(aisb_policy_set(p, "base-image", "bootstrap:debian:trixie", NULL), 0);

        expect_refused(p, "memory", "lots", "memory");
        expect_refused(p, "memory", "1k", "memory");
        expect_refused(p, "memory", "99999999999999999999g", "memory");
        expect_refused(p, "cpus", "0", "cpus");
        expect_refused(p, "cpus", "1.2345", "cpus");
        expect_refused(p, "cpus", "-1", "cpus");
        expect_refused(p, "cpus", ".5", "cpus");
        expect_refused(p, "pids-limit", "3", "pids-limit");
        expect_refused(p, "read-only", "maybe", "boolean");
        expect_refused(p, "net", "everything", "allow, none or full");
        expect_refused(p, "install", "git; rm -rf /", "package");
        expect_refused(p, "install", "-y", "package");
        expect_refused(p, "base-image", "ubuntu\nRUN evil", "image reference");
        expect_refused(p, "base-image", "bootstrap:debian:../x", "bootstrap:debian:SUITE");
        expect_refused(p, "base-image", "bootstrap:fedora:40", "bootstrap:debian:SUITE");
        expect_refused(p, "home-volume", "../etc", "volume name");
        expect_refused(p, "frobnicate", "1", "unknown key");
        expect_refused(p, "memory", NULL, "value is required");
        /* A refused value leaves the old one. */
        ck_assert_uint_eq(p->memory, 512ULL << 20);
        aisb_policy_free(p);
}
END_TEST

START_TEST(test_env)
{
        aisb_policy *p = new_policy();
        size_t base = p->n_env;
        setenv("AISB_TEST_TOKEN", "s3cret", 1);
        ck_assert_int_eq(aisb_policy_set(p, "env", "AISB_TEST_TOKEN", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "env", "OTHER=a=b", NULL), 0);
        ck_assert_uint_eq(p->n_env, base + 2);
        ck_assert_str_eq(p->env[base].value, "s3cret");
        ck_assert_str_eq(p->env[base + 1].value, "a=b");
        /* Re-setting replaces, never duplicates. */
        ck_assert_int_eq(aisb_policy_set(p, "env", "OTHER=c", NULL), 0);
        ck_assert_uint_eq(p->n_env, base + 2);
        unsetenv("AISB_TEST_UNSET");
        expect_refused(p, "env", "AISB_TEST_UNSET", "not set");
        expect_refused(p, "env", "1BAD=x", "not a variable name");
        expect_refused(p, "env", "=x", "not a variable name");

        char *text = NULL;
        ck_assert_int_eq(aisb_policy_format(p, &text, NULL), 0);
        ck_assert_ptr_nonnull(strstr(text, "env=AISB_TEST_TOKEN\n"));
        ck_assert_ptr_null(strstr(text, "s3cret"));
        free(text);
        aisb_policy_free(p);
}
END_TEST

START_TEST(test_only_named_env_inherited)
{
        setenv("HOME_SECRET_TEST", "x", 1);
        setenv("TERM", "xterm-test", 1);
        aisb_policy *p = new_policy();
        bool term = false;
        for (size_t i = 0; i < p->n_env; i++) {
                ck_assert_str_ne(p->env[i].name, "HOME_SECRET_TEST");
                ck_assert_str_ne(p->env[i].name, "PATH");
                if (streq(p->env[i].name, "TERM"))
                        term = streq(p->env[i].value, "xterm-test");
        }
        ck_assert(term);
        aisb_policy_free(p);
}
END_TEST

START_TEST(test_env_file_parse)
{
        static const char text[] = "# comment\n\nA=1\n  B= kept as is \r\nC=\nA=2\n";
        env_entry *e = NULL;
        size_t n = 0;
        ck_assert_int_eq(policy_env_file_parse(text, sizeof text - 1, "f", &e, &n, NULL), 0);
        ck_assert_uint_eq(n, 3);
        ck_assert_str_eq(e[0].name, "A");
        ck_assert_str_eq(e[0].value, "2");
        ck_assert_str_eq(e[1].name, "B");
        ck_assert_str_eq(e[1].value, " kept as is ");
        ck_assert_str_eq(e[2].value, "");
        env_entries_free(e, n);

        static const char *const bad[] = { "NOEQUALS\n", "1A=x\n", "A B=x\n", "=x\n", "B =x\n" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                aisb_error *err = NULL;
                e = NULL;
                n = 0;
                ck_assert_int_lt(policy_env_file_parse(bad[i], strlen(bad[i]), "f", &e, &n, &err), 0);
                ck_assert_ptr_nonnull(strstr(aisb_error_message(err), "f:1:"));
                aisb_error_free(err);
                env_entries_free(e, n);
        }
        static const char nul[] = "A=x\0y\n";
        aisb_error *err = NULL;
        e = NULL;
        n = 0;
        ck_assert_int_lt(policy_env_file_parse(nul, sizeof nul - 1, "f", &e, &n, &err), 0);
        aisb_error_free(err);
        env_entries_free(e, n);
}
END_TEST

START_TEST(test_env_file_mode)
{
        aisb_policy *p = new_policy();
        char *open_file = write_temp("TOKEN=abc\n", 0644);
        expect_refused(p, "env-file", open_file, "mode 0600");
        char *good = write_temp("TOKEN=abc\n", 0600);
        ck_assert_int_eq(aisb_policy_set(p, "env-file", good, NULL), 0);
        ck_assert_str_eq(p->env[p->n_env - 1].value, "abc");
        expect_refused(p, "env-file", "/nonexistent/env", "cannot open");
        expect_refused(p, "env-file", "/tmp", "regular file");
        unlink(open_file);
        unlink(good);
        free(open_file);
        free(good);
        aisb_policy_free(p);
}
END_TEST

START_TEST(test_mounts)
{
        aisb_policy *p = new_policy();
        ck_assert_int_eq(aisb_policy_set(p, "mount", "/tmp:/data:ro", NULL), 0);
        ck_assert_str_eq(p->mounts[0].source, "/tmp");
        ck_assert_str_eq(p->mounts[0].destination, "/data");
        ck_assert(p->mounts[0].read_only);
        ck_assert_int_eq(aisb_policy_set(p, "mount", "/tmp:/data2", NULL), 0);
        ck_assert(!p->mounts[1].read_only);
        expect_refused(p, "mount", "/does/not/exist:/x", "source");
        expect_refused(p, "mount", "/tmp", "SRC:DST");
        expect_refused(p, "mount", "/tmp:relative", "absolute");
        expect_refused(p, "mount", "/tmp:/a/../b", "normalised");
        expect_refused(p, "mount", "/tmp:/x:rx", "ro or rw");
        expect_refused(p, "mount", ":/x", "SRC:DST");
        ck_assert_int_eq(aisb_policy_set(p, "no-cwd", NULL, NULL), 0);
        ck_assert_ptr_null(p->project);
        aisb_policy_free(p);
}
END_TEST

/* A --mount source the agent could have chosen: a link it planted in the project, or any
 * path inside the project (which it could swap for a link before podman mounts it). */
START_TEST(test_mount_sources_in_project)
{
        char dir[] = "/tmp/aisb-test-mounts-XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(dir));
        char project[256], outside[256], link[256], sub[256], spec[600];
        snprintf(project, sizeof project, "%s/project", dir);
        snprintf(outside, sizeof outside, "%s/outside", dir);
        snprintf(link, sizeof link, "%s/project/data", dir);
        snprintf(sub, sizeof sub, "%s/project/sub", dir);
        ck_assert_int_eq(mkdir(project, 0700), 0);
        ck_assert_int_eq(mkdir(outside, 0700), 0);
        ck_assert_int_eq(mkdir(sub, 0700), 0);
        ck_assert_int_eq(symlink(outside, link), 0);

        aisb_policy *p = new_policy();
        ck_assert_int_eq(aisb_policy_set(p, "project", project, NULL), 0);
        snprintf(spec, sizeof spec, "%s:/data", link);
        expect_refused(p, "mount", spec, "symbolic link");
        snprintf(spec, sizeof spec, "%s/../data/:/data", sub);
        expect_refused(p, "mount", spec, "symbolic link");
        snprintf(spec, sizeof spec, "%s:/sub", sub);
        expect_refused(p, "mount", spec, "inside the project");
        ck_assert_uint_eq(p->n_mounts, 0);
        /* The real path outside is fine, and so is a link outside the project. */
        snprintf(spec, sizeof spec, "%s:/data:ro", outside);
        ck_assert_int_eq(aisb_policy_set(p, "mount", spec, NULL), 0);
        ck_assert_str_eq(p->mounts[0].source, outside);
        char outer_link[256];
        snprintf(outer_link, sizeof outer_link, "%s/outer-link", dir);
        ck_assert_int_eq(symlink(outside, outer_link), 0);
        snprintf(spec, sizeof spec, "%s:/data2", outer_link);
        ck_assert_int_eq(aisb_policy_set(p, "mount", spec, NULL), 0);
        ck_assert_str_eq(p->mounts[1].source, outside);
        /* The project itself is no link the agent made. */
        snprintf(spec, sizeof spec, "%s:/again:ro", project);
        ck_assert_int_eq(aisb_policy_set(p, "mount", spec, NULL), 0);
        /* Moving the project over a mounted path is refused too. */
        expect_refused(p, "project", dir, "inside");
        aisb_policy_free(p);

        (void) unlink(outer_link);
        (void) unlink(link);
        (void) rmdir(sub);
        (void) rmdir(project);
        (void) rmdir(outside);
        (void) rmdir(dir);
}
END_TEST

/* One home volume per project by default, so one project's agent cannot plant ~/.bashrc for
 * another's; a named volume (or AISB_HOME_VOLUME) is the explicit choice to share. */
START_TEST(test_home_volume_per_project)
{
        unsetenv("AISB_HOME_VOLUME");
        aisb_policy *p = new_policy();
        ck_assert_int_eq(aisb_policy_set(p, "project", "/tmp", NULL), 0);
        ck_assert(startswith(p->home_volume, "aisb-home-tmp-"));
        _cleanup_free_ char *tmp_volume = strdup(p->home_volume);
        ck_assert_int_eq(aisb_policy_set(p, "project", "/", NULL), 0);
        ck_assert(startswith(p->home_volume, "aisb-home-root-"));
        ck_assert_str_ne(p->home_volume, tmp_volume);
        ck_assert_int_eq(aisb_policy_set(p, "project", "/tmp", NULL), 0);
        ck_assert_str_eq(p->home_volume, tmp_volume);
        ck_assert_int_eq(aisb_policy_set(p, "no-cwd", NULL, NULL), 0);
        ck_assert_str_eq(p->home_volume, "aisb-home-scratch");
        ck_assert_int_eq(aisb_policy_set(p, "home-volume", "shared-home", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "project", "/tmp", NULL), 0);
        ck_assert_str_eq(p->home_volume, "shared-home");
        aisb_policy_free(p);

        setenv("AISB_HOME_VOLUME", "from-env", 1);
        p = new_policy();
        ck_assert_str_eq(p->home_volume, "from-env");
        aisb_policy_free(p);
        unsetenv("AISB_HOME_VOLUME");
}
END_TEST

START_TEST(test_config_file)
{
        aisb_policy *p = new_policy();
        char *path = write_temp("# defaults\nmemory = 2g\n\ncpus=1\n  install = ripgrep  \n", 0644);
        ck_assert_int_eq(aisb_policy_load_config(p, path, 0, NULL), 0);
        ck_assert_uint_eq(p->memory, 2ULL << 30);
        ck_assert_uint_eq(p->cpus_milli, 1000);
        ck_assert_str_eq(p->install[0], "ripgrep");
        unlink(path);
        free(path);

        path = write_temp("memory = 2g\nbogus\n", 0644);
        aisb_error *err = NULL;
        ck_assert_int_lt(aisb_policy_load_config(p, path, 0, &err), 0);
        ck_assert_ptr_nonnull(strstr(aisb_error_message(err), ":2: expected key = value"));
        aisb_error_free(err);
        unlink(path);
        free(path);

        path = write_temp("memory = huge\n", 0644);
        err = NULL;
        ck_assert_int_lt(aisb_policy_load_config(p, path, 0, &err), 0);
        ck_assert_ptr_nonnull(strstr(aisb_error_message(err), ":1: memory:"));
        aisb_error_free(err);
        unlink(path);
        free(path);

        /* A secret value in a config file is refused: it is not mode-checked. */
        path = write_temp("env = TOKEN=abc\n", 0644);
        err = NULL;
        ck_assert_int_lt(aisb_policy_load_config(p, path, 0, &err), 0);
        ck_assert_ptr_nonnull(strstr(aisb_error_message(err), "env-file"));
        aisb_error_free(err);
        unlink(path);
        free(path);

        ck_assert_int_eq(aisb_policy_load_config(p, "/nonexistent/config", 1, NULL), 0);
        ck_assert_int_lt(aisb_policy_load_config(p, "/nonexistent/config", 0, NULL), 0);
        aisb_policy_free(p);
}
END_TEST

START_TEST(test_command)
{
        aisb_policy *p = new_policy();
        const char *const argv[] = { "ls", "-la", NULL };
        ck_assert_int_eq(aisb_policy_set_command(p, argv, NULL), 0);
        ck_assert_str_eq(policy_command(p)[1], "-la");
        ck_assert_int_eq(aisb_policy_set(p, "shell", "true", NULL), 0);
        ck_assert_str_eq(policy_command(p)[0], "bash");
        ck_assert_int_eq(aisb_policy_set(p, "shell", "false", NULL), 0);
        ck_assert_int_eq(aisb_policy_set_command(p, NULL, NULL), 0);
        ck_assert_str_eq(policy_command(p)[0], "pi");
        aisb_policy_free(p);
}
END_TEST

START_TEST(test_sizes)
{
        unsigned long long v;
        ck_assert_int_eq(parse_size("1024", &v), 0);
        ck_assert_uint_eq(v, 1024);
        ck_assert_int_eq(parse_size("4G", &v), 0);
        ck_assert_uint_eq(v, 4ULL << 30);
        ck_assert_int_lt(parse_size("", &v), 0);
        ck_assert_int_lt(parse_size("g", &v), 0);
        ck_assert_int_lt(parse_size("1x", &v), 0);
        ck_assert_int_lt(parse_size("-1", &v), 0);
        ck_assert_int_lt(parse_size("20000000000t", &v), 0);
}
END_TEST

START_TEST(test_shipped_examples)
{
        /* config/ ships examples: they must say only what aisb accepts. */
        const char *src = getenv("AISB_SRC");
        ck_assert_ptr_nonnull(src);
        char path[4096];
        aisb_policy *p = new_policy();
        snprintf(path, sizeof path, "%s/config/config.example", src);
        aisb_error *err = NULL;
        int r = aisb_policy_load_config(p, path, 0, &err);
        ck_assert_msg(r == 0, "%s", aisb_error_message(err));
        /* Uncommented, every line must be a key aisb knows (values aside). */
        FILE *f = fopen(path, "re");
        ck_assert_ptr_nonnull(f);
        char line[512];
        while (fgets(line, sizeof line, f)) {
                char key[64];
                int matched = 0;
                if (sscanf(line, "# %63[a-z-] =%n", key, &matched) == 1 && matched > 0) {
                        aisb_error *e = NULL;
                        aisb_policy_set(p, key, "x", &e);
                        ck_assert_msg(!e || !strstr(aisb_error_message(e), "unknown key"),
                                      "config.example names unknown key %s", key);
                        aisb_error_free(e);
                }
        }
        fclose(f);
        snprintf(path, sizeof path, "%s/config/allow.example", src);
        allowlist l = {};
        r = allowlist_load_file(&l, path, 0, &err);
        ck_assert_msg(r == 0, "%s", aisb_error_message(err));
        ck_assert_uint_eq(l.n, 1);
        /* And each example entry in its comments parses. */
        f = fopen(path, "re");
        ck_assert_ptr_nonnull(f);
        while (fgets(line, sizeof line, f)) {
                char entry[256];
                /* Example entries are indented three spaces; prose is not. */
                if (strncmp(line, "#   ", 4) == 0 && line[4] != ' ' &&
                    sscanf(line + 4, "%255s", entry) == 1 && !strchr(entry, '-')) {
                        aisb_error *e = NULL;
                        ck_assert_msg(allowlist_add(&l, entry, "example", &e) == 0, "%s: %s", entry,
                                      aisb_error_message(e));
                }
        }
        fclose(f);
        allowlist_done(&l);
        aisb_policy_free(p);
}
END_TEST

static Suite *policy_suite(void)
{
        Suite *s = suite_create("policy");
        TCase *keys = tcase_create("keys");
        tcase_add_test(keys, test_defaults);
        tcase_add_test(keys, test_values_checked);
        tcase_add_test(keys, test_mounts);
        tcase_add_test(keys, test_mount_sources_in_project);
        tcase_add_test(keys, test_home_volume_per_project);
        tcase_add_test(keys, test_command);
        tcase_add_test(keys, test_sizes);
        suite_add_tcase(s, keys);
        TCase *env = tcase_create("environment");
        tcase_add_test(env, test_env);
        tcase_add_test(env, test_only_named_env_inherited);
        tcase_add_test(env, test_env_file_parse);
        tcase_add_test(env, test_env_file_mode);
        suite_add_tcase(s, env);
        TCase *config = tcase_create("config");
        tcase_add_test(config, test_config_file);
        tcase_add_test(config, test_shipped_examples);
        suite_add_tcase(s, config);
        return s;
}

int main(void)
{
        SRunner *sr = srunner_create(policy_suite());
        srunner_run_all(sr, CK_NORMAL);
        int failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
