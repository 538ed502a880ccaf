/* SPDX-License-Identifier: MIT */
/*
 * What of claude's and codex's host configuration never enters the sandbox, and what policy
 * sets there on every run (harness-config.h). Pure: json-c values in, json-c values out.
 */
#include <string.h>

#include "harness-config.h"
#include "jsonutil.h"
#include "secret-scan.h"

#define WORDS_MAX 64
#define WORD_MAX 128

/* Split key into lower-case words at '_', '-', '.', ' ' and where a lower-case letter or a
 * digit meets an upper-case one ("apiKeyHelper": api, key, helper). Longer words are cut:
 * they are compared only with short ones. */
static size_t key_words(const char *key, char words[WORDS_MAX][WORD_MAX])
{
        size_t n = 0, len = 0;
        for (const char *c = key;; c++) {
                bool upper = *c >= 'A' && *c <= 'Z';
                bool boundary = !*c || strchr("_-. ", *c) ||
                                (upper && c > key && ((c[-1] >= 'a' && c[-1] <= 'z') || (c[-1] >= '0' && c[-1] <= '9')));
                if (boundary && len > 0) {
                        words[n++][len] = '\0';
                        len = 0;
                        if (n == WORDS_MAX)
                                return n;
                }
                if (!*c)
                        return n;
                if (strchr("_-. ", *c))
                        continue;
                if (len < WORD_MAX - 1)
                        words[n][len++] = (char) (upper ? *c - 'A' + 'a' : *c);
        }
}

/* Whether word (lower case) names a credential: one of the names, one that holds a name that
 * never means anything else (pgpassword, clientsecret), one that ends in "token"
 * (githubtoken); last (the key's last word of several, or its only one): the short names
 * that mean one there only (db_pass, redis_pwd, x_auth). */
static bool word_is_credential(const char *word, bool last, bool only, bool strict)
{
        /* A variable of headers (OTEL_EXPORTER_OTLP_HEADERS, ANTHROPIC_CUSTOM_HEADERS): the
         * headers are what authenticates. */
        if (strict && streq(word, "headers"))
                return true;
        static const char *const names[] = {
                "key", "keys", "apikey", "accesskey", "privatekey", "token", "authtoken", "secret", "secrets",
                "password", "passwords", "passwd", "passphrase", "credential", "credentials", "bearer",
                "authorization", "cookie", "creds", "dsn", "webhook",
        };
        static const char *const inside[] = { "password", "passwd", "passphrase", "secret", "apikey", "accesskey",
                                              "privatekey", "signingkey", "credential", "sshpass", "appkey", "authkey",
                                              "writekey", "masterkey", "licensekey" };
        static const char *const last_names[] = { "pass", "auth", "sig", "signature" };
        static const char *const last_of_several[] = { "pwd", "pat", "pw" };
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (streq(word, names[i]))
                        return true;
        for (size_t i = 0; i < ELEMENTSOF(inside); i++)
                if (strstr(word, inside[i]))
                        return true;
        size_t n = strlen(word);
        if (n > 5 && streq(word + n - 5, "token"))
                return true;
        for (size_t i = 0; last && i < ELEMENTSOF(last_names); i++)
                if (streq(word, last_names[i]))
                        return true;
        for (size_t i = 0; last && !only && i < ELEMENTSOF(last_of_several); i++)
                if (streq(word, last_of_several[i]))
                        return true;
        return false;
}

/* strict: the key is a variable of an environment table, whose value is the value itself,
 * so a name like TOKEN_ENV is one too. */
static bool key_is_credential(const char *key, bool strict)
{
        /* A last word that makes the name one about a credential, not of one: where it is
         * (KEY_PATH, PASSWORD_STORE_DIR, GH_TOKEN_FILE), how much or how long
         * (model_auto_compact_token_limit, ..._TTL_MS), which store keeps it. */
        static const char *const about[] = { "file", "path", "dir", "directory", "limit", "store", "ttl", "ms",
                                             "budget", "count", "size", "length", "type", "method", "name", "id",
                                             "bindings" };
        char words[WORDS_MAX][WORD_MAX];
        size_t n = key_words(key, words);
        if (n == 0)
                return false;
        for (size_t i = 0; n > 1 && i < ELEMENTSOF(about); i++)
                if (streq(words[n - 1], about[i]))
                        return false;
        /* A name that says where a credential is, not what: env_key, bearer_token_env_var,
         * api_key_env, and the table of header names to variables names. */
        if (!strict && (streq(words[n - 1], "env") || (n >= 2 && streq(words[n - 2], "env") &&
                                                       (streq(words[n - 1], "var") || streq(words[n - 1], "key"))) ||
                        streq(key, "env_http_headers")))
                return false;
        for (size_t i = 0; i < n; i++)
                if (word_is_credential(words[i], i == n - 1, n == 1, strict))
                        return true;
        return false;
}

