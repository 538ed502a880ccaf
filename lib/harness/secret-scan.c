/* SPDX-License-Identifier: MIT */
/*
 * The skills linter's scanner (secret-scan.h): pure, no I/O, no allocation. Each line is
 * looked at by the rules in order of how sure they are (a token format, then a value next
 * to its name, then entropy); a span of the line claimed by one rule is not reported again
 * by a later one, and the line's findings go out in column order. No rule reads the same
 * bytes again from each of a line's positions: the work is counted as it goes
 * (skills_scan_measured), and held linear by the tests and the fuzzer.
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "secret-scan.h"
#include "secret-value.h"

_Static_assert(SKILLS_SCAN_ENTROPY_MAX <= SECRET_DECODED_MAX, "a token the entropy rule reads is decoded whole");

#define SPANS_MAX 64
/* Line numbers saturate here: hostile hunk headers cannot wrap them. */
#define ULONG_MAX_SAFE (ULONG_MAX / 2)

/* Character sets of token bodies. */
enum charset {
        SET_ALNUM,        /* [A-Za-z0-9] */
        SET_UPPER_ALNUM,  /* [A-Z0-9] */
        SET_URLSAFE,      /* [A-Za-z0-9_-] */
        SET_WORD,         /* [A-Za-z0-9_] */
        SET_SLACK,        /* [A-Za-z0-9-] */
        SET_BASE64,       /* [A-Za-z0-9/+=] */
        SET_BASE64_BODY,  /* [A-Za-z0-9/+]: base64 before its padding */
        SET_ENTROPY,      /* [A-Za-z0-9+/_-], then '=' padding */
};

static bool in_set(enum charset set, char c)
{
        switch (set) {
        case SET_ALNUM:
                return is_alnum(c);
        case SET_UPPER_ALNUM:
                return is_upper(c) || is_digit(c);
        case SET_URLSAFE:
                return is_alnum(c) || c == '_' || c == '-';
        case SET_WORD:
                return is_alnum(c) || c == '_';
        case SET_SLACK:
                return is_alnum(c) || c == '-';
        case SET_BASE64:
                return is_alnum(c) || c == '/' || c == '+' || c == '=';
        case SET_BASE64_BODY:
                return is_alnum(c) || c == '/' || c == '+';
        case SET_ENTROPY:
                return is_alnum(c) || c == '/' || c == '+' || c == '_' || c == '-';
        }
        return false;
}

static size_t run_of(enum charset set, const char *s, size_t n)
{
        size_t i = 0;
        while (i < n && in_set(set, s[i]))
                i++;
        return i;
}


double skills_entropy(const char *s, size_t size)
{
        if (size == 0)
                return 0;
        size_t counts[256] = { 0 };
        for (size_t i = 0; i < size; i++)
                counts[(unsigned char) s[i]]++;
        double h = 0;
        for (size_t c = 0; c < 256; c++)
                if (counts[c]) {
                        double p = (double) counts[c] / (double) size;
                        h -= p * log2(p);
                }
        return h;
}

void skills_mask(const char *value, size_t size, char *buf, size_t buf_size)
{
        size_t shown = size >= 16 ? SKILLS_SCAN_MASK_SHOWN : size / 4;
        char head[SKILLS_SCAN_MASK_SHOWN + 1];
        for (size_t i = 0; i < shown; i++) {
                unsigned char c = (unsigned char) value[i];
                head[i] = c > 0x20 && c < 0x7f ? (char) c : '?';
        }
        head[shown] = 0;
        snprintf(buf, buf_size, "%s\xe2\x80\xa6 (%zu chars)", head, size);
}

/* ---- one line ---- */

typedef struct span {
        size_t start, end;
        const char *kind;
} span;

typedef struct scanner {
        skills_fn fn;
        void *userdata;
        bool config;    /* key = value rules */
        bool netrc;     /* "password VALUE" */
        bool no_entropy; /* lock files: hashes by the hundred */
        bool in_pem;    /* inside a -----BEGIN ... block: its body is key material, reported once */
        /* History: where the finding is, passed on with each. */
        unsigned repo;
        const char *commit, *path;
        /* The current line. */
        const char *line;
        size_t size;
        span spans[SPANS_MAX];
        size_t n_spans;
        /* Bytes of values the key = value rule may still read on it. */
        size_t assignment_reads;
        /* The work measure (skills_scan_measured). */
        unsigned long long examined;
} scanner;

/* n bytes looked at, or one position. Every loop over the line counts what it steps over, and
 * every check counts the bytes it is handed: a rule that looked at the same bytes again for
 * each of many positions shows as work that grows faster than the line. */
static void looked(scanner *s, size_t n)
{
        s->examined += n;
}

/* A run of set at p, of at most max bytes (SIZE_MAX: no bound), counted. */
static size_t run_in(scanner *s, enum charset set, const char *p, size_t n, size_t max)
{
        size_t r = run_of(set, p, n < max ? n : max);
        looked(s, r + 1);
        return r;
}

/* Take [start, end) of the line for kind; NULL: an example, taken so that no later rule
 * reports it, and never emitted. False when a rule took part of it already. */
