/* SPDX-License-Identifier: MIT */
/*
 * The gate: squid in a rootless container on the host network, listening on 127.0.0.1 on a
 * port chosen when it starts, resolving names itself and refusing anything its allowlist
 * does not name. One gate per allowlist (named by its hash), shared by every run with that
 * allowlist; a lock in the state directory makes sure concurrent runs never start it twice.
 *
 * Its state directory holds two directories, bind-mounted in: config/ (squid.conf, hosts),
 * read-only, written only by the host; and logs/, which squid writes. squid is reachable by
 * every sandbox's traffic, so logs/ is treated as planted by an attacker: the host opens
 * what is there only through the directory, never following a symlink, never blocking on a
 * FIFO, only regular files, reading a bounded amount (the access log for each run's egress
 * summary, cache.log's tail when squid will not start).
 *
 * Another local user can bind a port on the loopback too: a gate counts as up only while the
 * listening socket on its port is the user's own.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <sys/random.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include <curl/curl.h>

#include "container.h"
#include "gate-scripts.h"
#include "gate-squid.h"
#include "gate.h"
#include "image.h"
#include "jsonutil.h"
#include "network.h"
#include "podman.h"
#include "port-owners.h"
#include "userdirs.h"
#include "fileio.h"
#include "hostaddr.h"

#define GATE_CONFIG_DIR "config"
#define GATE_LOGS_DIR "logs"
#define GATE_TLS_DIR "tls"
#define GATE_LEASES_DIR "leases"
#define GATE_ASK_DIR "ask"
#define GATE_CONFIG_INSIDE "/aisb-gate/" GATE_CONFIG_DIR
#define GATE_LOGS_INSIDE "/aisb-gate/" GATE_LOGS_DIR
#define GATE_TLS_INSIDE "/aisb-gate/" GATE_TLS_DIR
#define GATE_CA_MAX (64 * 1024)

#define GATE_START_TIMEOUT_MS 20000
/* A listening gate answers at once; squid with no helper never does. */
#define GATE_PROBE_TIMEOUT_MS 5000
/* Read of the access log per run, past where the run started, a line at a time through a
 * fixed buffer: far above any real run's, and high enough that a flood of long refused
 * requests cannot push what came after it out of the summary and the record (16 MiB could:
 * 5000 requests with 4 KB paths). About a second of reading at most. */
#define GATE_LOG_READ_MAX (1024 * 1024 * 1024)
#define GATE_LOG_LINE_MAX 4096

void gate_info_done(gate_info *g)
{
        free(g->name);
        free(g->hash);
        free(g->dir);
        free(g->ca_pem);
        free_secret(g->client_key);
        free(g->lease);
        closep(&g->lease_fd);
        closep(&g->ask_questions_fd);
        closep(&g->ask_answers_fd);
        *g = GATE_INFO_NULL;
}

