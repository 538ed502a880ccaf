/* SPDX-License-Identifier: MIT */
/* The policy: every key's checks, the key table (set, get, text, defaults, the image), what
 * is taken from the environment and when, env files, the config file. */
#include <check.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "config.h"
#include "internal.h"
#include "../suite-table.h"
#include "unit.h"
#include "fileio.h"

/* A policy as aisb(1) makes one: the defaults, then the process's environment. */
static aisb_policy *new_policy(void)
{
        aisb_policy *p = NULL;
        ck_assert_int_eq(aisb_policy_new(&p, NULL), 0);
        ck_assert_int_eq(aisb_policy_apply_environment(p, NULL), 0);
        return p;
}

/* The defaults alone. */
static aisb_policy *pure_policy(void)
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
        aisb_policy *p = pure_policy();
        ck_assert_ptr_null(p->project);
        aisb_policy_free(p);
        p = new_policy();
        char cwd[4096];
        ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
        ck_assert_str_eq(p->project, cwd);
        ck_assert(p->project_is_cwd);
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

        static const char *const refused[][3] = {
                { "memory", "lots", "memory" },
                { "memory", "1k", "memory" },
                { "memory", "99999999999999999999g", "memory" },
                { "cpus", "0", "cpus" },
                { "cpus", "1.2345", "cpus" },
                { "cpus", "-1", "cpus" },
                { "cpus", ".5", "cpus" },
                { "pids-limit", "3", "pids-limit" },
                { "read-only", "maybe", "boolean" },
                { "net", "everything", "allow, none or full" },
                { "install", "git; rm -rf /", "package" },
                { "install", "-y", "package" },
                { "bridge-carry", "gemini:model", "is not HARNESS:KEY (HARNESS pi, pi-models, claude or codex" },
                { "bridge-carry", "claude", "is not HARNESS:KEY" },
                { "bridge-carry", "claude:env..X", "is not HARNESS:KEY" },
                { "base-image", "ubuntu\nRUN evil", "image reference" },
                { "base-image", "bootstrap:debian:../x", "bootstrap:debian:SUITE" },
                { "base-image", "bootstrap:fedora:40", "bootstrap:debian:SUITE" },
                { "home-volume", "../etc", "volume name" },
                { "frobnicate", "1", "unknown key" },
                { "memory", NULL, "value is required" },
                { "mount", "/does/not/exist:/x", "source" },
                { "mount", "/tmp", "SRC:DST" },
                { "mount", "/tmp:relative", "absolute" },
                { "mount", "/tmp:/a/../b", "normalised" },
                { "mount", "/tmp:/x:rx", "ro or rw" },
                { "mount", ":/x", "SRC:DST" },
                /* --device: one node by its own path, not a directory (every device below it) or a
                 * link (which the service resolves in its own process: /dev/stdin is its stdin). */
                { "device", "/dev/stdin", "a symbolic link" },
                { "device", "/dev/fd", "a symbolic link" },
                { "device", "/dev/", "a directory" },
                { "device", "/dev/.", "a directory" },
                { "device", "/dev/shm", "a directory" },
                { "device", "/dev/../etc/passwd", "not /dev/NAME" },
                { "device", "/etc/passwd", "not /dev/NAME" },
                { "device", "/dev/no-such-device", "No such file" },
        };
        for (size_t i = 0; i < ELEMENTSOF(refused); i++)
                expect_refused(p, refused[i][0], refused[i][1], refused[i][2]);
        /* A refused value leaves the old one, and adds nothing. */
        ck_assert_uint_eq(p->memory, 512ULL << 20);
        ck_assert_uint_eq(p->n_mounts, 0);
        ck_assert_ptr_null(p->devices);
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
        /* What the agent may plant at the name the user passes (.env in the project): a link
         * to another file of the user's, a FIFO that would block the open. */
        char link[PATH_MAX], fifo[PATH_MAX];
        snprintf(link, sizeof link, "%s.link", good);
        snprintf(fifo, sizeof fifo, "%s.fifo", good);
        ck_assert_int_eq(symlink(good, link), 0);
        ck_assert_int_eq(mkfifo(fifo, 0600), 0);
        expect_refused(p, "env-file", link, "is a symbolic link");
        expect_refused(p, "env-file", fifo, "regular file");
        unlink(link);
        unlink(fifo);
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
        ck_assert_int_eq(aisb_policy_set(p, "no-cwd", NULL, NULL), 0);
        ck_assert_ptr_null(p->project);
        aisb_policy_free(p);
}
END_TEST

