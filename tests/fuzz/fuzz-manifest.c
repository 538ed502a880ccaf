/* SPDX-License-Identifier: MIT */
/*
 * The records kept of a project (a review run's start, undo's records before and after a
 * run) and a run's info are read back from the user's state, parsed as untrusted all the
 * same. Byte 0 bit 0: the rest is a run's info, else a manifest.
 *
 * Checked for a manifest: the parser is strict, so what it accepts is exactly what
 * manifest_format writes: formatting what parsed gives back the input byte for byte, and that
 * parses to the same value (every field, path, target and hash); every parsed path is plain,
 * in the walk's order, and manifest_find finds it (and nothing else for a path it lacks). A
 * refusal leaves nothing allocated. For a run's info (parsed leniently): what parses formats
 * to a text that parses to the same value, and formatting that again changes nothing.
 */
#include "internal.h"
#include "fuzz.h"
#include "manifest.h"
#include "review.h"
#include "tree-walk.h"

static bool same_string(const char *a, const char *b)
{
        return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void manifest_case(const uint8_t *data, size_t size)
{
        manifest m = {};
        size_t line = 0;
        if (manifest_parse((const char *) data, size, &m, &line) < 0) {
                FUZZ_CHECK(m.n == 0 && !m.entries);
                FUZZ_CHECK(line >= 1);
                return;
        }
        for (size_t i = 0; i < m.n; i++) {
                const manifest_entry *e = &m.entries[i];
                FUZZ_CHECK(tree_path_valid(e->path));
                FUZZ_CHECK(manifest_find(&m, e->path) == e);
                FUZZ_CHECK(i == 0 || tree_path_cmp(m.entries[i - 1].path, e->path) < 0);
                FUZZ_CHECK(e->mode <= 07777);
                FUZZ_CHECK(!e->target || e->type == MANIFEST_LINK);
                FUZZ_CHECK(!e->hash[0] || (e->type == MANIFEST_FILE && strlen(e->hash) == MANIFEST_HASH_HEX));
                /* A path the record lacks (one below a file, say) is not found as another. */
                char *below = NULL;
                if (asprintf(&below, "%s/%s", e->path, "\x01") < 0)
                        abort();
                const manifest_entry *f = manifest_find(&m, below);
                FUZZ_CHECK(!f || strcmp(f->path, below) == 0);
                free(below);
        }
        buffer text = {};
        FUZZ_CHECK(manifest_format(&m, &text) == 0);
        /* Strict: nothing but the formatter's own text is taken. */
        FUZZ_CHECK(text.size == size && memcmp(text.data, data, size) == 0);
        manifest again = {};
        FUZZ_CHECK(manifest_parse(text.data, text.size, &again, NULL) == 0);
        FUZZ_CHECK(again.n == m.n);
        for (size_t i = 0; i < m.n; i++) {
                const manifest_entry *a = &m.entries[i], *b = &again.entries[i];
                FUZZ_CHECK(strcmp(a->path, b->path) == 0 && same_string(a->target, b->target));
                FUZZ_CHECK(a->type == b->type && a->mode == b->mode && a->size == b->size && a->dev == b->dev &&
                           a->ino == b->ino && a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns);
                FUZZ_CHECK(manifest_same(a, b));
                FUZZ_CHECK(strcmp(a->hash, b->hash) == 0);
                FUZZ_CHECK(manifest_find(&again, a->path) == b);
        }
        manifest_done(&again);
        buffer_free(&text);
        manifest_done(&m);
}

static void info_case(const uint8_t *data, size_t size)
{
        run_info i = {};
        if (run_info_parse((const char *) data, size, &i) < 0) {
                FUZZ_CHECK(!i.project && !i.run && !i.protect);
                return;
        }
        FUZZ_CHECK(i.project && i.project[0] == '/' && i.run);
        FUZZ_CHECK(i.started_ns >= 0 && i.ended_ns >= 0 && i.pid >= 0);
        buffer text = {};
        FUZZ_CHECK(run_info_format(&i, &text) == 0);
        FUZZ_CHECK(text.size == strlen(text.data));
        run_info again = {};
        FUZZ_CHECK(run_info_parse(text.data, text.size, &again) == 0);
        FUZZ_CHECK(strcmp(i.project, again.project) == 0 && strcmp(i.run, again.run) == 0);
        FUZZ_CHECK(same_string(i.protect, again.protect) || (!i.protect && again.protect && !*again.protect));
        FUZZ_CHECK(i.started_ns == again.started_ns && i.ended_ns == again.ended_ns && i.pid == again.pid);
        FUZZ_CHECK(i.dev == again.dev && i.ino == again.ino);
        /* The formatted text is canonical: written again, it is the same text. */
        buffer text2 = {};
        FUZZ_CHECK(run_info_format(&again, &text2) == 0);
        FUZZ_CHECK(text2.size == text.size && memcmp(text2.data, text.data, text.size) == 0);
        buffer_free(&text2);
        run_info_done(&again);
        buffer_free(&text);
        run_info_done(&i);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size == 0)
                return 0;
        if (data[0] & 1)
                info_case(data + 1, size - 1);
        else
                manifest_case(data + 1, size - 1);
        return 0;
}