static bool claim(scanner *s, size_t start, size_t end, const char *kind)
{
        if (end <= start || s->n_spans == SPANS_MAX)
                return false;
        for (size_t i = 0; i < s->n_spans; i++)
                if (start < s->spans[i].end && s->spans[i].start < end)
                        return false;
        s->spans[s->n_spans++] = (span) { start, end, kind };
        return true;
}

static bool claimed(const scanner *s, size_t at)
{
        for (size_t i = 0; i < s->n_spans; i++)
                if (at >= s->spans[i].start && at < s->spans[i].end)
                        return true;
        return false;
}

/* A token may start at i: the character before it is not part of a word. */
static bool token_start(const scanner *s, size_t i)
{
        return i == 0 || !is_alnum(s->line[i - 1]);
}

typedef struct prefix_rule {
        const char *prefix;
        const char *kind;
        enum charset body;
        size_t min, max; /* body length; max 0: no bound */
        bool weak;       /* a prefix words can start with: the body must look random too */
} prefix_rule;

static const prefix_rule prefix_rules[] = {
        { "sk-ant-", "anthropic-api-key", SET_URLSAFE, 32, 0, false },
        { "sk-proj-", "openai-api-key", SET_URLSAFE, 20, 0, false },
        { "sk-svcacct-", "openai-api-key", SET_URLSAFE, 20, 0, false },
        { "sk-admin-", "openai-api-key", SET_URLSAFE, 20, 0, false },
        { "sk-", "openai-api-key", SET_URLSAFE, 20, 0, true },
        { "AIza", "google-api-key", SET_URLSAFE, 35, 35, false },
        { "ghp_", "github-token", SET_ALNUM, 30, 0, false },
        { "gho_", "github-token", SET_ALNUM, 30, 0, false },
        { "ghs_", "github-token", SET_ALNUM, 30, 0, false },
        { "ghu_", "github-token", SET_ALNUM, 30, 0, false },
        { "ghr_", "github-token", SET_ALNUM, 30, 0, false },
        { "github_pat_", "github-token", SET_WORD, 40, 0, false },
        { "glpat-", "gitlab-token", SET_URLSAFE, 20, 0, false },
        { "npm_", "npm-token", SET_ALNUM, 36, 36, false },
        { "pypi-AgE", "pypi-token", SET_URLSAFE, 50, 0, false },
        { "xoxb-", "slack-token", SET_SLACK, 10, 0, false },
        { "xoxp-", "slack-token", SET_SLACK, 10, 0, false },
        { "xoxa-", "slack-token", SET_SLACK, 10, 0, false },
        { "xoxr-", "slack-token", SET_SLACK, 10, 0, false },
        { "xoxs-", "slack-token", SET_SLACK, 10, 0, false },
        { "xoxe-", "slack-token", SET_SLACK, 10, 0, false },
        /* AWS access key ids: a four-letter type, then 16 of [A-Z0-9]. */
        { "AKIA", "aws-access-key-id", SET_UPPER_ALNUM, 16, 16, false },
        { "ASIA", "aws-access-key-id", SET_UPPER_ALNUM, 16, 16, false },
        { "ABIA", "aws-access-key-id", SET_UPPER_ALNUM, 16, 16, false },
        { "ACCA", "aws-access-key-id", SET_UPPER_ALNUM, 16, 16, false },
        { "AGPA", "aws-access-key-id", SET_UPPER_ALNUM, 16, 16, false },
        { "AIDA", "aws-access-key-id", SET_UPPER_ALNUM, 16, 16, false },
        { "AROA", "aws-access-key-id", SET_UPPER_ALNUM, 16, 16, false },
        { "AIPA", "aws-access-key-id", SET_UPPER_ALNUM, 16, 16, false },
        { "ANPA", "aws-access-key-id", SET_UPPER_ALNUM, 16, 16, false },
        { "ANVA", "aws-access-key-id", SET_UPPER_ALNUM, 16, 16, false },
        { "APKA", "aws-access-key-id", SET_UPPER_ALNUM, 16, 16, false },
};

static bool has_digit_and_letter(const char *v, size_t n)
{
        bool digit = false, letter = false;
        for (size_t i = 0; i < n; i++) {
                digit |= is_digit(v[i]);
                letter |= is_alpha(v[i]);
        }
        return digit && letter;
}

static void rule_prefixes(scanner *s)
{
        const char *l = s->line;
        for (size_t i = 0; i < s->size; i++) {
                looked(s, 1);
                /* Every prefix starts with one of these. */
                if (!l[i] || !strchr("sAgnpx", l[i]) || !token_start(s, i) || claimed(s, i))
                        continue;
                for (size_t r = 0; r < sizeof prefix_rules / sizeof *prefix_rules; r++) {
                        const prefix_rule *p = &prefix_rules[r];
                        size_t plen = strlen(p->prefix);
                        if (!starts_with(l + i, s->size - i, p->prefix))
                                continue;
                        const char *body = l + i + plen;
                        /* An exact-length format is read one past its length, no further. */
                        size_t n = run_in(s, p->body, body, s->size - i - plen, p->max ? p->max + 1 : SIZE_MAX);
                        /* Exact-length formats must end there: AKIA... followed by more
                         * letters is a word, not a key. */
                        if (n < p->min || (p->max && n > p->max))
                                break;
                        /* An example is claimed too, so that no later rule reports it. */
                        looked(s, n);
                        bool example = secret_placeholder(body, n) ||
                                       (p->weak && (!has_digit_and_letter(body, n) || secret_word_fraction(body, n) >= 0.6));
                        (void) claim(s, i, i + plen + n, example ? NULL : p->kind);
                        /* Past it, claimed or not (a rule before took part of it): a token
                         * starting inside would be read to the same end again. */
                        i += plen + n - 1;
                        break;
                }
        }
}

