/* SPDX-License-Identifier: MIT */
/*
 * aisb doctor: what on this host would stop a sandbox, or weaken it, each with its fix.
 * The checks read podman's own view (/libpod/info) where there is one, and the host's files
 * where podman has none. --deep runs real sandboxes: the ruleset installed, an allowlisted
 * request through the gate answered and a listed-out one refused.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "aisb-private.h"

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
        d->fn(name, status, detail, fix, d->userdata);
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
        if (rootless && streq(rootless, "true"))
                report(d, "rootless", AISB_CHECK_OK, "podman runs rootless", NULL);
        else
                report(d, "rootless", AISB_CHECK_FAIL, "podman runs as root: the sandbox's root would be the host's",
                       "run aisb as an unprivileged user");

        struct passwd *pw = getpwuid(getuid());
        const char *user = pw ? pw->pw_name : "";
        bool sub = file_has_user("/etc/subuid", user, getuid()) && file_has_user("/etc/subgid", user, getuid());
        if (sub)
                report(d, "subuid", AISB_CHECK_OK, "subordinate uid and gid ranges present", NULL);
        else
                report(d, "subuid", AISB_CHECK_FAIL, "no range in /etc/subuid or /etc/subgid: no user namespace",
                       "sudo usermod --add-subuids 100000-165535 --add-subgids 100000-165535 $USER");

        /* The sandbox's network is slirp4netns on every podman (docs/networking.md). */
        if (access("/usr/bin/slirp4netns", X_OK) == 0 || access("/usr/local/bin/slirp4netns", X_OK) == 0)
                report(d, "network", AISB_CHECK_OK, "slirp4netns is installed", NULL);
        else
                report(d, "network", AISB_CHECK_FAIL, "slirp4netns is missing: no sandbox network",
                       "install slirp4netns (apt-get install slirp4netns, dnf install slirp4netns)");

        if (access("/dev/net/tun", R_OK | W_OK) == 0)
                report(d, "tun", AISB_CHECK_OK, "/dev/net/tun is usable", NULL);
        else
                report(d, "tun", AISB_CHECK_FAIL, "/dev/net/tun cannot be opened: slirp4netns fails",
                       "sudo chmod 666 /dev/net/tun");

        const char *cgroup = json_object_get_string(path_get(info, "host", "cgroupVersion", NULL));
        bool hybrid = access("/sys/fs/cgroup/unified", F_OK) == 0;
        if (cgroup && streq(cgroup, "v2"))
                report(d, "cgroups", AISB_CHECK_OK, "cgroup v2: memory, CPU and process caps can be enforced", NULL);
        else
                report(d, "cgroups", AISB_CHECK_WARN,
                       "cgroup v1: memory, CPU and process caps are accepted and silently ignored",
                       "boot with systemd.unified_cgroup_hierarchy=1 (cgroup v2) and delegate controllers");

        const char *runtime = json_object_get_string(path_get(info, "host", "ociRuntime", "name"));
        if (runtime && streq(runtime, "crun") && hybrid && !(cgroup && streq(cgroup, "v2")))
                report(d, "runtime", AISB_CHECK_FAIL, "crun fails every start on hybrid cgroups",
                       "runtime = \"runc\" under [engine] in ~/.config/containers/containers.conf");
        else
                report(d, "runtime", AISB_CHECK_OK, runtime ? runtime : "unknown", NULL);

        const char *driver = json_object_get_string(path_get(info, "store", "graphDriverName", NULL));
        if (driver && streq(driver, "vfs"))
                report(d, "storage", AISB_CHECK_WARN,
                       "storage driver vfs: every sandbox start copies the whole image (seconds, about 20x slower)",
                       "driver = \"overlay\" under [storage] in ~/.config/containers/storage.conf, then podman system reset");
        else
                report(d, "storage", AISB_CHECK_OK, driver ? driver : "unknown", NULL);

        const char *selinux = json_object_get_string(path_get(info, "host", "security", "selinuxEnabled"));
        const char *apparmor = json_object_get_string(path_get(info, "host", "security", "apparmorEnabled"));
        char lsm[96];
        snprintf(lsm, sizeof lsm, "SELinux %s, AppArmor %s",
                 selinux && streq(selinux, "true") ? "enforcing or permissive" : "off",
                 apparmor && streq(apparmor, "true") ? "on" : "off");
        report(d, "security-modules", AISB_CHECK_OK, lsm, NULL);
}

static void check_project(doctor *d, const aisb_policy *p)
{
        if (!p->project)
                return;
        int pipefd[2];
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return;
        pid_t pid = fork();
        if (pid == 0) {
                (void) dup2(pipefd[1], STDOUT_FILENO);
                int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
                if (devnull >= 0)
                        (void) dup2(devnull, STDERR_FILENO);
                execlp("git", "git", "-C", p->project, "status", "--porcelain", (char *) NULL);
                _exit(127);
        }
        close(pipefd[1]);
        char buf[256];
        ssize_t n = pid > 0 ? read(pipefd[0], buf, sizeof buf) : -1;
        close(pipefd[0]);
        int status = 0;
        if (pid > 0)
                while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                        ;
        if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
                report(d, "project", AISB_CHECK_OK, "not a git work tree (changes by the agent cannot be reviewed with git)", NULL);
        else if (n > 0)
                report(d, "project", AISB_CHECK_WARN, "the project has uncommitted changes",
                       "commit or stash them first, so what the agent changes is what git shows");
        else
                report(d, "project", AISB_CHECK_OK, "git work tree is clean", NULL);
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
                char buf[2048];
                (void) read(c, buf, sizeof buf);
                static const char reply[] = "HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nok\n";
                (void) write_all(c, reply, sizeof reply - 1);
                close(c);
        }
}

