/* SPDX-License-Identifier: MIT */
/*
 * What of a harness's host files crosses into the sandbox at all: the keys each file's
 * carry-list names (settings, as each harness documents them), and those the user names in
 * bridge-carry. Every other key stays on the host. harness_scrub_credentials then checks what
 * is carried, as a second line. docs/bridges.md lists what each list holds, and why.
 */
#pragma once

#include <json-c/json.h>

#include "error.h"
#include "util.h"

/* The files a carry-list is for, by the name bridge-carry gives each. */
typedef enum carry_file {
        CARRY_PI,        /* "pi": pi's settings.json */
        CARRY_PI_MODELS, /* "pi-models": pi's models.json */
        CARRY_CLAUDE,    /* "claude": claude's settings.json */
        CARRY_CODEX,     /* "codex": codex's config.toml, and the profile file a run names */
} carry_file;

const char *carry_file_name(carry_file f);

/* Whether value is a bridge-carry entry, NAME:PATH: NAME a file's (above), PATH a key path,
 * its keys joined by '.', each key non-empty, "*" (any key, or any element of an array) or
 * ending in '*' (any key it begins: env.MY_*). -EINVAL saying what it takes otherwise. */
int carry_entry_check(const char *value, aisb_error **err);

/* Keep of o (changed in place) only what f's carry-list, or an entry of extra (bridge-carry's,
 * NULL-terminated; other files' are skipped), names: a key a path ends at is carried whole,
 * one a path goes through keeps what the rest of the path names below it, every other key
 * stays on the host. Each key that stays is counted and its path appended to held, followed by
 * ", " (names, never values; NULL: not told). The count, or -ENOMEM. */
int harness_carry(json_object *o, carry_file f, const char *const *extra, buffer *held);

/* The paths extra names for f whole, without a '*' (the keys whose names the user vouched
 * for: harness_scrub_credentials's named), into *ret (NULL-terminated; NULL when none).
 * -ENOMEM. */
int carry_named_paths(carry_file f, const char *const *extra, char ***ret);
