/* SPDX-License-Identifier: MIT */
/*
 * The gate: squid in a rootless container on the host network, listening on 127.0.0.1 on a
 * port chosen when it starts, resolving names itself and refusing anything its allowlist
 * does not name. One gate per allowlist (named by its hash), shared by every run with that
 * allowlist; a lock in the state directory makes sure concurrent runs never start it twice.
 * Its configuration and logs live in the state directory, bind-mounted in, so the access
 * log is read straight from the host for each run's egress summary.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include "aisb-private.h"
#include "allowlist.h"

#define GATE_DIR_INSIDE "/aisb-gate"
#define GATE_START_TIMEOUT_MS 20000

void gate_info_done(gate_info *g)
{
        free(g->name);
        free(g->hash);
        free(g->dir);
        *g = (gate_info) {};
}

static int mkdir_p(const char *path, mode_t mode)
{
        _cleanup_free_ char *copy = strdup(path);
        if (!copy)
                return -ENOMEM;
        for (char *p = copy + 1;; p++) {
                if (*p == '/' || *p == 0) {
                        char saved = *p;
                        *p = 0;
                        if (mkdir(copy, mode) < 0 && errno != EEXIST)
                                return -errno;
                        *p = saved;
                        if (!saved)
                                break;
                }
        }
        return 0;
}

int state_dir(const char *sub, char **ret, aisb_error **err)
{
        const char *xdg = getenv("XDG_STATE_HOME");
        const char *home = getenv("HOME");
        char *path = NULL;
        int n;
        if (xdg && xdg[0] == '/')
                n = asprintf(&path, "%s/ai-sandbox%s%s", xdg, sub ? "/" : "", sub ? sub : "");
        else if (home && home[0] == '/')
                n = asprintf(&path, "%s/.local/state/ai-sandbox%s%s", home, sub ? "/" : "",
                             sub ? sub : "");
        else
                return aisb_error_set(err, -ENOENT, "neither XDG_STATE_HOME nor HOME is set");
        if (n < 0)
                return aisb_error_set(err, -ENOMEM, "out of memory");
        int r = mkdir_p(path, 0700);
        if (r < 0) {
                aisb_error_set(err, r, "cannot create %s: %s", path, strerror(-r));
                free(path);
                return r;
        }
        *ret = path;
        return 0;
}

static int write_file(const char *dir, const char *name, const char *text, aisb_error **err)
{
        _cleanup_free_ char *path = NULL, *tmp = NULL;
        if (asprintf(&path, "%s/%s", dir, name) < 0 || asprintf(&tmp, "%s/.%s.tmp", dir, name) < 0)
                return aisb_error_set(err, -ENOMEM, "out of memory");
        _cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                return aisb_error_set(err, -errno, "cannot write %s: %s", tmp, strerror(errno));
        int r = write_all(fd, text, strlen(text));
        if (r < 0 || rename(tmp, path) < 0)
                return aisb_error_set(err, r < 0 ? r : -errno, "cannot write %s", path);
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

/* Whether something accepts TCP on 127.0.0.1:port. */
bool gate_port_answers(unsigned port)
{
        _cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return false;
        struct sockaddr_in a = { .sin_family = AF_INET,
                                 .sin_port = htons((uint16_t) port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        if (connect(fd, (struct sockaddr *) &a, sizeof a) == 0)
                return true;
        if (errno != EINPROGRESS)
                return false;
        struct pollfd p = { .fd = fd, .events = POLLOUT };
        if (poll(&p, 1, 1000) != 1)
                return false;
        int so_error = 0;
        socklen_t len = sizeof so_error;
        return getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len) == 0 && so_error == 0;
}

/* State of the named gate container: 0 absent, 1 present; *ret_running, *ret_port. */
static int gate_inspect(aisb_ctx *ctx, const char *name, bool *ret_running, unsigned *ret_port,
                        aisb_error **err)
{
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "/libpod/containers/%s/json", name) < 0)
                return aisb_error_set(err, -ENOMEM, "out of memory");
        http_response resp = {};
        int r = http_send(ctx, &(http_request) { .method = "GET", .path = path }, &resp, err);
        if (r < 0)
                return r;
        if (resp.status == 404) {
                http_response_done(&resp);
                return 0;
        }
        if (resp.status != 200) {
                r = aisb_error_set(err, -EIO, "inspecting %s: %s", name, http_error_message(&resp));
                http_response_done(&resp);
                return r;
        }
        _cleanup_json_ json_object *o = json_tokener_parse(resp.body);
        http_response_done(&resp);
        json_object *state, *running, *config, *labels, *port;
        *ret_running = o && json_object_object_get_ex(o, "State", &state) &&
                       json_object_object_get_ex(state, "Running", &running) &&
                       json_object_get_boolean(running);
        *ret_port = 0;
        if (o && json_object_object_get_ex(o, "Config", &config) &&
            json_object_object_get_ex(config, "Labels", &labels) &&
            json_object_object_get_ex(labels, AISB_LABEL_PREFIX "gate.port", &port))
                *ret_port = (unsigned) strtoul(json_object_get_string(port), NULL, 10);
        return 1;
}

