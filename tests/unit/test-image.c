/* SPDX-License-Identifier: MIT */
/* The image: the generated Containerfile, the deterministic build context and its tag, and
 * the build stream's lines. */
#include <archive.h>
#include <archive_entry.h>
#include <check.h>
#include <stdlib.h>

#include "internal.h"
#include "unit.h"
#include "../suite-table.h"
#include "fileio.h"
#include "digest.h"

static aisb_policy *new_policy(void)
{
        aisb_policy *p = NULL;
        ck_assert_int_eq(aisb_policy_new(&p, NULL), 0);
        ck_assert_int_eq(aisb_policy_apply_environment(p, NULL), 0);
        return p;
}

static char *tag_of(const aisb_policy *p)
{
        char *tag = NULL;
        ck_assert_int_eq(aisb_image_tag(p, &tag, NULL), 0);
        return tag;
}

static char *containerfile_of(const aisb_policy *p)
{
        char *text = NULL;
        ck_assert_int_eq(aisb_policy_containerfile(p, &text, NULL), 0);
        return text;
}

START_TEST(test_containerfile)
{
        aisb_policy *p = new_policy();
        char *text = containerfile_of(p);
        ck_assert_ptr_nonnull(strstr(text, "\nFROM docker.io/library/ubuntu:24.04\n"));
        static const char *const tools[] = { " git", " curl", " jq", " build-essential",
                                             " python3", " ca-certificates" };
        for (size_t i = 0; i < ELEMENTSOF(tools); i++)
                ck_assert_msg(strstr(text, tools[i]), "missing %s", tools[i]);
        ck_assert_ptr_null(strstr(text, "COPY ca-certificates"));
        free(text);

        ck_assert_int_eq(aisb_policy_set(p, "install", "ripgrep", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "base-image", "bootstrap:debian:trixie", NULL), 0);
        text = containerfile_of(p);
        ck_assert_ptr_nonnull(strstr(text, "\nFROM localhost/aisb-base:debian-trixie\n"));
        ck_assert_ptr_nonnull(strstr(text, " ripgrep"));
        free(text);
        aisb_policy_free(p);
}
END_TEST

/* A Containerfile as buildah's layer cache sees it: its instructions (continuation lines
 * joined, comments dropped). An instruction's cached layer is reused only when it and every
 * instruction before it are the same (and, for COPY, what it copies). */
typedef struct instructions {
        char *line[64];
        size_t n;
} instructions;

static void instructions_of(const aisb_policy *p, instructions *ret)
{
        char *text = containerfile_of(p);
        *ret = (instructions) {};
        buffer cur = {};
        for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
                if (l[0] == '#' && !cur.size)
                        continue;
                size_t len = strlen(l);
                bool more = len > 0 && l[len - 1] == '\\';
                ck_assert_int_ge(buffer_append(&cur, l, more ? len - 1 : len), 0);
                if (more)
                        continue;
                ck_assert_uint_lt(ret->n, ELEMENTSOF(ret->line));
                ret->line[ret->n++] = buffer_steal(&cur);
        }
        ck_assert_uint_eq(cur.size, 0);
        buffer_free(&cur);
        free(text);
}

static void instructions_done(instructions *i)
{
        for (size_t k = 0; k < i->n; k++)
                free(i->line[k]);
}

static size_t common_prefix(const instructions *a, const instructions *b)
{
        size_t k = 0;
        while (k < a->n && k < b->n && streq(a->line[k], b->line[k]))
                k++;
        return k;
}

static size_t find(const instructions *i, const char *needle)
{
        for (size_t k = 0; k < i->n; k++)
                if (strstr(i->line[k], needle))
                        return k;
        ck_abort_msg("no instruction with %s", needle);
        return 0;
}

static char *write_ca(void)
{
        static char path[] = "/tmp/aisb-ca-layers-XXXXXX";
        int fd = mkstemp(path);
        static const char pem[] = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
        ck_assert_int_eq(write_all(fd, pem, sizeof pem - 1), 0);
        close(fd);
        return path;
}

