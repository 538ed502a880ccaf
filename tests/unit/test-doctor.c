/* SPDX-License-Identifier: MIT */
/*
 * aisb doctor (doctor.c) against the fake libpod service: what each check reports for the
 * hosts podman describes in /libpod/info (rootless on cgroup v2 with overlay and crun; cgroup
 * v1 with vfs and runc; rootful), the network backend found or missing (pasta asked whether it
 * can map the host's loopback), a service that cannot be reached and why, the agents
 * directory's credentials, and the project's git status, asked of git only inside a sandbox
 * (the fake runs it: its output and exit code decide).
 *
 * Two checks read the host itself (subordinate ids in /etc/subuid, /dev/net/tun): for them
 * only the shape of the report is checked, whatever this host has.
 */
#include <check.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "fake-podman.h"
#include "internal.h"
#include "unit.h"
#include "fileio.h"
#include "../suite-table.h"

static char base[] = "/tmp/aisb-test-doctor-XXXXXX";
static char dir[256]; /* this test's own */
static fake_podman *fp;
static aisb_ctx *ctx;

typedef struct check {
        char name[32];
        aisb_check_status status;
        char detail[1024];
        char fix[512];
        bool has_fix;
} check;

typedef struct report {
        size_t n;
        check c[32];
} report;

static void on_check(const aisb_doctor_check *got, void *userdata)
{
        report *r = userdata;
        ck_assert_uint_lt(r->n, ELEMENTSOF(r->c));
        check *c = &r->c[r->n++];
        snprintf(c->name, sizeof c->name, "%s", got->name);
        c->status = got->status;
        snprintf(c->detail, sizeof c->detail, "%s", got->detail ? got->detail : "");
        snprintf(c->fix, sizeof c->fix, "%s", got->fix ? got->fix : "");
        c->has_fix = got->fix != NULL;
}

static const check *find(const report *r, const char *name)
{
        for (size_t i = 0; i < r->n; i++)
                if (streq(r->c[i].name, name))
                        return &r->c[i];
        return NULL;
}

static const char *status_name(aisb_check_status s)
{
        return s == AISB_CHECK_OK ? "OK" : s == AISB_CHECK_WARN ? "WARN" : "FAIL";
}

/* The check's status and its detail (exactly, or containing detail_part when it starts with
 * '*'); a fix exactly when fix_part is not NULL, containing it. */
static void expect_check(const report *r, const char *name, aisb_check_status status, const char *detail,
                         const char *fix_part)
{
        const check *c = find(r, name);
        ck_assert_msg(c, "no %s check", name);
        ck_assert_msg(c->status == status, "%s: %s (%s), expected %s", name, status_name(c->status), c->detail,
                      status_name(status));
        if (detail && detail[0] == '*')
                ck_assert_msg(strstr(c->detail, detail + 1), "%s: '%s' lacks '%s'", name, c->detail, detail + 1);
        else if (detail)
                ck_assert_msg(streq(c->detail, detail), "%s: '%s', expected '%s'", name, c->detail, detail);
        if (fix_part)
                ck_assert_msg(c->has_fix && strstr(c->fix, fix_part), "%s: fix '%s' lacks '%s'", name, c->fix, fix_part);
        else
                ck_assert_msg(!c->has_fix, "%s: a fix where none is needed: %s", name, c->fix);
}

/* What doctor returns: the number of checks that failed. */
static size_t failures(const report *r)
{
        size_t n = 0;
        for (size_t i = 0; i < r->n; i++) {
                n += r->c[i].status == AISB_CHECK_FAIL;
                /* Whatever fails or warns says what to do. */
                if (r->c[i].status == AISB_CHECK_FAIL)
                        ck_assert_msg(r->c[i].has_fix || streq(r->c[i].name, "project"), "%s fails without a fix",
                                      r->c[i].name);
        }
        return n;
}

/* How many requests with this method the fake saw. */
static int find_request_method(const char *method)
{
        int n = 0;
        for (size_t i = 0; i < fake_podman_request_count(fp); i++)
                n += streq(fake_podman_request_method(fp, i), method);
        return n;
}

