/* SPDX-License-Identifier: MIT */
/*
 * The policy (aisb_policy): everything that decides what a sandbox is, checked as it is
 * set. Pure data and its parsing: nothing here talks to podman.
 */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "aisb.h"
#include "allowlist.h"
#include "error.h"
#include "gate-squid.h"

#define AISB_DEFAULT_BASE_IMAGE "docker.io/library/ubuntu:24.04"
#define AISB_DEFAULT_HARNESS "pi"
#define AISB_ENV_FILE_MAX (1024 * 1024)

/* The sandbox's layout. */
#define AISB_SANDBOX_HOME "/home/sandbox"
#define AISB_PROJECT_DIR "/project"

/* What aisb names its own things, so that ps and clean never touch anything else. */
#define AISB_LABEL_PREFIX "aisb."
#define AISB_HOME_VOLUME_PREFIX "aisb-home-"

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

/* What the gate does with a name no allowlist entry names. */
typedef enum ask_when {
        ASK_AUTO, /* asks on a terminal (aisb_io_set_terminal), refuses without one */
        ASK_TTY,  /* asks: on the terminal when there is one, and through aisb ask */
        ASK_DENY, /* refuses at once */
} ask_when;

/* When a plain run records the project for aisb undo (undo.h). */
typedef enum undo_when {
        UNDO_AUTO,   /* a project small enough (undo.h's bounds) */
        UNDO_ALWAYS,
        UNDO_NEVER,
} undo_when;

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
        bool no_harness_config; /* pi's, claude's and codex's bridges */
        bool no_harness_keys;   /* aisb_policy_hold_harness_keys does nothing */
        char **bridge_carry;    /* HARNESS:KEY entries carried besides the carry-lists (harness-carry.h) */
        bool no_agents;
        char *agents_dir;     /* mounted read-only at ~/.agents; NULL: the user's ~/.agents */
        bool allow_unenforced;
        bool keep_root;
        bool project_read_only; /* internal (doctor): the project mounted read-only, no settings copy */
        char **devices;              /* --device SRC[:DST[:PERMS]] or a CDI name, as podman takes them */
        char *create_patch_path;     /* --unsafe-create-patch FILE, for the policy's text */
        json_object *create_patch;   /* its content, read once when named */
        network_backend_id network_backend;
        gate_secret *secrets;        /* --secret: held by the run's own gate */
        size_t n_secrets;
        unsigned gate_idle_stop_s;   /* a shared gate stops after this long unused; 0: never */
        ask_when ask;                /* names no entry lists: asked about (ask.h) or refused */
        unsigned ask_timeout_s;      /* a question not answered this long is a refusal */
        char **protect;              /* paths below the project the agent cannot change for the host (protect.h) */
        bool review;                 /* the agent's writes go to a layer of the run's own (review.h) */
        undo_when undo;              /* a plain run records the project for aisb undo */
};

/* The project directory's last component, lower-cased and cut to [a-z0-9_-] (or "scratch"
 * without a project): readable in container and volume names. */
void project_short_name(const char *project, char *buf, size_t size);
/* A fresh policy (defaults otherwise) that builds the same image as src: its base, packages,
 * CA certificates, harness, Node source and entrypoint. For aisb's own sandboxes (doctor). */
int policy_new_for_image(const aisb_policy *src, aisb_policy **ret, aisb_error **err);
int env_name_valid(const char *name);
/* One of the variables a run inherits without being asked (TERM, LANG, ...). */
bool policy_env_inherited(const char *name);
/* A reasoning level of any harness, or "host". */
bool policy_thinking_level_known(const char *level);
/* The levels policy_thinking_level_known() takes (policy.c lists them), for messages. */
#define POLICY_THINKING_LEVELS "off, none, minimal, low, medium, high, xhigh, max, host"
/* Whether the policy sets name itself: an --env or a --secret of that name. */
bool policy_env_named(const aisb_policy *p, const char *name);
/* Add a secret (spec as --secret takes it) of the given value, which the caller read; -EINVAL
 * with why for a spec or value the gate cannot hold, or a header of a host another secret
 * fills already (policy_secret_fills). */
int policy_add_secret(aisb_policy *p, const char *spec, const char *value, aisb_error **err);
bool policy_secret_fills(const aisb_policy *p, const char *host, const char *header);
int policy_env_file_parse(const char *text, size_t size, const char *origin,
                          env_entry **entries, size_t *n, aisb_error **err);
void env_entries_free(env_entry *e, size_t n);
/* The command the sandbox runs: the policy's, or the harness with its arguments. */
const char *const *policy_command(const aisb_policy *p);
struct project_settings;
/* The policy as key=value lines, with the image tag (NULL: not known yet); its allowlist
 * merged with the project's file, read now. */
int policy_format(const aisb_policy *p, const char *tag, char **ret_text, aisb_error **err);
/* The policy's hash, over its formatted text with the image tag already known and the
 * project's allowlist from settings, a snapshot (NULL: the project's file, read now). */
int policy_hash(const aisb_policy *p, const char *image, const struct project_settings *settings, char **ret_hex);
/* The npm package (name@version) of a harness aisb knows, or NULL. */
const char *policy_harness_package(const char *name);
/* The merged allowlist: --allow entries, the project's file (from settings, the run's
 * snapshot of .ai-sandbox; NULL: read it now, the same way), the user's file; checked
 * against the host's ranges and its own addresses. */
int policy_allowlist(const aisb_policy *p, const struct project_settings *settings, allowlist *ret,
                     aisb_error **err);
/* "allow", "none", "full". */
const char *policy_net_name(sandbox_net net);

/* For the policy's own files (policy-*.c). */
/* The home volume derived from the project, unless the user named one; -ENOMEM. */
int policy_derive_home_volume(aisb_policy *p);
/* harness_command again, after the harness or its arguments changed; -ENOMEM. */
int policy_rebuild_harness_command(aisb_policy *p);
/* *field replaced by a copy of value; -ENOMEM leaves it as it was. */
int policy_set_string(char **field, const char *value);