/* Each input invalidates only the layers after it: --install packages rebuild their own
 * layer and the entrypoint's; another harness those and its own; CA certificates all but
 * the base tools. One stage: nothing is copied from another. */
START_TEST(test_containerfile_layers)
{
        aisb_policy *plain = new_policy(), *cowsay = new_policy(), *sl = new_policy();
        aisb_policy *ca = new_policy(), *ca_cowsay = new_policy(), *codex = new_policy();
        ck_assert_int_eq(aisb_policy_set(cowsay, "install", "cowsay", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(sl, "install", "sl", NULL), 0);
        ck_assert_int_eq(aisb_policy_set(sl, "install", "file", NULL), 0);
        char *ca_path = write_ca();
        ck_assert_int_eq(aisb_policy_set(ca, "ca-cert", ca_path, NULL), 0);
        ck_assert_int_eq(aisb_policy_set(ca_cowsay, "ca-cert", ca_path, NULL), 0);
        ck_assert_int_eq(aisb_policy_set(ca_cowsay, "install", "cowsay", NULL), 0);
        unlink(ca_path);
        ck_assert_int_eq(aisb_policy_set(codex, "harness", "codex", NULL), 0);
        instructions i_plain, i_cowsay, i_sl, i_ca, i_ca_cowsay, i_codex;
        instructions_of(plain, &i_plain);
        instructions_of(cowsay, &i_cowsay);
        instructions_of(sl, &i_sl);
        instructions_of(ca, &i_ca);
        instructions_of(ca_cowsay, &i_ca_cowsay);
        instructions_of(codex, &i_codex);

        ck_assert(startswith(i_plain.line[0], "FROM "));
        for (size_t k = 1; k < i_plain.n; k++)
                ck_assert_msg(!startswith(i_plain.line[k], "FROM ") && !strstr(i_plain.line[k], "--from="),
                              "a second stage: %s", i_plain.line[k]);
        /* The order: base tools, Node, the harness, (packages,) the entrypoint, last but the
         * working directory. */
        size_t tools = find(&i_plain, " build-essential ");
        size_t node = find(&i_plain, "sum -c - ");
        size_t harness = find(&i_plain, "RUN npm install -g ");
        size_t entry = find(&i_plain, "COPY aisb-entrypoint ");
        ck_assert_uint_eq(tools, 2);
        ck_assert(tools < node && node < harness && harness < entry);
        ck_assert_uint_eq(entry, i_plain.n - 2);
        ck_assert(startswith(i_plain.line[entry + 1], "WORKDIR "));

        /* The packages: one RUN, after everything but the entrypoint; all before it shared. */
        ck_assert_uint_eq(i_cowsay.n, i_plain.n + 1);
        ck_assert_uint_eq(common_prefix(&i_plain, &i_cowsay), entry);
        ck_assert(startswith(i_cowsay.line[entry], "RUN apt-get update"));
        ck_assert_ptr_nonnull(strstr(i_cowsay.line[entry], " cowsay "));
        ck_assert_str_eq(i_cowsay.line[entry + 1], i_plain.line[entry]);
        ck_assert_str_eq(i_cowsay.line[entry + 2], i_plain.line[entry + 1]);
        /* Two variants share every layer before their packages. */
        ck_assert_uint_eq(common_prefix(&i_cowsay, &i_sl), entry);
        ck_assert_ptr_nonnull(strstr(i_sl.line[entry], " sl file "));

        /* CA certificates: the base tools' layer is shared; the certificates come right
         * after it, and the packages still have their own layer. */
        ck_assert_uint_eq(common_prefix(&i_plain, &i_ca), tools + 1);
        ck_assert(startswith(i_ca.line[tools + 1], "COPY ca-certificates/ "));
        ck_assert_str_eq(i_ca.line[tools + 2], "RUN update-ca-certificates");
        ck_assert_uint_eq(common_prefix(&i_ca, &i_ca_cowsay), find(&i_ca, "COPY aisb-entrypoint "));

        /* Unpacked as root, nothing keeps an archive's owner (nodejs.org's files are uid
         * 1001) or gives /usr/local's directories the archive's: from either source. */
        aisb_policy *npm = new_policy();
        ck_assert_int_eq(aisb_policy_set(npm, "node-source", "npm", NULL), 0);
        instructions i_npm;
        instructions_of(npm, &i_npm);
        const instructions *sources[] = { &i_plain, &i_npm };
        for (size_t k = 0; k < ELEMENTSOF(sources); k++) {
                size_t tars = 0;
                for (const char *at = sources[k]->line[node]; (at = strstr(at, " tar ")); at++, tars++)
                        ck_assert_msg(startswith(at, " tar --no-same-owner --no-overwrite-dir -x"), "%s", at);
                ck_assert_uint_ge(tars, 1);
        }
        ck_assert_ptr_nonnull(strstr(i_plain.line[node], "nodejs.org"));
        ck_assert_ptr_nonnull(strstr(i_npm.line[node], "registry.npmjs.org"));
        instructions_done(&i_npm);
        aisb_policy_free(npm);

        /* Another harness: the same layers up to Node's, its own from the harness on. */
        ck_assert_uint_eq(common_prefix(&i_plain, &i_codex), harness);
        ck_assert_ptr_nonnull(strstr(i_codex.line[harness], "@openai/codex"));

        instructions_done(&i_plain);
        instructions_done(&i_cowsay);
        instructions_done(&i_sl);
        instructions_done(&i_ca);
        instructions_done(&i_ca_cowsay);
        instructions_done(&i_codex);
        aisb_policy_free(plain);
        aisb_policy_free(cowsay);
        aisb_policy_free(sl);
        aisb_policy_free(ca);
        aisb_policy_free(ca_cowsay);
        aisb_policy_free(codex);
}
END_TEST

START_TEST(test_tag_follows_content)
{
        aisb_policy *a = new_policy(), *b = new_policy();
        char *ta = tag_of(a), *tb = tag_of(b);
        ck_assert_str_eq(ta, tb);
        ck_assert(startswith(ta, "localhost/aisb:"));
        ck_assert_uint_eq(strlen(ta), strlen("localhost/aisb:") + 32);
        /* Settings that do not go into the build do not change the tag... */
        ck_assert_int_eq(aisb_policy_set(b, "memory", "1g", NULL), 0);
        free(tb);
        tb = tag_of(b);
        ck_assert_str_eq(ta, tb);
        /* ...and everything that does, does. */
        ck_assert_int_eq(aisb_policy_set(b, "install", "ripgrep", NULL), 0);
        free(tb);
        tb = tag_of(b);
        ck_assert_str_ne(ta, tb);
        aisb_policy *c = new_policy();
        ck_assert_int_eq(aisb_policy_set(c, "base-image", "docker.io/library/debian:13", NULL), 0);
        char *tc = tag_of(c);
        ck_assert_str_ne(ta, tc);
        free(ta);
        free(tb);
        free(tc);
        aisb_policy_free(a);
        aisb_policy_free(b);
        aisb_policy_free(c);
}
END_TEST

START_TEST(test_context_holds_ca_certificates)
{
        char path[] = "/tmp/aisb-ca-XXXXXX";
        int fd = mkstemp(path);
        static const char pem[] = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
        ck_assert_int_eq(write_all(fd, pem, sizeof pem - 1), 0);
        close(fd);
        aisb_policy *p = new_policy();
        char *before = tag_of(p);
        ck_assert_int_eq(aisb_policy_set(p, "ca-cert", path, NULL), 0);
        char *after = tag_of(p);
        ck_assert_str_ne(before, after);

        void *tar = NULL;
        size_t size = 0;
        build_context c = {};
        ck_assert_int_eq(image_context(p, &c, NULL), 0);
        ck_assert_int_eq(image_pack(&c, NULL, &tar, &size, NULL), 0);
        build_context_done(&c);
        struct archive *a = archive_read_new();
        archive_read_support_format_tar(a);
        ck_assert_int_eq(archive_read_open_memory(a, tar, size), ARCHIVE_OK);
        struct archive_entry *e;
        bool saw_containerfile = false, saw_cert = false;
        while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
                const char *name = archive_entry_pathname(e);
                ck_assert_int_eq(archive_entry_mtime(e), 0);
                ck_assert_int_eq(archive_entry_uid(e), 0);
                if (streq(name, "Containerfile"))
                        saw_containerfile = true;
                if (streq(name, "ca-certificates/aisb-0.crt")) {
                        char buf[256] = "";
                        ck_assert_int_eq(archive_read_data(a, buf, sizeof buf), sizeof pem - 1);
                        ck_assert_str_eq(buf, pem);
                        saw_cert = true;
                }
        }
        archive_read_free(a);
        ck_assert(saw_containerfile && saw_cert);
        char *text = containerfile_of(p);
        ck_assert_ptr_nonnull(strstr(text, "COPY ca-certificates/ /usr/local/share/ca-certificates/aisb/"));
        free(text);

        unlink(path);
        aisb_error *err = NULL;
        ck_assert_int_lt(aisb_policy_set(p, "ca-cert", "/etc/hostname", &err), 0);
        ck_assert_ptr_nonnull(strstr(aisb_error_message(err), "not a PEM certificate"));
        aisb_error_free(err);
        free(tar);
        free(before);
        free(after);
        aisb_policy_free(p);
}
END_TEST

