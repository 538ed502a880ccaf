/* SPDX-License-Identifier: MIT */
/*
 * How the bridge reads and writes files. The sandbox's home is a volume the agent writes:
 * everything there is opened relative to a directory descriptor with O_NOFOLLOW, so a planted
 * symlink can neither make us read a host file into the sandbox nor overwrite one, and what
 * the agent left where the bridge writes is moved aside, not written through. The host's own
 * files (the user's harness directory, aisb's state directory) may be links: a dotfile
 * manager's.
 */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "service.h"

/* A configuration file's syntax: JSON (pi, claude) or TOML (codex), both read into json-c. */
typedef struct config_syntax {
        int (*parse)(const char *text, size_t size, const char *origin, json_object **ret, aisb_error **err);
        int (*format)(json_object *o, char **ret_text, aisb_error **err);
} config_syntax;
extern const config_syntax bridge_json, bridge_toml;

/* dirfd/name's text, at most SETTINGS_JSON_MAX bytes (follow: a link there is followed), as
 * origin in messages. 0 with *ret NULL when absent. A FIFO or anything but a regular file is
 * refused at once, never waited on. */
int bridge_read_text(int dirfd, const char *name, const char *origin, bool follow, char **ret, size_t *ret_size,
                     aisb_error **err);
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
