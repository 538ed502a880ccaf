/* SPDX-License-Identifier: MIT */
/*
 * The sandbox image (and the gate's): a generated Containerfile and its build context, named
 * by the SHA-256 of the context's entries, built through the service only when no image of
 * that name exists.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "service.h"
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
/* repo:<SHA-256 of the entries, truncated>: what names the image. */
int image_context_tag(const char *repo, const build_context *c, char **ret_tag);
/* The deterministic tar podman builds from (libarchive, loaded on first use). With a tag,
 * what is packed is hashed again and must still be what the tag names (-ESTALE if not). */
int image_pack(const build_context *c, const char *tag, void **ret_tar, size_t *ret_size,
               aisb_error **err);
/* An image as a run plans it: the build context (its files open), the key naming its content
 * (what the context's cache of the last image ensured compares), the tag, and the base it is
 * built from. Gathered, it reads nothing more of the policy. */
typedef struct image_facts {
        build_context context;
        char *key, *tag;
        char *base;               /* the base image's reference */
        char *suite;              /* bootstrapped from this Debian suite; NULL: the base is pulled */
        struct image_facts *gate; /* the gate's, built alongside when both are missing; NULL: none */
} image_facts;
typedef enum image_kind {
        IMAGE_SANDBOX,
        IMAGE_GATE,
} image_kind;
int image_gather(const aisb_policy *p, image_kind kind, image_facts *ret, aisb_error **err);
/* The sandbox's, with the gate's beside it when the policy may go through one: a run's. */
int image_gather_run(const aisb_policy *p, image_facts *ret, aisb_error **err);
void image_facts_done(image_facts *f);
/* The requests ensuring the image of f sends when nothing exists yet, each as the dry run
 * shows it: looked for, its base bootstrapped when it is one, built. */
int image_requests(const image_facts *f, char ***ret);
/* Reuse the image f names, or build it (its base bootstrapped first when it is one; the
 * gate's alongside when f has it and both are missing). ret_built: whether it was built. */
int image_ensure(aisb_ctx *ctx, const image_facts *f, int *ret_built, aisb_error **err);
/* image_ensure, unless it is the image the context ensured last. The caller has connected. */
int image_apply(aisb_ctx *ctx, const image_facts *f, int *ret_built, aisb_error **err);
/* One NDJSON line of a build's answer: its "stream" text or its error. -EBADMSG when the
 * line is not a JSON object. */
int build_parse_line(const char *line, size_t size, char **ret_stream, char **ret_error);
