/* SPDX-License-Identifier: MIT */
/*
 * aisb doctor: what on this host would stop a sandbox, or weaken it, each with its fix.
 * The checks read podman's own view (/libpod/info) where there is one, and the host's files
 * where podman has none. --deep runs real sandboxes: the ruleset installed, an allowlisted
 * request through the gate answered and a listed-out one refused.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "harness.h"
#include "jsonutil.h"
#include "network.h"
#include "podman.h"
#include "project.h"
#include "run.h"
#include "skills-walk.h"
#include "fileio.h"

typedef struct doctor {
        aisb_doctor_fn fn;
        void *userdata;
        int failures;
} doctor;

static void report(doctor *d, const char *name, aisb_check_status status, const char *detail,
                   const char *fix)
{
        if (status == AISB_CHECK_FAIL)
                d->failures++;
        d->fn(&(aisb_doctor_check) { .name = name, .status = status, .detail = detail, .fix = fix }, d->userdata);
}

/* A check that passes with ok_detail when ok, and otherwise is bad (a warning or a failure). */
static void report_either(doctor *d, const char *name, bool ok, const char *ok_detail, aisb_check_status bad,
                          const char *bad_detail, const char *fix)
{
        if (ok)
                report(d, name, AISB_CHECK_OK, ok_detail, NULL);
        else
                report(d, name, bad, bad_detail, fix);
}

static json_object *path_get(json_object *o, const char *a, const char *b, const char *c)
{
        json_object *v = o;
        const char *keys[] = { a, b, c };
        for (size_t i = 0; i < 3 && keys[i] && v; i++)
                if (!json_object_object_get_ex(v, keys[i], &v))
                        return NULL;
        return v;
}

static bool file_has_user(const char *path, const char *name, uid_t uid)
{
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f)
                return false;
        char line[512], uid_text[32];
        snprintf(uid_text, sizeof uid_text, "%u:", (unsigned) uid);
        size_t n = strlen(name);
        while (fgets(line, sizeof line, f))
                if ((strncmp(line, name, n) == 0 && line[n] == ':') || startswith(line, uid_text))
                        return true;
        return false;
}

static void check_host(doctor *d, json_object *info)
{
        const char *rootless = json_object_get_string(path_get(info, "host", "security", "rootless"));
        report_either(d, "rootless", rootless && streq(rootless, "true"), "podman runs rootless", AISB_CHECK_FAIL,
                      "podman runs as root: the sandbox's root would be the host's", "run aisb as an unprivileged user");

        struct passwd *pw = getpwuid(getuid());
        const char *user = pw ? pw->pw_name : "";
        bool sub = file_has_user("/etc/subuid", user, getuid()) && file_has_user("/etc/subgid", user, getuid());
        report_either(d, "subuid", sub, "subordinate uid and gid ranges present", AISB_CHECK_FAIL,
                      "no range in /etc/subuid or /etc/subgid: no user namespace",
                      "sudo usermod --add-subuids 100000-165535 --add-subgids 100000-165535 $USER");

        report_either(d, "tun", access("/dev/net/tun", R_OK | W_OK) == 0, "/dev/net/tun is usable", AISB_CHECK_FAIL,
                      "/dev/net/tun cannot be opened: pasta and slirp4netns fail", "sudo chmod 666 /dev/net/tun");

        const char *cgroup = json_object_get_string(path_get(info, "host", "cgroupVersion", NULL));
        bool v2 = cgroup && streq(cgroup, "v2"), hybrid = access("/sys/fs/cgroup/unified", F_OK) == 0;
        report_either(d, "cgroups", v2, "cgroup v2: memory, CPU and process caps can be enforced", AISB_CHECK_WARN,
                      "cgroup v1: memory, CPU and process caps are accepted and not enforced (podman says so "
                      "on every run; aisb shows that only with --verbose)",
                      "boot with systemd.unified_cgroup_hierarchy=1 (cgroup v2) and delegate controllers");

        const char *runtime = json_object_get_string(path_get(info, "host", "ociRuntime", "name"));
        report_either(d, "runtime", !(runtime && streq(runtime, "crun") && hybrid && !v2), runtime ? runtime : "unknown",
                      AISB_CHECK_FAIL, "crun fails every start on hybrid cgroups",
                      "runtime = \"runc\" under [engine] in ~/.config/containers/containers.conf");

        const char *driver = json_object_get_string(path_get(info, "store", "graphDriverName", NULL));
        report_either(d, "storage", !(driver && streq(driver, "vfs")), driver ? driver : "unknown", AISB_CHECK_WARN,
                      "storage driver vfs: every sandbox start copies the whole image (seconds, about 20x slower)",
                      "driver = \"overlay\" under [storage] in ~/.config/containers/storage.conf, then podman system reset");

        const char *selinux = json_object_get_string(path_get(info, "host", "security", "selinuxEnabled"));
        const char *apparmor = json_object_get_string(path_get(info, "host", "security", "apparmorEnabled"));
        char lsm[96];
        snprintf(lsm, sizeof lsm, "SELinux %s, AppArmor %s",
                 selinux && streq(selinux, "true") ? "enforcing or permissive" : "off",
                 apparmor && streq(apparmor, "true") ? "on" : "off");
        report(d, "security-modules", AISB_CHECK_OK, lsm, NULL);
}