/* The tag is SHA-256 over each entry's name, "mode size" and content, in packing order:
 * checked against the same bytes hashed in one piece, and against a change in each field. */
START_TEST(test_tag_is_entries_hash)
{
        context_file files[] = { { "a", "xy", 2, 0644 }, { "aisb-entrypoint", "\x7f" "ELF", 4, 0755 } };
        build_context c = { .containerfile = (char *) "FROM x\n", .files = files, .n_files = 2 };
        char *tag = NULL;
        ck_assert_int_eq(image_context_tag("r", &c, &tag), 0);
        static const char flat[] = "Containerfile\0" "644 7\0" "FROM x\n"
                                   "a\0" "644 2\0" "xy"
                                   "aisb-entrypoint\0" "755 4\0" "\x7f" "ELF";
        char *hex = NULL;
        /* The digest itself, against FIPS 180-2's example. */
        ck_assert_int_eq(sha256_hex("abc", 3, 64, &hex), 0);
        ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        free(hex);
        ck_assert_int_eq(sha256_hex(flat, sizeof flat - 1, 32, &hex), 0);
        ck_assert_str_eq(tag + 2, hex);
        ck_assert(startswith(tag, "r:"));
        free(hex);

        /* Content read from a file hashes as the same bytes in memory would. */
        char path[] = "/tmp/aisb-unit-entry.XXXXXX";
        int fd = mkstemp(path);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write_all(fd, "\x7f" "ELF", 4), 0);
        unlink(path);
        files[1] = (context_file) { .name = "aisb-entrypoint", .size = 4, .mode = 0755, .fd = fd };
        char *from_file = NULL;
        ck_assert_int_eq(image_context_tag("r", &c, &from_file), 0);
        ck_assert_str_eq(tag, from_file);
        free(from_file);
        /* A file shorter than its recorded size is an error, not a different hash. */
        files[1].size = 5;
        ck_assert_int_eq(image_context_tag("r", &c, &from_file), -ENODATA);
        close(fd);
        files[1] = (context_file) { "aisb-entrypoint", "\x7f" "ELF", 4, 0755 };

        /* The first entry's mode, name or content changed, or content moving across the
         * boundary of two entries: each a tag of its own. */
        static const struct {
                context_file first;
                const char *containerfile;
        } changed[] = {
                { { "a", "xy", 2, 0755 }, "FROM x\n" },
                { { "b", "xy", 2, 0644 }, "FROM x\n" },
                { { "a", "xz", 2, 0644 }, "FROM x\n" },
                { { "a", "xyz", 3, 0644 }, "FROM x" },
        };
        for (size_t i = 0; i < ELEMENTSOF(changed); i++) {
                files[0] = changed[i].first;
                c.containerfile = (char *) changed[i].containerfile;
                char *other = NULL;
                ck_assert_int_eq(image_context_tag("r", &c, &other), 0);
                ck_assert_msg(!streq(tag, other), "change %zu: the tag stays %s", i, tag);
                free(other);
        }
        free(tag);
}
END_TEST