static int remove_named(aisb_ctx *ctx, const char *name, aisb_error **err)
{
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "/libpod/containers/%s?force=true&timeout=0&ignore=true", name) < 0)
                return aisb_error_set(err, -ENOMEM, "out of memory");
        http_response resp = {};
        int r = http_send(ctx, &(http_request) { .method = "DELETE", .path = path }, &resp, err);
        http_response_done(&resp);
        return r;
}

static json_object *gate_create_body(const char *name, const char *image, const char *dir,
                                     const char *hash, unsigned port)
{
        json_object *o = json_object_new_object();
        char user[64], port_text[16];
        snprintf(user, sizeof user, "%u:%u", (unsigned) getuid(), (unsigned) getgid());
        snprintf(port_text, sizeof port_text, "%u", port);
        json_object_object_add(o, "name", json_object_new_string(name));
        json_object_object_add(o, "image", json_object_new_string(image));
        json_object *command = json_object_new_array();
        static const char *const argv[] = { "squid", "-N", "-f", GATE_DIR_INSIDE "/squid.conf" };
        for (size_t i = 0; i < ELEMENTSOF(argv); i++)
                json_object_array_add(command, json_object_new_string(argv[i]));
        json_object_object_add(o, "command", command);
        json_object *netns = json_object_new_object();
        json_object_object_add(netns, "nsmode", json_object_new_string("host"));
        json_object_object_add(o, "netns", netns);
        /* squid runs as the user, so it writes its logs into the user's state directory. */
        json_object *userns = json_object_new_object();
        json_object_object_add(userns, "nsmode", json_object_new_string("keep-id"));
        json_object_object_add(o, "userns", userns);
        json_object_object_add(o, "user", json_object_new_string(user));
        json_object *drop = json_object_new_array();
        json_object_array_add(drop, json_object_new_string("ALL"));
        json_object_object_add(o, "cap_drop", drop);
        json_object_object_add(o, "no_new_privileges", json_object_new_boolean(1));
        json_object_object_add(o, "read_only_filesystem", json_object_new_boolean(1));
        json_object *mounts = json_object_new_array();
        json_object *m = json_object_new_object();
        json_object_object_add(m, "type", json_object_new_string("bind"));
        json_object_object_add(m, "source", json_object_new_string(dir));
        json_object_object_add(m, "destination", json_object_new_string(GATE_DIR_INSIDE));
        json_object *opts = json_object_new_array();
        json_object_array_add(opts, json_object_new_string("rbind"));
        json_object_array_add(opts, json_object_new_string("rw"));
        json_object_object_add(m, "options", opts);
        json_object_array_add(mounts, m);
        static const char *const tmpfs[] = { "/run", "/tmp", "/var/tmp", "/var/spool/squid",
                                             "/var/log/squid", "/var/cache/squid" };
        for (size_t i = 0; i < ELEMENTSOF(tmpfs); i++) {
                json_object *t = json_object_new_object();
                json_object_object_add(t, "type", json_object_new_string("tmpfs"));
                json_object_object_add(t, "source", json_object_new_string("tmpfs"));
                json_object_object_add(t, "destination", json_object_new_string(tmpfs[i]));
                json_object *to = json_object_new_array();
                json_object_array_add(to, json_object_new_string("size=16m"));
                json_object_array_add(to, json_object_new_string("mode=1777"));
                json_object_object_add(t, "options", to);
                json_object_array_add(mounts, t);
        }
        json_object_object_add(o, "mounts", mounts);
        json_object *labels = json_object_new_object();
        json_object_object_add(labels, AISB_LABEL_PREFIX "managed", json_object_new_string("true"));
        json_object_object_add(labels, AISB_LABEL_PREFIX "gate", json_object_new_string(hash));
        json_object_object_add(labels, AISB_LABEL_PREFIX "gate.port", json_object_new_string(port_text));
        json_object_object_add(o, "labels", labels);
        json_object_object_add(o, "remove", json_object_new_boolean(0));
        return o;
}