/* What a doctor's sandbox may write and aisb keeps: git status --porcelain is asked only
 * whether it printed anything, the --deep probe prints two codes. The repository chooses what
 * its git runs (an fsmonitor writing forever), and so how much there is. */
#define DOCTOR_OUTPUT_MAX (64 * 1024)

/* A doctor's sandbox runs a bounded time: what the project configures (git's fsmonitor, a
 * hook) may wait forever. The timer's expiry stops the run like a ^C would. Seconds, from
 * $AISB_DOCTOR_TIMEOUT when that is a number from 1 to 3600. */
#define DOCTOR_RUN_TIMEOUT_S 60

static long doctor_timeout(void)
{
        unsigned long long v;
        const char *e = getenv("AISB_DOCTOR_TIMEOUT");
        return e && parse_uint(e, 3600, &v) >= 0 && v > 0 ? (long) v : DOCTOR_RUN_TIMEOUT_S;
}

/* Whether this pasta knows --map-host-loopback, which maps the gate (on the host's loopback)
 * into the sandbox; passt added it in 2024. Asks the binary podman named. */
static bool pasta_maps_host_loopback(const char *pasta)
{
        int out[2];
        if (pipe2(out, O_CLOEXEC) < 0)
                return false;
        pid_t pid = fork();
        if (pid == 0) {
                (void) dup2(out[1], STDOUT_FILENO);
                (void) dup2(out[1], STDERR_FILENO);
                execl(pasta, "pasta", "--help", (char *) NULL);
                _exit(127);
        }
        close(out[1]);
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        bool found = pid > 0 && read_full_fd(out[0], 256 * 1024, &text, &size) >= 0 &&
                     strstr(text, "--map-host-loopback");
        close(out[0]);
        while (pid > 0 && waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
        return found;
}

/* The first line of a version text podman reports ("pasta 2025_05_12...\n..."). */
static void first_line(const char *text, char *buf, size_t size)
{
        snprintf(buf, size, "%s", text ? text : "unknown version");
        buf[strcspn(buf, "\n")] = 0;
}

/* The backend a run would use, and whether it can: pasta on podman 5 (with the option the
 * gate needs), slirp4netns before. */
static void check_network(aisb_ctx *ctx, doctor *d, const aisb_policy *p, json_object *info)
{
        const network_backend *backend = network_backend_for(p, ctx->version_major);
        bool pasta = backend->id == NETWORK_BACKEND_PASTA;
        const char *exe = json_object_get_string(path_get(info, "host", backend->name, "executable"));
        const char *version = json_object_get_string(path_get(info, "host", backend->name, "version"));
        char detail[256], line[128];
        first_line(version, line, sizeof line);
        if (!pasta && (!exe || !*exe) && access("/usr/bin/slirp4netns", X_OK) == 0)
                exe = "/usr/bin/slirp4netns"; /* podman 4.3 names it only once used */
        if (!exe || !*exe || access(exe, X_OK) < 0) {
                snprintf(detail, sizeof detail, "%s is missing: no sandbox network", backend->name);
                report(d, "network", AISB_CHECK_FAIL, detail,
                       pasta ? "install passt (apt-get install passt, dnf install passt), or set network-backend = slirp4netns"
                             : "install slirp4netns (apt-get install slirp4netns, dnf install slirp4netns)");
        } else if (pasta && !pasta_maps_host_loopback(exe)) {
                snprintf(detail, sizeof detail,
                         "%s (%s) has no --map-host-loopback: the sandbox could not reach the gate", exe, line);
                report(d, "network", AISB_CHECK_FAIL, detail,
                       "install passt from 2024 or later, or set network-backend = slirp4netns");
        } else {
                snprintf(detail, sizeof detail, "%s%s: %s", backend->name,
                         p->network_backend == NETWORK_BACKEND_AUTO ? " (podman's default)" : " (chosen)", line);
                report(d, "network", AISB_CHECK_OK, detail, NULL);
        }
}

/* A sandbox of doctor's own: base's image, the settings (pairs of a name and its value, then
 * NULL) and the command. *ret is the policy once made, whatever fails after. */
static int doctor_policy(const aisb_policy *base, const char *const *settings, const char *const *cmd,
                         aisb_policy **ret, aisb_error **e)
{
        int r = policy_new_for_image(base, ret, e);
        for (size_t i = 0; r >= 0 && settings[i]; i += 2)
                r = aisb_policy_set(*ret, settings[i], settings[i + 1], e);
        return r < 0 ? r : aisb_policy_set_command(*ret, cmd, e);
}

/* Whether the project has uncommitted changes, asked of git inside a sandbox. The repository
 * is the agent's to configure, and git runs what its configuration names (core.fsmonitor,
 * hooks, filter drivers in .gitattributes, included files, a .git file pointing at another
 * git directory): on the host, "git status" would run the agent's commands as the user.
 * In a sandbox with no network, the project read-only and a throwaway home, whatever the
 * repository makes git run stays there. Without --deep this uses the user's image only if it
 * is built already (doctor builds nothing unasked). */
static void check_project(aisb_ctx *ctx, doctor *d, const aisb_policy *p, int deep)
{
        if (!p->project)
                return;
        _cleanup_error_ aisb_error *home = NULL;
        if (project_check_home(p->project, &home) < 0) {
                report(d, "project", AISB_CHECK_WARN, aisb_error_message(home), NULL);
                return;
        }
        aisb_policy *q = NULL;
        _cleanup_error_ aisb_error *e = NULL;
        run_capture out = { .max = DOCTOR_OUTPUT_MAX };
        static const char *const git[] = { "git", "--no-optional-locks", "-C", AISB_PROJECT_DIR,
                                           "status", "--porcelain", NULL };
        const char *const settings[] = { "project", p->project, "net", "none", "ephemeral-home", "true",
                                         "no-pi-config", "true", "no-agents", "true", NULL };
        int r = doctor_policy(p, settings, git, &q, &e);
        if (r < 0) {
                report(d, "project", AISB_CHECK_WARN, aisb_error_message(e), NULL);
                goto out;
        }
        q->project_read_only = true;
        if (!deep) {
                _cleanup_free_ char *tag = NULL;
                r = aisb_image_tag(q, &tag, &e);
                r = r < 0 ? r : podman_image_exists(ctx, tag, &e);
                if (r <= 0) {
                        report(d, "project", AISB_CHECK_WARN,
                               r < 0 ? aisb_error_message(e)
                                     : "not checked: git runs only inside a sandbox, and its image is not built yet",
                               "run \"aisb build\" (or \"aisb doctor --deep\"), then doctor again");
                        goto out;
                }
        }
        int code = -1;
        r = run_captured(ctx, q, doctor_timeout(), run_capture_stdout, &out, &code, &e);
        if (r < 0)
                report(d, "project", AISB_CHECK_WARN, aisb_error_message(e), "see the checks above");
        else if (code == 128)
                report(d, "project", AISB_CHECK_OK,
                       "not a git work tree (changes by the agent cannot be reviewed with git)", NULL);
        else if (code != 0)
                report(d, "project", AISB_CHECK_WARN, "git status failed in the sandbox",
                       "run git status yourself once you trust the repository's configuration");
        else if (out.b.size > 0)
                report(d, "project", AISB_CHECK_WARN, "the project has uncommitted changes",
                       "commit or stash them first, so what the agent changes is what git shows");
        else
                report(d, "project", AISB_CHECK_OK, "git work tree is clean", NULL);
out:
        buffer_free(&out.b);
        aisb_policy_free(q);
}

/* --deep: a one-request HTTP server on the loopback for the gate to reach. */
typedef struct tiny_server {
        int fd;
        unsigned port;
        pthread_t thread;
} tiny_server;

static void *serve(void *userdata)
{
        tiny_server *s = userdata;
        for (;;) {
                int c = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);
                if (c < 0)
                        return NULL;
                /* Any local user can connect to it too: nobody holds it for long. */
                struct timeval limit = { .tv_sec = 2 };
                (void) setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
                (void) setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
                char buf[2048];
                (void) read(c, buf, sizeof buf);
                static const char reply[] = "HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nok\n";
                (void) write_all(c, reply, sizeof reply - 1);
                close(c);
        }
}