/* The jwt.io example (and others like it): its claims name John Doe or count 1234567890. */
static bool jwt_example(const char *payload, size_t n)
{
        unsigned char out[SKILLS_SCAN_ENTROPY_MAX];
        size_t m = secret_base64_decode(payload, n, out, sizeof out);
        if (m == SIZE_MAX)
                return false;
        return secret_placeholder((const char *) out, m) || contains_ci((const char *) out, m, "john doe") ||
               contains_ci((const char *) out, m, "1234567890");
}

static void rule_jwt(scanner *s)
{
        const char *l = s->line;
        for (size_t i = 0; i + 3 < s->size; i++) {
                looked(s, 1);
                if (!token_start(s, i) || !starts_with(l + i, s->size - i, "eyJ") || claimed(s, i))
                        continue;
                size_t a = run_in(s, SET_URLSAFE, l + i, s->size - i, SIZE_MAX);
                size_t at = i + a;
                /* Whatever follows, the search goes on past this run: an "eyJ" inside it ends
                 * where it does, and would be judged the same. */
                size_t past = at - 1;
                if (a < 10 || at >= s->size || l[at] != '.') {
                        i = past;
                        continue;
                }
                size_t b = run_in(s, SET_URLSAFE, l + at + 1, s->size - at - 1, SIZE_MAX);
                size_t at2 = at + 1 + b;
                if (b < 10 || !starts_with(l + at + 1, b, "eyJ") || at2 >= s->size || l[at2] != '.') {
                        i = past;
                        continue;
                }
                size_t c = run_in(s, SET_URLSAFE, l + at2 + 1, s->size - at2 - 1, SIZE_MAX);
                if (c < 16) {
                        i = past;
                        continue;
                }
                looked(s, b);
                if (claim(s, i, at2 + 1 + c, jwt_example(l + at + 1, b) ? NULL : "jwt"))
                        i = at2 + c;
                else
                        i = past;
        }
}

/* -----BEGIN ... PRIVATE KEY----- (RSA, EC, DSA, OPENSSH, ENCRYPTED, PGP ... BLOCK), unless
 * the block's next line is a placeholder ("...", "<your key>"). Any PEM block's body is
 * skipped by the entropy rule. */
static void rule_pem(scanner *s, const char *next, size_t next_size, bool has_next)
{
        const char *l = s->line;
        /* Whether the next line makes a block an example: looked at once, however many
         * blocks begin on this line. -1: not yet. */
        int next_example = has_next ? -1 : 0;
        for (size_t i = 0; i + 11 < s->size; i++) {
                looked(s, 1);
                if (!starts_with(l + i, s->size - i, "-----BEGIN "))
                        continue;
                size_t j = i + 11;
                while (j < s->size && (is_upper(l[j]) || l[j] == ' ' || is_digit(l[j])))
                        j++;
                looked(s, j - i);
                if (!starts_with(l + j, s->size - j, "-----"))
                        continue;
                s->in_pem = true;
                const char *label = l + i + 11;
                size_t label_size = j - i - 11;
                if (!contains_ci(label, label_size, "private key"))
                        continue;
                if (next_example < 0) {
                        looked(s, next_size);
                        next_example = secret_placeholder(next, next_size) || contains_ci(next, next_size, "-----end");
                }
                if (next_example)
                        continue;
                claim(s, i, j + 5, "private-key");
                i = j + 4;
        }
        for (size_t i = 0; i + 9 <= s->size; i++) {
                looked(s, 1);
                if (starts_with(l + i, s->size - i, "-----END "))
                        s->in_pem = false;
        }
}

/* An AWS secret access key: 40 characters of base64 on a line that names one. */
static void rule_aws_secret(scanner *s)
{
        const char *l = s->line;
        looked(s, s->size);
        bool named = contains_ci(l, s->size, "secret_access_key") || contains_ci(l, s->size, "secretaccesskey") ||
                     contains_ci(l, s->size, "secret-access-key") ||
                     (contains_ci(l, s->size, "aws") && contains_ci(l, s->size, "secret"));
        if (!named)
                return;
        for (size_t i = 0; i < s->size; i++) {
                looked(s, 1);
                if ((i > 0 && in_set(SET_BASE64_BODY, l[i - 1])) || !in_set(SET_BASE64_BODY, l[i]))
                        continue;
                size_t n = run_in(s, SET_BASE64_BODY, l + i, s->size - i, SIZE_MAX);
                if (n == 40 && has_digit_and_letter(l + i, n))
                        claim(s, i, i + n, secret_placeholder(l + i, n) ? NULL : "aws-secret-access-key");
                i += n - 1;
        }
}