static void tail_of_file(const char *dir, const char *name, char *buf, size_t size)
{
        _cleanup_free_ char *path = NULL;
        buf[0] = 0;
        if (asprintf(&path, "%s/%s", dir, name) < 0)
                return;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return;
        off_t end = lseek(fd, 0, SEEK_END);
        off_t start = end > (off_t) size - 1 ? end - (off_t) size + 1 : 0;
        ssize_t n = pread(fd, buf, size - 1, start);
        buf[n > 0 ? n : 0] = 0;
        for (char *c = buf; *c; c++)
                if (*c == '\n')
                        *c = ' ';
}

/* Write the configuration, build or find the image, create and start the container, and
 * wait until squid listens. g has name, hash and dir; this fills the port. */
static int gate_start(aisb_ctx *ctx, const aisb_policy *p, const allowlist *l, gate_info *g,
                      aisb_error **err)
{
        int r = free_port(&g->port);
        if (r < 0)
                return aisb_error_set(err, r, "cannot find a free port for the gate: %s", strerror(-r));
        _cleanup_free_ char *conf = NULL, *hosts = NULL, *cache_log = NULL, *image = NULL;
        _cleanup_free_ char *start = NULL;
        _cleanup_(build_context_done) build_context context = {};
        _cleanup_strv_free_ char **host_addresses = NULL;
        r = host_own_addresses(&host_addresses);
        if (r < 0)
                return aisb_error_set(err, r, "cannot list the host's addresses for the gate: %s",
                                      strerror(-r));
        squid_options so = {
                .port = g->port,
                .hosts_file = GATE_DIR_INSIDE "/hosts",
                .add_hosts = (const char *const *) p->add_hosts,
                .host_addresses = (const char *const *) host_addresses,
                .access_log = GATE_DIR_INSIDE "/access.log",
                .cache_log = GATE_DIR_INSIDE "/cache.log",
        };
        r = allowlist_squid_config(l, &so, &conf, err);
        if (r >= 0)
                r = allowlist_hosts_file((const char *const *) p->add_hosts, &hosts, err);
        if (r >= 0)
                r = write_file(g->dir, "squid.conf", conf, err);
        if (r >= 0)
                r = write_file(g->dir, "hosts", hosts, err);
        if (r < 0)
                return r;
        if (asprintf(&cache_log, "%s/cache.log", g->dir) >= 0)
                (void) truncate(cache_log, 0);

        r = image_gate_context(p, &context, err);
        if (r < 0)
                return r;
        r = image_ensure_context(ctx, p, "localhost/aisb-gate", &context, &image, NULL, err);
        if (r < 0)
                return aisb_error_wrap(err, r, "the gate's image");

        aisb_log(ctx, AISB_LOG_INFO, "starting the gate %s on 127.0.0.1:%u", g->name, g->port);
        _cleanup_json_ json_object *body = gate_create_body(g->name, image, g->dir, g->hash, g->port);
        http_response resp = {};
        r = http_post_json(ctx, "/libpod/containers/create", body, NULL, false, &resp, err);
        if (r >= 0 && resp.status != 201)
                r = aisb_error_set(err, -EIO, "creating the gate: %s", http_error_message(&resp));
        http_response_done(&resp);
        if (r < 0)
                return r;
        if (asprintf(&start, "/libpod/containers/%s/start", g->name) < 0)
                return aisb_error_set(err, -ENOMEM, "out of memory");
        r = http_send(ctx, &(http_request) { .method = "POST", .path = start }, &resp, err);
        if (r >= 0 && resp.status != 204 && resp.status != 304)
                r = aisb_error_set(err, -EIO, "starting the gate: %s", http_error_message(&resp));
        http_response_done(&resp);
        if (r < 0 || ctx->dry_run_fn)
                return r;

        struct timespec delay = { 0, 50 * 1000 * 1000 };
        for (int waited = 0; waited < GATE_START_TIMEOUT_MS; waited += 50) {
                if (gate_port_answers(g->port))
                        return 0;
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
        tail_of_file(g->dir, "cache.log", why, sizeof why);
        r = aisb_error_set(err, -EIO, "the gate did not start listening on 127.0.0.1:%u: %s",
                           g->port, why[0] ? why : "(no log)");
        (void) remove_named(ctx, g->name, NULL);
        return r;
}

int gate_ensure(aisb_ctx *ctx, const aisb_policy *p, const allowlist *l, gate_info *ret,
                aisb_error **err)
{
        _cleanup_(gate_info_done) gate_info g = {};
        _cleanup_free_ char *sub = NULL, *lock_path = NULL;
        int r = allowlist_gate_hash(l, (const char *const *) p->add_hosts, &g.hash);
        if (r < 0)
                return aisb_error_set(err, r, "cannot hash the allowlist");
        if (asprintf(&g.name, "aisb-gate-%s", g.hash) < 0 || asprintf(&sub, "gates/%s", g.hash) < 0)
                return aisb_error_set(err, -ENOMEM, "out of memory");
        r = state_dir(sub, &g.dir, err);
        if (r < 0)
                return r;
        if (asprintf(&lock_path, "%s/lock", g.dir) < 0)
                return aisb_error_set(err, -ENOMEM, "out of memory");
        /* The common case, a gate up and answering, needs no lock: runs sharing a gate do
         * not queue behind each other. */
        bool running = false;
        r = gate_inspect(ctx, g.name, &running, &g.port, err);
        if (r < 0)
                return r;
        if (r == 1 && running && g.port && gate_port_answers(g.port)) {
                *ret = g;
                g = (gate_info) {};
                return 0;
        }
        /* Held until we return: a concurrent run waits here, then finds the gate running. */
        _cleanup_close_ int lock = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (lock < 0 || flock(lock, LOCK_EX) < 0)
                return aisb_error_set(err, -errno, "cannot lock %s: %s", lock_path, strerror(errno));

        r = gate_inspect(ctx, g.name, &running, &g.port, err);
        if (r < 0)
                return r;
        if (r == 1 && running && g.port && gate_port_answers(g.port)) {
                *ret = g;
                g = (gate_info) {};
                return 0;
        }
        /* Absent, stopped or not answering: start it afresh. */
        if (r == 1) {
                aisb_log(ctx, AISB_LOG_INFO, "restarting the gate %s", g.name);
                r = remove_named(ctx, g.name, err);
                if (r < 0)
                        return r;
        }
        r = gate_start(ctx, p, l, &g, err);
        if (r < 0)
                return r;
        *ret = g;
        g = (gate_info) {};
        return 0;
}

int gate_stop(aisb_ctx *ctx, const char *name, aisb_error **err)
{
        return remove_named(ctx, name, err);
}

int gate_log_offset(const gate_info *g, long long *ret)
{
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/access.log", g->dir) < 0)
                return -ENOMEM;
        struct stat st;
        *ret = stat(path, &st) == 0 ? (long long) st.st_size : 0;
        return 0;
}

int gate_summary(const gate_info *g, long long offset, egress_summary *ret)
{
        *ret = (egress_summary) {};
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/access.log", g->dir) < 0)
                return -ENOMEM;
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f)
                return 0;
        if (fseeko(f, (off_t) offset, SEEK_SET) < 0)
                return -errno;
        _cleanup_free_ char *line = NULL;
        size_t allocated = 0;
        while (getline(&line, &allocated, f) > 0)
                (void) egress_count_line(ret, line);
        return 0;
}

