/* SPDX-License-Identifier: MIT */
/*
 * The skills linter: a corpus of true positives, one or more per kind, and of true
 * negatives that look like them (placeholders, examples, git ids, sha256 sums, UUIDs,
 * base64 of ordinary text, digests of lock files, public keys, identifiers, paths); the
 * masked form; the entropy rule measured against random tokens; git log output read by its
 * hunk counts; and the host side: the walk (links out of the tree, FIFOs, huge and binary
 * files, depth, .git objects), the run's cache and the agents directory's decision.
 * Every value here is made up.
 */
#include <check.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <utime.h>

#include "internal.h"
#include "secret-scan.h"
#include "skills-walk.h"
#include "unit.h"
#include "fileio.h"

typedef struct found {
        char kind[32];
        unsigned long line;
        char value[256];
        char masked[40];
        char commit[41];
        char path[128];
        unsigned repo;
} found;

typedef struct findings {
        found items[64];
        size_t n;
} findings;

static int collect(const skills_finding *f, void *userdata)
{
        findings *fs = userdata;
        ck_assert_uint_lt(fs->n, 64);
        found *x = &fs->items[fs->n++];
        snprintf(x->kind, sizeof x->kind, "%s", f->kind);
        x->line = f->line;
        snprintf(x->value, sizeof x->value, "%.*s", (int) f->value_size, f->value);
        snprintf(x->masked, sizeof x->masked, "%s", f->masked);
        snprintf(x->commit, sizeof x->commit, "%s", f->commit ? f->commit : "");
        snprintf(x->path, sizeof x->path, "%s", f->path ? f->path : "");
        x->repo = f->repo;
        return 0;
}

/* The scanner's promise on any input (secret-scan.h): work within a fixed multiple of it. */
static void assert_linear(unsigned long long examined, size_t size)
{
        ck_assert_msg(examined <= SKILLS_SCAN_WORK_PER_BYTE * (unsigned long long) size + SKILLS_SCAN_WORK_PER_BYTE,
                      "%llu units of work for %zu bytes: %.1f a byte, more than %d", examined, size,
                      (double) examined / (double) (size ? size : 1), SKILLS_SCAN_WORK_PER_BYTE);
}

static findings scan(const char *path, const char *text)
{
        findings fs = {};
        unsigned long long examined = 0;
        ck_assert_int_eq(skills_scan_measured(text, strlen(text), path, 1, collect, &fs, &examined), 0);
        assert_linear(examined, strlen(text));
        return fs;
}

static void describe(const findings *fs, char *buf, size_t size)
{
        size_t at = 0;
        buf[0] = 0;
        for (size_t i = 0; i < fs->n && at < size; i++)
                at += (size_t) snprintf(buf + at, size - at, " [%s %lu '%s']", fs->items[i].kind,
                                        fs->items[i].line, fs->items[i].value);
}

/* ---- true positives ---- */

typedef struct positive {
        const char *path;
        const char *text;
        const char *kind;
        const char *value;
} positive;