/* --device: a node by its own path, or a CDI name; what it refuses is in test_values_checked's
 * table. */
START_TEST(test_devices)
{
        aisb_policy *p = new_policy();
        ck_assert_int_eq(aisb_policy_set(p, "device", "/dev/null", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "device", "/dev/zero:/dev/z:r", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "device", "nvidia.com/gpu=all", NULL), 0);
        ck_assert_uint_eq(strv_length((const char *const *) p->devices), 3);
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

        /* A secret value in a config file is refused too: the file is not mode-checked. */
        static const struct {
                const char *text, *needle;
        } refused[] = {
                { "memory = 2g\nbogus\n", ":2: expected key = value" },
                { "memory = huge\n", ":1: memory:" },
                { "env = TOKEN=abc\n", "env-file" },
        };
        for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
                path = write_temp(refused[i].text, 0644);
                aisb_error *err = NULL;
                ck_assert_int_lt(aisb_policy_load_config(p, path, 0, &err), 0);
                ck_assert_ptr_nonnull(strstr(aisb_error_message(err), refused[i].needle));
                aisb_error_free(err);
                unlink(path);
                free(path);
        }

        ck_assert_int_eq(aisb_policy_load_config(p, "/nonexistent/config", AISB_CONFIG_OPTIONAL, NULL), 0);
        ck_assert_int_lt(aisb_policy_load_config(p, "/nonexistent/config", 0, NULL), 0);
        /* A flag it does not know is refused, not taken for "optional". */
        ck_assert_int_eq(aisb_policy_load_config(p, "/nonexistent/config", 1u << 7, NULL), -EINVAL);
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

/* ---- the key table ---- */

/* One valid value of a key, what aisb_policy_get() gives back for it, and the line the
 * policy's text shows; a repeatable key has a second value. */
typedef struct key_sample {
        const char *key;
        char value[512];
        char got[512];
        char line[600];
        char second[512];
} key_sample;

static char sample_dir[64];
static key_sample samples[64];
static size_t n_samples;

static void write_file(const char *path, const char *text, mode_t mode)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write_all(fd, text, strlen(text)), 0);
        ck_assert_int_eq(fchmod(fd, mode), 0);
        close(fd);
}

static key_sample *sample(const char *key, const char *value, const char *got)
{
        ck_assert_uint_lt(n_samples, ELEMENTSOF(samples));
        key_sample *s = &samples[n_samples++];
        s->key = key;
        snprintf(s->value, sizeof s->value, "%s", value);
        snprintf(s->got, sizeof s->got, "%s", got ? got : value);
        snprintf(s->line, sizeof s->line, "%s=%s", key, got ? got : value);
        return s;
}

/* A directory of what the samples name (files, directories, a second entrypoint), and one
 * sample per key. */
