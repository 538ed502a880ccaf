/* SPDX-License-Identifier: MIT */
/*
 * The sandbox image (and the gate's): a generated Containerfile and its build context, named
 * by the SHA-256 of the context's entries, built through the service only when no image of
 * that name exists.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "context.h"
#include "policy.h"

/* The Containerfile of this policy's image. */
int image_containerfile(const aisb_policy *p, char **ret_text, aisb_error **err);

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
/* with_gate: when this image must be built and the gate's image (of the same policy) is
 * missing too, that one is built alongside, and waited for before this returns; if it
 * failed there, the gate's own step builds it again. */
int image_ensure_context(aisb_ctx *ctx, const aisb_policy *p, const char *repo,
                         const build_context *c, bool with_gate, char **ret_tag, int *ret_built,
                         aisb_error **err);
/* The requests ensuring the image of context c, named tag, sends when nothing exists yet,
 * each as the dry run shows it: looked for, its base bootstrapped when it is one, built. */
int image_requests(const aisb_policy *p, const build_context *c, const char *tag, char ***ret);
/* This policy's image as a run plans it: the build context (files open), the key naming its
 * content (what the context's service cache compares) and the tag. Reads, starts nothing. */
typedef struct image_facts {
        build_context context;
        char *key, *tag;
        bool with_gate; /* the policy may go through a gate: its image is built alongside */
} image_facts;
int image_gather(const aisb_policy *p, image_facts *ret, aisb_error **err);
void image_facts_done(image_facts *f);
/* Reuse the image f names, or build it (the gate's alongside); the context remembers the
 * last one ensured. The caller has connected. */
int image_apply(aisb_ctx *ctx, const aisb_policy *p, const image_facts *f, int *ret_built, aisb_error **err);
/* One NDJSON line of a build's answer: its "stream" text or its error. -EBADMSG when the
 * line is not a JSON object. */
int build_parse_line(const char *line, size_t size, char **ret_stream, char **ret_error);
/* Whether a line of build output is buildah's progress (a step, a cached layer, the commit)
 * rather than a step's command's output. */
bool build_line_is_progress(const char *line);