/* One access log line in ALLOWLIST_SQUID_LOGFORMAT:
 *   TIME CLIENT METHOD HOST:PORT STATUS SQUID_STATUS BYTES ERROR URL
 * counted as squid 5 and 6 log them (docs/allowlist.md has real lines): denied is the gate's
 * own refusal (TCP_DENIED, also TCP_DENIED_ABORTED when the client left at once); failed is a
 * request the gate let through that did not complete: status 0 (the client left first), an
 * _ABORTED or _TIMEDOUT tag, NONE_NONE/TAG_NONE (squid 5 logs a failed CONNECT so, 6 as
 * TCP_TUNNEL/503), an error page of squid's own (ERR_CONNECT_FAIL, ERR_DNS_FAIL, ...), or a
 * CONNECT that got no tunnel. Everything else reached its destination and got an answer,
 * whatever the status (a 503 of the origin's own is allowed egress). Fields are split on
 * blanks by hand: a field too long for a buffer must not shift the ones after it. */
int egress_count_line(egress_summary *s, const char *line)
{
        const char *field[9] = {};
        size_t len[9] = {}, n = 0;
        for (const char *p = line; n < ELEMENTSOF(field);) {
                while (*p && isspace((unsigned char) *p))
                        p++;
                if (!*p)
                        break;
                field[n] = p;
                while (*p && !isspace((unsigned char) *p))
                        p++;
                len[n] = (size_t) (p - field[n]);
                n++;
        }
#define FIELD_IS(i, text) (len[i] == strlen(text) && strncmp(field[i], text, len[i]) == 0)
#define FIELD_STARTS(i, text) (len[i] >= strlen(text) && strncmp(field[i], text, strlen(text)) == 0)
#define FIELD_HAS(i, text) (memmem(field[i], len[i], text, strlen(text)) != NULL)
        enum { METHOD = 2, HOST = 3, STATUS = 4, TAG = 5, ERROR = 7 };
        if (n <= TAG)
                return -EBADMSG;
        bool no_status = FIELD_IS(STATUS, "0") || FIELD_IS(STATUS, "000");
        /* A connection that sent no request (aisb's own liveness probe) is no egress. */
        if (FIELD_IS(METHOD, "-") && no_status)
                return 0;
        /* Older lines (no ERROR field) hold the URL there, which never starts with ERR_. */
        bool has_error = n > ERROR && FIELD_STARTS(ERROR, "ERR_");
        char (*names)[sizeof s->denied_names[0]];
        size_t *n_names;
        if (FIELD_STARTS(TAG, "TCP_DENIED") || (has_error && FIELD_IS(ERROR, "ERR_ACCESS_DENIED"))) {
                s->denied++;
                names = s->denied_names;
                n_names = &s->n_denied_names;
        } else if (no_status || FIELD_HAS(TAG, "_ABORTED") || FIELD_HAS(TAG, "_TIMEDOUT") ||
                   FIELD_STARTS(TAG, "NONE") || FIELD_STARTS(TAG, "TAG_NONE") || has_error ||
                   (FIELD_IS(METHOD, "CONNECT") && !FIELD_IS(STATUS, "200"))) {
                s->failed++;
                names = s->failed_names;
                n_names = &s->n_failed_names;
        } else {
                s->allowed++;
                return 0;
        }
#undef FIELD_IS
#undef FIELD_STARTS
#undef FIELD_HAS
        /* The name without its port, cut as stored, or repeats never match. */
        char host[sizeof s->denied_names[0]];
        size_t host_len = len[HOST];
        const char *colon = memrchr(field[HOST], ':', host_len);
        if (colon && colon != field[HOST])
                host_len = (size_t) (colon - field[HOST]);
        snprintf(host, sizeof host, "%.*s", (int) (host_len < sizeof host ? host_len : sizeof host - 1),
                 field[HOST]);
        if (streq(host, "-")) /* squid could not parse the request: nothing to name */
                return 0;
        for (size_t i = 0; i < *n_names; i++)
                if (streq(names[i], host))
                        return 0;
        if (*n_names < ELEMENTSOF(s->denied_names))
                memcpy(names[(*n_names)++], host, sizeof host);
        return 0;
}