static bool local_host(const char *h, size_t n)
{
        return starts_with(h, n, "localhost") || starts_with(h, n, "127.") || starts_with(h, n, "[::1]") ||
               contains_ci(h, n, "example.") || starts_with(h, n, "0.0.0.0");
}

/* scheme://user:password@host, where the password is not an example. */
static void rule_url_password(scanner *s)
{
        const char *l = s->line;
        for (size_t i = 0; i + 3 <= s->size; i++) {
                looked(s, 1);
                if (memcmp(l + i, "://", 3) != 0 || i == 0 || !is_alpha(l[i - 1]))
                        continue;
                /* To the next '/' at most: what the next "://" reads starts after it. */
                size_t start = i + 3, end = start;
                while (end < s->size && !is_space(l[end]) && !strchr("/?#\"'<>`\\", l[end]) && l[end] != 0)
                        end++;
                looked(s, 2 * (end - start) + 1);
                size_t at = end;
                while (at > start && l[at - 1] != '@')
                        at--;
                if (at == start)
                        continue;
                size_t userinfo_end = at - 1; /* the '@' */
                const char *colon = memchr(l + start, ':', userinfo_end - start);
                if (!colon)
                        continue;
                size_t user_size = (size_t) (colon - (l + start));
                size_t p = (size_t) (colon - l) + 1;
                size_t n = userinfo_end - p;
                looked(s, n + (end - at));
                if (n < SKILLS_SCAN_VALUE_MIN || secret_placeholder(l + p, n) || l[p] == '$' || l[p] == '%' ||
                    (user_size == n && memcmp(l + start, l + p, n) == 0) || local_host(l + at, end - at))
                        continue;
                claim(s, p, p + n, "url-password");
                i = end > i ? end - 1 : i;
        }
}

static void rule_slack_webhook(scanner *s)
{
        static const char marker[] = "hooks.slack.com/services/";
        const char *l = s->line;
        for (size_t i = 0; i + sizeof marker - 1 <= s->size; i++) {
                looked(s, 1);
                if (memcmp(l + i, marker, sizeof marker - 1) != 0)
                        continue;
                /* To the next '.' at most: the next marker's run starts after it. */
                size_t at = i + sizeof marker - 1;
                size_t n = 0;
                while (at + n < s->size && (is_alnum(l[at + n]) || l[at + n] == '/'))
                        n++;
                looked(s, 2 * n + 1);
                if (n >= 30 && !secret_placeholder(l + at, n))
                        claim(s, at, at + n, "slack-webhook");
        }
}

/* Whether a settings key names a secret: its last word is one (password, secret, token,
 * apikey, ...), or "key" after api/access/secret/private/... "max_tokens", "token_url",
 * "password_file" and "ssh_key" are not. */
static bool secret_key_name(const char *k, size_t n)
{
        /* Split into words at _ . - and lower-to-upper case changes; keep the last two. */
        const char *last = NULL, *prev = NULL;
        size_t last_size = 0, prev_size = 0;
        for (size_t i = 0; i < n;) {
                while (i < n && !is_alnum(k[i]))
                        i++;
                if (i >= n)
                        break;
                size_t j = i + 1;
                while (j < n && is_alnum(k[j]) && !(is_upper(k[j]) && is_lower(k[j - 1])))
                        j++;
                prev = last;
                prev_size = last_size;
                last = k + i;
                last_size = j - i;
                i = j;
        }
        if (!last)
                return false;
        /* npm's base64 user:password; a bare "auth" is mostly a method's name. */
        if (n == 5 && memcmp(k, "_auth", 5) == 0)
                return true;
        static const char *const secret_words[] = {
                "password", "passwd", "pass", "pwd", "passphrase", "secret", "token", "apikey",
                "authtoken", "accesstoken", "privatekey", "secretkey", "credential",
        };
        for (size_t i = 0; i < sizeof secret_words / sizeof *secret_words; i++)
                if (equals_ci(last, last_size, secret_words[i]))
                        return true;
        static const char *const key_owners[] = {
                "api", "access", "secret", "private", "auth", "client", "signing", "encryption",
                "master", "account", "app", "license",
        };
        if (equals_ci(last, last_size, "key") && prev)
                for (size_t i = 0; i < sizeof key_owners / sizeof *key_owners; i++)
                        if (equals_ci(prev, prev_size, key_owners[i]))
                                return true;
        return false;
}

/* A value that names where the secret is, not the secret: a variable, a template, a call. */
static bool reference(const char *v, size_t n)
{
        static const char *const leads = "$%{[(&*!<@~/";
        if (strchr(leads, v[0]))
                return true;
        static const char *const prefixes[] = {
                "process.env", "os.environ", "os.getenv", "env.", "secrets.", "vault:", "op://",
                "keyring:", "file:", "./", "../", "env:",
        };
        for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
                if (n >= strlen(prefixes[i]) && contains_ci(v, strlen(prefixes[i]), prefixes[i]))
                        return true;
        /* Interpolated: "$HOME/x", "pre-${X}", "value-$RANDOM". */
        return memchr(v, '(', n) || memchr(v, '[', n) || memchr(v, '$', n);
}

