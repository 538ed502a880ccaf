/* SPDX-License-Identifier: MIT */
/* Internal structures of libaisb, shared by its modules and the unit tests (which link the
 * static internal library and may look inside). Nothing here is exported. */
#pragma once

#include <curl/curl.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "aisb.h"
#include "allowlist.h"
#include "error.h"
#include "util.h"

#define AISB_API_PREFIX "/v4.0.0"
#define AISB_DEFAULT_BASE_IMAGE "docker.io/library/ubuntu:24.04"
#define AISB_HOME_VOLUME_PREFIX "aisb-home-"
#define AISB_SANDBOX_HOME "/home/sandbox"
#define AISB_PROJECT_DIR "/project"
#define AISB_LABEL_PREFIX "aisb."
#define AISB_ENV_FILE_MAX (1024 * 1024)

DEFINE_TRIVIAL_CLEANUP_FUNC(CURL *, curl_easy_cleanup)
DEFINE_TRIVIAL_CLEANUP_FUNC(json_object *, json_object_put)
DEFINE_TRIVIAL_CLEANUP_FUNC(struct curl_slist *, curl_slist_free_all)
#define _cleanup_json_ _cleanup_(json_object_putp)

typedef enum sandbox_net {
        SANDBOX_NET_ALLOW, /* only the allowlist: through the gate, or pinned, or a proxy */
        SANDBOX_NET_NONE,
        SANDBOX_NET_FULL,
} sandbox_net;

/* How rootless podman gives the sandbox a network (network.c). */
typedef enum network_backend_id {
        NETWORK_BACKEND_AUTO, /* pasta on podman 5, slirp4netns before */
        NETWORK_BACKEND_SLIRP4NETNS,
        NETWORK_BACKEND_PASTA,
} network_backend_id;

typedef struct env_entry {
        char *name;
        char *value; /* secret: wiped on free */
} env_entry;

typedef struct mount_entry {
        char *source; /* absolute host path */
        char *destination;
        bool read_only;
        /* What source was when it was named: the entrypoint refuses a mount that is not it. */
        unsigned long long dev, ino;
} mount_entry;

typedef struct ca_cert {
        char *path;
        char *pem;
        size_t size;
} ca_cert;

struct aisb_policy {
        char *project; /* absolute; NULL with no-cwd */
        bool project_is_cwd; /* the working directory (the default), not a path set later */
        char *base_image;
        char **install;
        ca_cert *ca_certs;
        size_t n_ca_certs;
        sandbox_net net;
        unsigned long long memory;    /* bytes */
        unsigned long long cpus_milli; /* thousandths of a CPU */
        unsigned long long pids_limit;
        unsigned long long tmp_size; /* bytes, each tmpfs */
        bool read_only;
        bool ephemeral_home;
        bool shell;
        char *home_volume;
        bool home_volume_chosen; /* named by the user; otherwise derived from the project */
        env_entry *env;
        size_t n_env;
        char **env_files; /* for print-policy: where values came from */
        mount_entry *mounts;
        size_t n_mounts;
        unsigned long generation; /* bumped by every change: lets a context cache the tag */
        char **command; /* NULL: the harness */
        char **harness_args;    /* arguments for the harness (flags aisb did not know) */
        char **harness_command; /* harness + harness_args, kept in step with both */
        char *harness;
        char *entrypoint; /* host path of aisb-entrypoint, copied into the image */
        allowlist allow;   /* --allow entries; the files are merged in at run time */
        char **add_hosts;  /* --gate-add-host NAME:IP */
        bool no_gate;
        /* Address entries may reach the host itself (allowlist_check_host_ranges). Set only by
         * the user: flags and the user's config, never anything in the project. */
        bool insecure_allow_host_ranges;
        char *proxy;       /* HOST:PORT of the user's own proxy */
        char *user_allowlist; /* the user's allowlist file, "" for none */
        bool node_source_npm; /* Node from the npm registry instead of the official tarball */
        char *thinking;       /* pi's reasoning level, or "host" */
        bool no_pi_config;
        bool no_agents;
        char *agents_dir;     /* mounted read-only at ~/.agents; NULL: the user's ~/.agents */
        bool allow_unenforced;
        bool keep_root;
        bool project_read_only; /* internal (doctor): the project mounted read-only, no settings copy */
        char **devices;              /* --device SRC[:DST[:PERMS]] or a CDI name, as podman takes them */
        char *create_patch_path;     /* --unsafe-create-patch FILE, for the policy's text */
        json_object *create_patch;   /* its content, read once when named */
        network_backend_id network_backend;
};