static const positive positives[] = {
        { ".env", "OPENAI_API_KEY=sk-proj-kQYgKWwePfiV_XIEoY5aGFyxSmEen5EkMZb_kQWg2Z-2e8zZ\n", "openai-api-key",
          "sk-proj-kQYgKWwePfiV_XIEoY5aGFyxSmEen5EkMZb_kQWg2Z-2e8zZ" },
        { "SKILL.md", "Run `export OPENAI_API_KEY=sk-TxHq7SJqUExFnJdlErQOeg24X2JWCmeNbaLlb5c2L8NTJz0y` first.\n",
          "openai-api-key", "sk-TxHq7SJqUExFnJdlErQOeg24X2JWCmeNbaLlb5c2L8NTJz0y" },
        { "notes.txt",
          "anthropic: sk-ant-api03-JYxwOIMp-39ZLNKw6FMmjLxpKjok1Hl6HTqhOYl3Z2sWQPPw0NegvFd3pKB7Cyc5_pgpCOUFYt7MQq1x_J1b98RWHxCMnAA\n",
          "anthropic-api-key",
          "sk-ant-api03-JYxwOIMp-39ZLNKw6FMmjLxpKjok1Hl6HTqhOYl3Z2sWQPPw0NegvFd3pKB7Cyc5_pgpCOUFYt7MQq1x_J1b98RWHxCMnAA" },
        { "maps.js", "const key = 'AIzacHEVFX1DvYCxSY8vU9CC4nOUtgQ4YkuBocW';\n", "google-api-key",
          "AIzacHEVFX1DvYCxSY8vU9CC4nOUtgQ4YkuBocW" },
        { "push.sh", "git push https://ghp_sN0KRE4Z5xLWHrydJAQbZA3S65vUSeQEcbwW@github.com/o/r\n", "github-token",
          "ghp_sN0KRE4Z5xLWHrydJAQbZA3S65vUSeQEcbwW" },
        { "a.md", "gho_1bcA4ZfkZbP1CoWtrjz4FEI7shQBO23GaflZ\n", "github-token", "gho_1bcA4ZfkZbP1CoWtrjz4FEI7shQBO23GaflZ" },
        { "a.md", "token ghs_vzOQnHwxEVrG3MqoW4h2OCzFzTK8oATeHb5v\n", "github-token", "ghs_vzOQnHwxEVrG3MqoW4h2OCzFzTK8oATeHb5v" },
        { "a.md", "(ghu_wE6c44UA64jiRN2lPJH88aWS5RA4VKal5wGG)\n", "github-token", "ghu_wE6c44UA64jiRN2lPJH88aWS5RA4VKal5wGG" },
        { "a.md", "\"ghr_jFCcAloaqYj9gMbCLrWWpjhIRS0aLQkEglgu\"\n", "github-token", "ghr_jFCcAloaqYj9gMbCLrWWpjhIRS0aLQkEglgu" },
        { "gh.yml", "token: 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\n",
          "github-token", "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" },
        { "README", "GITLAB_TOKEN=glpat-OSbMQMxTV04KnAMR2aLe\n", "gitlab-token", "glpat-OSbMQMxTV04KnAMR2aLe" },
        { ".npmrc", "//registry.npmjs.org/:_authToken=npm_5LAg5nhJ5ipKq7apEfOsco4GxeaVXRd9rsJT\n", "npm-token",
          "npm_5LAg5nhJ5ipKq7apEfOsco4GxeaVXRd9rsJT" },
        { ".pypirc", "password = pypi-AgEIcHlwaS5vcmccAB9S8ATxQB5hCah-wKDCZXQhZean-nkg1cJr4y-09wJWZiBMUSyDGgeBQ-N\n",
          "pypi-token", "pypi-AgEIcHlwaS5vcmccAB9S8ATxQB5hCah-wKDCZXQhZean-nkg1cJr4y-09wJWZiBMUSyDGgeBQ-N" },
        { "slack.md", "SLACK_BOT_TOKEN=xoxb-150813285861-4727153996468-YiQCB3y8TDgdbIPefUZv5Upm\n", "slack-token",
          "xoxb-150813285861-4727153996468-YiQCB3y8TDgdbIPefUZv5Upm" },
        { "hook.md", "curl -X POST https://hooks.slack.com/services/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\n",
          "slack-webhook", "T8KD03N1Q/B4JX7ZP2MLA/zymMlopiWfqUyHRSIf8NFmAU" },
        { "credentials", "aws_access_key_id = AKIAMKQQL6HLF6YJGVSY\n", "aws-access-key-id", "AKIAMKQQL6HLF6YJGVSY" },
        { "credentials", "aws_secret_access_key = 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\n", "aws-secret-access-key",
          "0R054dkicU3l5AftiAtBSuJmAo24ShC9JXEqN/ef" },
        { "deploy.md", "export AWS_SECRET_ACCESS_KEY=\"0R054dkicU3l5AftiAtBSuJmAo24ShC9JXEqN/ef\"\n", "aws-secret-access-key",
          "0R054dkicU3l5AftiAtBSuJmAo24ShC9JXEqN/ef" },
        { "id_rsa",
          "-----BEGIN RSA PRIVATE KEY-----\n"
          "JEss/S1oJew14Y9RxX/MO9hBHtvSXC+tEoBJApXVDFY3YGZW0s9mYmrQXogXLuEJ\n"
          "7F+422bFcTpP2qc5p7hPG9+wuFA3w8+2rLY/YktwwPUU4XBr9uhBEYBL6K/fUsl6\n"
          "-----END RSA PRIVATE KEY-----\n",
          "private-key", "-----BEGIN RSA PRIVATE KEY-----" },
        { "SKILL.md", "```\n-----BEGIN OPENSSH PRIVATE KEY-----\niCDu5UFu4Upo96jTnChIYa2tmtz8nqq2cDFhVuMyWAGqWrFL9tkx5KqqK8qjQqhq\n",
          "private-key", "-----BEGIN OPENSSH PRIVATE KEY-----" },
        { "k.asc", "-----BEGIN PGP PRIVATE KEY BLOCK-----\n", "private-key", "-----BEGIN PGP PRIVATE KEY BLOCK-----" },
        { "auth.md",
          "Authorization: Bearer eyJhbGciOiAiSFMyNTYiLCAidHlwIjogIkpXVCJ9.eyJzdWIiOiAic3ZjLWRlcGxveSIsICJzY29wZSI6ICJyZXBvOndyaXRlIiwgImV4cCI6IDE4OTM0NTYwMDB9.BVXBt7wRkl8OZfIa2AUk7z7gTqBu4wweocv81k2lsNa\n",
          "jwt",
          "eyJhbGciOiAiSFMyNTYiLCAidHlwIjogIkpXVCJ9.eyJzdWIiOiAic3ZjLWRlcGxveSIsICJzY29wZSI6ICJyZXBvOndyaXRlIiwgImV4cCI6IDE4OTM0NTYwMDB9.BVXBt7wRkl8OZfIa2AUk7z7gTqBu4wweocv81k2lsNa" },
        { ".git/config", "\turl = https://deploy:WQrZzhB4GZqT8hqt0pmp@git.corp.internal/team/skills.git\n", "url-password",
          "WQrZzhB4GZqT8hqt0pmp" },
        { ".env", "DB_PASSWORD=WQrZzhB4GZqT8hqt0pmp\n", "assigned-secret", "WQrZzhB4GZqT8hqt0pmp" },
        { "settings.yaml", "db:\n  password: \"hunter3-is-better\"\n", "assigned-secret", "hunter3-is-better" },
        { "app.json", "{\"clientSecret\": \"WQrZzhB4GZqT8hqt0pmp\", \"clientId\": \"abc\"}\n", "assigned-secret",
          "WQrZzhB4GZqT8hqt0pmp" },
        { "db.ini", "[db]\nuser = app\npasswd = s3cr3t!pass\n", "assigned-secret", "s3cr3t!pass" },
        { "config.toml", "api_key = 'k-8d7f6a5s4d3f2g1h'\n", "assigned-secret", "k-8d7f6a5s4d3f2g1h" },
        { ".netrc", "machine api.corp.internal login bot password Zq81-pLm4-WwQ9\n", "assigned-secret", "Zq81-pLm4-WwQ9" },
        { "run.sh", "export SERVICE_TOKEN=tk_live_93jd82hf7s6d\n", "assigned-secret", "tk_live_93jd82hf7s6d" },
        { "SKILL.md", "Use the key G2RV4NBMdFzPfD42b4SkOQ1TMziHaQqs for the staging API.\n", "high-entropy",
          "G2RV4NBMdFzPfD42b4SkOQ1TMziHaQqs" },
        { "SKILL.md", "The staging API takes G2RV4NBMdFzPfD42b4SkOQ1TMziHaQqs as its key.\n", NULL, NULL },
        { "SKILL.md", "token: G2RV4NBMdFzPfD42b4SkOQ1TMziHaQqs\n", "high-entropy", "G2RV4NBMdFzPfD42b4SkOQ1TMziHaQqs" },
        { "curl.md", "curl -H \"X-Api-Key: eBfwbpsV+aRjRqqfTJLmEO8OiQMvXGoQugDJ8VAO\" https://api.corp\n", "high-entropy",
          "eBfwbpsV+aRjRqqfTJLmEO8OiQMvXGoQugDJ8VAO" },
        { "cli.md", "tool login --key BnqIF63jFo_bM4shU-1wAjcMbqHY\n", "high-entropy", "BnqIF63jFo_bM4shU-1wAjcMbqHY" },
};

START_TEST(test_positives)
{
        const positive *p = &positives[_i];
        findings fs = scan(p->path, p->text);
        char got[2048];
        describe(&fs, got, sizeof got);
        if (!p->kind) {
                /* Random, but standing where words do: the entropy rule leaves it (a miss the
                 * docs name). */
                ck_assert_msg(fs.n == 0, "%s: expected nothing, got%s", p->path, got);
                return;
        }
        ck_assert_msg(fs.n == 1, "%s '%s': expected one %s, got%s", p->path, p->text, p->kind, got);
        ck_assert_str_eq(fs.items[0].kind, p->kind);
        ck_assert_str_eq(fs.items[0].value, p->value);
        /* The value never leaves masked with more than four of its characters. */
        ck_assert_msg(strstr(fs.items[0].masked, "\xe2\x80\xa6") != NULL, "%s", fs.items[0].masked);
        ck_assert_ptr_null(strstr(fs.items[0].masked, p->value + 4));
}
END_TEST