/* Packing is deterministic: the same context gives the same bytes. */
START_TEST(test_pack_deterministic)
{
        aisb_policy *p = new_policy();
        build_context c = {};
        ck_assert_int_eq(image_context(p, &c, NULL), 0);
        void *t1 = NULL, *t2 = NULL;
        size_t s1 = 0, s2 = 0;
        ck_assert_int_eq(image_pack(&c, NULL, &t1, &s1, NULL), 0);
        ck_assert_int_eq(image_pack(&c, NULL, &t2, &s2, NULL), 0);
        ck_assert_uint_eq(s1, s2);
        ck_assert_int_eq(memcmp(t1, t2, s1), 0);
        ck_assert_uint_gt(s1, c.files[c.n_files - 1].size);
        /* Packing for a tag re-hashes what it read: the right tag packs, another is refused. */
        char *tag = NULL;
        ck_assert_int_eq(image_context_tag("localhost/aisb", &c, &tag), 0);
        void *t3 = NULL;
        size_t s3 = 0;
        ck_assert_int_eq(image_pack(&c, tag, &t3, &s3, NULL), 0);
        ck_assert_uint_eq(s3, s1);
        free(t3);
        aisb_error *err = NULL;
        ck_assert_int_eq(image_pack(&c, "localhost/aisb:00000000000000000000000000000000", &t3, &s3, &err),
                         -ESTALE);
        ck_assert_ptr_nonnull(strstr(aisb_error_message(err), "changed while aisb read it"));
        aisb_error_free(err);
        free(tag);
        free(t1);
        free(t2);
        build_context_done(&c);
        aisb_policy_free(p);
}
END_TEST

