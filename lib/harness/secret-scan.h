/* SPDX-License-Identifier: MIT */
/*
 * The skills linter's scanner: text in, findings out, no I/O. What a directory mounted into
 * every sandbox holds (~/.agents: skills, their .git history, a stray .env) is readable by
 * every run; this finds what looks like a credential in it, so the user can take it out.
 *
 * It knows well-known token formats (each its own kind), private key blocks, JWTs, URLs with
 * a password, `password=`/`token:` style assignments in config-like files, and random-looking
 * tokens by their Shannon entropy (docs/skill-lint.md says why the numbers below). Values
 * that are placeholders ("sk-...", "your-api-key", "xxxx", "<TOKEN>", "changeme", "example")
 * are not findings. A finding carries the value only as a pointer into the text scanned and
 * as its masked form: at most SKILLS_SCAN_MASK_SHOWN of its first characters, "…", its length.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* The high-entropy rule: a token of SKILLS_SCAN_ENTROPY_MIN to SKILLS_SCAN_ENTROPY_MAX characters
 * from [A-Za-z0-9+/=_-] with upper case, lower case and digits, not all hex, whose Shannon
 * entropy is at least SKILLS_SCAN_ENTROPY_BITS bits per character. */
#define SKILLS_SCAN_ENTROPY_MIN 24
#define SKILLS_SCAN_ENTROPY_MAX 200
#define SKILLS_SCAN_ENTROPY_BITS 3.8
/* Assignments and URL passwords shorter than this are not reported ("admin", "pass"). */
#define SKILLS_SCAN_VALUE_MIN 6
/* Characters of a value a masked form shows: this many from 16 characters on, a quarter of
 * a shorter value's. */
#define SKILLS_SCAN_MASK_SHOWN 4
/* The key = value rule reads at most this many times a line's length of values on it: a
 * line built so that every separator starts a value running to its end ("token:" over and
 * over) is read that far, not once per separator. */
#define SKILLS_SCAN_ASSIGNMENT_READS 8
/* Part of every cache key: a change of the rules makes cached results stale. */
#define SKILLS_SCAN_RULES_VERSION "1"

typedef struct skills_finding {
        const char *kind;    /* "github-token", "private-key", "high-entropy", ... */
        unsigned long line;  /* the line the value is on */
        const char *value;   /* into the text scanned; not NUL-terminated; never printed */
        size_t value_size;
        char masked[40];     /* "ghp_… (40 chars)": safe to print */
        /* History only (skills_scan_history); NULL/0 for a file's text. */
        unsigned repo;       /* the N of the "aisb-repo N" line above */
        const char *commit;  /* the commit's hex id as git printed it */
        const char *path;    /* the file as git printed it (C-quoted when unusual) */
} skills_finding;

/* Return 0 to go on; anything else stops the scan and is returned by it. */
typedef int (*skills_fn)(const skills_finding *finding, void *userdata);

/* Scan size bytes of text (any bytes; lines end at \n) as the content of the file at path
 * (its name decides whether the assignment rules apply, and lock files skip the entropy
 * rule), its first line numbered first_line. 0, or what fn returned to stop. */
int skills_scan(const char *text, size_t size, const char *path, unsigned long first_line,
                   skills_fn fn, void *userdata);

/*
 * Scan what the history scan's sandbox printed: for each repository an "aisb-repo N" line,
 * then "git log -p -U0 --format='commit %H'" output (prefixes a/ and b/, paths quoted as
 * git's core.quotePath does). Only the lines a commit added are scanned, each with its line
 * number in that commit's version of the file. The structure is followed by the counts of
 * each hunk's header, so no content line is ever taken for a header. 0, or what fn returned.
 */
int skills_scan_history(const char *text, size_t size, skills_fn fn, void *userdata);

/* The same scans, telling the work done in *ret_examined: each position a rule looked at and
 * each byte it handed to a check, counted once per look. No input makes the scan quadratic:
 * the work stays within SKILLS_SCAN_WORK_PER_BYTE per byte (plus that much once), however the
 * input is built; the unit tests and the fuzzer hold it to that. */
#define SKILLS_SCAN_WORK_PER_BYTE 64
int skills_scan_measured(const char *text, size_t size, const char *path, unsigned long first_line,
                            skills_fn fn, void *userdata, unsigned long long *ret_examined);
int skills_scan_history_measured(const char *text, size_t size, skills_fn fn, void *userdata,
                                    unsigned long long *ret_examined);

/* The masked form of a value into buf (at least 40 bytes): its first characters (non-ASCII
 * and control bytes shown as '?'), "…", the length. */
void skills_mask(const char *value, size_t size, char *buf, size_t buf_size);
/* Shannon entropy of the bytes, in bits per character. */
double skills_entropy(const char *s, size_t size);
/* Whether a file of this name holds key = value settings (.env, *.ini, *.toml, *.yaml,
 * *.json, .npmrc, .netrc, shell scripts, ...): the assignment rules apply there. */
bool skills_config_like(const char *path);