/* A path below the test's directory, in one of four buffers used in turn. */
static const char *at(const char *sub)
{
        static char path[4][PATH_MAX];
        static unsigned next;
        next = (next + 1) % 4;
        snprintf(path[next], PATH_MAX, "%s/%s", dir, sub);
        return path[next];
}

static void write_file(const char *path, const char *text, mode_t mode)
{
        char command[PATH_MAX + 16];
        snprintf(command, sizeof command, "mkdir -p '%s'", path);
        *strrchr(command, '/') = 0;
        strcat(command, "'");
        ck_assert_int_eq(system(command), 0);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write_all(fd, text, strlen(text)), 0);
        close(fd);
}

static void setup(void)
{
        snprintf(dir, sizeof dir, "%s/t-XXXXXX", base);
        ck_assert_ptr_nonnull(mkdtemp(dir));
        ck_assert_int_eq(mkdir(at("home"), 0700), 0);
        setenv("HOME", at("home"), 1);
        unit_podman_start(&fp, &ctx);
        /* The backend podman names: an executable of the test's. */
        write_file(at("bin/slirp4netns"), "#!/bin/sh\nexit 0\n", 0755);
}

static void teardown(void)
{
        unit_podman_stop(fp, ctx);
}

static aisb_policy *new_policy(void)
{
        static const char *const settings[] = { "no-cwd", "no-agents" };
        aisb_policy *p = NULL;
        ck_assert_int_eq(aisb_policy_new(&p, NULL), 0);
        /* AISB_ENTRYPOINT, from the test's environment: it is part of the image's tag. */
        ck_assert_int_eq(aisb_policy_apply_environment(p, NULL), 0);
        for (size_t i = 0; i < ELEMENTSOF(settings); i++)
                ck_assert_int_eq(aisb_policy_set(p, settings[i], "true", NULL), 0);
        return p;
}

/* /libpod/info as podman 4.3 writes it (booleans as JSON booleans). */
static void route_info(const char *cgroup, const char *runtime, const char *driver, bool rootless,
                       const char *backend, const char *executable, const char *version)
{
        char body[4096];
        snprintf(body, sizeof body,
                 "{\"host\":{\"arch\":\"amd64\",\"cgroupVersion\":\"%s\",\"ociRuntime\":{\"name\":\"%s\",\"path\":\"/usr/bin/%s\"},"
                 "\"security\":{\"rootless\":%s,\"selinuxEnabled\":false,\"apparmorEnabled\":%s},"
                 "\"%s\":{\"executable\":\"%s\",\"package\":\"\",\"version\":\"%s\"}},"
                 "\"store\":{\"graphDriverName\":\"%s\"},\"version\":{\"Version\":\"4.3.1\"}}",
                 cgroup, runtime, runtime, rootless ? "true" : "false", rootless ? "false" : "true", backend,
                 executable, version, driver);
        fake_podman_route(fp, "GET", "/libpod/info", 200, "application/json", body, FAKE_NORMAL, 0);
}

static int doctor(const aisb_policy *p, report *r, aisb_error **err)
{
        *r = (report) {};
        return aisb_doctor(ctx, p, 0, on_check, r, err);
}

/* The checks that read the host: reported, and failing only with a fix. */
static void expect_host_checks(const report *r)
{
        const check *subuid = find(r, "subuid"), *tun = find(r, "tun");
        ck_assert(subuid && tun);
        if (subuid->status != AISB_CHECK_OK)
                expect_check(r, "subuid", AISB_CHECK_FAIL, "*no range in /etc/subuid", "usermod --add-subuids");
        else
                expect_check(r, "subuid", AISB_CHECK_OK, "subordinate uid and gid ranges present", NULL);
        if (tun->status != AISB_CHECK_OK)
                expect_check(r, "tun", AISB_CHECK_FAIL, "*/dev/net/tun cannot be opened", "chmod 666 /dev/net/tun");
        else
                expect_check(r, "tun", AISB_CHECK_OK, "/dev/net/tun is usable", NULL);
}

