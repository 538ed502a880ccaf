/* SPDX-License-Identifier: MIT */
/*
 * The one escape hatch for what aisb does not model: a JSON merge patch (RFC 7396) applied to
 * the container create request, read from a file of the user's (--unsafe-create-patch). Every
 * field it changes is named on every run, with the threat-model rows the change gives up
 * where it touches capabilities, privileges, seccomp, namespaces, mounts, devices, the network
 * or the entrypoint. Pure: no I/O but the file's reading.
 */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>

#include "error.h"

#define CREATE_PATCH_MAX (1024 * 1024)

/* Read and parse the patch at path (a JSON object), refusing a file that is not the user's
 * own and private to them (path_check_trusted: every directory above too), or that lies in
 * project (the sandbox writes the project; NULL: none). -EINVAL / -EPERM with one line. */
int create_patch_load(const char *path, const char *project, json_object **ret, aisb_error **err);

/* Refuse a patch (already read) that lies where a run's sandbox can write: in one of
 * writable (NULL-terminated absolute directories: the project, read-write mounts). A run
 * asks this when it starts, whatever order its policy was set in. -EINVAL with one line. */
int create_patch_check_place(const char *path, const char *const *writable, aisb_error **err);

/* Apply patch to target (an object) per RFC 7396: objects merge key by key, null removes,
 * anything else (arrays included) replaces. Each changed field is added to *changed as a
 * dotted path ("labels.team", "devices"), in patch order. -ENOMEM. */
int create_patch_apply(json_object *target, json_object *patch, char ***changed);

/* What giving up a top-level create field means: the threat-model rows it weakens ("T3: no
 * capabilities, no-new-privileges, seccomp"), "" for fields that weaken nothing aisb claims
 * (labels, hostname, annotations), or NULL for a field aisb does not know (podman decodes
 * leniently: check that it applied). */
const char *create_patch_gives_up(const char *field);
/* The warning every run with a patch gives: each changed field named, with what it gives up
 * (create_patch_gives_up). *ret stays NULL when nothing changed. -ENOMEM. */
int create_patch_warning(char *const *changed, char **ret);
