/* SPDX-License-Identifier: MIT */
/*
 * One backend per harness (harness-pi.c, harness-claude.c, harness-codex.c), each a table of
 * what harness.c does differently for it: where its configuration is, its reasoning levels,
 * what its bridge writes and says, what runs from its home at start, where its keys go. The
 * rest of the bridge is harness.c's and the helpers below, which every backend shares: the
 * bridge's file access (bridge-files.c) and the home's reset (harness-home.c) among them.
 */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "harness-carry.h"
#include "policy.h"
#include "service.h"

/*
 * How the bridge reads and writes files (bridge-files.c). The sandbox's home is a volume the agent writes:
 * everything there is opened relative to a directory descriptor with O_NOFOLLOW, so a planted
 * symlink can neither make us read a host file into the sandbox nor overwrite one, and what
 * the agent left where the bridge writes is moved aside, not written through. The host's own
 * files (the user's harness directory, aisb's state directory) may be links: a dotfile
 * manager's.
 */

/* A configuration file's syntax: JSON (pi, claude) or TOML (codex), both read into json-c. */
typedef struct config_syntax {
        int (*parse)(const char *text, size_t size, const char *origin, json_object **ret, aisb_error **err);
        int (*format)(json_object *o, char **ret_text, aisb_error **err);
} config_syntax;
extern const config_syntax bridge_json, bridge_toml;

/* dirfd/name parsed by syntax: *ret NULL when absent. */
int bridge_read_config(int dirfd, const char *name, const char *origin, bool follow, const config_syntax *syntax,
                       json_object **ret, aisb_error **err);
/* A JSON file of the host's, a link followed. */
int bridge_read_json(int dirfd, const char *name, const char *origin, json_object **ret, aisb_error **err);

/* Move dirfd/name aside within dirfd, to name.aisb-moved-RANDOM, and warn naming shown. */
int bridge_move_aside(aisb_ctx *ctx, int dirfd, const char *name, const char *shown);
/* text into dirfd/name through a new file of a random name and a rename; a directory at name
 * is moved aside. */
int bridge_write_text(aisb_ctx *ctx, int dirfd, const char *name, const char *text, aisb_error **err);
int bridge_write_config(aisb_ctx *ctx, int dirfd, const char *name, const config_syntax *syntax, json_object *o,
                        aisb_error **err);
/* ~/path in the home volume's root open at root, each directory made if absent, moved aside
 * if it is anything else, given u+rwx back if the agent took it away. A descriptor, or a
 * negative errno. */
int bridge_open_home_dir(aisb_ctx *ctx, int root, const char *path);
/* The host's file name (host_dir at host_path; host_dir < 0: none), if there, copied over the
 * sandbox's: instructions such as CLAUDE.md, the host's copy being the user's. */
int bridge_copy_from_host(aisb_ctx *ctx, int host_dir, const char *host_path, const char *name, int sandbox_dir,
                          aisb_error **err);

/* The harness a run's command is (its first word's last component): reasoning and the bridge
 * apply to it. Another command (sh -c '...') is none. */
typedef enum harness_kind {
        HARNESS_NONE,
        HARNESS_PI,
        HARNESS_CLAUDE,
        HARNESS_CODEX,
} harness_kind;
typedef struct harness_ops harness_ops;

/* What one file's bridge told the run (harness.c): the keys that stayed on the host. */
typedef struct bridge_note bridge_note;

/* One run's bridge, as a backend's bridge step is told it. */
typedef struct bridge_run {
        aisb_ctx *ctx;
        const aisb_policy *p;
        int host_dir;          /* the host's directory open, or -1: none */
        const char *host_path; /* its path, for messages */
        int sandbox_dir;       /* the harness's directory in the sandbox's home (or the seed) */
        int base_fd;           /* the merge bases in the state directory, or -1: a fresh home */
        bridge_note *note;
} bridge_run;

/* What policy makes of a merged settings file, and of the next merge's base: host is the
 * host's file as carried (NULL: none). */
typedef int (*settings_policy)(json_object *merged, json_object *host, const aisb_policy *p, aisb_error **err);

/* A file of the home's own state the harness runs something from at start (a login's key
 * that is a command, an MCP server): take() takes each such entry out and counts them. */
typedef struct home_state {
        const char *dir, *name, *shown, *what;
        int (*take)(json_object *o);
} home_state;

/* A directory of the host's harness directory mounted read-only in the sandbox's. */
typedef struct read_only_dir {
        const char *name, *destination;
} read_only_dir;