/* ---- the host as podman describes it ---- */

START_TEST(test_rootless_v2)
{
        route_info("v2", "crun", "overlay", true, "slirp4netns", at("bin/slirp4netns"),
                   "slirp4netns version 1.2.0\ncommit: 656041d45cfca7a4176f6b7eed9e4fe6c11e8383");
        aisb_policy *p = new_policy();
        report r;
        aisb_error *err = NULL;
        int n = doctor(p, &r, &err);
        ck_assert_msg(n >= 0, "%s", aisb_error_message(err));
        char detail[512];
        snprintf(detail, sizeof detail, "podman 4.3.1 at %s", fake_podman_socket(fp));
        expect_check(&r, "podman", AISB_CHECK_OK, detail, NULL);
        expect_check(&r, "rootless", AISB_CHECK_OK, "podman runs rootless", NULL);
        expect_check(&r, "cgroups", AISB_CHECK_OK, "cgroup v2: memory, CPU and process caps can be enforced", NULL);
        expect_check(&r, "runtime", AISB_CHECK_OK, "crun", NULL);
        expect_check(&r, "storage", AISB_CHECK_OK, "overlay", NULL);
        expect_check(&r, "security-modules", AISB_CHECK_OK, "SELinux off, AppArmor off", NULL);
        expect_check(&r, "network", AISB_CHECK_OK, "slirp4netns (podman's default): slirp4netns version 1.2.0", NULL);
        expect_check(&r, "skills", AISB_CHECK_OK, "no agents directory is mounted (no-agents is set)", NULL);
        expect_host_checks(&r);
        /* No project: no sandbox asked for. */
        ck_assert_ptr_null(find(&r, "project"));
        ck_assert_uint_eq((size_t) n, failures(&r));
        ck_assert_uint_eq(r.n, 10);
        aisb_policy_free(p);
}
END_TEST

/* crun on cgroup v1: fails every start where the host's hierarchy is hybrid. */
START_TEST(test_v1_crun)
{
        route_info("v1", "crun", "overlay", true, "slirp4netns", at("bin/slirp4netns"), "slirp4netns version 1.1.8");
        aisb_policy *p = new_policy();
        report r;
        ck_assert_int_ge(doctor(p, &r, NULL), 0);
        if (access("/sys/fs/cgroup/unified", F_OK) == 0)
                expect_check(&r, "runtime", AISB_CHECK_FAIL, "crun fails every start on hybrid cgroups", "runtime = \"runc\"");
        else
                expect_check(&r, "runtime", AISB_CHECK_OK, "crun", NULL);
        aisb_policy_free(p);
}
END_TEST

/* A host as podman describes it, and what doctor says of it. */
typedef struct expected {
        const char *name;
        aisb_check_status status;
        const char *detail, *fix; /* as expect_check's */
        bool in_dir;              /* the detail begins with a path below the test's directory */
} expected;