START_TEST(test_build_lines)
{
        char *stream, *error;
        static const char ok[] = "{\"stream\":\"STEP 1/4: FROM x\\n\"}";
        ck_assert_int_eq(build_parse_line(ok, sizeof ok - 1, &stream, &error), 0);
        ck_assert_str_eq(stream, "STEP 1/4: FROM x\n");
        ck_assert_ptr_null(error);
        free(stream);
        static const char bad[] = "{\"errorDetail\":{\"message\":\"exit status 100\"},\"error\":\"exit status 100\"}";
        ck_assert_int_eq(build_parse_line(bad, sizeof bad - 1, &stream, &error), 0);
        ck_assert_str_eq(error, "exit status 100");
        free(error);
        static const char *const garbage[] = { "", "{", "[1]", "not json", "{\"stream\":1}x" };
        for (size_t i = 0; i < ELEMENTSOF(garbage); i++) {
                int r = build_parse_line(garbage[i], strlen(garbage[i]), &stream, &error);
                ck_assert(r < 0 || (!stream && !error));
                free(stream);
                free(error);
        }
}
END_TEST

int main(void)
{
        return unit_run(suite_of("image", "context", test_containerfile, test_containerfile_layers,
                                 test_tag_follows_content, test_context_holds_ca_certificates,
                                 test_tag_is_entries_hash, test_pack_deterministic, test_build_lines));
}