static void samples_setup(void)
{
        snprintf(sample_dir, sizeof sample_dir, "/tmp/aisb-test-keys-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(sample_dir));
        char path[256], other[256];
        static const char *const dirs[] = { "project", "other-project", "data", "data2", "agents" };
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                snprintf(path, sizeof path, "%s/%s", sample_dir, dirs[i]);
                ck_assert_int_eq(mkdir(path, 0700), 0);
        }
        static const char pem[] = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
        snprintf(path, sizeof path, "%s/one.pem", sample_dir);
        write_file(path, pem, 0644);
        snprintf(path, sizeof path, "%s/two.pem", sample_dir);
        write_file(path, "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n", 0644);
        snprintf(path, sizeof path, "%s/one.env", sample_dir);
        write_file(path, "ONE=1\n", 0600);
        snprintf(path, sizeof path, "%s/two.env", sample_dir);
        write_file(path, "TWO=2\n", 0600);
        snprintf(path, sizeof path, "%s/patch.json", sample_dir);
        write_file(path, "{\"labels\":{\"team\":\"x\"}}\n", 0600);
        /* Another entrypoint: the built one with a byte more. */
        const char *entrypoint = getenv("AISB_ENTRYPOINT");
        ck_assert_msg(entrypoint, "AISB_ENTRYPOINT is not set (meson sets it)");
        int in = open(entrypoint, O_RDONLY | O_CLOEXEC);
        ck_assert_int_ge(in, 0);
        char *bytes = NULL;
        size_t size = 0;
        ck_assert_int_eq(read_full_fd(in, 64 << 20, &bytes, &size), 0);
        close(in);
        snprintf(path, sizeof path, "%s/entrypoint", sample_dir);
        int out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
        ck_assert_int_ge(out, 0);
        ck_assert_int_eq(write_all(out, bytes, size), 0);
        ck_assert_int_eq(write_all(out, "\n", 1), 0);
        close(out);
        free(bytes);
        setenv("AISB_TEST_SAMPLE", "sample-value", 1);
        setenv("AISB_TEST_SAMPLE2", "sample-value-2", 1);

        n_samples = 0;
        snprintf(path, sizeof path, "%s/other-project", sample_dir);
        sample("project", path, NULL);
        sample("base-image", "bootstrap:debian:trixie", NULL);
        snprintf(sample("install", "ripgrep", NULL)->second, sizeof samples[0].second, "jq");
        snprintf(path, sizeof path, "%s/one.pem", sample_dir);
        snprintf(other, sizeof other, "%s/two.pem", sample_dir);
        snprintf(sample("ca-cert", path, NULL)->second, sizeof samples[0].second, "%s", other);
        sample("harness", "codex", NULL);
        sample("node-source", "npm", NULL);
        snprintf(path, sizeof path, "%s/entrypoint", sample_dir);
        sample("entrypoint", path, NULL);
        sample("net", "none", NULL);
        sample("protect", ".git,tools/hooks", NULL);
        sample("review", "true", NULL);
        sample("undo", "off", NULL);
        key_sample *s = sample("allow", "Example.COM:8443", "example.com:8443");
        snprintf(s->line, sizeof s->line, "allow=example.com:8443 # --allow");
        snprintf(s->second, sizeof s->second, "192.0.2.0/24");
        sample("no-gate", "true", NULL);
        sample("proxy", "127.0.0.1:3128", NULL);
        snprintf(sample("gate-add-host", "db.internal:10.0.0.5", NULL)->second, sizeof samples[0].second,
                 "cache.internal:10.0.0.6");
        sample("network-backend", "pasta", NULL);
        sample("user-allowlist", "", NULL);
        /* Names only: the value stays inside the policy. */
        snprintf(sample("env", "AISB_TEST_SAMPLE", NULL)->second, sizeof samples[0].second, "AISB_TEST_SAMPLE2");
        snprintf(path, sizeof path, "%s/one.env", sample_dir);
        snprintf(other, sizeof other, "%s/two.env", sample_dir);
        snprintf(sample("env-file", path, NULL)->second, sizeof samples[0].second, "%s", other);
        char spec[300];
        snprintf(spec, sizeof spec, "%s/data:/data:ro", sample_dir);
        s = sample("mount", spec, NULL);
        snprintf(s->second, sizeof s->second, "%s/data2:/data2", sample_dir);
        snprintf(sample("device", "/dev/null", NULL)->second, sizeof samples[0].second, "/dev/zero");
        snprintf(sample("secret", "AISB_TEST_SAMPLE@api.example.com",
                        "AISB_TEST_SAMPLE@api.example.com/Authorization:Bearer")->second, sizeof samples[0].second,
                 "AISB_TEST_SAMPLE2@api.other.example/x-api-key");
        sample("gate-idle-stop", "600", NULL);
        sample("ask", "tty", NULL);
        sample("ask-timeout", "5", NULL);
        sample("no-cwd", "true", NULL);
        sample("memory", "512m", NULL);
        sample("cpus", "1.5", NULL);
        sample("pids-limit", "64", NULL);
        sample("tmp-size", "256m", NULL);
        sample("read-only", "false", NULL);
        sample("ephemeral-home", "true", NULL);
        sample("home-volume", "shared-home", NULL);
        sample("shell", "true", NULL);
        sample("thinking", "low", NULL);
        sample("no-pi-config", "true", NULL);
        sample("no-harness-config", "true", NULL);
        sample("no-harness-keys", "true", NULL);
        snprintf(sample("bridge-carry", "claude:colorScheme2", NULL)->second, sizeof samples[0].second,
                 "codex:profiles.*.model");
        sample("no-agents", "true", NULL);
        snprintf(path, sizeof path, "%s/agents", sample_dir);
        sample("agents-dir", path, NULL);
        sample("allow-unenforced", "true", NULL);
        sample("insecure-keep-root", "true", NULL);
        snprintf(path, sizeof path, "%s/patch.json", sample_dir);
        s = sample("unsafe-create-patch", path, NULL);
        snprintf(s->line, sizeof s->line, "unsafe-create-patch=%s (sha256 ", path);
        sample("insecure-allow-host-ranges", "true", NULL);
}