static bool all_digits(const char *v, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (!is_digit(v[i]) && v[i] != '.')
                        return false;
        return true;
}

/* The value after the separator at l[separator]: quoted (to the closing quote) or bare (to
 * a space, a comment or a comma). Returns where the rule goes on looking for separators:
 * past the value when it was claimed (a separator inside it would start a value inside the
 * claim), the next byte otherwise ("url=${X}&token=..." holds a value of its own). The
 * values read on a line are bounded, all of them together, by SKILLS_SCAN_ASSIGNMENT_READS
 * times its length: once that is spent, the rule looks no further on the line. */
static size_t assignment_value(scanner *s, size_t separator)
{
        const char *l = s->line;
        size_t next = separator + 1, at = next;
        while (at < s->size && is_space(l[at]))
                at++;
        looked(s, at - separator);
        if (at >= s->size)
                return next;
        bool quoted = l[at] == '"' || l[at] == '\'' || l[at] == '`';
        size_t start = at + quoted, end = start;
        size_t budget = s->assignment_reads;
        if (quoted)
                while (end < s->size && l[end] != l[at] && end - start < budget)
                        end++;
        else
                while (end < s->size && !is_space(l[end]) && l[end] != ',' && l[end] != ';' &&
                       !(l[end] == '#' && end > start && is_space(l[end - 1])) && end - start < budget)
                        end++;
        size_t n = end - start;
        looked(s, n + 1);
        if (n >= budget) {
                s->assignment_reads = 0;
                return s->size;
        }
        s->assignment_reads -= n + 1;
        if (quoted && end >= s->size) /* never closed */
                return next;
        looked(s, n);
        if (n < SKILLS_SCAN_VALUE_MIN || secret_placeholder(l + start, n) || reference(l + start, n) ||
            all_digits(l + start, n))
                return next;
        return claim(s, start, end, "assigned-secret") ? end : next;
}

/* key = value, key: value, "key": "value", export KEY=value, in config-like files; and
 * netrc's "password VALUE". */
static void rule_assignment(scanner *s)
{
        const char *l = s->line;
        s->assignment_reads = s->size > SIZE_MAX / SKILLS_SCAN_ASSIGNMENT_READS ? SIZE_MAX
                                                                              : s->size * SKILLS_SCAN_ASSIGNMENT_READS;
        for (size_t i = 0; i < s->size;) {
                looked(s, 1);
                bool separator = l[i] == '=' || l[i] == ':';
                if (!separator) {
                        i++;
                        continue;
                }
                /* "==", "!=", "<=", ":=" and "::" are code, and a URL's "://" is not a key. */
                if ((i + 1 < s->size && (l[i + 1] == '=' || l[i + 1] == '/' || l[i + 1] == ':')) ||
                    (i > 0 && strchr("=!<>:", l[i - 1]))) {
                        i++;
                        continue;
                }
                /* Back to the previous separator at most: each key is read once. */
                size_t k = i;
                while (k > 0 && is_space(l[k - 1]))
                        k--;
                if (k > 0 && (l[k - 1] == '"' || l[k - 1] == '\''))
                        k--;
                size_t key_end = k;
                while (k > 0 && (is_alnum(l[k - 1]) || l[k - 1] == '_' || l[k - 1] == '-' || l[k - 1] == '.'))
                        k--;
                looked(s, 2 * (i - k));
                if (key_end == k || !secret_key_name(l + k, key_end - k)) {
                        i++;
                        continue;
                }
                i = assignment_value(s, i);
        }
        if (!s->netrc)
                return;
        for (size_t i = 0; i + 8 < s->size; i++) {
                looked(s, 1);
                if (token_start(s, i) && starts_with(l + i, s->size - i, "password") && is_space(l[i + 8]))
                        i = assignment_value(s, i + 7) - 1; /* the space after it as the separator */
        }
}

/* Base64 that is public by its kind: an SSH public key, a DER public key or certificate. */
static bool public_material(const char *t, size_t n)
{
        static const char *const prefixes[] = {
                "AAAAB3NzaC1", "AAAAC3NzaC1", "AAAAE2VjZHNh", /* ssh-rsa, ssh-ed25519, ecdsa */
                "MFkwEwYHKoZIzj0CAQ", "MHYwEAYHKoZIzj0CAQ",   /* EC public keys */
                "MIIBIjANBgkqhkiG9w0BAQEFAAOC", "MIICIjANBgkqhkiG9w0BAQEFAAOC", /* RSA public keys */
                "MCowBQYDK2Vw",                                /* Ed25519 public key */
        };
        for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
                if (starts_with(t, n, prefixes[i]))
                        return true;
        /* A certificate: SEQUENCE { SEQUENCE ... } is "MII?" "??" "CCA". */
        return n > 9 && starts_with(t, n, "MII") && memcmp(t + 6, "CCA", 3) == 0;
}

/* A digest named just before the token: "sha256=...", "sha512:...", "md5=...", "h1:...". */
static bool digest_named(const char *l, size_t start)
{
        size_t from = start > 8 ? start - 8 : 0;
        return contains_ci(l + from, start - from, "sha1") || contains_ci(l + from, start - from, "sha2") ||
               contains_ci(l + from, start - from, "sha3") || contains_ci(l + from, start - from, "sha5") ||
               contains_ci(l + from, start - from, "md5") || contains_ci(l + from, start - from, "h1:") ||
               contains_ci(l + from, start - from, "base64,");
}