bool harness_key_is_credential(const char *key)
{
        return key_is_credential(key, false);
}

static int found(const skills_finding *finding, void *userdata)
{
        (void) finding, (void) userdata;
        return 1;
}

/* Whether value (a run of bytes up to a blank, a quote or a separator) looks like a
 * credential's value rather than a word of prose or a reference: 6 bytes at least, not a
 * "$VARIABLE", and a digit in it or 16 bytes at least. */
static bool value_looks_secret(const char *v, size_t n)
{
        if (n < 6 || v[0] == '$' || v[0] == '<' || v[0] == '{')
                return false;
        if (n >= 16)
                return true;
        for (size_t i = 0; i < n; i++)
                if (v[i] >= '0' && v[i] <= '9')
                        return true;
        return false;
}

static bool name_byte(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
               c == '.';
}

static size_t value_len(const char *v)
{
        return strcspn(v, " \t\r\n\"'`&;,)");
}

static bool blank(char c)
{
        return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* The clients whose short option takes a password, glued on (-pVALUE, -p'VALUE') or, where
 * spaced, as the next word: in a command of theirs that option is the password whatever
 * its value looks like besides (value_looks_secret). mysql's and mariadb's -p takes it glued
 * only: "-p db" prompts for the password and "db" is the database (and their -P is the
 * port); mongo's tools' -p, sshpass's -p, redis-cli's -a and sqlcmd's -P take it either way. */
typedef struct password_command {
        const char *prefix; /* the program's name, or what its family's names start with */
        char option;
        bool spaced;
} password_command;

static const password_command password_commands[] = {
        { "mysql", 'p', false },   /* mysqldump, mysqladmin, ... */
        { "mariadb", 'p', false }, /* mariadb-dump, ... */
        { "mongo", 'p', true },    /* mongosh, mongodump, ... */
        { "sshpass", 'p', true },
        { "redis-cli", 'a', true },
        { "sqlcmd", 'P', true },
};

/* What is known of the command a password option is in: the program, if one of
 * password_commands; whether a user's option, and a "login" word, came before. */
typedef struct command_words {
        const password_command *command;
        bool user;
        bool login;
} command_words;

/* A word of a command that is no option (the n bytes at w, its directory aside): a program
 * of password_commands (its prefix, then lower-case letters and '-' only: mysql_config is
 * none), which starts what is known afresh, or "login" (docker login, oc login). */
static void command_word(command_words *words, const char *w, size_t n)
{
        if (n == 5 && strncmp(w, "login", 5) == 0)
                words->login = true;
        for (size_t i = 0; i < ELEMENTSOF(password_commands); i++) {
                size_t m = strlen(password_commands[i].prefix);
                if (n < m || strncmp(w, password_commands[i].prefix, m) != 0)
                        continue;
                while (m < n && ((w[m] >= 'a' && w[m] <= 'z') || w[m] == '-'))
                        m++;
                if (m == n) {
                        *words = (command_words) { .command = &password_commands[i] };
                        return;
                }
        }
}

/* Whether the option word at w (its first dash; it ends at a blank or the string's end) has
 * a value glued on. */
static bool option_glued(const char *w)
{
        return w[1] && w[2] && !blank(w[2]);
}

/* A user's option (-uUSER, -u USER, --user=USER, --user USER), next the word after it (NULL:
 * none). Not a -u without a value (rsync's and cp's: update only). */
static bool user_option(const char *w, const char *next)
{
        bool takes_next = next && *next && *next != '-';
        if (w[0] != '-')
                return false;
        if (w[1] == 'u')
                return option_glued(w) || takes_next;
        return startswith(w, "--user") && (w[6] == '=' || ((!w[6] || blank(w[6])) && takes_next));
}

/* Whether the option word at w passes a password, next the word after it (NULL: none), in
 * the command words tells of:
 *  - a known client's option (password_commands): its value glued on, or spaced where the
 *    client takes it so, that looks like a credential's (value_looks_secret);
 *  - otherwise -p after a user's option, its value glued on (mysql's -uroot -pVALUE, under a
 *    program's name the list lacks), or spaced in a login (docker login -u U -p VALUE). -p is
 *    a port (ssh, psql), a port mapping (docker run -u 1000 -p 8080:80/tcp), a process (ps,
 *    top, strace -u U -p 1234), a project (sudo -u app docker compose -p app2024) in as many
 *    tools: the value must mix letters and digits too, with no '/' in it (a mapping, a path, a
 *    URL). A password of letters only passes there, and a spaced one outside a login. */
static bool password_option(const command_words *words, const char *w, const char *next)
{
        const password_command *command = words->command;
        if (w[0] != '-' || w[1] != (command ? command->option : 'p') || (!command && !words->user))
                return false;
        const char *v = w + 2;
        if (!option_glued(w)) {
                if ((command ? !command->spaced : !words->login) || !next || *next == '-')
                        return false;
                v = next;
        }
        v += *v == '"' || *v == '\'';
        size_t n = value_len(v);
        if (!value_looks_secret(v, n))
                return false;
        if (command)
                return true;
        bool letter = false, digit = false;
        for (size_t i = 0; i < n; i++) {
                if (v[i] == '/')
                        return false;
                letter |= (v[i] >= 'a' && v[i] <= 'z') || (v[i] >= 'A' && v[i] <= 'Z');
                digit |= v[i] >= '0' && v[i] <= '9';
        }
        return letter && digit;
}

/* A query parameter's name that makes it a credential, besides the names of one
 * (key_is_credential: key, token, sig, signature, auth, access_token, api_key, ...): Azure
 * Functions' function key and an OAuth authorization code (code), a JWT, a session's id in a
 * URL. Only where a query's names are (a URL's "?NAME=", codex's query_params): "code" and
 * "session" elsewhere are no credential's names. */
static bool query_name_is_credential(const char *name)
{
        static const char *const names[] = { "code", "jwt", "session", "sid" };
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (strcasecmp(name, names[i]) == 0)
                        return true;
        return key_is_credential(name, true);
}

/* What the skill linter's scanner does not know and settings hold often: "NAME=VALUE",
 * "NAME: VALUE" (a header in a command or a list), "--NAME VALUE" and "--NAME=VALUE" (a
 * command's option), "Bearer VALUE", "Basic VALUE", "?NAME=VALUE" in a URL, where NAME
 * names a credential (as an environment's variable would, or a query's: query_name_is_credential)
 * and VALUE looks like one; and a client's password option (password_option: mysql -uroot
 * -pVALUE), read within one command of the text (up to a ';', '|', '&', a newline, a
 * parenthesis or a backquote). */
static bool text_has_assigned_credential(const char *s)
{
        command_words words = {};
        for (const char *c = s; *c; c++) {
                if (strchr(";|&()`\n", *c))
                        words = (command_words) {};
                if (!name_byte(*c) || (c > s && name_byte(c[-1])))
                        continue;
                const char *start = c;
                while (*start == '-')
                        start++;
                const char *end = start;
                while (name_byte(*end))
                        end++;
                if (end == start || (size_t) (end - start) >= 128)
                        continue;
                char name[128];
                memcpy(name, start, (size_t) (end - start));
                name[end - start] = '\0';
                /* A command's word (its directory aside: /usr/bin/mysql), or an option of one. */
                const char *next = blank(*end) ? end + strspn(end, " \t\r\n") : NULL;
                if (start == c && (c == s || strchr(" \t\n/\"'(`;|&", c[-1])) &&
                    (!*end || blank(*end) || strchr("\"';)`|&", *end)))
                        command_word(&words, name, (size_t) (end - start));
                else if (start > c) {
                        words.user |= user_option(c, next);
                        if (start - c == 1 && password_option(&words, c, next))
                                return true;
                }
                const char *v = NULL;
                if (*end == '"' && end[1] == ':') {
                        /* "NAME": "VALUE", JSON in a string (DOCKER_AUTH_CONFIG) */
                        v = end + 2 + strspn(end + 2, " \t");
                        v += *v == '"';
                } else if (*end == '=')
                        v = end + 1;
                else if (*end == ':' && end[1] != '/')
                        v = end + 1 + strspn(end + 1, " \t");
                else if ((*end == ' ') && (strcasecmp(name, "bearer") == 0 || strcasecmp(name, "basic") == 0 ||
                                           (start - c == 2 && end[1] != '-')))
                        v = end + 1;
                /* curl -u USER:PASSWORD, --user USER:PASSWORD, --user=USER:PASSWORD */
                if ((*end == ' ' && start - c == 1 && streq(name, "u")) ||
                    ((*end == ' ' || *end == '=') && start - c == 2 && streq(name, "user"))) {
                        const char *user = end + 1, *colon = user + strcspn(user, ": \t\"'");
                        if (*colon == ':' && value_looks_secret(colon + 1, value_len(colon + 1)))
                                return true;
                        continue;
                }
                if (!v)
                        continue;
                /* A quoted value (PGPASSWORD="...", --token '...'), and after a scheme word
                 * (Authorization: token ..., Bearer ...) the word after it. */
                v += *v == '"' || *v == '\'';
                bool scheme = strcasecmp(name, "bearer") == 0 || strcasecmp(name, "basic") == 0;
                if (!scheme && key_is_credential(name, true) && strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") ==
                                                                        value_len(v) && v[value_len(v)] == ' ')
                        v += value_len(v) + 1;
                bool query = *end == '=' && c > s && (c[-1] == '?' || c[-1] == '&');
                if ((scheme || (query ? query_name_is_credential(name) : key_is_credential(name, true))) &&
                    value_looks_secret(v, value_len(v)))
                        return true;
        }
        return false;
}

/* Services whose webhook's URL is its credential whole, the token in its path: a URL on such
 * a host (or one below it) whose path has more after the part listed is withheld, a
 * placeholder there too (hooks.slack.com/services/T0000/B0000/XXXX...: it reaches nothing,
 * and the scanner's Slack rule passes it for one). Their tokens in a query ("?key=",
 * "&sig=": Google Chat's, Teams' workflows') are under names of credentials already. */
static const struct {
        const char *host, *path;
} webhook_urls[] = {
        { "hooks.slack.com", "/services/" },       { "hooks.slack.com", "/workflows/" },
        { "hooks.slack.com", "/triggers/" },       { "discord.com", "/webhooks/" },
        { "discordapp.com", "/webhooks/" },        { "outlook.office.com", "/webhook/" },
        { "outlook.office365.com", "/webhook/" },  { "webhook.office.com", "/webhookb2/" },
        { "hooks.zapier.com", "/hooks/" },         { "api.telegram.org", "/bot" },
        { "maker.ifttt.com", "/with/key/" },       { "open.feishu.cn", "/hook/" },
        { "open.larksuite.com", "/hook/" },
};

/* Whether the n bytes at t, a URL path's segment, are a random-looking token (a webhook's of
 * a service not listed above, a capability URL's): 20 bytes at least of [A-Za-z0-9_-] with
 * letters and digits; not hex (a commit, a digest, a UUID); few '-' and '_' (a slug, a
 * model's name: Qwen2-VL-72B-Instruct); 3.5 bits of entropy a byte at least; and either a
 * random text's share of capitals among its letters (a third to two thirds: names in
 * CamelCase have far fewer) or, in a token of one case, letters and digits alternating often
 * outside hex pieces (four times at least, and once every five bytes: "ubuntu2204server"
 * alternates twice). What passes: a token that reads like words, one of a single case with
 * few digits (of random tokens, about 2% of mixed case ones fail these, 6% of those of 20
 * bytes, and 5% of one case), one in a segment with a '.' or a '%' in it. What goes with
 * them: a shared document's id in its URL (Google Docs', Drive's) is a capability too. */
static bool url_segment_token(const char *t, size_t n)
{
        if (n < 20)
                return false;
        size_t upper = 0, letters = 0, digits = 0, separators = 0, alternations = 0;
        bool hex = true;
        for (size_t i = 0, piece = 0, piece_alternations = 0; i <= n; i++) {
                /* A piece between separators that is a hex number (a slug's id:
                 * how-to-x-3f2a9b1c8d7e) alternates without being random. */
                if (i == n || t[i] == '-' || t[i] == '_') {
                        bool hex_piece = i - piece >= 8;
                        for (size_t k = piece; hex_piece && k < i; k++)
                                hex_piece = (t[k] >= '0' && t[k] <= '9') || (t[k] >= 'a' && t[k] <= 'f') ||
                                            (t[k] >= 'A' && t[k] <= 'F');
                        alternations += hex_piece ? 0 : piece_alternations;
                        piece = i + 1;
                        piece_alternations = 0;
                        separators += i < n;
                        continue;
                }
                char c = t[i];
                bool u = c >= 'A' && c <= 'Z', l = c >= 'a' && c <= 'z', d = c >= '0' && c <= '9';
                if (!u && !l && !d)
                        return false;
                upper += u;
                letters += u || l;
                digits += d;
                hex &= d || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
                if (i > piece && d != (t[i - 1] >= '0' && t[i - 1] <= '9'))
                        piece_alternations++;
        }
        if (letters == 0 || digits == 0 || hex || separators * 8 > n || skills_entropy(t, n) < 3.5)
                return false;
        return (upper * 3 >= letters && upper * 3 <= letters * 2) || (alternations >= 4 && alternations * 5 >= n);
}

/* Whether a URL in s (scheme://host/path) carries a token in its path: a known webhook's
 * (webhook_urls), or a segment of it that looks random (url_segment_token). Ordinary URLs
 * stay: a docs page, an API's /v1/models, a git remote, a registry's package, a commit's or
 * a UUID's path. A token in the query is text_has_assigned_credential's. */
static bool text_has_token_url(const char *s)
{
        for (const char *c = strstr(s, "://"), *following; c; c = following) {
                following = strstr(c + 3, "://");
                if (c == s || !((c[-1] >= 'a' && c[-1] <= 'z') || (c[-1] >= 'A' && c[-1] <= 'Z')))
                        continue;
                const char *host = c + 3;
                size_t n = strcspn(host, "/?# \t\r\n\"'`<>\\");
                const char *path = host + n;
                size_t m = *path == '/' ? strcspn(path, "?# \t\r\n\"'`<>\\,;)") : 0;
                /* To the next URL's scheme at most (https://proxy.test/https://hooks...): that
                 * one is read as a URL of its own, and no byte is read twice. One whose "://"
                 * starts in this host (a://b) leaves this one no path. */
                if (following && following < path + m) {
                        const char *scheme = following < path ? path : following;
                        while (scheme > path && ((scheme[-1] >= 'a' && scheme[-1] <= 'z') ||
                                                 (scheme[-1] >= 'A' && scheme[-1] <= 'Z') || scheme[-1] == '+'))
                                scheme--;
                        m = (size_t) (scheme - path);
                }
                /* The host without its user and port, and a final dot. */
                const char *at = memrchr(host, '@', n);
                if (at) {
                        n -= (size_t) (at + 1 - host);
                        host = at + 1;
                }
                const char *colon = memchr(host, ':', n);
                n = colon ? (size_t) (colon - host) : n;
                n -= n > 0 && host[n - 1] == '.';
                for (size_t i = 0; i < ELEMENTSOF(webhook_urls); i++) {
                        size_t h = strlen(webhook_urls[i].host), p = strlen(webhook_urls[i].path);
                        if (n < h || strncasecmp(host + n - h, webhook_urls[i].host, h) != 0 ||
                            (n > h && host[n - h - 1] != '.'))
                                continue;
                        const char *hook = memmem(path, m, webhook_urls[i].path, p);
                        if (hook && hook + p < path + m && hook[p] != '/')
                                return true;
                }
                for (size_t i = 0; i < m;) {
                        size_t k = i + 1;
                        while (k < m && path[k] != '/')
                                k++;
                        if (url_segment_token(path + i + 1, k - i - 1))
                                return true;
                        i = k;
                }
        }
        return false;
}

/* Whether a value holds what the skill linter takes for a credential (a known token format,
 * a private key, a URL with a password, "token=..." and the like, a random-looking token),
 * one assigned to a credential's name (text_has_assigned_credential) or a URL with a token in
 * its path (text_has_token_url), whatever the key it sits under; an array when a string
 * inside does, or when it passes one as a command's option ("--password", "VALUE"; a command's
 * words one a string: "mysql", "-uroot", "-pVALUE"). */
static bool value_has_credential(json_object *v, unsigned depth)
{
        if (depth > 64)
                return true; /* deeper than any merge takes: not carried */
        if (json_object_is_type(v, json_type_string)) {
                const char *text = json_object_get_string(v);
                return skills_scan(text, (size_t) json_object_get_string_len(v), "settings.json", 1, found, NULL) != 0 ||
                       text_has_assigned_credential(text) || text_has_token_url(text);
        }
        if (json_object_is_type(v, json_type_array)) {
                command_words words = {};
                for (size_t i = 0; i < json_object_array_length(v); i++) {
                        json_object *e = json_object_array_get_idx(v, i), *next = json_object_array_get_idx(v, i + 1);
                        if (value_has_credential(e, depth + 1))
                                return true;
                        const char *opt = json_object_is_type(e, json_type_string) ? json_object_get_string(e) : "";
                        const char *arg = json_object_is_type(next, json_type_string) ? json_object_get_string(next) : NULL;
                        if (opt[0] == '-' && arg && arg[0] != '-' && key_is_credential(opt + strspn(opt, "-"), true) &&
                            value_looks_secret(arg, strlen(arg)))
                                return true;
                        if (password_option(&words, opt, arg))
                                return true;
                        if (opt[0] == '-')
                                words.user |= user_option(opt, arg);
                        else {
                                const char *base = strrchr(opt, '/');
                                base = base ? base + 1 : opt;
                                command_word(&words, base, strlen(base));
                        }
                }
        }
        return false;
}

typedef enum table_kind {
        TABLE_PLAIN,
        TABLE_ENV,     /* an environment's variables (claude's "env", codex's "env" and
                        * shell_environment_policy's "set"): values are the values themselves */
        TABLE_HEADERS, /* header names to values (codex's http_headers, an exporter's headers) */
        TABLE_QUERY,   /* a query's parameters, added to every request's URL (codex's query_params) */
} table_kind;

static table_kind kind_of_table(const char *key)
{
        return streq(key, "env") || streq(key, "set")              ? TABLE_ENV
               : streq(key, "http_headers") || streq(key, "headers") || streq(key, "env_http_headers") ? TABLE_HEADERS
               : streq(key, "query_params")                        ? TABLE_QUERY
                                                                   : TABLE_PLAIN;
}

/* Whether v, the value of name in a table of kind, is a string that looks like a credential's
 * (value_looks_secret), name being none of the plain ones (any case).
 *  - A header of the kind a service authenticates with rather than one that routes (X-Team:
 *    t); never one of those that say what a request is (Accept, User-Agent, an API's version
 *    or beta).
 *  - A query parameter, as a header: a query that codex adds to every request is there to
 *    authenticate it, but for the parameters that say which API or deployment is asked
 *    (api-version, the only one codex's documentation shows). Its name is the scrub's
 *    (query_name_is_credential: Azure Functions' code=, sig=, key=, access_token=, ...). */
static bool table_value_secret(table_kind kind, const char *name, json_object *v)
{
        static const char *const plain_headers[] = { "Accept", "Content-Type", "User-Agent", "anthropic-version",
                                                      "anthropic-beta", "OpenAI-Beta", "OpenAI-Organization",
                                                      "OpenAI-Project", NULL };
        static const char *const plain_query[] = { "api-version", "api_version", "apiversion", "version",
                                                   "deployment", "deployment-id", "deployment_id", "model", "region",
                                                   "location", "format", "locale", "language", NULL };
        if (kind != TABLE_HEADERS && kind != TABLE_QUERY)
                return false;
        for (const char *const *plain = kind == TABLE_HEADERS ? plain_headers : plain_query; *plain; plain++)
                if (strcasecmp(name, *plain) == 0)
                        return false;
        return json_object_is_type(v, json_type_string) &&
               value_looks_secret(json_object_get_string(v), (size_t) json_object_get_string_len(v));
}

/* A table of references: every value a variable's name, and none a known token's format
 * (codex's env_http_headers, as meant). */
static bool references_only(json_object *o)
{
        if (!json_object_is_type(o, json_type_object))
                return false;
        json_object_object_foreach(o, key, value) {
                (void) key;
                const char *v = json_object_is_type(value, json_type_string) ? json_object_get_string(value) : NULL;
                if (!v || !*v || (*v >= '0' && *v <= '9') ||
                    strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != strlen(v) ||
                    value_has_credential(value, 0))
                        return false;
        }
        return true;
}

/* Whether path is one of named (the keys the user carries by name). */
static bool path_named(const char *const *named, const buffer *path)
{
        for (; named && *named; named++)
                if (strlen(*named) == path->size && memcmp(*named, path->data, path->size) == 0)
                        return true;
        return false;
}

/* The number of keys removed from o and below, or -ENOMEM. */
static int scrub(json_object *o, const char *const *named, buffer *path, buffer *removed, table_kind kind)
{
        int n = 0;
        if (json_object_is_type(o, json_type_array)) {
                /* An entry that lost a key goes whole: a hook without its command, a skill
                 * without its auth, is no entry its program accepts. From the end, so that
                 * the indexes said are the file's. */
                for (size_t i = json_object_array_length(o); i-- > 0;) {
                        size_t mark = path->size;
                        int r = buffer_printf(path, "[%zu]", i);
                        json_object *e = json_object_array_get_idx(o, i);
                        r = r < 0 ? r : scrub(e, named, path, removed, TABLE_PLAIN);
                        path->size = mark;
                        if (r < 0)
                                return r;
                        if (r > 0 && json_object_is_type(e, json_type_object) && json_object_array_del_idx(o, i, 1) < 0)
                                return -ENOMEM;
                        n += r;
                }
                return n;
        }
        if (!json_object_is_type(o, json_type_object))
                return 0;
        /* Collect first: json-c's iteration does not survive a deletion. */
        _cleanup_strv_free_ char **doomed = NULL;
        json_object_object_foreach(o, key, value) {
                size_t mark = path->size;
                int r = buffer_printf(path, "%s%s", mark ? "." : "", key);
                /* A name that says it is a credential, or a value that looks like one (a
                 * string, or an array holding one: the whole key goes). A table of references
                 * holds names of variables, never values. */
                bool references = streq(key, "env_http_headers") && references_only(value);
                bool by_name = r >= 0 && !path_named(named, path) &&
                               (key_is_credential(key, kind != TABLE_PLAIN) ||
                                (kind == TABLE_QUERY && query_name_is_credential(key)));
                if (r >= 0 && (by_name || table_value_secret(kind, key, value) ||
                               (!references && value_has_credential(value, 0)))) {
                        r = strv_push(&doomed, key);
                        if (r >= 0 && removed)
                                r = buffer_printf(removed, "%.*s, ", (int) path->size, path->data);
                        n++;
                } else if (r >= 0 && !references && (r = scrub(value, named, path, removed, kind_of_table(key))) > 0)
                        n += r;
                path->size = mark;
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; doomed && doomed[i]; i++)
                json_object_object_del(o, doomed[i]);
        return n;
}

int harness_scrub_credentials(json_object *o, const char *const *named, buffer *removed)
{
        _cleanup_(buffer_free) buffer path = {};
        int r = scrub(o, named, &path, removed, TABLE_PLAIN);
        return r < 0 ? r : 0;
}

/* codex-rs's ReasoningEffort; and aisb's "host". */
static const char *const codex_levels[] = { "none", "minimal", "low", "medium", "high", "xhigh", "host", NULL };

bool codex_thinking_level_valid(const char *level)
{
        return level && strv_contains(codex_levels, level);
}

const char *codex_thinking_levels(void)
{
        return "none, minimal, low, medium, high, xhigh, host";
}

/* key = value in every profile of config's that sets key itself. */
static int set_in_profiles(json_object *config, const char *key, const char *value)
{
        int r = 0;
        json_object *profiles = NULL;
        if (!json_object_object_get_ex(config, "profiles", &profiles) || !json_object_is_type(profiles, json_type_object))
                return 0;
        json_object_object_foreach(profiles, name, profile) {
                (void) name;
                if (json_object_is_type(profile, json_type_object) && json_object_object_get_ex(profile, key, NULL) &&
                    (r = json_add_string(profile, key, value)) < 0)
                        return r;
        }
        return 0;
}

/* key = value in config, and in every profile of config's that sets key itself. */
static int set_everywhere(json_object *config, const char *key, const char *value)
{
        int r = json_add_string(config, key, value);
        return r < 0 ? r : set_in_profiles(config, key, value);
}

/* table.key = value (taken) in config, the table made (or a non-table there replaced). */
static int set_in_table(json_object *config, const char *table, const char *key, json_object *value)
{
        json_object *t = NULL;
        if (value && (!json_object_object_get_ex(config, table, &t) || !json_object_is_type(t, json_type_object)) &&
            json_add(config, table, t = json_object_new_object()) < 0)
                t = NULL;
        if (!t)
                json_object_put(value);
        return t ? json_add(t, key, value) : -ENOMEM;
}

int codex_config_apply_policy(json_object *config, const char *level, aisb_error **err)
{
        if (!codex_thinking_level_valid(level))
                return aisb_error_set(err, -EINVAL, "thinking: codex has no level '%s' (use one of: %s)",
                                      level ? level : "(none)", codex_thinking_levels());
        if (!json_object_is_type(config, json_type_object))
                return aisb_error_set(err, -EINVAL, "codex's configuration to apply policy to is not a table");
        int r = set_everywhere(config, "sandbox_mode", "danger-full-access");
        /* What codex 0.171 asks of the network on its own, each refused by the gate on every
         * run: the update check (api.github.com), the curated plugins' sync (github.com,
         * api.github.com, chatgpt.com), metrics (ab.chatgpt.com). And the TUI's background
         * server, which copies codex (over 400 MB) into the home and outlives the TUI. */
        r = r < 0 ? r : set_in_table(config, "features", "plugins", json_object_new_boolean(false));
        r = r < 0 ? r : set_in_table(config, "features", "daemon_auto_start", json_object_new_boolean(false));
        r = r < 0 ? r : set_in_table(config, "analytics", "enabled", json_object_new_boolean(false));
        r = r < 0 ? r : set_in_table(config, "otel", "metrics_exporter", json_object_new_string("none"));
        r = r < 0 ? r : json_add_bool(config, "check_for_update_on_startup", false);
        if (r >= 0 && !streq(level, "host"))
                r = set_everywhere(config, "model_reasoning_effort", level);
        /* Plan mode's own level, where the file sets one (the agent could lower it there). */
        if (r >= 0 && !streq(level, "host") && json_object_object_get_ex(config, "plan_mode_reasoning_effort", NULL))
                r = json_add_string(config, "plan_mode_reasoning_effort", level);
        if (r >= 0 && !streq(level, "host"))
                r = set_in_profiles(config, "plan_mode_reasoning_effort", level);
        return r < 0 ? error_oom(err) : 0;
}

const char *const claude_level_variables[] = {
        "CLAUDE_CODE_EXTRA_BODY",      "CLAUDE_CODE_DISABLE_THINKING", "CLAUDE_CODE_SUBAGENT_EFFORT",
        "MAX_THINKING_TOKENS",         "CLAUDE_CODE_DISABLE_ADAPTIVE_THINKING", NULL,
};

int harness_pin_key(json_object *settings, json_object *host, const char *table, const char *key)
{
        json_object *t = settings, *value = host, *copy = NULL;
        if ((!table || json_object_object_get_ex(settings, table, &t)) && json_object_is_type(t, json_type_object))
                json_object_object_del(t, key);
        if (!host || (table && !json_object_object_get_ex(host, table, &value)) ||
            !json_object_is_type(value, json_type_object) || !json_object_object_get_ex(value, key, &value))
                return 0;
        if (json_object_deep_copy(value, &copy, NULL) < 0)
                return -ENOMEM;
        return table ? set_in_table(settings, table, key, copy) : json_add(settings, key, copy);
}

int claude_settings_apply_policy(json_object *settings, json_object *host, const char *const *env, bool level,
                                 aisb_error **err)
{
        if (!json_object_is_type(settings, json_type_object))
                return aisb_error_set(err, -EINVAL, "claude's settings to apply policy to are not an object");
        int r = 0;
        /* The level claude picks (effortLevel) and the one it clamps every other to, at the
         * top and per model; the variables that pass a level or turn thinking off, as the
         * host has them. */
        if (level) {
                json_object_object_del(settings, "effortLevel");
                json_object_object_del(settings, "maxEffortLevel");
                json_object *models = NULL;
                if (json_object_object_get_ex(settings, "modelSettings", &models) &&
                    json_object_is_type(models, json_type_object)) {
                        json_object_object_foreach(models, model, m) {
                                (void) model;
                                if (json_object_is_type(m, json_type_object)) {
                                        json_object_object_del(m, "effortLevel");
                                        json_object_object_del(m, "maxEffortLevel");
                                }
                        }
                }
                for (const char *const *v = claude_level_variables; r >= 0 && *v; v++)
                        r = harness_pin_key(settings, host, "env", *v);
        }
        /* The run's own, last: its --env wins over the host's settings as over the sandbox's. */
        for (; r >= 0 && env && env[0] && env[1]; env += 2)
                r = set_in_table(settings, "env", env[0], json_object_new_string(env[1]));
        return r < 0 ? error_oom(err) : 0;
}
