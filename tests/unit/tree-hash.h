/* SPDX-License-Identifier: MIT */
/* A tree's fingerprint for the tests that must see a tree unchanged (or given back): each
 * entry's path, mode, size, a link's target and a file's content (and, when asked, a file's
 * modification time), hashed in the walk's order. */
#pragma once

#include <check.h>
#include <fcntl.h>

#include "digest.h"
#include "tree-walk.h"

typedef struct tree_fingerprint {
        digest *d;
        bool mtime;
} tree_fingerprint;

static int tree_fingerprint_entry(const tree_entry *e, void *userdata)
{
        tree_fingerprint *f = userdata;
        char line[96];
        snprintf(line, sizeof line, "%o %lld %lld ", (unsigned) e->st->st_mode,
                 (long long) (S_ISDIR(e->st->st_mode) ? 0 : e->st->st_size),
                 (long long) (f->mtime && S_ISREG(e->st->st_mode) ? e->st->st_mtim.tv_sec : 0));
        ck_assert_int_eq(digest_update(f->d, e->path, strlen(e->path) + 1), 0);
        ck_assert_int_eq(digest_update(f->d, line, strlen(line)), 0);
        if (S_ISLNK(e->st->st_mode)) {
                char target[4096];
                ssize_t n = readlinkat(e->dir, e->name, target, sizeof target);
                ck_assert_int_ge(n, 0);
                ck_assert_int_eq(digest_update(f->d, target, (size_t) n), 0);
        } else if (S_ISREG(e->st->st_mode)) {
                int fd = openat(e->dir, e->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                ck_assert_int_ge(fd, 0);
                ck_assert_int_eq(digest_update_fd(f->d, fd, (uint64_t) e->st->st_size), 0);
                close(fd);
        }
        return 0;
}

static inline char *tree_hash_of(const char *dir, bool mtime)
{
        tree_fingerprint f = { .mtime = mtime };
        ck_assert_int_eq(digest_new(&f.d), 0);
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(tree_walk(fd, 0, TREE_WALK_STAT, tree_fingerprint_entry, &f), 0);
        close(fd);
        char *hex = NULL;
        ck_assert_int_eq(digest_end_hex(f.d, 64, &hex), 0);
        digest_free(f.d);
        return hex;
}