static void samples_teardown(void)
{
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", sample_dir);
        ck_assert_int_eq(system(cmd), 0);
}

static const key_sample *sample_of(const char *key)
{
        for (size_t i = 0; i < n_samples; i++)
                if (streq(samples[i].key, key))
                        return &samples[i];
        return NULL;
}

/* The defaults, a project of its own and the built entrypoint (its image can be hashed),
 * nothing from this process's environment. */
static aisb_policy *sample_policy(void)
{
        aisb_policy *p = pure_policy();
        char project[128];
        snprintf(project, sizeof project, "%s/project", sample_dir);
        ck_assert_int_eq(aisb_policy_set(p, "project", project, NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "entrypoint", getenv("AISB_ENTRYPOINT"), NULL), 0);
        return p;
}

static char *get_value(const aisb_policy *p, const char *key)
{
        char *value = NULL;
        aisb_error *err = NULL;
        int r = aisb_policy_get(p, key, &value, &err);
        ck_assert_msg(r == 0, "get %s: %s", key, err ? aisb_error_message(err) : "?");
        return value;
}

static bool has_line_starting(const char *text, const char *start)
{
        size_t n = strlen(start);
        for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
                if (strncmp(line, start, n) == 0 && (line[n] == '\n' || start[n - 1] == ' '))
                        return true;
        return false;
}

START_TEST(test_key_table)
{
        size_t n = aisb_policy_key_count();
        ck_assert_uint_ge(n, 35);
        ck_assert_ptr_null(aisb_policy_key_at(n));
        ck_assert_ptr_null(aisb_policy_key_find("nope"));
        ck_assert_ptr_null(aisb_policy_key_find(NULL));
        for (size_t i = 0; i < n; i++) {
                const aisb_policy_key *k = aisb_policy_key_at(i);
                ck_assert_ptr_nonnull(k);
                ck_assert_ptr_eq(aisb_policy_key_find(k->name), k);
                ck_assert_msg(k->placeholder && *k->placeholder, "%s has no placeholder", k->name);
                ck_assert_msg(k->help && *k->help, "%s has no help", k->name);
                /* The help says neither what the flags and the default say. */
                ck_assert_msg(!strstr(k->help, "repeatable") && !strstr(k->help, "(default"),
                              "%s's help restates its flags or default: %s", k->name, k->help);
                ck_assert_msg(!(k->flags & AISB_POLICY_KEY_BOOLEAN) == !streq(k->placeholder, "BOOL"),
                              "%s: a boolean, and only a boolean, is BOOL", k->name);
                for (size_t j = 0; j < i; j++)
                        ck_assert_str_ne(aisb_policy_key_at(j)->name, k->name);
        }
        /* The keys that build the image are those "aisb build" takes, and the entrypoint. */
        static const char *const image[] = { "base-image", "install", "ca-cert", "harness",
                                             "node-source", "entrypoint" };
        size_t n_image = 0;
        for (size_t i = 0; i < n; i++)
                n_image += (aisb_policy_key_at(i)->flags & AISB_POLICY_KEY_IMAGE) != 0;
        ck_assert_uint_eq(n_image, ELEMENTSOF(image));
        for (size_t i = 0; i < ELEMENTSOF(image); i++)
                ck_assert(aisb_policy_key_find(image[i])->flags & AISB_POLICY_KEY_IMAGE);
}
END_TEST