/* ---- the public face: aisb gate up|status|logs|down ---- */

static int policy_gate(const aisb_policy *p, allowlist *l, char **ret_hash, aisb_error **err)
{
        int r = policy_allowlist(p, NULL, l, err);
        if (r < 0)
                return r;
        if (allowlist_count_domains(l) == 0) {
                allowlist_done(l);
                return aisb_error_set(err, -EINVAL,
                                      "this policy's allowlist names no domain, so it has no gate: add --allow DOMAIN");
        }
        r = allowlist_gate_hash(l, (const char *const *) p->add_hosts, ret_hash);
        if (r < 0) {
                allowlist_done(l);
                return aisb_error_set(err, r, "cannot hash the allowlist");
        }
        return 0;
}

int aisb_gate_up(aisb_ctx *ctx, const aisb_policy *p, char **ret_name, unsigned *ret_port,
                 aisb_error **err)
{
        int r = aisb_ctx_connect(ctx, err);
        if (r < 0)
                return r;
        allowlist l = {};
        _cleanup_free_ char *hash = NULL;
        r = policy_gate(p, &l, &hash, err);
        if (r < 0)
                return r;
        gate_info g = {};
        r = gate_ensure(ctx, p, &l, &g, err);
        allowlist_done(&l);
        if (r < 0)
                return r;
        if (ret_port)
                *ret_port = g.port;
        if (ret_name)
                *ret_name = steal_pointer(&g.name);
        gate_info_done(&g);
        return 0;
}