static void check_deep(aisb_ctx *ctx, doctor *d, const aisb_policy *base_policy)
{
        /* A sandbox at all: the entrypoint installs its ruleset, drops, execs. */
        run_capture out = { .max = DOCTOR_OUTPUT_MAX };
        tiny_server s = { .fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0) };
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof a;
        if (s.fd < 0 || bind(s.fd, (struct sockaddr *) &a, sizeof a) < 0 || listen(s.fd, 8) < 0 ||
            getsockname(s.fd, (struct sockaddr *) &a, &len) < 0 ||
            pthread_create(&s.thread, NULL, serve, &s) != 0) {
                report(d, "egress", AISB_CHECK_FAIL, "cannot start a test server on the loopback", NULL);
                goto out;
        }
        s.port = ntohs(a.sin_port);

        /* The user's image, a test allowlist. */
        char allow[64], add_host[64], script[512];
        snprintf(allow, sizeof allow, "aisb-doctor.test:%u", s.port);
        snprintf(add_host, sizeof add_host, "aisb-doctor.test:127.0.0.1");
        snprintf(script, sizeof script,
                 "curl -s -o /dev/null -m 10 -w '%%{http_code} ' http://aisb-doctor.test:%u/; "
                 "curl -s -o /dev/null -m 10 -w '%%{http_code}' http://aisb-denied.test:%u/", s.port, s.port);
        const char *const cmd[] = { "sh", "-c", script, NULL };
        aisb_policy *p = NULL;
        aisb_error *e = NULL;
        const char *const settings[] = { "allow", allow, "gate-add-host", add_host, "no-cwd", "true",
                                         "ephemeral-home", "true", NULL };
        int r = doctor_policy(base_policy, settings, cmd, &p, &e);
        int code = -1;
        if (r >= 0)
                r = run_captured(ctx, p, doctor_timeout(), run_capture_stdout, &out, &code, &e);
        if (r < 0)
                report(d, "sandbox", AISB_CHECK_FAIL, aisb_error_message(e), "see the checks above");
        else if (code == 77)
                report(d, "nftables", AISB_CHECK_FAIL, "the entrypoint could not install its ruleset (exit 77)",
                       "the kernel must allow nftables in a user namespace (nf_tables module)");
        else {
                report(d, "nftables", AISB_CHECK_OK, "the egress ruleset is installed in a sandbox", NULL);
                if (out.b.data && streq(out.b.data, "200 403"))
                        report(d, "egress", AISB_CHECK_OK,
                               "an allowlisted request passed the gate, a listed-out one was refused", NULL);
                else
                        report(d, "egress", AISB_CHECK_FAIL, out.b.data ? out.b.data : "no answer",
                               "aisb gate logs, and the gate's logs/cache.log in ~/.local/state/ai-sandbox/gates");
        }
        aisb_error_free(e);
        /* Leave no gate behind for the test allowlist. */
        if (p)
                (void) aisb_gate_down(ctx, p, NULL);
        aisb_policy_free(p);
        shutdown(s.fd, SHUT_RDWR);
        pthread_join(s.thread, NULL);
