/* SPDX-License-Identifier: MIT */
/* --secret: a credential the gate puts into requests to its hosts. Pure. */
#pragma once

#include <stddef.h>

/* A credential the gate holds for a run (--secret): requests to its hosts, over HTTPS only,
 * carry header: [scheme ]value, whatever the client sent in that header; the sandbox holds only
 * the placeholder. */
typedef struct gate_secret {
        char *name;        /* the variable */
        char **hosts;      /* canonical names, each exactly (no names below them) */
        char *header;      /* "Authorization", "x-api-key", ... */
        char *scheme;      /* "Bearer", or NULL: the value alone */
        char *value;       /* the real value: wiped on free */
        char *placeholder; /* what the sandbox's NAME holds instead */
} gate_secret;
void gate_secret_done(gate_secret *s);
/*
 * Parse "NAME@HOST[,HOST...][/HEADER[:SCHEME]]" and take NAME's value (value: the caller read
 * it, e.g. from the environment). Without /HEADER, the header of a known API host
 * (api.anthropic.com: x-api-key; api.openai.com: Authorization: Bearer; ...), else
 * Authorization: Bearer. The value must be printable ASCII without blanks, quotes, '%' or '\'
 * (squid reads the header line it goes into). The placeholder is "aisb-secret-" and 32
 * random hex digits. -EINVAL with why.
 */
int gate_secret_parse(const char *spec, const char *value, gate_secret *ret, char *why, size_t whylen);
/* n_bytes (at most 32) random bytes as 2 * n_bytes hex digits: a placeholder, the key of a
 * run's own gate, its name. */
int gate_random_hex(size_t n_bytes, char **ret);