/* dir/sub, created when absent, opened without following a symlink. */
static int gate_subdir_open(const char *dir, const char *sub)
{
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (mkdirat(fd, sub, 0700) < 0 && errno != EEXIST)
                return -errno;
        int sub_fd = openat(fd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return sub_fd < 0 ? -errno : sub_fd;
}

/* A file in a directory squid writes (logs/, tls/), for reading: only a regular file, opened
 * without following a symlink or waiting for a FIFO's writer. -EBADFD for anything else. */
static int gate_file_open(const gate_info *g, const char *sub, const char *name, struct stat *ret_st)
{
        _cleanup_close_ int dir = gate_subdir_open(g->dir, sub);
        if (dir < 0)
                return dir;
        _cleanup_close_ int fd = openat(dir, name,
                                        O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return errno == ELOOP ? -EBADFD : -errno;
        if (fstat(fd, ret_st) < 0)
                return -errno;
        if (!S_ISREG(ret_st->st_mode))
                return -EBADFD;
        return steal_fd(&fd);
}

/* Before squid starts: whatever is at name in logs/ that squid did not make as a regular
 * file (a symlink, a FIFO) goes, unfollowed; cache.log is emptied, so the tail read when the
 * start fails is this start's. */
static void gate_log_reset(int logs, const char *name, bool empty)
{
        struct stat st;
        if (fstatat(logs, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return;
        if (!S_ISREG(st.st_mode)) {
                (void) unlinkat(logs, name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0);
                return;
        }
        if (!empty)
                return;
        _cleanup_close_ int fd = openat(logs, name,
                                        O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
                (void) ftruncate(fd, 0);
}

/* The configuration, written only by the host into config/ (mounted read-only): a fresh file
 * beside it, then a rename over it. 0600: squid runs as the user. */
static int write_config(int config, const char *name, const char *text, aisb_error **err)
{
        _cleanup_free_ char *tmp = NULL;
        if (asprintf(&tmp, ".%s.tmp", name) < 0)
                return error_oom(err);
        (void) unlinkat(config, tmp, 0);
        _cleanup_close_ int fd = openat(config, tmp,
                                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return aisb_error_set(err, -errno, "cannot write the gate's %s: %s", tmp, strerror(errno));
        int r = write_all(fd, text, strlen(text));
        if (r >= 0 && renameat(config, tmp, config, name) < 0)
                r = -errno;
        if (r < 0) {
                (void) unlinkat(config, tmp, 0);
                return aisb_error_set(err, r, "cannot write the gate's %s: %s", name, strerror(-r));
        }
        return 0;
}

/* A port nothing listens on right now: the kernel's pick for an ephemeral bind. */
static int free_port(unsigned *ret)
{
        _cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof a;
        if (bind(fd, (struct sockaddr *) &a, sizeof a) < 0 ||
            getsockname(fd, (struct sockaddr *) &a, &len) < 0)
                return -errno;
        *ret = ntohs(a.sin_port);
        return 0;
}

/* A container of a podman list: its first name; a label's value (of a list's entry, or of an
 * inspect's Config). */
static const char *listed_name(json_object *c)
{
        json_object *names;
        return json_object_object_get_ex(c, "Names", &names) ? json_object_get_string(json_object_array_get_idx(names, 0))
                                                             : NULL;
}

static const char *listed_label(json_object *c, const char *key)
{
        json_object *labels, *v;
        return json_object_object_get_ex(c, "Labels", &labels) && json_object_object_get_ex(labels, key, &v)
                       ? json_object_get_string(v)
                       : NULL;
}

/* State of the named gate container: 0 absent, 1 present; *ret_running, *ret_port. */
static int gate_inspect(aisb_ctx *ctx, const char *name, bool *ret_running, unsigned *ret_port,
                        aisb_error **err)
{
        _cleanup_json_ json_object *o = NULL;
        int r = podman_container_inspect(ctx, name, &o, err);
        if (r <= 0)
                return r;
        json_object *state, *running, *config;
        *ret_running = json_object_object_get_ex(o, "State", &state) &&
                       json_object_object_get_ex(state, "Running", &running) &&
                       json_object_get_boolean(running);
        const char *port = json_object_object_get_ex(o, "Config", &config)
                                   ? listed_label(config, AISB_LABEL_PREFIX "gate.port")
                                   : NULL;
        *ret_port = port ? (unsigned) strtoul(port, NULL, 10) : 0;
        return 1;
}

/* The gate's files, from its directory on the host; its scratch space, in memory. */
static json_object *gate_mounts(const gate_info *g)
{
        static const char *const ro[] = { "rbind", "ro", NULL }, *const rw[] = { "rbind", "rw", NULL };
        const struct {
                const char *sub, *inside, *const *options;
                bool wanted;
        } binds[] = {
                { GATE_CONFIG_DIR, GATE_CONFIG_INSIDE, ro, true },
                { GATE_LOGS_DIR, GATE_LOGS_INSIDE, rw, true },
                { GATE_TLS_DIR, GATE_TLS_INSIDE, rw, true },
                { GATE_LEASES_DIR, "/aisb-gate/" GATE_LEASES_DIR, ro, true },
                /* Read-only: the FIFOs open for writing all the same, and squid cannot swap them. */
                { GATE_ASK_DIR, GATE_ASK_INSIDE, ro, g->ask_questions_fd >= 0 },
        };
        static const char *const tmpfs_options[] = { "size=16m", "mode=1777", NULL };
        static const char *const tmpfs[] = { "/run", "/tmp", "/var/tmp", "/var/spool/squid",
                                             "/var/log/squid", "/var/cache/squid" };
        _cleanup_json_ json_object *mounts = json_object_new_array();
        int r = mounts ? 0 : -ENOMEM;
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(binds); i++) {
                char source[PATH_MAX];
                snprintf(source, sizeof source, "%s/%s", g->dir, binds[i].sub);
                if (binds[i].wanted)
                        r = json_build_into(mounts, JSON_BUILD_TAKE(container_mount("bind", source, binds[i].inside,
                                                                                    binds[i].options)));
        }
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(tmpfs); i++)
                r = json_build_into(mounts, JSON_BUILD_TAKE(container_mount("tmpfs", "tmpfs", tmpfs[i], tmpfs_options)));
        return r < 0 ? NULL : steal_pointer(&mounts);
}

static int gate_create_body(const gate_info *g, const char *image, unsigned idle_stop_s, bool intercept,
                            json_object **ret)
{
        char user[64], port_text[16], idle_text[16] = "held";
        snprintf(user, sizeof user, "%u:%u", (unsigned) getuid(), (unsigned) getgid());
        snprintf(port_text, sizeof port_text, "%u", g->port);
        if (!g->per_run)
                snprintf(idle_text, sizeof idle_text, "%u", idle_stop_s);
        const char *const argv[] = { "sh", "-c", gate_start_script, "aisb-gate", idle_text, port_text,
                                     intercept ? "1" : "0", NULL };
        return json_build(
                ret,
                JSON_BUILD_OBJECT(
                        JSON_BUILD_PAIR_STRING("name", g->name),
                        JSON_BUILD_PAIR_STRING("image", image),
                        JSON_BUILD_PAIR_STRV("command", argv),
                        JSON_BUILD_PAIR("netns", JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRING("nsmode", "host"))),
                        /* squid runs as the user, so it writes its logs into the user's state
                         * directory. */
                        JSON_BUILD_PAIR("userns", JSON_BUILD_OBJECT(JSON_BUILD_PAIR_STRING("nsmode", "keep-id"))),
                        JSON_BUILD_PAIR_STRING("user", user),
                        CONTAINER_SECURITY_PAIRS(&security_gate),
                        JSON_BUILD_PAIR_BOOL("read_only_filesystem", security_gate.read_only_root),
                        /* squid keeps its shared memory in /dev/shm: podman 5 would make it
                         * read-only with the root (4.3 ignores the field). */
                        JSON_BUILD_PAIR_BOOL("read_write_tmpfs", true),
                        JSON_BUILD_PAIR_TAKE("mounts", gate_mounts(g)),
                        JSON_BUILD_PAIR("labels", JSON_BUILD_OBJECT(
                                                          JSON_BUILD_PAIR_STRING(AISB_LABEL_PREFIX "managed", "true"),
                                                          JSON_BUILD_PAIR_STRING(AISB_LABEL_PREFIX "gate", g->hash),
                                                          JSON_BUILD_PAIR_STRING(AISB_LABEL_PREFIX "gate.port", port_text),
                                                          JSON_BUILD_PAIR_CONDITION(g->per_run,
                                                                                    JSON_BUILD_PAIR_STRING(
                                                                                            AISB_LABEL_PREFIX "gate.run",
                                                                                            "true")))),
                        JSON_BUILD_PAIR_BOOL("remove", false)));
}

static void tail_of_log(const gate_info *g, const char *name, char *buf, size_t size)
{
        buf[0] = 0;
        struct stat st;
        _cleanup_close_ int fd = gate_file_open(g, GATE_LOGS_DIR, name, &st);
        if (fd < 0)
                return;
        off_t start = st.st_size > (off_t) size - 1 ? st.st_size - (off_t) size + 1 : 0;
        ssize_t n = pread(fd, buf, size - 1, start);
        buf[n > 0 ? n : 0] = 0;
        for (char *c = buf; *c; c++)
                if (*c == '\n')
                        *c = ' ';
}

/* Empty what the gate writes into tls/ before it starts (a fresh CA each start), without
 * following anything planted there. */
static void gate_tls_reset(int tls)
{
        static const char *const names[] = { "ca.pem", "ca.pem.new", "ca.key", "serving" };
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                struct stat st;
                if (fstatat(tls, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0)
                        (void) unlinkat(tls, names[i], S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0);
        }
}

/* The gate's CA certificate into g->ca_pem, from tls/ (which the gate writes): a regular
 * file, read without following a link or waiting on a FIFO, bounded, and a PEM certificate. */
static int gate_read_ca(gate_info *g, aisb_error **err)
{
        struct stat st;
        _cleanup_close_ int fd = gate_file_open(g, GATE_TLS_DIR, "ca.pem", &st);
        _cleanup_free_ char *text = NULL;
        int r = fd < 0 ? fd : read_full_fd(fd, GATE_CA_MAX, &text, NULL);
        if (r >= 0 && (!startswith(text, "-----BEGIN CERTIFICATE-----\n") || !strstr(text, "-----END CERTIFICATE-----")))
                r = -EBADMSG;
        if (r < 0)
                return aisb_error_set(err, r, "the gate's CA certificate in %s/" GATE_TLS_DIR ": %s", g->dir,
                                      strerror(-r));
        g->ca_pem = steal_pointer(&text);
        return 0;
}

/* Whether some run holds a lease in the directory leases (a file it keeps locked: the
 * lease's owner is alive); with prune, the leases nobody holds any more (their run ended
 * without giving them back) go. The host only tries a lock, through the directory, on
 * regular files. */
static bool gate_leases_scan(int leases, bool prune)
{
        _cleanup_close_ int fd = dup(leases);
        DIR *d = fd >= 0 ? fdopendir(steal_fd(&fd)) : NULL;
        if (!d)
                return false;
        bool held = false;
        struct dirent *e;
        while ((prune || !held) && (e = readdir(d))) {
                if (e->d_name[0] == '.')
                        continue;
                _cleanup_close_ int f = openat(leases, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
                struct stat st;
                bool lease = f >= 0 && fstat(f, &st) == 0 && S_ISREG(st.st_mode);
                bool locked = lease && flock(f, LOCK_EX | LOCK_NB) < 0;
                held |= locked && errno == EWOULDBLOCK;
                if (prune && !locked)
                        (void) unlinkat(leases, e->d_name, 0);
        }
        closedir(d);
        return held;
}

/* This run's lease on a shared gate: a file in leases/ it holds locked until it ends. The
 * gate stops when idle only while no lease is held. */
static int gate_lease_take(gate_info *g)
{
        _cleanup_close_ int leases = gate_subdir_open(g->dir, GATE_LEASES_DIR);
        if (leases < 0)
                return leases;
        uint32_t random;
        if (getrandom(&random, sizeof random, 0) != sizeof random)
                random = (uint32_t) time(NULL);
        _cleanup_free_ char *name = NULL;
        if (asprintf(&name, "run-%ld-%08x", (long) getpid(), random) < 0)
                return -ENOMEM;
        _cleanup_close_ int fd = openat(leases, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        if (flock(fd, LOCK_SH) < 0) {
                int r = -errno;
                (void) unlinkat(leases, name, 0);
                return r;
        }
        g->lease_fd = steal_fd(&fd);
        g->lease = steal_pointer(&name);
        return 0;
}

/* One FIFO of ask/, made afresh by the user, opened read-write without following anything:
 * the directory is the run's own gate's, made for this run. */
static int gate_ask_fifo(int dir, const char *name, int *ret)
{
        if (unlinkat(dir, name, 0) < 0 && errno != ENOENT)
                return -errno;
        if (mkfifoat(dir, name, 0600) < 0)
                return -errno;
        int fd = openat(dir, name, O_RDWR | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode) || st.st_uid != getuid()) {
                close(fd);
                return -EBADFD;
        }
        *ret = fd;
        return 0;
}

/* The FIFOs the ask helper relays through, open before squid starts it. */
static int gate_ask_open(gate_info *g, aisb_error **err)
{
        _cleanup_close_ int dir = gate_subdir_open(g->dir, GATE_ASK_DIR);
        int r = dir < 0 ? dir : gate_ask_fifo(dir, "questions", &g->ask_questions_fd);
        if (r >= 0)
                r = gate_ask_fifo(dir, "answers", &g->ask_answers_fd);
        if (r < 0)
                return aisb_error_set(err, r, "cannot make the gate's question FIFOs in %s/" GATE_ASK_DIR ": %s",
                                      g->dir, strerror(-r));
        return 0;
}

/* squid.conf and the hosts file for this gate, as gate_start writes them into config/. */
static int gate_config_texts(const gate_request *req, const gate_info *g, bool intercept, char **ret_conf,
                             char **ret_hosts, aisb_error **err)
{
        _cleanup_strv_free_ char **host_addresses = NULL;
        int r = host_own_addresses(&host_addresses);
        if (r < 0)
                return aisb_error_set(err, r, "cannot list the host's addresses for the gate: %s",
                                      strerror(-r));
        squid_options so = {
                .port = g->port,
                .hosts_file = GATE_CONFIG_INSIDE "/hosts",
                .add_hosts = req->add_hosts,
                .host_addresses = (const char *const *) host_addresses,
                .access_log = GATE_LOGS_INSIDE "/access.log",
                .cache_log = GATE_LOGS_INSIDE "/cache.log",
                .bump_cert = GATE_TLS_INSIDE "/ca.pem",
                .bump_key = GATE_TLS_INSIDE "/ca.key",
                .bump_db = "/tmp/aisb-certs",
                .secrets = req->secrets,
                .n_secrets = req->n_secrets,
                .client_key = g->client_key,
                .held_helper = g->per_run ? GATE_CONFIG_INSIDE "/held.sh" : NULL,
                .ask_helper = req->ask ? GATE_CONFIG_INSIDE "/ask.sh" : NULL,
                .tunnel_helper = intercept ? GATE_CONFIG_INSIDE "/tunnel.awk" : NULL,
        };
        r = gate_squid_config(req->list, &so, ret_conf, err);
        if (r >= 0)
                r = gate_squid_hosts_file(req->add_hosts, ret_hosts, err);
        return r;
}

/* The state directory made ready for a start: config/ written (squid.conf, hosts and the
 * helpers this gate runs), the question FIFOs open, and what squid left in logs/, tls/ and
 * leases/ cleared. */
static int gate_state_prepare(const gate_request *req, gate_info *g, bool intercept, aisb_error **err)
{
        _cleanup_free_ char *conf = NULL, *hosts = NULL;
        int r = gate_config_texts(req, g, intercept, &conf, &hosts, err);
        if (r < 0)
                return r;
        _cleanup_close_ int config = gate_subdir_open(g->dir, GATE_CONFIG_DIR);
        _cleanup_close_ int logs = gate_subdir_open(g->dir, GATE_LOGS_DIR);
        _cleanup_close_ int tls = gate_subdir_open(g->dir, GATE_TLS_DIR);
        _cleanup_close_ int leases = gate_subdir_open(g->dir, GATE_LEASES_DIR);
        if (config < 0 || logs < 0 || tls < 0 || leases < 0) {
                r = config < 0 ? config : logs < 0 ? logs : tls < 0 ? tls : leases;
                return aisb_error_set(err, r, "cannot open the gate's directories in %s: %s", g->dir,
                                      strerror(-r));
        }
        r = write_config(config, "squid.conf", conf, err);
        explicit_bzero(conf, strlen(conf));
        if (r >= 0)
                r = write_config(config, "hosts", hosts, err);
        if (r >= 0 && g->per_run)
                r = write_config(config, "held.sh", gate_held_helper, err);
        if (r >= 0 && intercept)
                r = write_config(config, "tunnel.awk", gate_squid_tunnel_helper, err);
        if (r >= 0 && req->ask)
                r = write_config(config, "ask.sh", gate_squid_ask_helper, err);
        if (r >= 0 && req->ask)
                r = gate_ask_open(g, err);
        if (r < 0)
                return r;
        gate_log_reset(logs, "cache.log", true);
        gate_log_reset(logs, "access.log", false);
        gate_tls_reset(tls);
        (void) gate_leases_scan(leases, true);
        return 0;
}

/* Until squid listens on the gate's port as the user's (then its CA read, and a run's own
 * gate asked once), the container stops, another user takes the port, or the run is stopped.
 * The caller removes the container when this fails. */
static int gate_wait_listening(aisb_ctx *ctx, gate_info *g, bool intercept, aisb_error **err)
{
        struct timespec delay = { 0, 50 * 1000 * 1000 };
        for (int waited = 0; waited < GATE_START_TIMEOUT_MS; waited += 50) {
                if (ctx_stopping(ctx))
                        return aisb_error_set(err, -ECANCELED, "stopped while the gate started");
                port_owners owners;
                if (port_owners_read(g->port, &owners) == 0 && owners.ours) {
                        /* squid listens only once the CA exists. */
                        int r = intercept ? gate_read_ca(g, err) : 0;
                        if (r < 0)
                                return r;
                        return g->per_run ? gate_probe(ctx, g->port, g->client_key, GATE_PROBE_TIMEOUT_MS, err) : 0;
                }
                /* Taken between our choosing it and squid binding it: squid cannot listen
                 * there, and another user's listener must never pass for the gate. A retry
                 * would only give whoever races us a second try; the next run picks anew. */
                if (owners.stranger)
                        return aisb_error_set(err, -EADDRINUSE,
                                              "another user (uid %u) took 127.0.0.1:%u before the gate could listen on it; run again to use another port",
                                              (unsigned) owners.stranger_uid, g->port);
                if (waited % 1000 == 0) {
                        bool running = false;
                        unsigned ignored;
                        aisb_error *e = NULL;
                        int k = gate_inspect(ctx, g->name, &running, &ignored, &e);
                        aisb_error_free(e);
                        if (k == 1 && !running)
                                break;
                }
                nanosleep(&delay, NULL);
        }
        char why[400];
        tail_of_log(g, "cache.log", why, sizeof why);
        return aisb_error_set(err, -EIO, "the gate did not start listening on 127.0.0.1:%u: %s",
                              g->port, why[0] ? why : "(no log)");
}

/* Write the configuration, build or find the image, create and start the container, and
 * wait until squid listens. g has name, hash and dir; this fills the port. */
static int gate_start(aisb_ctx *ctx, const gate_request *req, gate_info *g, aisb_error **err)
{
        if (!req->image)
                return aisb_error_set(err, -EINVAL, "the gate's image was not planned");
        int r = free_port(&g->port);
        if (r < 0)
                return aisb_error_set(err, r, "cannot find a free port for the gate: %s", strerror(-r));
        bool intercept = gate_squid_intercepts(req->list, req->n_secrets);
        r = gate_state_prepare(req, g, intercept, err);
        if (r < 0)
                return r;

        r = image_ensure(ctx, req->image, NULL, err);
        if (r < 0)
                return aisb_error_wrap(err, r, "the gate's image");

        aisb_log(ctx, AISB_LOG_INFO, "starting the gate %s on 127.0.0.1:%u", g->name, g->port);
        _cleanup_json_ json_object *body = NULL;
        _cleanup_free_ char *id = NULL;
        if (gate_create_body(g, req->image->tag, req->idle_stop_s, intercept, &body) < 0)
                return error_oom(err);
        r = podman_container_create(ctx, body, false, &id, err);
        if (r < 0)
                return aisb_error_wrap(err, r, "creating the gate");
        r = podman_container_start(ctx, g->name, err);
        if (r < 0)
                aisb_error_wrap(err, r, "starting the gate");
        else
                r = gate_wait_listening(ctx, g, intercept, err);
        /* Not started, not listening, or the run was stopped meanwhile: no half-made gate
         * stays. */
        if (r < 0)
                (void) podman_container_remove(ctx, g->name, NULL);
        return r;
}

/* The state directory of the gate named by hash, made when absent. */
static int gate_state_dir(const char *hash, char **ret, aisb_error **err)
{
        _cleanup_free_ char *sub = NULL;
        if (asprintf(&sub, "gates/%s", hash) < 0)
                return error_oom(err);
        return state_dir(sub, ret, err);
}

/* A shared gate found running: its CA, when it intercepts (each start made a new one). */
static int gate_found(const gate_request *req, gate_info *g, aisb_error **err)
{
        return gate_squid_intercepts(req->list, req->n_secrets) ? gate_read_ca(g, err) : 0;
}

static int gate_forget(aisb_ctx *ctx, const char *name, const char *dir_path, aisb_error **err);
static void gate_prune_run_gates(aisb_ctx *ctx);

/* The gate g names, when podman runs it and its port is ours: the run's (*ret, 1), else 0 with
 * *exists saying whether podman has it at all. */
static int gate_take_if_up(aisb_ctx *ctx, const gate_request *req, gate_info *g, bool *exists, gate_info *ret,
                           aisb_error **err)
{
        bool running = false;
        int r = gate_inspect(ctx, g->name, &running, &g->port, err);
        if (r < 0)
                return r;
        *exists = r == 1;
        if (!*exists || !running || !gate_port_ours(g->port))
                return 0;
        r = gate_found(req, g, err);
        if (r < 0)
                return r;
        *ret = *g;
        *g = GATE_INFO_NULL;
        return 1;
}

/* A shared gate, this run's lease taken: found up (1, moved into *ret), or started into g
 * (0) under the lock, after a second look (a concurrent run may have started it meanwhile). */
static int gate_shared_ensure(aisb_ctx *ctx, const gate_request *req, gate_info *g, gate_info *ret,
                              aisb_error **err)
{
        /* The common case, a gate up and answering, needs no lock: runs sharing a gate do
         * not queue behind each other. */
        bool exists = false;
        int r = gate_take_if_up(ctx, req, g, &exists, ret, err);
        if (r != 0)
                return r;
        /* Held until we return: a concurrent run waits here, then finds the gate running.
         * Polled, so that a stop is noticed while another run starts the gate. */
        _cleanup_free_ char *lock_path = NULL;
        if (asprintf(&lock_path, "%s/lock", g->dir) < 0)
                return error_oom(err);
        _cleanup_close_ int lock = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (lock < 0)
                return aisb_error_set(err, -errno, "cannot open %s: %s", lock_path, strerror(errno));
        while (flock(lock, LOCK_EX | LOCK_NB) < 0) {
                if (errno != EWOULDBLOCK && errno != EINTR)
                        return aisb_error_set(err, -errno, "cannot lock %s: %s", lock_path, strerror(errno));
                if (ctx_stopping(ctx))
                        return aisb_error_set(err, -ECANCELED, "stopped while waiting for the gate");
                nanosleep(&(struct timespec) { 0, 50 * 1000 * 1000 }, NULL);
        }
        r = gate_take_if_up(ctx, req, g, &exists, ret, err);
        if (r != 0)
                return r;
        /* Absent, stopped (idle, or its squid died) or not answering: start it afresh. */
        if (exists) {
                aisb_log(ctx, AISB_LOG_INFO, "restarting the gate %s", g->name);
                r = podman_container_remove(ctx, g->name, err);
                if (r < 0)
                        return r;
        }
        return gate_start(ctx, req, g, err);
}

int gate_ensure(aisb_ctx *ctx, const gate_request *req, gate_info *ret, aisb_error **err)
{
        _cleanup_(gate_info_done) gate_info g = GATE_INFO_NULL;
        int r = gate_squid_hash(req->list, req->add_hosts, &g.hash);
        if (r < 0)
                return aisb_error_set(err, r, "cannot hash the allowlist");
        if (req->n_secrets || req->ask) {
                /* A gate of this run's own: named apart from every other, never shared. */
                free(g.hash);
                g.hash = NULL;
                g.per_run = true;
                r = gate_random_hex(8, &g.hash);
                if (r >= 0)
                        r = gate_random_hex(16, &g.client_key);
                if (r < 0)
                        return r == -ENOMEM ? error_oom(err) : aisb_error_set(err, r, "getrandom: %s", strerror(-r));
        }
        if (asprintf(&g.name, "aisb-gate-%s", g.hash) < 0)
                return error_oom(err);
        r = gate_state_dir(g.hash, &g.dir, err);
        if (r < 0)
                return r;
        /* A run's own gate serves while its lease is held: if the run is killed, the gate
         * refuses everything, and the next run with secrets removes it. A shared gate's is
         * held before the gate is looked at: a gate about to stop for being idle sees it. */
        if (g.per_run)
                gate_prune_run_gates(ctx);
        r = gate_lease_take(&g);
        if (r < 0)
                return aisb_error_set(err, r, "cannot take a lease on the gate in %s: %s", g.dir, strerror(-r));
        if (g.per_run && (r = gate_start(ctx, req, &g, err)) < 0)
                gate_release(ctx, &g);
        else if (!g.per_run)
                r = gate_shared_ensure(ctx, req, &g, ret, err);
        if (r != 0)
                return r < 0 ? r : 0;
        *ret = g;
        g = GATE_INFO_NULL;
        return 0;
}

/* Zero a file's bytes, then remove it: for the configuration that held secrets. */
static void wipe_file(int dir, const char *name)
{
        _cleanup_close_ int fd = openat(dir, name, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
                static const char zeros[4096];
                for (off_t done = 0; done < st.st_size;) {
                        size_t n = (size_t) (st.st_size - done) < sizeof zeros ? (size_t) (st.st_size - done) : sizeof zeros;
                        ssize_t w = pwrite(fd, zeros, n, done);
                        if (w <= 0)
                                break;
                        done += w;
                }
                (void) fsync(fd);
        }
        (void) unlinkat(dir, name, 0);
}

/* A gate's state directory gone: the configuration that may hold a run's secrets
 * overwritten first, then its CA key, its logs, the directory. */
static void gate_state_wipe(const char *dir_path)
{
        _cleanup_close_ int config = gate_subdir_open(dir_path, GATE_CONFIG_DIR);
        if (config >= 0)
                wipe_file(config, "squid.conf");
        _cleanup_close_ int dir = open(dir_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir >= 0) {
                remove_below(dir, 2);
                (void) rmdir(dir_path);
        }
}

/* A run's own gate removed, and its directory wiped. */
static int gate_forget(aisb_ctx *ctx, const char *name, const char *dir_path, aisb_error **err)
{
        int r = podman_container_remove(ctx, name, err);
        if (dir_path)
                gate_state_wipe(dir_path);
        return r;
}

/* Whether some run holds a lease in dir/leases. */
static bool gate_leases_held(const char *dir)
{
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/" GATE_LEASES_DIR, dir) < 0)
                return true;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return fd >= 0 && gate_leases_scan(fd, false);
}

/* The state directory of the gate named by hash (16 hex digits), or NULL. */
static char *gate_state_path(const char *hash)
{
        if (!hash || strlen(hash) != 16 || strspn(hash, "0123456789abcdef") != 16)
                return NULL;
        _cleanup_free_ char *sub = NULL;
        if (asprintf(&sub, "gates/%s", hash) < 0)
                return NULL;
        return state_path(sub);
}

/* What is left of runs' own gates whose run is gone (killed: its gate then refuses
 * everything, keeping its port): removed, their secrets wiped. A gate whose run still holds
 * its lease (one starting now, too) stays. Best effort: a failure leaves them for "aisb clean
 * --all". */
static void gate_prune_run_gates(aisb_ctx *ctx)
{
        _cleanup_json_ json_object *list = NULL;
        if (podman_container_list(ctx, "{\"label\":[\"" AISB_LABEL_PREFIX "gate.run=true\"]}", &list, NULL) < 0)
                return;
        for (size_t i = 0; i < json_object_array_length(list); i++) {
                json_object *c = json_object_array_get_idx(list, i);
                const char *name = listed_name(c);
                _cleanup_free_ char *dir = name ? gate_state_path(listed_label(c, AISB_LABEL_PREFIX "gate")) : NULL;
                if (dir && !gate_leases_held(dir))
                        (void) gate_forget(ctx, name, dir, NULL);
        }
}

bool gate_run_gone(const char *hash)
{
        _cleanup_free_ char *dir = gate_state_path(hash);
        return dir && !gate_leases_held(dir);
}

int gate_prune_states(const char *const *live_hashes, bool dry, gate_state_fn fn, void *userdata)
{
        _cleanup_free_ char *path = state_path("gates");
        if (!path)
                return 0;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        DIR *d = fdopendir(fd);
        if (!d)
                return -errno;
        fd = -1;
        _cleanup_strv_free_ char **gone = NULL;
        struct dirent *e;
        int r = 0;
        while (r >= 0 && (e = readdir(d))) {
                bool live = false;
                for (size_t i = 0; live_hashes && live_hashes[i]; i++)
                        live |= streq(live_hashes[i], e->d_name);
                _cleanup_free_ char *dir = live ? NULL : gate_state_path(e->d_name);
                /* A run holding a lease is starting that gate now, or still uses it. */
                if (dir && !gate_leases_held(dir))
                        r = strv_push(&gone, e->d_name);
        }
        closedir(d);
        if (gone)
                strv_sort(gone);
        for (size_t i = 0; r >= 0 && gone && gone[i]; i++) {
                _cleanup_free_ char *dir = gate_state_path(gone[i]);
                if (!dir)
                        continue;
                fn(dir, userdata);
                if (!dry)
                        gate_state_wipe(dir);
        }
        return r;
}

void gate_release(aisb_ctx *ctx, gate_info *g)
{
        if (g->lease_fd >= 0) {
                _cleanup_close_ int leases = gate_subdir_open(g->dir, GATE_LEASES_DIR);
                if (leases >= 0 && g->lease)
                        (void) unlinkat(leases, g->lease, 0);
                close(g->lease_fd);
                g->lease_fd = -1;
        }
        if (!g->per_run || !g->name)
                return;
        aisb_error *e = NULL;
        if (gate_forget(ctx, g->name, g->dir, &e) < 0)
                aisb_log(ctx, AISB_LOG_WARNING, "could not remove this run's gate %s (\"aisb clean\" will): %s",
                         g->name, aisb_error_message(e));
        aisb_error_free(e);
}

int gate_log_offset(const gate_info *g, long long *ret)
{
        struct stat st;
        _cleanup_close_ int fd = gate_file_open(g, GATE_LOGS_DIR, "access.log", &st);
        *ret = fd >= 0 ? (long long) st.st_size : 0;
        return 0;
}

int gate_log_read(const gate_info *g, long long offset, int (*fn)(char *line, void *userdata), void *userdata)
{
        struct stat st;
        _cleanup_close_ int fd = gate_file_open(g, GATE_LOGS_DIR, "access.log", &st);
        if (fd == -ENOENT)
                return 0;
        if (fd < 0)
                return fd;
        /* A log that shrank was replaced: then it is all this run's. */
        if (offset > (long long) st.st_size)
                offset = 0;
        if (lseek(fd, (off_t) offset, SEEK_SET) < 0)
                return -errno;
        return read_lines(fd, GATE_LOG_READ_MAX, GATE_LOG_LINE_MAX, fn, userdata);
}

/* ---- the public face: aisb gate up|status|logs|down ---- */

/* The allowlist of p (the caller's to free, whatever this returns) and its gate's hash. */
static int policy_gate(const aisb_policy *p, allowlist *l, char **ret_hash, aisb_error **err)
{
        int r = policy_allowlist(p, NULL, l, err);
        if (r < 0)
                return r;
        if (allowlist_count_domains(l) == 0)
                return aisb_error_set(err, -EINVAL,
                                      "this policy's allowlist names no domain, so it has no gate: add --allow DOMAIN");
        r = gate_squid_hash(l, (const char *const *) p->add_hosts, ret_hash);
        return r < 0 ? aisb_error_set(err, r, "cannot hash the allowlist") : 0;
}

int aisb_gate_up(aisb_ctx *ctx, const aisb_policy *p, char **ret_name, unsigned *ret_port,
                 aisb_error **err)
{
        ctx_operation_begin(ctx);
        _cleanup_(ctx_operation_end) _unused_ aisb_ctx *operation = ctx;
        int r = aisb_ctx_connect(ctx, err);
        if (r < 0)
                return r;
        _cleanup_(allowlist_done) allowlist l = {};
        _cleanup_free_ char *hash = NULL;
        r = policy_gate(p, &l, &hash, err);
        if (r < 0)
                return r;
        /* The shared gate of this allowlist (a run with secrets has one of its own). */
        _cleanup_(image_facts_done) image_facts image = {};
        r = image_gather(p, IMAGE_GATE, &image, err);
        if (r < 0)
                return r;
        gate_info g = GATE_INFO_NULL;
        gate_request req = { .list = &l, .add_hosts = (const char *const *) p->add_hosts,
                             .idle_stop_s = p->gate_idle_stop_s, .image = &image };
        r = gate_ensure(ctx, &req, &g, err);
        if (r < 0)
                return r;
        gate_release(ctx, &g);
        if (ret_port)
                *ret_port = g.port;
        if (ret_name)
                *ret_name = steal_pointer(&g.name);
        gate_info_done(&g);
        return 0;
}

int aisb_gate_log_path(const aisb_policy *p, char **ret_path, aisb_error **err)
{
        _cleanup_(allowlist_done) allowlist l = {};
        _cleanup_free_ char *hash = NULL, *dir = NULL;
        int r = policy_gate(p, &l, &hash, err);
        if (r < 0)
                return r;
        r = gate_state_dir(hash, &dir, err);
        if (r < 0)
                return r;
        if (asprintf(ret_path, "%s/" GATE_LOGS_DIR "/access.log", dir) < 0)
                return error_oom(err);
        return 0;
}

int aisb_gate_list(aisb_ctx *ctx, aisb_gate_fn fn, void *userdata, aisb_error **err)
{
        int r = aisb_ctx_connect(ctx, err);
        if (r < 0)
                return r;
        _cleanup_json_ json_object *list = NULL;
        r = podman_container_list(ctx, "{\"label\":[\"" AISB_LABEL_PREFIX "gate\"]}", &list, err);
        if (r < 0)
                return aisb_error_wrap(err, r, "listing gates");
        for (size_t i = 0; i < json_object_array_length(list); i++) {
                json_object *c = json_object_array_get_idx(list, i), *state;
                const char *name = listed_name(c), *hash = listed_label(c, AISB_LABEL_PREFIX "gate");
                const char *port_text = listed_label(c, AISB_LABEL_PREFIX "gate.port");
                unsigned port = port_text ? (unsigned) strtoul(port_text, NULL, 10) : 0;
                bool running = json_object_object_get_ex(c, "State", &state) &&
                               streq(json_object_get_string(state), "running");
                if (name && hash)
                        fn(&(aisb_gate_entry) { .name = name, .policy_hash = hash, .port = port,
                                                .answering = running && gate_port_ours(port) },
                           userdata);
        }
        return 0;
}

int aisb_gate_down(aisb_ctx *ctx, const aisb_policy *p, aisb_error **err)
{
        int r = aisb_ctx_connect(ctx, err);
        if (r < 0)
                return r;
        _cleanup_(allowlist_done) allowlist l = {};
        _cleanup_free_ char *hash = NULL, *name = NULL;
        r = policy_gate(p, &l, &hash, err);
        if (r < 0)
                return r;
        if (asprintf(&name, "aisb-gate-%s", hash) < 0)
                return error_oom(err);
        return podman_container_remove(ctx, name, err);
}
