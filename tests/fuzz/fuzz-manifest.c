/* SPDX-License-Identifier: MIT */
/*
 * The records kept of a project (a review run's start, undo's records before and after a
 * run) and a run's info are read back from the user's state, parsed as untrusted all the
 * same. Byte 0 bit 0: the rest is a run's info, else a manifest. Checked: what parses formats
 * to a text that parses to the same value (every field, path and target), every parsed path
 * is plain and found by manifest_find, in the walk's order.
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
                return;
        }
        for (size_t i = 0; i < m.n; i++) {
                FUZZ_CHECK(tree_path_valid(m.entries[i].path));
                FUZZ_CHECK(manifest_find(&m, m.entries[i].path) == &m.entries[i]);
                FUZZ_CHECK(i == 0 || tree_path_cmp(m.entries[i - 1].path, m.entries[i].path) < 0);
                FUZZ_CHECK(m.entries[i].mode <= 07777);
        }
        buffer text = {};
        FUZZ_CHECK(manifest_format(&m, &text) == 0);
        manifest again = {};
        FUZZ_CHECK(manifest_parse(text.data, text.size, &again, NULL) == 0);
        FUZZ_CHECK(again.n == m.n);
        for (size_t i = 0; i < m.n; i++) {
                const manifest_entry *a = &m.entries[i], *b = &again.entries[i];
                FUZZ_CHECK(strcmp(a->path, b->path) == 0 && same_string(a->target, b->target));
                FUZZ_CHECK(a->type == b->type && a->mode == b->mode && a->size == b->size && a->dev == b->dev &&
                           a->ino == b->ino && a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns);
                FUZZ_CHECK(strcmp(a->hash, b->hash) == 0);
        }
        manifest_done(&again);
        buffer_free(&text);
        manifest_done(&m);
}

static void info_case(const uint8_t *data, size_t size)
{
        run_info i = {};
        if (run_info_parse((const char *) data, size, &i) < 0)
                return;
        FUZZ_CHECK(i.project && i.project[0] == '/' && i.run);
        buffer text = {};
        FUZZ_CHECK(run_info_format(&i, &text) == 0);
        run_info again = {};
        FUZZ_CHECK(run_info_parse(text.data, text.size, &again) == 0);
        FUZZ_CHECK(strcmp(i.project, again.project) == 0 && strcmp(i.run, again.run) == 0);
        FUZZ_CHECK(same_string(i.protect, again.protect) || (!i.protect && again.protect && !*again.protect));
        FUZZ_CHECK(i.started_ns == again.started_ns && i.ended_ns == again.ended_ns && i.pid == again.pid);
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