/* Each key: set, got back as set takes it, shown in the policy's text, and set again from
 * what was got: the same value. */
START_TEST(test_every_key_round_trip)
{
        for (size_t i = 0; i < aisb_policy_key_count(); i++)
                ck_assert_msg(sample_of(aisb_policy_key_at(i)->name), "no sample for the key %s",
                              aisb_policy_key_at(i)->name);
        ck_assert_uint_eq(n_samples, aisb_policy_key_count());
        for (size_t i = 0; i < n_samples; i++) {
                const key_sample *s = &samples[i];
                aisb_policy *p = sample_policy();
                aisb_error *err = NULL;
                int r = aisb_policy_set(p, s->key, s->value, &err);
                ck_assert_msg(r == 0, "%s=%s: %s", s->key, s->value, err ? aisb_error_message(err) : "?");
                _cleanup_free_ char *got = get_value(p, s->key);
                ck_assert_msg(got && streq(got, s->got), "%s: got '%s', not '%s'", s->key, got ? got : "(null)",
                              s->got);
                _cleanup_free_ char *text = NULL;
                ck_assert_int_eq(aisb_policy_format(p, &text, NULL), 0);
                ck_assert_msg(has_line_starting(text, s->line), "%s: no line '%s' in:\n%s", s->key, s->line,
                              text);
                ck_assert_msg(!strstr(text, "sample-value"), "an env value is in:\n%s", text);

                aisb_policy *again = sample_policy();
                r = aisb_policy_set(again, s->key, got, &err);
                ck_assert_msg(r == 0, "%s=%s (got back): %s", s->key, got, err ? aisb_error_message(err) : "?");
                _cleanup_free_ char *got_again = get_value(again, s->key);
                ck_assert_str_eq(got_again, got);
                aisb_policy_free(again);
                aisb_policy_free(p);
        }
}
END_TEST

/* The defaults live in the table: a new policy holds exactly what each key's default_text
 * says (and the CLI's help prints that text: tests/install/drift.py). */
START_TEST(test_defaults_from_table)
{
        aisb_policy *p = pure_policy();
        for (size_t i = 0; i < aisb_policy_key_count(); i++) {
                const aisb_policy_key *k = aisb_policy_key_at(i);
                _cleanup_free_ char *got = get_value(p, k->name);
                if (k->default_text)
                        ck_assert_msg(got && streq(got, k->default_text), "%s: a new policy has '%s', the table says '%s'",
                                      k->name, got ? got : "(null)", k->default_text);
                else if (streq(k->name, "no-cwd"))
                        ck_assert_str_eq(got, "true"); /* derived: no project yet */
                else if (streq(k->name, "home-volume"))
                        ck_assert_str_eq(got, AISB_HOME_VOLUME_PREFIX "scratch"); /* derived */
                else if (k->flags & AISB_POLICY_KEY_BOOLEAN)
                        ck_assert_msg(got && streq(got, "false"), "%s: '%s' without a default", k->name, got);
                else
                        ck_assert_msg(!got, "%s: '%s' without a default", k->name, got);
        }
        /* What the defaults are, as numbers. */
        ck_assert_uint_eq(p->memory, 4ULL << 30);
        ck_assert_uint_eq(p->cpus_milli, 2000);
        ck_assert_uint_eq(p->pids_limit, 1024);
        ck_assert_uint_eq(p->tmp_size, 1ULL << 30);
        ck_assert_str_eq(p->entrypoint, AISB_LIBEXECDIR "/aisb-entrypoint");
        ck_assert_str_eq(policy_command(p)[0], "pi");
        aisb_policy_free(p);
}
END_TEST