out:
        if (s.fd >= 0)
                close(s.fd);
        buffer_free(&out.b);
}

/* What every sandbox can read in the agents directory: the files' result, cached by runs
 * (rescanned here when the directory changed since). */
static void check_skills(doctor *d, const aisb_policy *p)
{
        _cleanup_free_ char *dir = NULL;
        const char *why = NULL;
        unsigned long findings = 0;
        bool changed = false;
        _cleanup_error_ aisb_error *e = NULL;
        char detail[PATH_MAX + 160];
        if (harness_agents_dir(p, &dir, &why) < 0 || !dir) {
                snprintf(detail, sizeof detail, "no agents directory is mounted (%s)", why ? why : "out of memory");
                report(d, "skills", AISB_CHECK_OK, detail, NULL);
        } else if (skills_check_cached(dir, &findings, &changed, &e) < 0) {
                report(d, "skills", AISB_CHECK_WARN, aisb_error_message(e), "run \"aisb skill-lint\"");
        } else if (findings == 0) {
                snprintf(detail, sizeof detail, "%s: no credential found in its files", dir);
                report(d, "skills", AISB_CHECK_OK, detail, NULL);
        } else {
                snprintf(detail, sizeof detail,
                         "%s, mounted read-only in every sandbox, holds %lu possible credential%s in its files",
                         dir, findings, findings == 1 ? "" : "s");
                report(d, "skills", AISB_CHECK_WARN, detail,
                       "run \"aisb skill-lint\" to see them and take them out (--no-agents mounts none)");
        }
}