/* Whether the token at l[start, end) stands where a value does: alone on its line, after
 * = or :, in quotes, after "Bearer", "key", "token" (and the like) or an --option. An identifier in code
 * (after a dot, in a call's arguments, after #define) does not. */
static bool value_position(scanner *s, size_t start, size_t end)
{
        const char *l = s->line;
        size_t size = s->size;
        /* The spaces before it (read again only as the spaces after the token before) and
         * the word before them (this token's alone): nothing is read here for many. */
        size_t b = start;
        while (b > 0 && is_space(l[b - 1]))
                b--;
        size_t a = end;
        while (a < size && is_space(l[a]))
                a++;
        looked(s, (start - b) + (a - end) + 1);
        if (b == 0)
                return true;
        char before = l[b - 1];
        if (strchr("=:\"'`>", before) || (a < size && strchr("\"'`", l[a])))
                return true;
        if (b == start) /* no space before: part of a larger expression */
                return false;
        size_t w = b;
        while (w > 0 && !is_space(l[w - 1]))
                w--;
        looked(s, b - w);
        const char *word = l + w;
        size_t word_size = b - w;
        static const char *const words[] = { "bearer", "basic", "token", "key", "secret", "password" };
        for (size_t i = 0; i < sizeof words / sizeof *words; i++)
                if (equals_ci(word, word_size, words[i]))
                        return true;
        return word_size > 2 && word[0] == '-' && word[1] == '-';
}

/* A random-looking token (secret-scan.h has the numbers). Hex is never one: git ids, sha256
 * sums and UUIDs are hex. */
static void rule_entropy(scanner *s)
{
        const char *l = s->line;
        for (size_t i = 0; i < s->size;) {
                looked(s, 1);
                if (!in_set(SET_ENTROPY, l[i])) {
                        i++;
                        continue;
                }
                /* Runs do not overlap: each byte is in one. */
                size_t run = run_in(s, SET_ENTROPY, l + i, s->size - i, SIZE_MAX);
                size_t run_start = i, start = i, end = i + run;
                for (size_t pad = 0; pad < 2 && end < s->size && l[end] == '='; pad++)
                        end++;
                i = end;
                /* Separators at the ends are not part of it ("--flag", "/path/"). */
                while (start < end && strchr("-_/+", l[start]))
                        start++;
                while (end > start && strchr("-_/+", l[end - 1]))
                        end--;
                size_t n = end - start;
                const char *t = l + start;
                if (n < SKILLS_SCAN_ENTROPY_MIN || n > SKILLS_SCAN_ENTROPY_MAX || claimed(s, start) ||
                    !value_position(s, run_start, end))
                        continue;
                /* Each check below reads the token (at most SKILLS_SCAN_ENTROPY_MAX bytes) once. */
                looked(s, n);
                bool upper = false, low = false, digit = false, hex = true;
                for (size_t k = 0; k < n; k++) {
                        upper |= is_upper(t[k]);
                        low |= is_lower(t[k]);
                        digit |= is_digit(t[k]);
                        hex &= is_hex(t[k]) || t[k] == '-';
                }
                if (hex || !upper || !low || !digit)
                        continue;
                /* Digests in their usual dress: "sha512-..." (npm, nix), "sha256=..." (pip),
                 * "h1:..." (go.sum); and "data:...;base64,...". */
                if (starts_with(t, n, "sha1-") || starts_with(t, n, "sha256-") || starts_with(t, n, "sha384-") ||
                    starts_with(t, n, "sha512-") || digest_named(l, start))
                        continue;
                /* A C++ symbol (_ZNSt7__cxx11...), in lists of them. */
                if (starts_with(l + run_start, end - run_start, "_Z"))
                        continue;
                if (secret_word_fraction(t, n) >= 0.6 || secret_structured(t, n) || secret_base64_of_text(t, n) ||
                    secret_placeholder(t, n) || public_material(t, n))
                        continue;
                if (skills_entropy(t, n) >= SKILLS_SCAN_ENTROPY_BITS)
                        claim(s, start, end, "high-entropy");
        }
}

static int emit(scanner *s, unsigned long number)
{
        /* Column order. */
        for (size_t i = 1; i < s->n_spans; i++)
                for (size_t j = i; j > 0 && s->spans[j - 1].start > s->spans[j].start; j--) {
                        span t = s->spans[j];
                        s->spans[j] = s->spans[j - 1];
                        s->spans[j - 1] = t;
                }
        for (size_t i = 0; i < s->n_spans; i++) {
                if (!s->spans[i].kind)
                        continue;
                skills_finding f = {
                        .kind = s->spans[i].kind,
                        .line = number,
                        .value = s->line + s->spans[i].start,
                        .value_size = s->spans[i].end - s->spans[i].start,
                        .repo = s->repo,
                        .commit = s->commit,
                        .path = s->path,
                };
                skills_mask(f.value, f.value_size, f.masked, sizeof f.masked);
                int r = s->fn(&f, s->userdata);
                if (r)
                        return r;
        }
        return 0;
}