/* A repeatable key adds each value; any other keeps the last. */
START_TEST(test_repeatable_keys_append)
{
        for (size_t i = 0; i < n_samples; i++) {
                const key_sample *s = &samples[i];
                const aisb_policy_key *k = aisb_policy_key_find(s->key);
                bool repeatable = k->flags & AISB_POLICY_KEY_REPEATABLE;
                ck_assert_msg(repeatable == (s->second[0] != 0), "%s: a second sample is for repeatable keys",
                              s->key);
                aisb_policy *p = sample_policy();
                char **before = NULL;
                ck_assert_int_eq(aisb_policy_get_values(p, s->key, &before, NULL), 0);
                size_t n_before = strv_length((const char *const *) before);
                strv_free(before);
                ck_assert_int_eq(aisb_policy_set(p, s->key, s->value, NULL), 0);
                aisb_error *err = NULL;
                int r = aisb_policy_set(p, s->key, repeatable ? s->second : s->value, &err);
                ck_assert_msg(r == 0, "%s: %s", s->key, err ? aisb_error_message(err) : "?");
                char **values = NULL;
                ck_assert_int_eq(aisb_policy_get_values(p, s->key, &values, NULL), 0);
                size_t n = strv_length((const char *const *) values);
                if (repeatable) {
                        ck_assert_msg(n == n_before + 2, "%s: %zu values after two sets", s->key, n);
                        ck_assert_str_eq(values[n - 2], s->got);
                        _cleanup_free_ char *joined = get_value(p, s->key);
                        ck_assert_ptr_nonnull(strstr(joined, "\n"));
                } else
                        ck_assert_msg(n == 1, "%s: %zu values after two sets", s->key, n);
                strv_free(values);
                aisb_policy_free(p);
        }
}
END_TEST

/* The keys that decide the image change its tag; no other key does. */
START_TEST(test_image_keys_change_the_tag)
{
        aisb_policy *base = sample_policy();
        _cleanup_free_ char *base_tag = NULL;
        ck_assert_int_eq(aisb_image_tag(base, &base_tag, NULL), 0);
        aisb_policy_free(base);
        for (size_t i = 0; i < n_samples; i++) {
                const key_sample *s = &samples[i];
                aisb_policy *p = sample_policy();
                ck_assert_int_eq(aisb_policy_set(p, s->key, s->value, NULL), 0);
                _cleanup_free_ char *tag = NULL;
                aisb_error *err = NULL;
                int r = aisb_image_tag(p, &tag, &err);
                ck_assert_msg(r == 0, "%s: %s", s->key, err ? aisb_error_message(err) : "?");
                bool image = aisb_policy_key_find(s->key)->flags & AISB_POLICY_KEY_IMAGE;
                ck_assert_msg(image == !streq(tag, base_tag), "%s=%s %s the image tag", s->key, s->value,
                              image ? "does not change" : "changes");
                aisb_policy_free(p);
        }
}
END_TEST