static const struct host_case {
        const char *podman;  /* its version; NULL: the fake's */
        const char *pasta;   /* a pasta of the test's (bin/pasta), as a script; NULL: none */
        const char *cgroup, *runtime, *driver;
        bool rootless;
        const char *backend, *executable, *version; /* executable: below the test's directory */
        const char *network_backend;                /* the policy's; NULL: podman's default */
        int failures;                               /* at least */
        expected checks[4];
} host_cases[] = {
        { .cgroup = "v1", .runtime = "runc", .driver = "vfs", .rootless = true, .backend = "slirp4netns",
          .executable = "bin/slirp4netns", .version = "slirp4netns version 1.1.8",
          .checks = { { "cgroups", AISB_CHECK_WARN, "*cgroup v1: memory, CPU and process caps are accepted and not enforced",
                        "systemd.unified_cgroup_hierarchy=1" },
                      { "runtime", AISB_CHECK_OK, "runc", NULL },
                      { "storage", AISB_CHECK_WARN, "*storage driver vfs: every sandbox start copies the whole image",
                        "driver = \"overlay\" under [storage]" },
                      { "rootless", AISB_CHECK_OK, "podman runs rootless", NULL } } },
        { .cgroup = "v2", .runtime = "crun", .driver = "overlay", .rootless = false, .backend = "slirp4netns",
          .executable = "bin/slirp4netns", .version = "slirp4netns version 1.2.0", .failures = 1,
          .checks = { { "rootless", AISB_CHECK_FAIL, "podman runs as root: the sandbox's root would be the host's",
                        "run aisb as an unprivileged user" },
                      { "security-modules", AISB_CHECK_OK, "SELinux off, AppArmor on", NULL } } },
        /* ---- the network ---- */
        { .cgroup = "v2", .runtime = "crun", .driver = "overlay", .rootless = true, .backend = "slirp4netns",
          .executable = "bin/nothing-here", .version = "", .failures = 1,
          .checks = { { "network", AISB_CHECK_FAIL, "slirp4netns is missing: no sandbox network",
                        "apt-get install slirp4netns" } } },
        /* Podman 5 runs pasta; the gate needs --map-host-loopback, which doctor asks pasta about. */
        { .podman = "5.4.2",
          .pasta = "#!/bin/sh\n[ \"$1\" = --help ] || exit 1\necho 'Usage: pasta [OPTION]...'\n"
                   "echo '  --map-host-loopback ADDR  Translate ADDR to refer to host'\n",
          .cgroup = "v2", .runtime = "crun", .driver = "overlay", .rootless = true, .backend = "pasta",
          .executable = "bin/pasta", .version = "pasta 2025_05_12.8ec1341\nCopyright Red Hat",
          .checks = { { "network", AISB_CHECK_OK, "pasta (podman's default): pasta 2025_05_12.8ec1341", NULL } } },
        { .podman = "5.0.0", .pasta = "#!/bin/sh\necho 'Usage: pasta [OPTION]...'\necho '  --map-gw'\n",
          .cgroup = "v2", .runtime = "crun", .driver = "overlay", .rootless = true, .backend = "pasta",
          .executable = "bin/pasta", .version = "pasta 2023_12_04.b86afe3", .failures = 1,
          .checks = { { "network", AISB_CHECK_FAIL,
                        "/bin/pasta (pasta 2023_12_04.b86afe3) has no --map-host-loopback: the sandbox could not reach "
                        "the gate",
                        "set network-backend = slirp4netns", .in_dir = true } } },
        /* The user's choice over podman's default. */
        { .podman = "5.4.2", .cgroup = "v2", .runtime = "crun", .driver = "overlay", .rootless = true,
          .backend = "slirp4netns", .executable = "bin/slirp4netns", .version = "slirp4netns version 1.2.3",
          .network_backend = "slirp4netns",
          .checks = { { "network", AISB_CHECK_OK, "slirp4netns (chosen): slirp4netns version 1.2.3", NULL } } },
};

START_TEST(test_host)
{
        const struct host_case *h = &host_cases[_i];
        if (h->podman)
                fake_podman_set_version(fp, h->podman);
        if (h->pasta)
                write_file(at("bin/pasta"), h->pasta, 0755);
        route_info(h->cgroup, h->runtime, h->driver, h->rootless, h->backend, at(h->executable), h->version);
        aisb_policy *p = new_policy();
        if (h->network_backend)
                ck_assert_int_eq(aisb_policy_set(p, "network-backend", h->network_backend, NULL), 0);
        report r;
        int n = doctor(p, &r, NULL);
        for (const expected *e = h->checks; e < h->checks + ELEMENTSOF(h->checks) && e->name; e++) {
                char detail[PATH_MAX + 256];
                snprintf(detail, sizeof detail, "%s%s", e->in_dir ? dir : "", e->detail);
                expect_check(&r, e->name, e->status, detail, e->fix);
        }
        ck_assert_int_ge(n, h->failures);
        ck_assert_uint_eq((size_t) n, failures(&r));
        aisb_policy_free(p);
}
END_TEST

/* ---- no service ---- */

