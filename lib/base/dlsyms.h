/* SPDX-License-Identifier: MIT */
/* A library loaded when it is first needed, the way systemd loads its optional ones: its
 * soname opened with dlopen, never unloaded, and each of its functions aisb calls resolved
 * into a pointer (archive-dl.c for libarchive, textdiff.c for libgit2). */
#pragma once

#include <stddef.h>

typedef struct dl_symbol {
        void **fn;        /* where the function's address goes */
        const char *name; /* its name in the library */
} dl_symbol;
#define DL_SYMBOL(ptr, name) { (void **) &(ptr), #name }

/* 0 once soname is loaded and every symbol of table resolved; -ELIBACC with why (dlerror()'s
 * text, or the symbol missing) in error otherwise, every pointer of table then NULL. */
int dl_symbols_load(const char *soname, const dl_symbol *table, size_t n, char *error, size_t error_size);