struct harness_ops {
        harness_kind kind;
        const char *name; /* the command's name, the bridge's in messages */
        /* Where its configuration is: dir_env names the host's directory, else HOME/home_dir;
         * in the sandbox always sandbox_dir. seed: the run directory's copy for an ephemeral
         * home; base: below the state directory's base/, what aisb last wrote (the merge
         * bases). */
        const char *dir_env, *home_dir, *sandbox_dir, *seed, *base;
        bool (*declined)(const aisb_policy *p); /* besides no-harness-config; NULL: nothing */
        /* Its reasoning levels, "host" among them, and their list for messages. level_bridged:
         * the level goes into a bridged file, and is declined with the bridge. level_env: the
         * variable that carries the level instead, or NULL. */
        bool (*level_valid)(const char *level);
        const char *(*levels)(void);
        bool level_bridged;
        const char *level_env;
        /* The file the bridge writes whole, loaded at start (pi's models.json, CLAUDE.md,
         * AGENTS.md): when the host has none, the home's reset moves the sandbox's aside. */
        const char *whole_file;
        /* The host's file that says where its key goes (hold_keys), and what describe reads. */
        const char *settings;
        const config_syntax *syntax;
        carry_file carry;
        const read_only_dir *read_only; /* ended by {}; NULL: none */
        const home_state *state;        /* NULL: none */
        int (*bridge)(const bridge_run *run, aisb_error **err);
        /* "bridge-...=" lines after "bridge=NAME from DIR" (host_dir < 0: none); what
         * harness_describe_settings says besides: the level's place, a policy line, the
         * credentials file never copied. */
        int (*describe)(const harness_ops *ops, const aisb_policy *p, int host_dir, buffer *b);
        const char *level_where, *policy_said, *auth_file;
        /* The secrets that hold its key at the gate; config: the host's settings file, or NULL
         * when the bridge is declined or there is none. */
        int (*hold_keys)(aisb_policy *p, json_object *config, char ***held, aisb_error **err);
};

extern const harness_ops harness_pi, harness_claude, harness_codex;

/* The host's settings file name of the run's harness (syntax), only the keys carry's list and
 * bridge-carry name and without credentials, merged per key with the sandbox's against the
 * base, policy on top. */
int bridge_settings(const bridge_run *run, const char *name, const config_syntax *syntax, carry_file carry,
                    settings_policy policy, aisb_error **err);
/* o (a host file of carry's, at origin; NULL: none) made fit for the sandbox in place, what
 * stayed on the host told in the run's note. */
int bridge_carry_host(const bridge_run *run, carry_file carry, json_object *o, const char *origin, aisb_error **err);
/* Each of keys (NULL-terminated) as host has it, whatever merged says. */
int harness_pin_keys(json_object *merged, json_object *host, const char *const *keys, aisb_error **err);

/* The value the run gives name in the sandbox's environment: its --env's, else dflt. */
const char *harness_run_env(const aisb_policy *p, const char *name, const char *dflt);
/* The string at o.a.b (b may be NULL), or NULL. */
const char *harness_json_string(json_object *o, const char *a, const char *b);

/* "bridge-settings=KEY,KEY (merged per key)" for o, or "none on the host". */
int harness_describe_keys(buffer *b, const char *what, json_object *o);
/* What of o (the host's file, carry's) the bridge would leave on the host, and withhold. */
int harness_describe_carry(const aisb_policy *p, carry_file carry, json_object *o, const char *file, buffer *said);
/* claude's and codex's describe: the keys merged, those withheld, the files copied and
 * mounted, what is never copied. */
int harness_describe_settings(const harness_ops *ops, const aisb_policy *p, int host_dir, buffer *b);

/* Hold value (NULL: the variable's here) under variable at the host of url, in header
 * (scheme: NULL or its scheme): one secret, when the value is set, the run does not pass the
 * variable itself, url is https and nothing fills that header there yet. -EINVAL: a value or
 * name the gate cannot hold. */
int harness_hold_secret(aisb_policy *p, const char *variable, const char *value, const char *url, const char *header,
                        const char *scheme, char ***held, aisb_error **err);

/* The home's reset: move aside, below the home volume's root open at home_root, each path a harness or the
 * shell would load at start and aisb does not bridge (an empty directory stays: it loads
 * nothing), and each of also (paths below the home: the bridged files the host has none of),
 * and warn once naming them. The number moved in *ret_moved. 0, or a negative errno with err
 * set when something could not be moved (what could, was). */
int harness_home_reset(aisb_ctx *ctx, int home_root, const char *const *also, size_t *ret_moved, aisb_error **err);