/* doctor on other (freed after), whose service cannot be had: that one check, failed, and
 * nothing after it. */
static void expect_no_podman(aisb_ctx *other, const char *detail, const char *fix)
{
        aisb_policy *p = new_policy();
        report r = {};
        ck_assert_int_eq(aisb_doctor(other, p, 0, on_check, &r, NULL), 1);
        ck_assert_uint_eq(r.n, 1);
        expect_check(&r, "podman", AISB_CHECK_FAIL, detail, fix);
        aisb_ctx_free(other);
        aisb_policy_free(p);
}

START_TEST(test_no_service)
{
        aisb_ctx *other = NULL;
        ck_assert_int_eq(aisb_ctx_new(&other, NULL), 0);
        ck_assert_int_eq(aisb_ctx_set_socket(other, at("nothing/podman.sock"), NULL), 0);
        aisb_policy *p = new_policy();
        report r = {};
        /* A flag it does not know: refused before any check. */
        ck_assert_int_eq(aisb_doctor(other, p, 1u << 7, on_check, &r, NULL), -EINVAL);
        ck_assert_uint_eq(r.n, 0);
        aisb_policy_free(p);
        expect_no_podman(other, "*nothing/podman.sock", "install podman 4.3 or newer; \"podman info\" must work as you");
}
END_TEST

/* No socket answers, and the service aisb starts refuses as podman does when killed
 * processes left its state inconsistent: the fix is podman's own. Run alone (--no-service):
 * discovery would find a real service of this user's first. */
START_TEST(test_service_needs_migrate)
{
        write_file(at("bin/podman"),
                   "#!/bin/sh\n"
                   "echo 'time=\"t\" level=error msg=\"invalid internal status, try resetting the pause "
                   "process with \\\"podman system migrate\\\": could not find any running process\"' >&2\n"
                   "exit 1\n",
                   0755);
        ck_assert_int_eq(mkdir(at("run"), 0700), 0);
        char path[PATH_MAX * 2];
        snprintf(path, sizeof path, "%s:%s", at("bin"), getenv("PATH"));
        setenv("PATH", path, 1);
        setenv("XDG_RUNTIME_DIR", at("run"), 1);
        unsetenv("CONTAINER_HOST");
        aisb_ctx *other = NULL;
        ck_assert_int_eq(aisb_ctx_new(&other, NULL), 0);
        expect_no_podman(other, "*podman system migrate",
                         "run \"podman system migrate\": containers of yours were killed without podman knowing");
}
END_TEST

START_TEST(test_info_refused)
{
        fake_podman_route(fp, "GET", "/libpod/info", 500, "application/json",
                          "{\"message\":\"cannot read storage.conf\",\"response\":500}", FAKE_NORMAL, 0);
        aisb_policy *p = new_policy();
        report r;
        aisb_error *err = NULL;
        ck_assert_int_eq(doctor(p, &r, &err), -EIO);
        ck_assert_ptr_nonnull(strstr(aisb_error_message(err), "cannot read storage.conf"));
        aisb_error_free(err);
        /* The service answered: that much was said. */
        ck_assert_uint_eq(r.n, 1);
        expect_check(&r, "podman", AISB_CHECK_OK, "*podman 4.3.1 at ", NULL);
        aisb_policy_free(p);
}
END_TEST

/* ---- what every sandbox reads: the agents directory ---- */