/* Line numbers count from first_line, and each finding is on its own line. */
START_TEST(test_lines)
{
        const char *text = "# config\n"
                           "\n"
                           "GH=ghp_sN0KRE4Z5xLWHrydJAQbZA3S65vUSeQEcbwW\r\n"
                           "NPM=npm_5LAg5nhJ5ipKq7apEfOsco4GxeaVXRd9rsJT ANT=sk-ant-api03-JYxwOIMp-39ZLNKw6FMmjLxpKjok1Hl6HT\n"
                           "end";
        findings fs = {};
        ck_assert_int_eq(skills_scan(text, strlen(text), "x.env", 10, collect, &fs), 0);
        ck_assert_uint_eq(fs.n, 3);
        ck_assert_uint_eq(fs.items[0].line, 12);
        ck_assert_str_eq(fs.items[0].kind, "github-token");
        ck_assert_uint_eq(fs.items[1].line, 13);
        ck_assert_str_eq(fs.items[1].kind, "npm-token");
        ck_assert_uint_eq(fs.items[2].line, 13);
        ck_assert_str_eq(fs.items[2].kind, "anthropic-api-key");
}
END_TEST

static int stop_at_first(const skills_finding *f, void *userdata)
{
        (*(int *) userdata)++;
        return 42;
}

START_TEST(test_stop)
{
        const char *text = "ghp_sN0KRE4Z5xLWHrydJAQbZA3S65vUSeQEcbwW\nnpm_5LAg5nhJ5ipKq7apEfOsco4GxeaVXRd9rsJT\n";
        int calls = 0;
        ck_assert_int_eq(skills_scan(text, strlen(text), "a", 1, stop_at_first, &calls), 42);
        ck_assert_int_eq(calls, 1);
}
END_TEST

/* ---- true negatives: what looks like a credential and is not ---- */

typedef struct negative {
        const char *path;
        const char *text;
} negative;

