/* SPDX-License-Identifier: MIT */
/* The part of libarchive aisb uses, resolved by dlopen on first use (archive-dl.c). */
#pragma once

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>

struct archive_syms {
        struct archive *(*write_new)(void);
        int (*write_set_format_ustar)(struct archive *);
        int (*write_set_bytes_in_last_block)(struct archive *, int);
        int (*write_open)(struct archive *, void *, archive_open_callback *, archive_write_callback *,
                          archive_close_callback *);
        int (*write_header)(struct archive *, struct archive_entry *);
        la_ssize_t (*write_data)(struct archive *, const void *, size_t);
        int (*write_close)(struct archive *);
        int (*write_free)(struct archive *);
        struct archive_entry *(*entry_new)(void);
        void (*entry_free)(struct archive_entry *);
        void (*entry_set_pathname)(struct archive_entry *, const char *);
        void (*entry_set_size)(struct archive_entry *, la_int64_t);
        void (*entry_set_filetype)(struct archive_entry *, unsigned int);
        void (*entry_set_perm)(struct archive_entry *, __LA_MODE_T);
        void (*entry_set_mtime)(struct archive_entry *, time_t, long);
        void (*entry_set_uid)(struct archive_entry *, la_int64_t);
        void (*entry_set_gid)(struct archive_entry *, la_int64_t);
};

/* Filled by archive_dl_load(); all NULL until then or if loading failed. */
extern struct archive_syms archive_dl;

/* 0 once libarchive is loaded; -ELIBACC with dlerror()'s text in *ret_error otherwise.
 * Thread-safe; loads at most once. */
int archive_dl_load(const char **ret_error);