int aisb_gate_log_path(const aisb_policy *p, char **ret_path, aisb_error **err)
{
        allowlist l = {};
        _cleanup_free_ char *hash = NULL, *sub = NULL, *dir = NULL;
        int r = policy_gate(p, &l, &hash, err);
        if (r < 0)
                return r;
        allowlist_done(&l);
        if (asprintf(&sub, "gates/%s", hash) < 0)
                return aisb_error_set(err, -ENOMEM, "out of memory");
        r = state_dir(sub, &dir, err);
        if (r < 0)
                return r;
        if (asprintf(ret_path, "%s/access.log", dir) < 0)
                return aisb_error_set(err, -ENOMEM, "out of memory");
        return 0;
}

int aisb_gate_list(aisb_ctx *ctx, aisb_gate_fn fn, void *userdata, aisb_error **err)
{
        int r = aisb_ctx_connect(ctx, err);
        if (r < 0)
                return r;
        _cleanup_free_ char *filters = http_escape("{\"label\":[\"" AISB_LABEL_PREFIX "gate\"]}");
        _cleanup_free_ char *path = NULL;
        if (!filters || asprintf(&path, "/libpod/containers/json?all=true&filters=%s", filters) < 0)
                return aisb_error_set(err, -ENOMEM, "out of memory");
        http_response resp = {};
        r = http_send(ctx, &(http_request) { .method = "GET", .path = path }, &resp, err);
        if (r < 0)
                return r;
        _cleanup_json_ json_object *list = resp.status == 200 ? json_tokener_parse(resp.body) : NULL;
        if (!list || !json_object_is_type(list, json_type_array)) {
                r = aisb_error_set(err, -EIO, "listing gates: %s", http_error_message(&resp));
                http_response_done(&resp);
                return r;
        }
        http_response_done(&resp);
        for (size_t i = 0; i < json_object_array_length(list); i++) {
                json_object *c = json_object_array_get_idx(list, i), *names, *labels, *state, *v;
                const char *name = json_object_object_get_ex(c, "Names", &names)
                                           ? json_object_get_string(json_object_array_get_idx(names, 0))
                                           : NULL;
                const char *hash = NULL;
                unsigned port = 0;
                if (json_object_object_get_ex(c, "Labels", &labels)) {
                        if (json_object_object_get_ex(labels, AISB_LABEL_PREFIX "gate", &v))
                                hash = json_object_get_string(v);
                        if (json_object_object_get_ex(labels, AISB_LABEL_PREFIX "gate.port", &v))
                                port = (unsigned) strtoul(json_object_get_string(v), NULL, 10);
                }
                bool running = json_object_object_get_ex(c, "State", &state) &&
                               streq(json_object_get_string(state), "running");
                if (name && hash)
                        fn(name, hash, port, running && gate_port_answers(port), userdata);
        }
        return 0;
}

int aisb_gate_down(aisb_ctx *ctx, const aisb_policy *p, aisb_error **err)
{
        int r = aisb_ctx_connect(ctx, err);
        if (r < 0)
                return r;
        allowlist l = {};
        _cleanup_free_ char *hash = NULL, *name = NULL;
        r = policy_gate(p, &l, &hash, err);
        if (r < 0)
                return r;
        allowlist_done(&l);
        if (asprintf(&name, "aisb-gate-%s", hash) < 0)
                return aisb_error_set(err, -ENOMEM, "out of memory");
        return remove_named(ctx, name, err);
}
