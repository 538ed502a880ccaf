/* SPDX-License-Identifier: MIT */
/*
 * libarchive, loaded when it is needed: only an image build packs a tar. Linked normally,
 * Debian's libarchive pulls in libxml2, ICU and libstdc++, and every aisb start (an image
 * already there, a --help, a ps) paid for loading them: about a third of the start time and
 * 3 MiB of memory (docs/performance.md). The same way systemd loads its optional libraries.
 */
#include <pthread.h>

#include "archive-dl.h"
#include "dlsyms.h"

/* The soname of libarchive 3.x, stable since 2011. */
#define LIBARCHIVE_SONAME "libarchive.so.13"

struct archive_syms archive_dl;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_error[256];

#define SYM(field, name) DL_SYMBOL(archive_dl.field, name)

static void load(void)
{
        static const dl_symbol table[] = {
                SYM(write_new, archive_write_new),
                SYM(write_set_format_ustar, archive_write_set_format_ustar),
                SYM(write_set_bytes_in_last_block, archive_write_set_bytes_in_last_block),
                SYM(write_open, archive_write_open),
                SYM(write_header, archive_write_header),
                SYM(write_data, archive_write_data),
                SYM(write_close, archive_write_close),
                SYM(write_free, archive_write_free),
                SYM(entry_new, archive_entry_new),
                SYM(entry_free, archive_entry_free),
                SYM(entry_set_pathname, archive_entry_set_pathname),
                SYM(entry_set_size, archive_entry_set_size),
                SYM(entry_set_filetype, archive_entry_set_filetype),
                SYM(entry_set_perm, archive_entry_set_perm),
                SYM(entry_set_mtime, archive_entry_set_mtime),
                SYM(entry_set_uid, archive_entry_set_uid),
                SYM(entry_set_gid, archive_entry_set_gid),
        };
        (void) dl_symbols_load(LIBARCHIVE_SONAME, table, sizeof table / sizeof table[0], load_error, sizeof load_error);
}

int archive_dl_load(const char **ret_error)
{
        (void) pthread_once(&once, load);
        if (archive_dl.write_new)
                return 0;
        *ret_error = load_error;
        return -ELIBACC;
}