START_TEST(test_skills)
{
        route_info("v2", "crun", "overlay", true, "slirp4netns", at("bin/slirp4netns"), "slirp4netns version 1.2.0");
        aisb_policy *p = NULL;
        ck_assert_int_eq(aisb_policy_new(&p, NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "no-cwd", "true", NULL), 0);
        report r;
        ck_assert_int_ge(doctor(p, &r, NULL), 0);
        expect_check(&r, "skills", AISB_CHECK_OK, "no agents directory is mounted (it does not exist)", NULL);

        write_file(at("home/.agents/skills/notes/SKILL.md"), "# Notes\nNothing secret here.\n", 0600);
        char detail[PATH_MAX + 128];
        snprintf(detail, sizeof detail, "%s: no credential found in its files", at("home/.agents"));
        ck_assert_int_ge(doctor(p, &r, NULL), 0);
        expect_check(&r, "skills", AISB_CHECK_OK, detail, NULL);

        write_file(at("home/.agents/skills/deploy/SKILL.md"),
                   "Deploy with GH=ghp_Qm4TzR8vLc2WxHy7NbKd3PfJ6sGa9UeVt5Rw\n", 0600);
        ck_assert_int_ge(doctor(p, &r, NULL), 0);
        snprintf(detail, sizeof detail, "%s, mounted read-only in every sandbox, holds 1 possible credential in its files",
                 at("home/.agents"));
        expect_check(&r, "skills", AISB_CHECK_WARN, detail, "aisb skill-lint");
        ck_assert_ptr_null(strstr(find(&r, "skills")->detail, "ghp_"));
        aisb_policy_free(p);
}
END_TEST

/* ---- the project: git status, in a sandbox ---- */

static aisb_policy *project_policy(void)
{
        route_info("v2", "crun", "overlay", true, "slirp4netns", at("bin/slirp4netns"), "slirp4netns version 1.2.0");
        ck_assert_int_eq(mkdir(at("project"), 0700), 0);
        aisb_policy *p = new_policy();
        ck_assert_int_eq(aisb_policy_set(p, "project", at("project"), NULL), 0);
        return p;
}

START_TEST(test_project_image_missing)
{
        aisb_policy *p = project_policy();
        fake_podman_route(fp, "GET", "/images/*/exists", 404, "application/json", "{\"message\":\"no such image\"}",
                          FAKE_NORMAL, 0);
        report r;
        ck_assert_int_ge(doctor(p, &r, NULL), 0);
        expect_check(&r, "project", AISB_CHECK_WARN,
                     "not checked: git runs only inside a sandbox, and its image is not built yet",
                     "run \"aisb build\" (or \"aisb doctor --deep\"), then doctor again");
        /* Nothing was built, nothing run. */
        ck_assert_int_eq(fake_podman_request_count(fp) > 0, 1);
        for (size_t i = 0; i < fake_podman_request_count(fp); i++)
                ck_assert_str_ne(fake_podman_request_method(fp, i), "POST");
        aisb_policy_free(p);
}
END_TEST

START_TEST(test_project_is_home)
{
        route_info("v2", "crun", "overlay", true, "slirp4netns", at("bin/slirp4netns"), "slirp4netns version 1.2.0");
        aisb_policy *p = new_policy();
        ck_assert_int_eq(aisb_policy_set(p, "project", at("home"), NULL), 0);
        report r;
        ck_assert_int_ge(doctor(p, &r, NULL), 0);
        expect_check(&r, "project", AISB_CHECK_WARN, "*home", NULL);
        ck_assert_int_eq(find_request_method("POST"), 0);
        aisb_policy_free(p);
}
END_TEST

/* The sandbox git runs in: it prints out (stdout) and err (stderr), and exits with code. */
static void route_git(const char *out, const char *err_text, int code)
{
        fake_podman_route(fp, "GET", "/images/*/exists", 204, NULL, "", FAKE_NORMAL, 0);
        fake_podman_route(fp, "POST", "/containers/create", 201, "application/json", "{\"Id\":\"d0c\",\"Warnings\":[]}",
                          FAKE_NORMAL, 1);
        uint8_t frames[1024];
        size_t n = 0;
        if (*err_text)
                n += fake_podman_frame(frames + n, 2, err_text);
        if (*out)
                n += fake_podman_frame(frames + n, 1, out);
        fake_podman_route_bytes(fp, "POST", "/containers/d0c/attach", 101, NULL, frames, n, n ? FAKE_HIJACK : FAKE_HIJACK_NO_WAIT, 1);
        fake_podman_route(fp, "POST", "/containers/d0c/start", 204, NULL, "", FAKE_NORMAL, 1);
        char wait[16];
        snprintf(wait, sizeof wait, "%d\n", code);
        fake_podman_route(fp, "POST", "/containers/d0c/wait", 200, "application/json", wait, FAKE_NORMAL, 1);
        fake_podman_route(fp, "DELETE", "/containers/d0c", 200, "application/json", "[]", FAKE_NORMAL, 0);
}