static const negative negatives[] = {
        /* Placeholders and documentation's examples. */
        { ".env", "OPENAI_API_KEY=sk-...\n" },
        { ".env", "OPENAI_API_KEY=sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n" },
        { ".env", "OPENAI_API_KEY=sk-your-openai-api-key-goes-here-1234\n" },
        { ".env", "ANTHROPIC_API_KEY=sk-ant-XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX\n" },
        { "settings.yaml", "api_key: your-api-key\n" },
        { "settings.yaml", "token: <TOKEN>\n" },
        { "settings.yaml", "password: changeme\n" },
        { "settings.yaml", "password: example-password-123\n" },
        { "settings.yaml", "secret: placeholder_value_here\n" },
        { "settings.yaml", "password: \"********\"\n" },
        { "settings.yaml", "password: ${DB_PASSWORD}\n" },
        { "ci.yml", "token: ${{ secrets.GITHUB_TOKEN }}\n" },
        { "app.conf", "api_key = os.environ['API_KEY']\n" },
        { "app.conf", "api_key = process.env.API_KEY\n" },
        { "app.conf", "password = getpass()\n" },
        { "app.conf", "password_file = /run/secrets/db\n" },
        { "app.conf", "max_tokens: 409600\n" },
        { "app.conf", "token_url: https://auth.corp.internal/oauth/token\n" },
        { "app.conf", "ssh_key: ~/.ssh/id_ed25519\n" },
        { "app.conf", "secret: true\n" },
        { "run.sh", "export API_TOKEN=\"$1\"\n" },
        { "run.sh", "PASSWORD=value-$RANDOM-secret\n" },
        { "credentials", "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\n" },
        { "credentials", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n" },
        { "SKILL.md", "export GITHUB_TOKEN=ghp_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX\n" },
        { "SKILL.md", "Set SLACK_TOKEN=xoxb-your-token-here.\n" },
        { "SKILL.md", "https://hooks.slack.com/services/TXXXXXXXX/BXXXXXXXX/XXXXXXXXXXXXXXXXXXXXXXXX\n" },
        { "SKILL.md", "-----BEGIN RSA PRIVATE KEY-----\n...\n-----END RSA PRIVATE KEY-----\n" },
        { "SKILL.md", "-----BEGIN PRIVATE KEY-----\n<your key here>\n-----END PRIVATE KEY-----\n" },
        { "SKILL.md", "-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----\n" },
        { "SKILL.md", "connect to postgres://postgres:postgres@localhost:5432/app\n" },
        { "SKILL.md", "git clone https://user:password@example.com/repo.git\n" },
        { "SKILL.md", "git clone https://user:${TOKEN}@git.corp.internal/repo.git\n" },
        /* The jwt.io example, everywhere in documentation. */
        { "SKILL.md",
          "token: eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c\n" },
        /* Hex digests and ids: git commits, sha256 and sha512 sums, UUIDs, docker digests. */
        { "log.md", "commit 3f786850e387550fdab836ed7e6dc881de23001b\n" },
        { "SHA256SUMS", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  node.tar.xz\n" },
        { "sums", "sha512: cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e\n" },
        { "ids.json", "{\"id\": \"123e4567-e89b-12d3-a456-426614174000\"}\n" },
        { "image.yaml", "image: debian@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n" },
        { "a.md", "object 0123456789abcdef0123456789abcdef01234567 and DEADBEEFCAFE0123456789ABCDEF\n" },
        /* Base64 of ordinary text, and digests in their usual dress. */
        { "a.md", "data: SGVsbG8gd29ybGQsIHRoaXMgaXMgYSB0ZXN0IG9mIGJhc2U2NCBlbmNvZGluZy4=\n" },
        { "a.md", "header: eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9\n" },
        { "package-lock.json",
          "\"integrity\": \"sha512-pAmAZe/9+nISKpY7V28heuqcF16AKDu7knw1t9oZb5wz58wsInm85T8s169BKqaErMyB6t7ZixM8PYY6r7RrZQ==\"\n" },
        { "deps.json",
          "\"integrity\": \"sha512-pAmAZe/9+nISKpY7V28heuqcF16AKDu7knw1t9oZb5wz58wsInm85T8s169BKqaErMyB6t7ZixM8PYY6r7RrZQ==\"\n" },
        { "go.sum", "example.org/m v1.2.3 h1:ho8SPUBSxJBVfjAYy6AH8QlvD1Aw7AypSi9E5uyrQQI=\n" },
        { "RECORD", "pip/__init__.py,sha256=k4dLMrldHShYYySyTodCMnMO8fUGWjskmxTV3GEEW_A,357\n" },
        { "a.md", "<img src=\"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==\">\n" },
        { "authorized_keys", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDY9pUIp15EYbwGQ8QfWMyHm9C6hTA/94UEulMNuJgDu user@host\n" },
        { "cert.pem",
          "-----BEGIN CERTIFICATE-----\n"
          "JEss/S1oJew14Y9RxX/MO9hBHtvSXC+tEoBJApXVDFY3YGZW0s9mYmrQXogXLuEJ\n"
          "7F+422bFcTpP2qc5p7hPG9+wuFA3w8+2rLY/YktwwPUU4XBr9uhBEYBL6K/fUsl6\n"
          "-----END CERTIFICATE-----\n" },
        /* Identifiers, names and paths that are long, mixed and in value positions. */
        { "a.md", "name: getUserAccountSettingsFromServer2\n" },
        { "a.md", "path: /usr/share/doc/python3.11/README.Debian\n" },
        { "a.md", "tag: release-2024-01-15-build-12345678\n" },
        { "a.md", "triplet: x86_64-linux-gnu-gcc-12-plugin-dev\n" },
        { "a.md", "cert: mozilla/D-TRUST_Root_Class_3_CA_2_EV_2009\n" },
        { "a.md", "from cryptography import PKCS12KeyAndCertificates\n" },
        { "a.md", "define NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2=1\n" },
        { "a.md", "url: https://github.com/nodejs/node/blob/main/doc/api/single-executable-applications.md\n" },
        { "a.md", "SPDXRef-Package-lodash-4.17.21\n" },
        { "a.md", "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ\n" },
        { "symbols.txt", "FUNC:_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE@@GLIBCXX_3.4.21\n" },
        /* Not config-like: an assignment in prose is not read as one. */
        { "SKILL.md", "Set password=hunter3isgood in your own config.\n" },
};

START_TEST(test_negatives)
{
        const negative *n = &negatives[_i];
        findings fs = scan(n->path, n->text);
        char got[2048];
        describe(&fs, got, sizeof got);
        ck_assert_msg(fs.n == 0, "%s '%s': expected nothing, got%s", n->path, n->text, got);
}
END_TEST

/* ---- masking ---- */

START_TEST(test_mask)
{
        char buf[40];
        skills_mask("ghp_sN0KRE4Z5xLWHrydJAQbZA3S65vUSeQEcbwW", 40, buf, sizeof buf);
        ck_assert_str_eq(buf, "ghp_\xe2\x80\xa6 (40 chars)");
        /* A short value shows a quarter of itself: two of nine. */
        skills_mask("hunter3is", 9, buf, sizeof buf);
        ck_assert_str_eq(buf, "hu\xe2\x80\xa6 (9 chars)");
        skills_mask("abc", 3, buf, sizeof buf);
        ck_assert_str_eq(buf, "\xe2\x80\xa6 (3 chars)");
        /* Nothing that is not printable ASCII: no control reaches a terminal. */
        skills_mask("\x1b]0;\x9bxxxxxxxxxxxxxxxxx", 21, buf, sizeof buf);
        ck_assert_str_eq(buf, "?]0;\xe2\x80\xa6 (21 chars)");
}
END_TEST

/* ---- the entropy rule, measured ---- */

static uint32_t next_random(uint32_t *state)
{
        *state ^= *state << 13;
        *state ^= *state >> 17;
        *state ^= *state << 5;
        return *state;
}

/* The share (in thousandths) of random tokens of this length and alphabet it reports. */
static unsigned detected_per_mille(const char *alphabet, size_t length, uint32_t seed)
{
        size_t a = strlen(alphabet);
        unsigned hits = 0;
        for (int i = 0; i < 2000; i++) {
                char line[256] = "value: ";
                size_t at = strlen(line);
                for (size_t k = 0; k < length; k++)
                        line[at++] = alphabet[next_random(&seed) % a];
                line[at++] = '\n';
                line[at] = 0;
                findings fs = scan("notes.md", line);
                hits += fs.n == 1 && streq(fs.items[0].kind, "high-entropy");
        }
        return hits / 2;
}

START_TEST(test_entropy_random_tokens)
{
        static const char base62[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        static const char base64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        static const char url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        /* docs/skill-lint.md has these figures: 24 characters is where the rule starts, and
         * where it misses most (no digit, or words by chance, or a separator at an end). */
        ck_assert_uint_ge(detected_per_mille(base62, 24, 1), 960);
        ck_assert_uint_ge(detected_per_mille(base62, 32, 2), 985);
        ck_assert_uint_ge(detected_per_mille(base62, 40, 3), 990);
        ck_assert_uint_ge(detected_per_mille(base64, 40, 4), 990);
        ck_assert_uint_ge(detected_per_mille(url, 40, 5), 990);
        /* Below the length, never: 23 random characters are not reported. */
        ck_assert_uint_eq(detected_per_mille(base62, 23, 6), 0);
        /* Hex is never reported, however random: git ids and sums are hex. */
        ck_assert_uint_eq(detected_per_mille("0123456789abcdef", 64, 7), 0);
        ck_assert_uint_eq(detected_per_mille("0123456789ABCDEF", 40, 8), 0);
}
END_TEST

START_TEST(test_entropy_value)
{
        ck_assert(skills_entropy("", 0) == 0);
        ck_assert(skills_entropy("aaaa", 4) == 0);
        ck_assert(skills_entropy("abab", 4) == 1.0);
        ck_assert(skills_entropy("abcd", 4) == 2.0);
}
END_TEST

START_TEST(test_config_like)
{
        ck_assert(skills_config_like(".env"));
        ck_assert(skills_config_like("skills/x/.env.local"));
        ck_assert(skills_config_like("prod.env"));
        ck_assert(skills_config_like("a/b/settings.yaml"));
        ck_assert(skills_config_like(".git/config"));
        ck_assert(skills_config_like("~/.npmrc"));
        ck_assert(skills_config_like("install.sh"));
        ck_assert(!skills_config_like("SKILL.md"));
        ck_assert(!skills_config_like("main.c"));
        ck_assert(!skills_config_like("script.py"));
}
END_TEST

/* ---- git log output ---- */

START_TEST(test_history)
{
        /* Two repositories; in the first, a secret added in one commit and deleted in the
         * next (only the adding commit reports it, at its line), a content line that reads
         * like a header ("+++ b/x", "commit ..."), a deleted file, a quoted path; in the
         * second, a hunk whose counts end it before a stray '+' line. */
        const char *log =
                "aisb-repo 0\n"
                "commit 2222222222222222222222222222222222222222\n"
                "\n"
                "diff --git a/.env b/.env\n"
                "index 1111111..0000000 100644\n"
                "--- a/.env\n"
                "+++ /dev/null\n"
                "@@ -1,2 +0,0 @@\n"
                "-GH=ghp_sN0KRE4Z5xLWHrydJAQbZA3S65vUSeQEcbwW\n"
                "-x=1\n"
                "commit 1111111111111111111111111111111111111111\n"
                "\n"
                "diff --git a/.env b/.env\n"
                "new file mode 100644\n"
                "--- /dev/null\n"
                "+++ b/.env\n"
                "@@ -0,0 +7,3 @@\n"
                "++++ b/fake-path ghs_vzOQnHwxEVrG3MqoW4h2OCzFzTK8oATeHb5v\n"
                "+commit 3333333333333333333333333333333333333333\n"
                "+GH=ghp_sN0KRE4Z5xLWHrydJAQbZA3S65vUSeQEcbwW\n"
                "diff --git \"a/na\\303\\257ve.md\" \"b/na\\303\\257ve.md\"\n"
                "--- /dev/null\n"
                "+++ \"b/na\\303\\257ve.md\"\n"
                "@@ -0,0 +1 @@\n"
                "+npm_5LAg5nhJ5ipKq7apEfOsco4GxeaVXRd9rsJT\n"
                "aisb-repo 1\n"
                "commit 4444444444444444444444444444444444444444\n"
                "diff --git a/k b/k\n"
                "--- a/k\n"
                "+++ b/k\n"
                "@@ -3 +3 @@\n"
                "-old\n"
                "+-----BEGIN EC PRIVATE KEY-----\n"
                "+glpat-OSbMQMxTV04KnAMR2aLe\n";
        findings fs = {};
        ck_assert_int_eq(skills_scan_history(log, strlen(log), collect, &fs), 0);
        char got[4096];
        describe(&fs, got, sizeof got);
        ck_assert_msg(fs.n == 4, "got%s", got);
        ck_assert_str_eq(fs.items[0].kind, "github-token");
        ck_assert_str_eq(fs.items[0].commit, "1111111111111111111111111111111111111111");
        ck_assert_str_eq(fs.items[0].path, ".env");
        ck_assert_uint_eq(fs.items[0].line, 7);
        ck_assert_str_eq(fs.items[1].kind, "github-token");
        ck_assert_str_eq(fs.items[1].value, "ghp_sN0KRE4Z5xLWHrydJAQbZA3S65vUSeQEcbwW");
        ck_assert_uint_eq(fs.items[1].line, 9);
        ck_assert_str_eq(fs.items[1].path, ".env");
        ck_assert_str_eq(fs.items[2].kind, "npm-token");
        ck_assert_str_eq(fs.items[2].path, "\"na\\303\\257ve.md\"");
        ck_assert_uint_eq(fs.items[2].line, 1);
        ck_assert_uint_eq(fs.items[2].repo, 0);
        ck_assert_str_eq(fs.items[3].kind, "private-key");
        ck_assert_str_eq(fs.items[3].commit, "4444444444444444444444444444444444444444");
        ck_assert_uint_eq(fs.items[3].repo, 1);
        ck_assert_uint_eq(fs.items[3].line, 3);
}
END_TEST

/* Truncated and hostile output: no hunk runs past its counts, huge numbers saturate. */
START_TEST(test_history_hostile)
{
        const char *log = "aisb-repo 99999999999999999999\n"
                          "commit zz\n"
                          "+++ b/a\n"
                          "@@ -1 +18446744073709551615,2 @@\n"
                          "+ghp_sN0KRE4Z5xLWHrydJAQbZA3S65vUSeQEcbwW\n"
                          "+ghp_sN0KRE4Z5xLWHrydJAQbZA3S65vUSeQEcbwW\n"
                          "@@ -1 +1 @@\n"
                          "@@ broken\n"
                          "+ghp_1bcA4ZfkZbP1CoWtrjz4FEI7shQBO23GaflZ\n";
        findings fs = {};
        ck_assert_int_eq(skills_scan_history(log, strlen(log), collect, &fs), 0);
        ck_assert_uint_eq(fs.n, 2);
        ck_assert_uint_eq(fs.items[0].repo, 0);
        ck_assert_str_eq(fs.items[0].commit, "");
        ck_assert_uint_ge(fs.items[1].line, fs.items[0].line); /* saturated, not wrapped */
}
END_TEST

/* ---- lines built to make a rule read the same bytes again and again ---- */

typedef struct hostile {
        const char *path; /* NULL: git log output */
        const char *head, *unit, *tail;
        const char *next_unit; /* when set: a next line of it, as long */
        const char *kind;      /* the one finding there is, or NULL for none */
} hostile;

/* Each quadratic before: a rule that read from every position (every separator after a
 * secret-looking key, every "eyJ", every exact-length prefix, every BEGIN line's next line)
 * to the end of a run as long as the line. */
static const hostile hostiles[] = {
        /* A bare value from every ':' to the end of the line, the red team's line. */
        { ".env", "", "token:", "\n", NULL, "assigned-secret" },
        { ".env", "", "password=", "\n", NULL, "assigned-secret" },
        /* A key, then a line of '=' (each "==" is code: linear before too). */
        { ".env", "password", "=", "\n", NULL, NULL },
        /* Values never claimed, each read to the end again: references, and placeholders
         * ("xxxx" at the end of each). */
        { ".env", "", "token=$", "\n", NULL, NULL },
        { ".env", "", "_token=x", "xxxx\n", NULL, NULL },
        { "notes.md", "", "eyJ-", "\n", NULL, NULL },
        /* An exact-length format read to the end of the run for each. */
        { "notes.md", "", "AIza-", "\n", NULL, NULL },
        /* A line of BEGIN lines, whose next line (an example: counting letters) was looked
         * at again for each. */
        { "notes.md", "", "-----BEGIN PRIVATE KEY-----", "\n", "abcdefghij", NULL },
        { NULL, "aisb-repo 0\ncommit 1111111111111111111111111111111111111111\n+++ b/.env\n@@ -0,0 +1 @@\n+",
          "token:", "\n", NULL, "assigned-secret" },
};

typedef struct tally {
        unsigned long n;
        char kind[32];
} tally;

static int count_findings(const skills_finding *f, void *userdata)
{
        tally *t = userdata;
        if (t->n++ == 0)
                snprintf(t->kind, sizeof t->kind, "%s", f->kind);
        return 0;
}

/* _i: the hostile line, at 64 KiB (even) or 1 MiB (odd). No clock: the work is counted. */
START_TEST(test_hostile_lines_linear)
{
        const hostile *h = &hostiles[_i / 2];
        size_t target = _i % 2 ? 1024 * 1024 : 64 * 1024;
        size_t head = strlen(h->head), unit = strlen(h->unit), tail = strlen(h->tail);
        char *text = malloc(head + 2 * (target + tail) + 1);
        ck_assert_ptr_nonnull(text);
        memcpy(text, h->head, head);
        size_t size = head;
        while (size + unit <= head + target) {
                memcpy(text + size, h->unit, unit);
                size += unit;
        }
        memcpy(text + size, h->tail, tail);
        size += tail;
        if (h->next_unit) {
                size_t line = size, next = strlen(h->next_unit);
                while (size + next <= line + target) {
                        memcpy(text + size, h->next_unit, next);
                        size += next;
                }
                memcpy(text + size, h->tail, tail);
                size += tail;
        }
        text[size] = 0;
        tally t = {};
        unsigned long long examined = 0;
        if (h->path)
                ck_assert_int_eq(skills_scan_measured(text, size, h->path, 1, count_findings, &t, &examined), 0);
        else
                ck_assert_int_eq(skills_scan_history_measured(text, size, count_findings, &t, &examined), 0);
        assert_linear(examined, size);
        /* And it still finds what it found. */
        if (h->kind) {
                ck_assert_uint_eq(t.n, 1);
                ck_assert_str_eq(t.kind, h->kind);
        } else
                ck_assert_uint_eq(t.n, 0);
        free(text);
}
END_TEST

/* ---- the host side: the walk ---- */

static char root[64];

static void walk_setup(void)
{
        snprintf(root, sizeof root, "/tmp/aisb-test-skills-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(root));
}

static void walk_teardown(void)
{
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        ck_assert_int_eq(system(cmd), 0);
}

static void put_file(const char *name, const void *data, size_t size)
{
        char path[256];
        snprintf(path, sizeof path, "%s/%s", root, name);
        char dir[256];
        snprintf(dir, sizeof dir, "%s", path);
        *strrchr(dir, '/') = 0;
        char cmd[300];
        snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
        ck_assert_int_eq(system(cmd), 0);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write_all(fd, data, size), 0);
        close(fd);
}

static void put_text(const char *name, const char *text)
{
        put_file(name, text, strlen(text));
}

typedef struct notes {
        char text[4096];
} notes;

static void take_note(const char *path, const char *why, void *userdata)
{
        notes *n = userdata;
        size_t at = strlen(n->text);
        snprintf(n->text + at, sizeof n->text - at, "%s: %s\n", path, why);
}

typedef struct walk_result {
        findings fs;
        notes notes;
        skills_walk w;
} walk_result;

static int walk_collect(const skills_finding *f, void *userdata)
{
        walk_result *res = userdata;
        return collect(f, &res->fs);
}

static void walk_note(const char *path, const char *why, void *userdata)
{
        walk_result *res = userdata;
        take_note(path, why, &res->notes);
}

static void walk_bounded(walk_result *res, unsigned long long read_max)
{
        *res = (walk_result) {};
        res->w = (skills_walk) {
                .read_files = true, .finding_fn = walk_collect, .note_fn = walk_note, .userdata = res,
                .read_max = read_max,
        };
        int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(skills_walk_run(fd, &res->w), 0);
        close(fd);
}

static void walk(walk_result *res)
{
        walk_bounded(res, 0);
}

/* A link out of the tree is not followed (its target holds a token) and is said to be
 * skipped; a link inside is not followed either (its target is read where it is), quietly. */
START_TEST(test_walk_links)
{
        char outside[128], link[128];
        snprintf(outside, sizeof outside, "%s.outside", root);
        int fd = open(outside, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        ck_assert_int_ge(fd, 0);
        static const char token[] = "ghp_sN0KRE4Z5xLWHrydJAQbZA3S65vUSeQEcbwW\n";
        ck_assert_int_eq(write_all(fd, token, sizeof token - 1), 0);
        close(fd);
        put_text("skills/a/SKILL.md", "plain\n");
        put_text("skills/a/inside.env", "T=npm_5LAg5nhJ5ipKq7apEfOsco4GxeaVXRd9rsJT\n");
        snprintf(link, sizeof link, "%s/skills/a/abs-link", root);
        ck_assert_int_eq(symlink(outside, link), 0);
        snprintf(link, sizeof link, "%s/skills/a/rel-link", root);
        ck_assert_int_eq(symlink("../../../x.outside", link), 0);
        snprintf(link, sizeof link, "%s/skills/a/in-link", root);
        ck_assert_int_eq(symlink("../a/inside.env", link), 0);
        snprintf(link, sizeof link, "%s/dir-link", root);
        ck_assert_int_eq(symlink("/etc", link), 0);

        walk_result res;
        walk(&res);
        ck_assert_uint_eq(res.fs.n, 1); /* inside.env, once */
        ck_assert_str_eq(res.fs.items[0].path, "skills/a/inside.env");
        ck_assert_str_eq(res.fs.items[0].kind, "npm-token");
        ck_assert_msg(strstr(res.notes.text, "skills/a/abs-link: a symbolic link out of the directory: not followed"),
                      "%s", res.notes.text);
        ck_assert_msg(strstr(res.notes.text, "skills/a/rel-link: a symbolic link out"), "%s", res.notes.text);
        ck_assert_msg(strstr(res.notes.text, "dir-link: a symbolic link out"), "%s", res.notes.text);
        ck_assert_msg(!strstr(res.notes.text, "in-link"), "%s", res.notes.text);
        ck_assert_uint_eq(res.w.files, 2);
        skills_walk_done(&res.w);
        unlink(outside);
}
END_TEST

/* A huge file and a binary one are skipped with a note; a FIFO is never opened (no hang). */
START_TEST(test_walk_huge_binary_fifo)
{
        size_t big = SKILLS_FILE_MAX + 1;
        char *data = malloc(big);
        ck_assert_ptr_nonnull(data);
        memset(data, 'a', big);
        memcpy(data, "ghp_sN0KRE4Z5xLWHrydJAQbZA3S65vUSeQEcbwW\n", 41);
        put_file("big.txt", data, big);
        free(data);
        static const char binary[] = "\x7f" "ELF\0\0\0ghp_sN0KRE4Z5xLWHrydJAQbZA3S65vUSeQEcbwW\n";
        put_file("tool.bin", binary, sizeof binary - 1);
        char fifo[128];
        snprintf(fifo, sizeof fifo, "%s/pipe", root);
        ck_assert_int_eq(mkfifo(fifo, 0644), 0);
        put_text("ok.md", "nothing\n");

        walk_result res;
        walk(&res);
        ck_assert_uint_eq(res.fs.n, 0);
        ck_assert_msg(strstr(res.notes.text, "big.txt: larger than 1 MiB: not scanned"), "%s", res.notes.text);
        ck_assert_msg(strstr(res.notes.text, "tool.bin: binary: not scanned"), "%s", res.notes.text);
        ck_assert_msg(strstr(res.notes.text, "pipe: not a regular file: not scanned"), "%s", res.notes.text);
        ck_assert_uint_eq(res.w.files, 1);
        ck_assert_uint_eq(res.w.skipped, 3);
        skills_walk_done(&res.w);
}
END_TEST

/* Repositories are found (the root and nested ones); .git's text files are read (a token in
 * a remote's URL), its objects are not (history is git's, in a sandbox), and its binary
 * files say nothing. */
START_TEST(test_walk_git)
{
        put_text(".git/config", "[remote \"origin\"]\n\turl = https://bot:WQrZzhB4GZqT8hqt0pmp@git.corp.internal/x.git\n");
        put_file(".git/index", "DIRC\0\0\0\2", 8);
        put_text(".git/objects/ab/cdef", "ghp_sN0KRE4Z5xLWHrydJAQbZA3S65vUSeQEcbwW\n");
        put_text("skills/b/.git/HEAD", "ref: refs/heads/main\n");
        put_text("skills/c/.git", "gitdir: ../../.git/modules/c\n");
        walk_result res;
        walk(&res);
        char got[2048];
        describe(&res.fs, got, sizeof got);
        ck_assert_msg(res.fs.n == 1, "got%s", got);
        ck_assert_str_eq(res.fs.items[0].kind, "url-password");
        ck_assert_str_eq(res.fs.items[0].path, ".git/config");
        ck_assert_msg(res.notes.text[0] == 0, "%s", res.notes.text);
        ck_assert_uint_eq(strv_length((const char *const *) res.w.repos), 3);
        ck_assert_str_eq(res.w.repos[0], ".");
        ck_assert_str_eq(res.w.repos[1], "skills/b");
        ck_assert_str_eq(res.w.repos[2], "skills/c");
        skills_walk_done(&res.w);
}
END_TEST

START_TEST(test_walk_depth)
{
        char path[512] = "";
        for (int i = 0; i < SKILLS_WALK_MAX_DEPTH + 2; i++)
                strcat(path, "d/");
        strcat(path, "deep.env");
        put_text(path, "T=npm_5LAg5nhJ5ipKq7apEfOsco4GxeaVXRd9rsJT\n");
        walk_result res;
        walk(&res);
        ck_assert_uint_eq(res.fs.n, 0);
        ck_assert_msg(strstr(res.notes.text, "deeper than 16 levels: not scanned"), "%s", res.notes.text);
        skills_walk_done(&res.w);
}
END_TEST

/* The bytes one scan reads are bounded too: past them, files are listed, not read. */
START_TEST(test_walk_read_bound)
{
        put_text("a.env", "T=npm_5LAg5nhJ5ipKq7apEfOsco4GxeaVXRd9rsJT\n");
        put_text("b.env", "T=npm_5LAg5nhJ5ipKq7apEfOsco4GxeaVXRd9rsJT\n");
        put_text("c.env", "T=npm_5LAg5nhJ5ipKq7apEfOsco4GxeaVXRd9rsJT\n");
        walk_result res;
        walk_bounded(&res, 60);
        ck_assert_uint_eq(res.fs.n, 1);
        ck_assert_str_eq(res.fs.items[0].path, "a.env");
        ck_assert_msg(strstr(res.notes.text, "b.env: 0 MiB read: this file and the rest are not scanned"), "%s",
                      res.notes.text);
        ck_assert_msg(!strstr(res.notes.text, "c.env"), "%s", res.notes.text);
        ck_assert_uint_eq(res.w.files, 1);
        ck_assert_uint_eq(res.w.skipped, 2);
        skills_walk_done(&res.w);
}
END_TEST

/* Asked before each entry: a stop ends the walk there with -ECANCELED. */
static bool stop_at_call(void *userdata)
{
        unsigned *calls_left = userdata;
        return (*calls_left)-- == 0;
}

START_TEST(test_walk_stop)
{
        put_text("a.env", "T=npm_5LAg5nhJ5ipKq7apEfOsco4GxeaVXRd9rsJT\n");
        put_text("b.env", "T=npm_5LAg5nhJ5ipKq7apEfOsco4GxeaVXRd9rsJT\n");
        put_text("c/d.env", "T=npm_5LAg5nhJ5ipKq7apEfOsco4GxeaVXRd9rsJT\n");
        walk_result res = {};
        unsigned calls_left = 1; /* a.env goes, b.env is where it stops */
        res.w = (skills_walk) { .read_files = true, .finding_fn = walk_collect, .userdata = &res,
                                .stop_fn = stop_at_call, .stop_userdata = &calls_left };
        int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(skills_walk_run(fd, &res.w), -ECANCELED);
        ck_assert_uint_eq(res.w.files, 1);
        ck_assert_uint_eq(res.fs.n, 1);
        ck_assert_str_eq(res.fs.items[0].path, "a.env");
        skills_walk_done(&res.w);
        /* Inside a directory too. */
        res = (walk_result) {};
        calls_left = 3; /* a.env, b.env, c; then c/d.env */
        res.w = (skills_walk) { .read_files = true, .finding_fn = walk_collect, .userdata = &res,
                                .stop_fn = stop_at_call, .stop_userdata = &calls_left };
        ck_assert_int_eq(skills_walk_run(fd, &res.w), -ECANCELED);
        ck_assert_uint_eq(res.w.files, 2);
        skills_walk_done(&res.w);
        close(fd);
}
END_TEST

/* ---- the run's cache, and the agents directory a run mounts ---- */

/* root/agents made, and the state directory under root: dir is the agents directory. */
static void cache_dirs(char dir[static 128])
{
        char state[128];
        snprintf(state, sizeof state, "%s/state", root);
        snprintf(dir, 128, "%s/agents", root);
        ck_assert_int_eq(mkdir(dir, 0755), 0);
        setenv("XDG_STATE_HOME", state, 1);
}

/* The cached check of dir: whether it found dir changed, and its count of findings. */
static void expect_cached(const char *dir, bool changed, unsigned long n)
{
        unsigned long got = 99;
        bool was = !changed;
        ck_assert_int_eq(skills_check_cached(dir, &got, &was, NULL), 0);
        ck_assert(was == changed);
        ck_assert_uint_eq(got, n);
}

START_TEST(test_cache)
{
        char dir[128];
        cache_dirs(dir);
        put_text("agents/SKILL.md", "nothing\n");
        expect_cached(dir, true, 0);
        expect_cached(dir, false, 0);
        /* A new file: scanned again, its finding counted, then cached. */
        put_text("agents/.env", "T=npm_5LAg5nhJ5ipKq7apEfOsco4GxeaVXRd9rsJT\n");
        expect_cached(dir, true, 1);
        expect_cached(dir, false, 1);
        /* Changed in place, with its mtime: scanned again. */
        put_text("agents/.env", "T=npm_...\n");
        char env[160];
        snprintf(env, sizeof env, "%s/.env", dir);
        struct utimbuf t = { .actime = 1000000000, .modtime = 1000000000 };
        ck_assert_int_eq(utime(env, &t), 0);
        expect_cached(dir, true, 0);
        unsetenv("XDG_STATE_HOME");
}
END_TEST

/* A stopped scan caches nothing: the next run scans again, and warns. */
START_TEST(test_cache_stop)
{
        char dir[128];
        cache_dirs(dir);
        put_text("agents/a.env", "T=npm_5LAg5nhJ5ipKq7apEfOsco4GxeaVXRd9rsJT\n");
        put_text("agents/b.env", "T=npm_5LAg5nhJ5ipKq7apEfOsco4GxeaVXRd9rsJT\n");
        unsigned long n = 99;
        bool changed = false;
        /* Stopped in the listing, and (2 entries listed) in the scan itself. */
        for (unsigned at = 0; at < 4; at++) {
                unsigned calls_left = at;
                aisb_error *err = NULL;
                ck_assert_int_eq(skills_check_stoppable(dir, stop_at_call, &calls_left, &n, &changed, &err),
                                 -ECANCELED);
                ck_assert_msg(strstr(aisb_error_message(err), "stopped while"), "%s", aisb_error_message(err));
                aisb_error_free(err);
        }
        expect_cached(dir, true, 2);
        /* Never asked to stop: the same as skills_check_cached. */
        ck_assert_int_eq(skills_check_stoppable(dir, NULL, NULL, &n, &changed, NULL), 0);
        ck_assert(!changed);
        ck_assert_uint_eq(n, 2);
        unsetenv("XDG_STATE_HOME");
}
END_TEST

START_TEST(test_agents_dir)
{
        char home[128], agents[160];
        snprintf(home, sizeof home, "%s/home", root);
        snprintf(agents, sizeof agents, "%s/.agents", home);
        ck_assert_int_eq(mkdir(home, 0755), 0);
        setenv("HOME", home, 1);
        aisb_policy *p = NULL;
        ck_assert_int_eq(aisb_policy_new(&p, NULL), 0);
        char *dir = NULL;
        aisb_error *err = NULL;
        ck_assert_int_eq(aisb_policy_agents_dir(p, &dir, &err), -ENOENT);
        ck_assert_msg(strstr(aisb_error_message(err), "/.agents does not exist"), "%s", aisb_error_message(err));
        aisb_error_free(err);
        err = NULL;
        ck_assert_int_eq(mkdir(agents, 0755), 0);
        ck_assert_int_eq(aisb_policy_agents_dir(p, &dir, NULL), 0);
        ck_assert_str_eq(dir, agents);
        free(dir);
        ck_assert_int_eq(aisb_policy_set(p, "agents-dir", root, NULL), 0);
        ck_assert_int_eq(aisb_policy_agents_dir(p, &dir, NULL), 0);
        ck_assert_str_eq(dir, root);
        free(dir);
        ck_assert_int_eq(aisb_policy_set(p, "no-agents", "true", NULL), 0);
        ck_assert_int_eq(aisb_policy_agents_dir(p, &dir, &err), -ENOENT);
        ck_assert_msg(strstr(aisb_error_message(err), "no-agents"), "%s", aisb_error_message(err));
        aisb_error_free(err);
        aisb_policy_free(p);
}
END_TEST

/* A flag this library does not know is refused before anything is read. */
START_TEST(test_lint_unknown_flag)
{
        aisb_error *err = NULL;
        ck_assert_int_eq(aisb_skill_lint(NULL, NULL, "/nonexistent", 1u << 7, NULL, NULL, NULL, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(aisb_error_message(err), "unknown flags"));
        aisb_error_free(err);
}
END_TEST

static Suite *skills_suite(void)
{
        Suite *s = suite_create("skills-scan");
        TCase *scanner = tcase_create("scanner");
        tcase_add_loop_test(scanner, test_positives, 0, (int) ELEMENTSOF(positives));
        tcase_add_loop_test(scanner, test_negatives, 0, (int) ELEMENTSOF(negatives));
        tcase_add_test(scanner, test_lines);
        tcase_add_test(scanner, test_stop);
        tcase_add_test(scanner, test_mask);
        tcase_add_test(scanner, test_entropy_value);
        tcase_add_test(scanner, test_entropy_random_tokens);
        tcase_add_test(scanner, test_config_like);
        tcase_add_loop_test(scanner, test_hostile_lines_linear, 0, 2 * (int) ELEMENTSOF(hostiles));
        suite_add_tcase(s, scanner);
        TCase *history = tcase_create("history");
        tcase_add_test(history, test_history);
        tcase_add_test(history, test_history_hostile);
        suite_add_tcase(s, history);
        TCase *host = tcase_create("host");
        tcase_add_checked_fixture(host, walk_setup, walk_teardown);
        tcase_add_test(host, test_walk_links);
        tcase_add_test(host, test_walk_huge_binary_fifo);
        tcase_add_test(host, test_walk_git);
        tcase_add_test(host, test_walk_depth);
        tcase_add_test(host, test_walk_read_bound);
        tcase_add_test(host, test_walk_stop);
        tcase_add_test(host, test_cache);
        tcase_add_test(host, test_cache_stop);
        tcase_add_test(host, test_agents_dir);
        tcase_add_test(host, test_lint_unknown_flag);
        suite_add_tcase(s, host);
        return s;
}

int main(void)
{
        return unit_run(skills_suite());
}