int aisb_doctor(aisb_ctx *ctx, const aisb_policy *p, unsigned flags, aisb_doctor_fn fn, void *userdata,
                aisb_error **err)
{
        if (flags & ~(unsigned) AISB_DOCTOR_DEEP)
                return aisb_error_set(err, -EINVAL, "aisb_doctor: unknown flags 0x%x", flags);
        bool deep = flags & AISB_DOCTOR_DEEP;
        doctor d = { .fn = fn, .userdata = userdata };
        _cleanup_error_ aisb_error *e = NULL;
        if (aisb_ctx_connect(ctx, &e) < 0) {
                const char *m = aisb_error_message(e);
                report(&d, "podman", AISB_CHECK_FAIL, m,
                       strstr(m, "system migrate")
                               ? "run \"podman system migrate\": containers of yours were killed without podman knowing"
                               : "install podman 4.3 or newer; \"podman info\" must work as you");
                return d.failures;
        }
        char detail[256];
        snprintf(detail, sizeof detail, "podman %s at %s", aisb_ctx_podman_version(ctx),
                 aisb_ctx_socket_path(ctx));
        report(&d, "podman", AISB_CHECK_OK, detail, NULL);

        _cleanup_json_ json_object *info = NULL;
        int r = podman_info(ctx, &info, err);
        if (r < 0)
                return r;
        check_host(&d, info);
        check_network(ctx, &d, p, info);
        check_skills(&d, p);
        if (deep && d.failures == 0)
                check_deep(ctx, &d, p);
        /* After --deep, whose run builds the image this check needs. */
        check_project(ctx, &d, p, deep && d.failures == 0);
        return d.failures;
}