/* What may stand inside a PEM block: base64, "Header: value" lines, blank lines. */
static bool pem_body_like(const char *l, size_t n)
{
        if (memmem(l, n, ": ", 2) || memmem(l, n, "-----END ", 9))
                return true;
        for (size_t i = 0; i < n; i++)
                if (!in_set(SET_BASE64, l[i]) && !is_space(l[i]))
                        return false;
        return true;
}

/* One line (without its newline), with the line after it when there is one (a private key
 * block's first line of key material says whether the block is an example). */
static int scan_line(scanner *s, const char *line, size_t size, const char *next, size_t next_size,
                     bool has_next, unsigned long number)
{
        if (size > 0 && line[size - 1] == '\r')
                size--;
        if (s->in_pem) {
                looked(s, size);
                if (!pem_body_like(line, size))
                        s->in_pem = false; /* a block that never ended */
        }
        s->line = line;
        s->size = size;
        s->n_spans = 0;
        bool body = s->in_pem;
        rule_pem(s, next, next_size, has_next);
        rule_jwt(s);
        rule_prefixes(s);
        rule_aws_secret(s);
        rule_slack_webhook(s);
        rule_url_password(s);
        if (s->config)
                rule_assignment(s);
        /* A PEM body line is key material of a block reported (or not) at its BEGIN. */
        if (!s->no_entropy && !body && !s->in_pem)
                rule_entropy(s);
        return emit(s, number);
}

static const char *base_name(const char *path)
{
        const char *slash = path ? strrchr(path, '/') : NULL;
        return slash ? slash + 1 : path ? path : "";
}

static bool ends_with(const char *s, const char *suffix)
{
        size_t n = strlen(s), m = strlen(suffix);
        return n >= m && strcmp(s + n - m, suffix) == 0;
}

bool skills_config_like(const char *path)
{
        const char *name = base_name(path);
        static const char *const names[] = {
                "config", "credentials", ".netrc", "_netrc", ".npmrc", ".pypirc", ".yarnrc",
                ".git-credentials", ".gitconfig", ".envrc", ".bashrc", ".zshrc", ".profile",
                ".bash_profile", ".zprofile", "secrets", "settings",
        };
        for (size_t i = 0; i < sizeof names / sizeof *names; i++)
                if (strcmp(name, names[i]) == 0)
                        return true;
        if (strncmp(name, ".env", 4) == 0)
                return true;
        static const char *const suffixes[] = {
                ".env", ".ini", ".cfg", ".conf", ".config", ".cnf", ".toml", ".yaml", ".yml",
                ".json", ".jsonc", ".json5", ".properties", ".props", ".tfvars", ".xml", ".sh",
                ".bash", ".zsh", ".envrc", ".npmrc", ".netrc", ".pypirc", ".credentials",
        };
        for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes; i++)
                if (ends_with(name, suffixes[i]))
                        return true;
        return false;
}

static void scanner_for_path(scanner *s, const char *path)
{
        const char *name = base_name(path);
        s->config = skills_config_like(path);
        s->netrc = strcmp(name, ".netrc") == 0 || strcmp(name, "_netrc") == 0 || ends_with(name, ".netrc");
        s->no_entropy = ends_with(name, ".lock") || ends_with(name, "-lock.json") ||
                        ends_with(name, "-lock.yaml") || strcmp(name, "go.sum") == 0;
        s->in_pem = false;
}

int skills_scan_measured(const char *text, size_t size, const char *path, unsigned long first_line,
                            skills_fn fn, void *userdata, unsigned long long *ret_examined)
{
        scanner s = { .fn = fn, .userdata = userdata };
        scanner_for_path(&s, path);
        unsigned long number = first_line;
        int r = 0;
        for (size_t at = 0; at < size && r == 0; number++) {
                const char *nl = memchr(text + at, '\n', size - at);
                size_t end = nl ? (size_t) (nl - text) : size;
                size_t next_at = nl ? end + 1 : size;
                const char *next_nl = next_at < size ? memchr(text + next_at, '\n', size - next_at) : NULL;
                size_t next_end = next_nl ? (size_t) (next_nl - text) : size;
                looked(&s, next_end - at + 1);
                r = scan_line(&s, text + at, end - at, text + next_at, next_end - next_at, next_at < size, number);
                at = next_at;
        }
        if (ret_examined)
                *ret_examined = s.examined;
        return r;
}

int skills_scan(const char *text, size_t size, const char *path, unsigned long first_line,
                   skills_fn fn, void *userdata)
{
        return skills_scan_measured(text, size, path, first_line, fn, userdata, NULL);
}

/* ---- git log -p output ---- */

/* A decimal at *p (advanced past it); false when there is none. Saturates. */
static bool parse_number(const char **p, const char *end, unsigned long *ret)
{
        const char *q = *p;
        unsigned long v = 0;
        if (q >= end || !is_digit(*q))
                return false;
        while (q < end && is_digit(*q)) {
                unsigned long d = (unsigned long) (*q - '0');
                v = v > (ULONG_MAX_SAFE - d) / 10 ? ULONG_MAX_SAFE : v * 10 + d;
                q++;
        }
        *p = q;
        *ret = v;
        return true;
}