static int capture(int stream, const void *data, size_t size, void *userdata)
{
        return stream == AISB_STREAM_STDOUT ? buffer_append(userdata, data, size) : 0;
}

static void check_deep(aisb_ctx *ctx, doctor *d, const aisb_policy *base_policy)
{
        /* A sandbox at all: the entrypoint installs its ruleset, drops, execs. */
        aisb_io *io = NULL;
        if (aisb_io_new(&io, NULL) < 0)
                return;
        aisb_io_set_stdin(io, -1);
        buffer out = {};
        aisb_io_set_output_fn(io, capture, &out);

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

        aisb_policy *p = NULL;
        if (aisb_policy_new(&p, NULL) < 0)
                goto stop;
        /* The user's image settings (base, certificates, Node source), a test allowlist. */
        p->node_source_npm = base_policy->node_source_npm;
        char allow[64], add_host[64], script[512];
        snprintf(allow, sizeof allow, "aisb-doctor.test:%u", s.port);
        snprintf(add_host, sizeof add_host, "aisb-doctor.test:127.0.0.1");
        snprintf(script, sizeof script,
                 "curl -s -o /dev/null -m 10 -w '%%{http_code} ' http://aisb-doctor.test:%u/; "
                 "curl -s -o /dev/null -m 10 -w '%%{http_code}' http://aisb-denied.test:%u/", s.port, s.port);
        const char *const cmd[] = { "sh", "-c", script, NULL };
        aisb_error *e = NULL;
        int r = aisb_policy_set(p, "base-image", base_policy->base_image, &e);
        for (size_t i = 0; r >= 0 && i < base_policy->n_ca_certs; i++)
                r = aisb_policy_set(p, "ca-cert", base_policy->ca_certs[i].path, &e);
        if (r >= 0)
                r = aisb_policy_set(p, "entrypoint", base_policy->entrypoint, &e);
        if (r >= 0)
                r = aisb_policy_set(p, "allow", allow, &e);
        if (r >= 0)
                r = aisb_policy_set(p, "gate-add-host", add_host, &e);
        if (r >= 0)
                r = aisb_policy_set(p, "no-cwd", "true", &e);
        if (r >= 0)
                r = aisb_policy_set(p, "ephemeral-home", "true", &e);
        if (r >= 0)
                r = aisb_policy_set_command(p, cmd, &e);
        int code = -1;
        if (r >= 0)
                r = aisb_run(ctx, p, io, &code, &e);
        if (r < 0)
                report(d, "sandbox", AISB_CHECK_FAIL, aisb_error_message(e), "see the checks above");
        else if (code == 77)
                report(d, "nftables", AISB_CHECK_FAIL, "the entrypoint could not install its ruleset (exit 77)",
                       "the kernel must allow nftables in a user namespace (nf_tables module)");
        else {
                report(d, "nftables", AISB_CHECK_OK, "the egress ruleset is installed in a sandbox", NULL);
                if (out.data && streq(out.data, "200 403"))
                        report(d, "egress", AISB_CHECK_OK,
                               "an allowlisted request passed the gate, a listed-out one was refused", NULL);
                else
                        report(d, "egress", AISB_CHECK_FAIL, out.data ? out.data : "no answer",
                               "aisb gate logs, and the gate's logs/cache.log in ~/.local/state/ai-sandbox/gates");
        }
        aisb_error_free(e);
        /* Leave no gate behind for the test allowlist. */
        (void) aisb_gate_down(ctx, p, NULL);
        aisb_policy_free(p);
stop:
        shutdown(s.fd, SHUT_RDWR);
        pthread_join(s.thread, NULL);
out:
        if (s.fd >= 0)
                close(s.fd);
        buffer_free(&out);
        aisb_io_free(io);
}

int aisb_doctor(aisb_ctx *ctx, const aisb_policy *p, int deep, aisb_doctor_fn fn, void *userdata,
                aisb_error **err)
{
        doctor d = { .fn = fn, .userdata = userdata };
        aisb_error *e = NULL;
        if (aisb_ctx_connect(ctx, &e) < 0) {
                const char *m = aisb_error_message(e);
                report(&d, "podman", AISB_CHECK_FAIL, m,
                       strstr(m, "system migrate")
                               ? "run \"podman system migrate\": containers of yours were killed without podman knowing"
                               : "install podman 4.3 or newer; \"podman info\" must work as you");
                aisb_error_free(e);
                return d.failures;
        }
        char detail[256];
        snprintf(detail, sizeof detail, "podman %s at %s", aisb_ctx_podman_version(ctx),
                 aisb_ctx_socket_path(ctx));
        report(&d, "podman", AISB_CHECK_OK, detail, NULL);

        http_response resp = {};
        int r = http_send(ctx, &(http_request) { .method = "GET", .path = "/libpod/info" }, &resp, err);
        if (r < 0)
                return r;
        _cleanup_json_ json_object *info = resp.status == 200 ? json_tokener_parse(resp.body) : NULL;
        http_response_done(&resp);
        if (!info)
                return aisb_error_set(err, -EIO, "GET /libpod/info gave no answer");
        check_host(&d, info);
        check_project(&d, p);
        if (deep && d.failures == 0)
                check_deep(ctx, &d, p);
        return d.failures;
}
