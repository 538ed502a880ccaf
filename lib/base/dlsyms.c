/* SPDX-License-Identifier: MIT */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>

#include "dlsyms.h"

int dl_symbols_load(const char *soname, const dl_symbol *table, size_t n, char *error, size_t error_size)
{
        /* Never unloaded: the pointers stay valid for the process's life. */
        void *h = dlopen(soname, RTLD_NOW | RTLD_NODELETE);
        if (!h) {
                snprintf(error, error_size, "%s", dlerror());
                return -ELIBACC;
        }
        for (size_t i = 0; i < n; i++) {
                *table[i].fn = dlsym(h, table[i].name);
                if (!*table[i].fn) {
                        snprintf(error, error_size, "%s has no %s", soname, table[i].name);
                        for (size_t j = 0; j < n; j++)
                                *table[j].fn = NULL;
                        return -ELIBACC;
                }
        }
        return 0;
}