START_TEST(test_unknown_key)
{
        aisb_policy *p = pure_policy();
        aisb_error *err = NULL;
        ck_assert_int_eq(aisb_policy_set(p, "nope", "x", &err), -ENOKEY);
        ck_assert_str_eq(aisb_error_message(err), "unknown key 'nope' (see aisb --help)");
        aisb_error_free(err);
        err = NULL;
        char *value = NULL;
        ck_assert_int_eq(aisb_policy_get(p, "nope", &value, &err), -ENOKEY);
        ck_assert_str_eq(aisb_error_message(err), "unknown key 'nope' (see aisb --help)");
        aisb_error_free(err);
        err = NULL;
        char *path = write_temp("memory = 2g\nnope = 1\n", 0644);
        ck_assert_int_eq(aisb_policy_load_config(p, path, 0, &err), -ENOKEY);
        char expected[256];
        snprintf(expected, sizeof expected, "%s:2: unknown key 'nope' (see aisb --help)", path);
        ck_assert_str_eq(aisb_error_message(err), expected);
        aisb_error_free(err);
        err = NULL;
        unlink(path);
        free(path);
        /* Only booleans may go without a value. */
        ck_assert_int_eq(aisb_policy_set(p, "memory", NULL, &err), -EINVAL);
        ck_assert_str_eq(aisb_error_message(err), "memory: a value is required");
        aisb_error_free(err);
        ck_assert_int_eq(aisb_policy_set(p, "shell", NULL, NULL), 0);
        ck_assert(p->shell);
        aisb_policy_free(p);
}
END_TEST

/* ---- the environment: read by aisb_policy_apply_environment() alone ---- */

/* What the environment could say, all at once; restored by environment_teardown(). */
static void environment_setup(void)
{
        setenv("AISB_THINKING", "bogus", 1);
        setenv("AISB_ENTRYPOINT", "/x", 1);
        setenv("AISB_HOME_VOLUME", "from-env", 1);
        setenv("TERM", "xterm-test", 1);
}

static char *saved_entrypoint;

static void environment_save(void)
{
        const char *e = getenv("AISB_ENTRYPOINT");
        saved_entrypoint = e ? strdup(e) : NULL;
}

static void environment_restore(void)
{
        unsetenv("AISB_THINKING");
        unsetenv("AISB_HOME_VOLUME");
        if (saved_entrypoint)
                setenv("AISB_ENTRYPOINT", saved_entrypoint, 1);
        free(saved_entrypoint);
        saved_entrypoint = NULL;
}

START_TEST(test_new_reads_no_environment)
{
        environment_setup();
        aisb_policy *p = pure_policy();
        ck_assert_ptr_null(p->project);
        ck_assert(!p->project_is_cwd);
        ck_assert_str_eq(p->thinking, "xhigh");
        ck_assert_str_eq(p->entrypoint, AISB_LIBEXECDIR "/aisb-entrypoint");
        ck_assert_str_eq(p->home_volume, AISB_HOME_VOLUME_PREFIX "scratch");
        ck_assert(!p->home_volume_chosen);
        ck_assert_uint_eq(p->n_env, 0);
        char *env = NULL;
        ck_assert_int_eq(aisb_policy_get(p, "env", &env, NULL), 0);
        ck_assert_ptr_null(env);

        /* The call that reads it refuses the bogus level, the same message as ever, and
         * changes nothing. */
        aisb_error *err = NULL;
        ck_assert_int_eq(aisb_policy_apply_environment(p, &err), -EINVAL);
        char expected[256];
        snprintf(expected, sizeof expected, "AISB_THINKING: 'bogus' is not a level (use one of: %s)",
                 POLICY_THINKING_LEVELS);
        ck_assert_str_eq(aisb_error_message(err), expected);
        aisb_error_free(err);
        ck_assert_ptr_null(p->project);
        ck_assert_str_eq(p->entrypoint, AISB_LIBEXECDIR "/aisb-entrypoint");
        ck_assert_uint_eq(p->n_env, 0);

        /* With a level it knows, it takes everything. AISB_ENTRYPOINT is read with
         * secure_getenv(), which a set-user-ID or set-group-ID process would see unset; a unit
         * test cannot be one, so only the ordinary process is tested here. */
        setenv("AISB_THINKING", "low", 1);
        ck_assert_int_eq(aisb_policy_apply_environment(p, NULL), 0);
        char cwd[4096];
        ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
        ck_assert_str_eq(p->project, cwd);
        ck_assert(p->project_is_cwd);
        ck_assert_str_eq(p->thinking, "low");
        ck_assert_str_eq(p->entrypoint, "/x");
        ck_assert_str_eq(p->home_volume, "from-env");
        ck_assert(p->home_volume_chosen);
        bool term = false;
        for (size_t i = 0; i < p->n_env; i++)
                term |= streq(p->env[i].name, "TERM") && streq(p->env[i].value, "xterm-test");
        ck_assert(term);
        aisb_policy_free(p);
}
END_TEST