struct aisb_ctx {
        char *socket_path;
        bool socket_fixed; /* set by the caller: never start a service */
        char *podman_version;
        unsigned version_major, version_minor;
        bool connected;
        CURL *curl; /* reused for plain requests: one keep-alive connection */
        aisb_log_fn log_fn;
        void *log_userdata;
        aisb_log_fn build_fn;
        void *build_userdata;
        aisb_request_fn dry_run_fn;
        void *dry_run_userdata;
        pid_t service_pid; /* transient service we started, 0 if none */
        /* While a run prepares, before its sandbox exists: the run's io, whose control fd is
         * polled between steps and during requests, so a stop (a signal) is not held off
         * until the sandbox runs. Once stopping, requests (the cleanup's) run to the end. */
        aisb_io *stop_io;
        bool stopping;
        /* The last image this context made sure of: the run after "aisb_image_ensure" needs
         * neither a second pack and hash of the context nor a second request. */
        const aisb_policy *ensured_policy;
        unsigned long ensured_generation;
        char *ensured_tag;
};

struct aisb_io {
        int in_fd;
        aisb_output_fn output_fn;
        void *output_userdata;
        unsigned filter_streams; /* AISB_STREAM_* whose terminal control strings go */
        bool terminal;
        unsigned short rows, cols;
        int control_fd;
        aisb_control_fn control_fn;
        void *control_userdata;
};

void aisb_log(aisb_ctx *ctx, aisb_log_level level, const char *fmt, ...) _printf_(3, 4);

/* ---- run.c ---- */
/* Whether the run being prepared was asked to stop: polls its control fd without blocking
 * (a resize read meanwhile is kept for the start). False when no run is being prepared. */
bool run_stopping(aisb_ctx *ctx);

/* ---- http.c: requests over the unix socket ---- */

typedef int (*http_line_fn)(const char *line, size_t size, void *userdata);

typedef struct http_request {
        const char *method;
        const char *path; /* after the API prefix, query included */
        const char *content_type;
        const void *body;
        size_t body_size;
        FILE *body_file; /* streamed upload instead of body */
        long long body_file_size;
        const char *dry_run_body; /* what a dry run shows instead of the body (redacted) */
        http_line_fn line_fn; /* response body delivered line by line (NDJSON) */
        void *line_userdata;
        bool unversioned; /* "/_ping" */
} http_request;

typedef struct http_response {
        long status;
        char *body;
        size_t body_size;
        char *api_version; /* Libpod-Api-Version header */
} http_response;

void http_response_done(http_response *r);
int http_send(aisb_ctx *ctx, const http_request *req, http_response *ret, aisb_error **err);
/* The error message of a libpod JSON error body, or the body itself. */
const char *http_error_message(const http_response *r);
char *http_escape(const char *s);
/* POST a JSON body (Content-Type set); wipe: overwrite its text once sent. */
int http_post_json(aisb_ctx *ctx, const char *path, json_object *body, const char *dry_run_body,
                   bool wipe, http_response *ret, aisb_error **err);
/* GET /libpod/KIND/NAME/exists: 1 exists, 0 does not, negative on error. */
int http_exists(aisb_ctx *ctx, const char *kind, const char *name, aisb_error **err);

/* A hijacked connection (attach). */
typedef struct http_stream {
        CURL *curl;
        int fd;
        buffer leftover; /* stream bytes that arrived with the response head */
} http_stream;
int http_hijack(aisb_ctx *ctx, const char *path, http_stream *ret, aisb_error **err);
void http_stream_done(http_stream *s);

/* ---- connect.c ---- */
int connect_parse_version(const char *version, unsigned *ret_major, unsigned *ret_minor);
int socket_candidates(char ***ret, uid_t uid);
int service_log_reason(const char *log, char **ret);

/* ---- policy.c ---- */
/* The project directory's last component, lower-cased and cut to [a-z0-9_-] (or "scratch"
 * without a project): readable in container and volume names. */
void project_short_name(const char *project, char *buf, size_t size);
/* A fresh policy (defaults otherwise) that builds the same image as src: its base, packages,
 * CA certificates, harness, Node source and entrypoint. For aisb's own sandboxes (doctor). */
int policy_new_for_image(const aisb_policy *src, aisb_policy **ret, aisb_error **err);
int env_name_valid(const char *name);
int policy_env_file_parse(const char *text, size_t size, const char *origin,
                          env_entry **entries, size_t *n, aisb_error **err);
void env_entries_free(env_entry *e, size_t n);
int policy_image_net_hash(const aisb_policy *p, char **ret);
const char *const *policy_command(const aisb_policy *p);
/* The policy's hash, over its formatted text with the image tag already known. */
int policy_hash(const aisb_policy *p, const char *image, char **ret_hex);
int policy_format(const aisb_policy *p, const char *tag, char **ret_text, aisb_error **err);