/* "@@ -a[,b] +c[,d] @@": the counts of removed and added lines, the first added line. */
static bool parse_hunk(const char *l, size_t n, unsigned long *removed, unsigned long *added,
                       unsigned long *first)
{
        const char *p = l + 3, *end = l + n;
        unsigned long a, c;
        *removed = *added = 1;
        if (n < 3 || memcmp(l, "@@ ", 3) != 0 || p >= end || *p++ != '-' || !parse_number(&p, end, &a))
                return false;
        if (p < end && *p == ',') {
                p++;
                if (!parse_number(&p, end, removed))
                        return false;
        }
        if (end - p < 2 || p[0] != ' ' || p[1] != '+')
                return false;
        p += 2;
        if (!parse_number(&p, end, &c))
                return false;
        if (p < end && *p == ',') {
                p++;
                if (!parse_number(&p, end, added))
                        return false;
        }
        *first = c;
        return end - p >= 3 && memcmp(p, " @@", 3) == 0;
}

#define HISTORY_PATH_MAX 4096

int skills_scan_history_measured(const char *text, size_t size, skills_fn fn, void *userdata,
                                    unsigned long long *ret_examined)
{
        scanner s = { .fn = fn, .userdata = userdata };
        int r = 0;
        char commit[41] = "", path[HISTORY_PATH_MAX] = "";
        s.commit = commit;
        s.path = path;
        unsigned long removed = 0, added = 0, number = 0;
        bool in_hunk = false;
        for (size_t at = 0; at < size && r == 0;) {
                const char *l = text + at;
                const char *nl = memchr(l, '\n', size - at);
                size_t n = nl ? (size_t) (nl - l) : size - at;
                size_t next_at = nl ? at + n + 1 : size;
                /* Found, and read by whichever header it is. */
                looked(&s, 2 * n + 1);
                if (in_hunk && n > 0 && (l[0] == '+' || l[0] == '-' || l[0] == ' ' || l[0] == '\\')) {
                        if (l[0] == '-' || l[0] == ' ')
                                removed -= removed > 0;
                        if (l[0] == '+' || l[0] == ' ')
                                added -= added > 0;
                        if (l[0] == '+' && path[0]) {
                                /* The next line, when it is this hunk's next added line. */
                                const char *next = text + next_at;
                                const char *next_nl = next_at < size ? memchr(next, '\n', size - next_at) : NULL;
                                size_t next_size = next_nl ? (size_t) (next_nl - next) : size - next_at;
                                bool has_next = added > 0 && next_at < size && next[0] == '+';
                                looked(&s, next_size + 1);
                                r = scan_line(&s, l + 1, n - 1, has_next ? next + 1 : "",
                                              has_next ? next_size - 1 : 0, has_next, number);
                        }
                        if (l[0] == '+' || l[0] == ' ')
                                number += number < ULONG_MAX_SAFE;
                        if (removed == 0 && added == 0)
                                in_hunk = false;
                        at = next_at;
                        continue;
                }
                in_hunk = false;
                if (starts_with(l, n, "aisb-repo ")) {
                        const char *p = l + 10;
                        unsigned long repo = 0;
                        s.repo = parse_number(&p, l + n, &repo) && repo < 1000000 ? (unsigned) repo : 0;
                        commit[0] = path[0] = 0;
                } else if (starts_with(l, n, "commit ")) {
                        size_t k = 0;
                        while (k < 40 && 7 + k < n && is_hex(l[7 + k])) {
                                commit[k] = l[7 + k];
                                k++;
                        }
                        commit[k] = 0;
                        path[0] = 0;
                } else if (starts_with(l, n, "diff --git ")) {
                        path[0] = 0;
                } else if (starts_with(l, n, "+++ ")) {
                        /* +++ b/PATH, +++ "b/PATH" (quoted), +++ /dev/null (deleted). */
                        const char *p = l + 4;
                        size_t m = n - 4;
                        bool quoted = m > 0 && p[0] == '"';
                        if (starts_with(p + quoted, m - quoted, "b/")) {
                                size_t keep = m - quoted - 2;
                                if (keep + quoted >= sizeof path)
                                        keep = sizeof path - 1 - quoted;
                                if (quoted)
                                        path[0] = '"';
                                memcpy(path + quoted, p + quoted + 2, keep);
                                path[keep + quoted] = 0;
                                /* A NUL in it (hostile output) ends it there: still a string. */
                        } else
                                path[0] = 0;
                        scanner_for_path(&s, path);
                } else if (starts_with(l, n, "@@ ")) {
                        unsigned long first = 0;
                        if (parse_hunk(l, n, &removed, &added, &first) && (removed || added)) {
                                in_hunk = true;
                                number = first;
                                s.in_pem = false;
                        }
                }
                at = next_at;
        }
        if (ret_examined)
                *ret_examined = s.examined;
        return r;
}

int skills_scan_history(const char *text, size_t size, skills_fn fn, void *userdata)
{
        return skills_scan_history_measured(text, size, fn, userdata, NULL);
}