/* The current directory becomes the project like any other: a mount inside it is refused. */
START_TEST(test_apply_refuses_mount_in_cwd)
{
        char dir[] = "/tmp/aisb-test-cwd-XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(dir));
        char sub[64], spec[128];
        snprintf(sub, sizeof sub, "%s/sub", dir);
        ck_assert_int_eq(mkdir(sub, 0700), 0);
        snprintf(spec, sizeof spec, "%s:/sub", sub);
        aisb_policy *p = pure_policy();
        ck_assert_int_eq(aisb_policy_set(p, "mount", spec, NULL), 0);
        int saved = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(saved, 0);
        ck_assert_int_eq(chdir(dir), 0);
        aisb_error *err = NULL;
        ck_assert_int_eq(aisb_policy_apply_environment(p, &err), -EPERM);
        ck_assert_ptr_nonnull(strstr(aisb_error_message(err), "is inside"));
        aisb_error_free(err);
        ck_assert_ptr_null(p->project);
        ck_assert_int_eq(fchdir(saved), 0);
        close(saved);
        aisb_policy_free(p);
        (void) rmdir(sub);
        (void) rmdir(dir);
}
END_TEST

/* aisb's own sandboxes (doctor, skill-lint) build the user's image and inherit what every
 * sandbox inherits, from the user's policy, and nothing else of it. */
START_TEST(test_policy_for_image)
{
        setenv("TERM", "xterm-test", 1);
        aisb_policy *src = new_policy();
        ck_assert_int_eq(aisb_policy_set(src, "install", "ripgrep", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(src, "env", "SECRET_TOKEN=x", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(src, "memory", "1g", NULL), 0);
        aisb_policy *q = NULL;
        ck_assert_int_eq(policy_new_for_image(src, &q, NULL), 0);
        _cleanup_free_ char *src_tag = NULL, *q_tag = NULL;
        ck_assert_int_eq(aisb_image_tag(src, &src_tag, NULL), 0);
        ck_assert_int_eq(aisb_image_tag(q, &q_tag, NULL), 0);
        ck_assert_str_eq(q_tag, src_tag);
        bool term = false;
        for (size_t i = 0; i < q->n_env; i++) {
                ck_assert_str_ne(q->env[i].name, "SECRET_TOKEN");
                term |= streq(q->env[i].name, "TERM") && streq(q->env[i].value, "xterm-test");
        }
        ck_assert(term);
        ck_assert_uint_eq(q->memory, 4ULL << 30);
        aisb_policy_free(q);
        aisb_policy_free(src);
}
END_TEST

static Suite *policy_suite(void)
{
        Suite *s = suite_create("policy");
        suite_add_tests(s, "keys", NULL, NULL, test_defaults, test_values_checked, test_mounts, test_devices,
                        test_mount_sources_in_project, test_home_volume_per_project, test_command, test_sizes);
        suite_add_tests(s, "environment", NULL, NULL, test_env, test_only_named_env_inherited, test_env_file_parse,
                        test_env_file_mode);
        suite_add_tests(s, "table", samples_setup, samples_teardown, test_key_table, test_every_key_round_trip,
                        test_defaults_from_table, test_repeatable_keys_append, test_image_keys_change_the_tag,
                        test_unknown_key);
        suite_add_tests(s, "apply-environment", environment_save, environment_restore, test_new_reads_no_environment,
                        test_apply_refuses_mount_in_cwd, test_policy_for_image);
        suite_add_tests(s, "config", NULL, NULL, test_config_file, test_shipped_examples);
        return s;
}

int main(void)
{
        return unit_run(policy_suite());
}