static report project_report(const char *out, const char *err_text, int code)
{
        aisb_policy *p = project_policy();
        route_git(out, err_text, code);
        report r;
        aisb_error *err = NULL;
        ck_assert_msg(doctor(p, &r, &err) >= 0, "%s", aisb_error_message(err));
        aisb_policy_free(p);
        return r;
}

START_TEST(test_project_clean)
{
        report r = project_report("", "", 0);
        expect_check(&r, "project", AISB_CHECK_OK, "git work tree is clean", NULL);
        /* git in a sandbox of aisb's own: no network, the project read-only, a throwaway home,
         * nothing of the user's harness, and removed after. */
        ssize_t create = -1;
        for (size_t i = 0; i < fake_podman_request_count(fp); i++)
                if (strstr(fake_podman_request_path(fp, i), "/containers/create"))
                        create = (ssize_t) i;
        ck_assert_int_ge(create, 0);
        json_object *body = json_tokener_parse(fake_podman_request_body(fp, (size_t) create));
        ck_assert_ptr_nonnull(body);
        const char *command = json_object_to_json_string_ext(json_object_object_get(body, "command"),
                                                              JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        ck_assert_msg(strstr(command, "\"git\",\"--no-optional-locks\",\"-C\",\"/project\",\"status\",\"--porcelain\""),
                      "%s", command);
        json_object *netns = json_object_object_get(body, "netns");
        ck_assert_str_eq(json_object_get_string(json_object_object_get(netns, "nsmode")), "none");
        json_object *mounts = json_object_object_get(body, "mounts");
        bool project_ro = false, home_volume = false;
        for (size_t i = 0; i < json_object_array_length(mounts); i++) {
                json_object *m = json_object_array_get_idx(mounts, i);
                const char *destination = json_object_get_string(json_object_object_get(m, "destination"));
                const char *options = json_object_to_json_string_ext(json_object_object_get(m, "options"), JSON_C_TO_STRING_PLAIN);
                if (streq(destination, "/project"))
                        project_ro = strstr(options, "\"ro\"") != NULL;
        }
        json_object *volumes = json_object_object_get(body, "volumes");
        home_volume = volumes && json_object_array_length(volumes) > 0;
        ck_assert_msg(project_ro, "the project is not mounted read-only");
        ck_assert_msg(!home_volume, "a home volume is mounted");
        json_object_put(body);
        ck_assert_int_ge(find_request_method("DELETE"), 1);
}
END_TEST

/* What git in the sandbox says (stdout, stderr, its exit code), and the project's check. */
static const struct git_case {
        const char *out, *err;
        int code;
        expected check;
} git_cases[] = {
        { " M src/main.c\n?? notes.txt\n", "", 0,
          { "project", AISB_CHECK_WARN, "the project has uncommitted changes", "commit or stash them first" } },
        /* What git says on stderr is no change of the project's. */
        { "", "warning: could not open directory 'secret/': Permission denied\n", 0,
          { "project", AISB_CHECK_OK, "git work tree is clean", NULL } },
        { "", "fatal: not a git repository (or any of the parent directories): .git\n", 128,
          { "project", AISB_CHECK_OK, "not a git work tree (changes by the agent cannot be reviewed with git)", NULL } },
        { "", "error: bad config line 1 in file .git/config\n", 1,
          { "project", AISB_CHECK_WARN, "git status failed in the sandbox",
            "run git status yourself once you trust the repository's configuration" } },
};

START_TEST(test_project_git)
{
        const struct git_case *g = &git_cases[_i];
        report r = project_report(g->out, g->err, g->code);
        expect_check(&r, g->check.name, g->check.status, g->check.detail, g->check.fix);
}
END_TEST

/* git that never ends (an fsmonitor the repository names): stopped at the time limit, the
 * sandbox removed. */
START_TEST(test_project_git_hangs)
{
        setenv("AISB_DOCTOR_TIMEOUT", "1", 1);
        aisb_policy *p = project_policy();
        fake_podman_route(fp, "GET", "/images/*/exists", 204, NULL, "", FAKE_NORMAL, 0);
        fake_podman_route(fp, "POST", "/containers/create", 201, "application/json", "{\"Id\":\"d0c\",\"Warnings\":[]}",
                          FAKE_NORMAL, 1);
        fake_podman_route(fp, "POST", "/containers/d0c/attach", 101, NULL, "", FAKE_HIJACK_UNTIL_DELETE, 1);
        fake_podman_route(fp, "POST", "/containers/d0c/start", 204, NULL, "", FAKE_NORMAL, 1);
        fake_podman_route(fp, "DELETE", "/containers/d0c", 200, "application/json", "[]", FAKE_NORMAL, 0);
        report r;
        ck_assert_int_ge(doctor(p, &r, NULL), 0);
        unsetenv("AISB_DOCTOR_TIMEOUT");
        expect_check(&r, "project", AISB_CHECK_WARN, "the sandbox did not finish within 1 s, and was removed",
                     "see the checks above");
        ck_assert_int_ge(find_request_method("DELETE"), 1);
        aisb_policy_free(p);
}
END_TEST

static Suite *doctor_suite(bool no_service)
{
        Suite *s = suite_create("doctor");
        if (no_service) {
                suite_add_tests(s, "no-service", setup, teardown, test_service_needs_migrate);
                return s;
        }
        TCase *tc = suite_add_tests(s, "host", setup, teardown, test_rootless_v2, test_v1_crun, test_no_service,
                                    test_info_refused, test_skills);
        tcase_add_loop_test(tc, test_host, 0, ELEMENTSOF(host_cases));
        tc = suite_add_tests(s, "project", setup, teardown, test_project_image_missing, test_project_is_home,
                             test_project_clean, test_project_git_hangs);
        tcase_add_loop_test(tc, test_project_git, 0, ELEMENTSOF(git_cases));
        return s;
}

/* A podman socket of this user where discovery looks after $XDG_RUNTIME_DIR, or NULL. */
static const char *real_socket(void)
{
        static char path[2][128];
        snprintf(path[0], sizeof path[0], "/run/user/%u/podman/podman.sock", (unsigned) getuid());
        snprintf(path[1], sizeof path[1], "/tmp/podman-run-%u/podman/podman.sock", (unsigned) getuid());
        for (size_t i = 0; i < 2; i++)
                if (access(path[i], F_OK) == 0)
                        return path[i];
        return NULL;
}

int main(int argc, char **argv)
{
        bool no_service = argc > 1 && streq(argv[1], "--no-service");
        if (no_service && real_socket()) {
                fprintf(stderr, "skipped: a podman service of this user answers at %s, which discovery would find "
                                "before starting one; run as a user without one\n", real_socket());
                return getenv("CI") && streq(getenv("CI"), "true") ? EXIT_FAILURE : 77;
        }
        if (!mkdtemp(base))
                return EXIT_FAILURE;
        static const char *const dirs[][2] = { { "XDG_STATE_HOME", "state" }, { "XDG_CONFIG_HOME", "config" },
                                               { "XDG_RUNTIME_DIR", "run" } };
        char path[PATH_MAX];
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                snprintf(path, sizeof path, "%s/%s", base, dirs[i][1]);
                setenv(dirs[i][0], path, 1);
        }
        /* The runtime directory, the last: a service's socket would go there. */
        if (mkdir(path, 0700) < 0)
                return EXIT_FAILURE;
        unsetenv("AISB_HOME_VOLUME");
        unsetenv("AISB_DOCTOR_TIMEOUT");
        int failed = unit_run(doctor_suite(no_service)) != EXIT_SUCCESS;
        char command[PATH_MAX + 16];
        snprintf(command, sizeof command, "rm -rf '%s'", base);
        return system(command) != 0 || failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