/* ---- image.c ---- */
bool harness_known(const char *name);
typedef struct context_file {
        const char *name;
        const void *data; /* NULL: the content is the first size bytes of fd */
        size_t size;
        mode_t mode;
        int fd;
} context_file;
/* A build context before packing: its Containerfile and files (CA certificates, the
 * entrypoint), owning the Containerfile, the arrays and the files it opened. */
typedef struct build_context {
        char *containerfile;
        context_file *files;
        size_t n_files;
        char (*names)[64];
} build_context;
void build_context_done(build_context *c);
int image_context(const aisb_policy *p, build_context *ret, aisb_error **err);
int image_gate_context(const aisb_policy *p, build_context *ret, aisb_error **err);
/* repo:<SHA-256 of the entries, truncated>: what names the image. */
int image_context_tag(const char *repo, const build_context *c, char **ret_tag);
/* The deterministic tar podman builds from (libarchive, loaded on first use). With a tag,
 * what is packed is hashed again and must still be what the tag names (-ESTALE if not). */
int image_pack(const build_context *c, const char *tag, void **ret_tar, size_t *ret_size,
               aisb_error **err);
/* Reuse the image named by the context's hash in repo, or build it (bootstrap base first). */
int image_ensure_context(aisb_ctx *ctx, const aisb_policy *p, const char *repo,
                         const build_context *c, char **ret_tag, int *ret_built, aisb_error **err);
int build_parse_line(const char *line, size_t size, char **ret_stream, char **ret_error);

/* ---- attach.c: the multiplexed attach stream ---- */
typedef struct demux {
        uint8_t header[8];
        size_t have;
        int stream;
        uint32_t remaining;
} demux;
/* Feed bytes; emits payload pieces through fn. -EBADMSG on a malformed header. */
int demux_feed(demux *d, const void *data, size_t size,
               int (*fn)(int stream, const void *data, size_t size, void *userdata),
               void *userdata);

/* ---- gate.c ---- */
typedef struct gate_info {
        char *name;
        char *hash;
        char *dir; /* state directory: config/ (squid.conf, hosts), logs/ (access.log, cache.log) */
        unsigned port;
} gate_info;
typedef struct egress_summary {
        unsigned long allowed, denied;
        unsigned long failed; /* let through by the gate, not completed (egress_count_line) */
        char denied_names[8][128];
        size_t n_denied_names;
        char failed_names[8][128];
        size_t n_failed_names;
} egress_summary;
void gate_info_done(gate_info *g);
int state_dir(const char *sub, char **ret, aisb_error **err);
/* Who listens on a loopback port, from /proc/net/tcp and tcp6 text. */
typedef struct port_owners {
        bool ours;      /* a LISTEN socket of the user bound to 127.0.0.1:port */
        bool stranger;  /* another uid's LISTEN socket there, or on a wildcard address */
        uid_t stranger_uid;
} port_owners;
/* 1 when the line is a LISTEN socket on port bound to 127.0.0.1 (*ret_exact) or a wildcard
 * (0.0.0.0, ::, ::ffff:0.0.0.0; in tcp6 also ::ffff:127.0.0.1), with its owner; 0 for any
 * other line. */
int proc_net_tcp_line(const char *line, unsigned port, uid_t *ret_uid, bool *ret_exact);
/* Every line of a table's text, added to owners for the user uid. */
int proc_net_tcp_owners(const char *text, unsigned port, uid_t uid, port_owners *owners);
bool gate_port_ours(unsigned port);
int gate_ensure(aisb_ctx *ctx, const aisb_policy *p, const allowlist *l, gate_info *ret,
                aisb_error **err);
int gate_stop(aisb_ctx *ctx, const char *name, aisb_error **err);
int gate_log_offset(const gate_info *g, long long *ret);
int gate_summary(const gate_info *g, long long offset, egress_summary *ret);
int egress_count_line(egress_summary *s, const char *line);

/* ---- network.c: how a sandbox reaches the outside for its policy ---- */
/* The address the sandbox reaches the host's loopback at, whichever the backend:
 * slirp4netns's allow_host_loopback puts it there, pasta's --map-host-loopback is told to. */
#define SANDBOX_HOST_LOOPBACK "10.0.2.2"

/* How rootless podman gives the sandbox a network: what aisb asks for and what the sandbox
 * then sees (docs/host.md has the table). */
typedef struct network_backend {
        network_backend_id id;
        const char *name;          /* podman's nsmode */
        const char *host_address;  /* where the host's own (non-loopback) addresses are reached */
} network_backend;
/* The backend for this policy on this service (ctx NULL or not connected: as podman 4). */
const network_backend *network_backend_for(const aisb_ctx *ctx, const aisb_policy *p);
typedef struct sandbox_network {
        const char *nsmode;    /* "none", or the backend's name */
        const network_backend *backend; /* NULL with --net none */
        bool host_loopback;    /* the host's loopback mapped at SANDBOX_HOST_LOOPBACK */
        char **entrypoint_args; /* --net MODE [--allow DEST]... [--allow-dns] */
        char **env;            /* NAME=VALUE: the proxy variables */
        allowlist list;        /* the merged allowlist */
        gate_info gate;        /* when a gate serves this run */
} sandbox_network;
void sandbox_network_done(sandbox_network *n);
/* Every address of this host's interfaces, as text (the gate refuses them); NULL for none. */
int host_own_addresses(char ***ret);
struct project_settings;
/* The merged allowlist: --allow entries, the project's file (from settings, the run's
 * snapshot of .ai-sandbox; NULL: read it now, the same way), the user's file. */
int policy_allowlist(const aisb_policy *p, const struct project_settings *settings, allowlist *ret,
                     aisb_error **err);
/* Work out the network; with ctx NULL nothing is started (printing, dry runs) and the gate
 * port is shown as a placeholder. */
int sandbox_network_resolve(aisb_ctx *ctx, const aisb_policy *p,
                            const struct project_settings *settings, sandbox_network *ret,
                            aisb_error **err);

/* ---- harness.c: pi's host configuration, bridged ---- */
/* Where an ephemeral home's bridged files are mounted read-only, and where the entrypoint
 * copies them (after the drop, as the user). */
#define AISB_SEED_IN_SANDBOX "/run/aisb/pi-seed"
#define AISB_PI_AGENT_IN_SANDBOX AISB_SANDBOX_HOME "/.pi/agent"
typedef struct harness_bridge {
        char *seed_dir;   /* ephemeral home: the bridged files, in the run directory */
        char *agents_dir; /* mounted read-only at ~/.agents, or NULL */
} harness_bridge;
bool harness_bridge_applies(const aisb_policy *p);
/* The directory a run mounts at ~/.agents (aisb_policy_agents_dir): NULL in *ret for none,
 * with why in why (may be NULL). -ENOMEM. */
int harness_agents_dir(const aisb_policy *p, char **ret, const char **why);
struct run_dir;
int harness_bridge_prepare(aisb_ctx *ctx, const aisb_policy *p, struct run_dir *rd,
                           harness_bridge *ret, aisb_error **err);
void harness_bridge_done(harness_bridge *b);

/* What a run mounts beyond the policy: the host directory holding its copy of the project's
 * .ai-sandbox (mounted read-only over it; NULL: none), and what the project directory was
 * when the run began (the entrypoint refuses a /project that is not it). */
typedef struct run_mounts {
        const char *settings_copy;
        bool have_project_id;
        unsigned long long project_dev, project_ino;
} run_mounts;

/* ---- manage.c ---- */
/* patched: the fields --unsafe-create-patch changed (names only), or NULL. */
int session_log_append(const aisb_policy *p, const char *image, int exit_code, const char *const *patched,
                       const egress_summary *egress);

/* ---- doctor.c ---- */
/* Run q's command in a sandbox of aisb's own (doctor, skill-lint), stdin closed, its output
 * to fn, for at most timeout_s seconds (then -ETIMEDOUT, the sandbox removed). */
int doctor_run_captured(aisb_ctx *ctx, const aisb_policy *q, long timeout_s, aisb_output_fn fn,
                        void *userdata, int *ret_code, aisb_error **err);

/* ---- entrypoint.c ---- */
#define AISB_ENTRYPOINT_IN_IMAGE "/usr/local/libexec/aisb/aisb-entrypoint"
/* The capabilities the container starts with; the entrypoint drops them all. */
extern const char *const entrypoint_capabilities[];
/* The entrypoint's argv for this policy, network and bridge (NULL: none), up to and
 * including "--". */
int entrypoint_argv(const aisb_policy *p, const sandbox_network *net, const harness_bridge *bridge,
                    const run_mounts *rm, char ***ret);
/* The entrypoint file, open, and its size. */
int entrypoint_open(const aisb_policy *p, int *ret_fd, size_t *ret_size, aisb_error **err);

/* ---- container.c ---- */
int container_create_body(const aisb_policy *p, const sandbox_network *net,
                          const harness_bridge *bridge, const run_mounts *rm, const char *image,
                          const char *name, bool terminal, bool redact, json_object **ret);
