/* SPDX-License-Identifier: MIT */
#include "textdiff.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <git2/buffer.h>
#include <git2/diff.h>
#include <git2/errors.h>
#include <git2/global.h>
#include <git2/patch.h>

#include "config.h"
#include "dlsyms.h"

static struct {
        int (*init)(void);
        int (*options_init)(git_diff_options *, unsigned int);
        int (*patch_from_buffers)(git_patch **, const void *, size_t, const char *, const void *, size_t,
                                  const char *, const git_diff_options *);
        const git_diff_delta *(*patch_get_delta)(const git_patch *);
        int (*patch_to_buf)(git_buf *, git_patch *);
        void (*patch_free)(git_patch *);
        void (*buf_dispose)(git_buf *);
        const git_error *(*error_last)(void);
} git2;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_error[256];

#define SYM(field, name) DL_SYMBOL(git2.field, name)

static void load(void)
{
        static const dl_symbol table[] = {
                SYM(init, git_libgit2_init),
                SYM(options_init, git_diff_options_init),
                SYM(patch_from_buffers, git_patch_from_buffers),
                SYM(patch_get_delta, git_patch_get_delta),
                SYM(patch_to_buf, git_patch_to_buf),
                SYM(patch_free, git_patch_free),
                SYM(buf_dispose, git_buf_dispose),
                SYM(error_last, git_error_last),
        };
        /* The soname of the libgit2 the build found (config.h): its structures are the
         * headers'. */
        if (dl_symbols_load(AISB_LIBGIT2_SONAME, table, sizeof table / sizeof table[0], load_error,
                            sizeof load_error) < 0)
                return;
        if (git2.init() < 0) {
                snprintf(load_error, sizeof load_error, "%s did not start", AISB_LIBGIT2_SONAME);
                git2.init = NULL;
        }
}

int textdiff_unified(const char *path, const void *old, size_t old_size, const void *new_data, size_t new_size,
                     char **ret, const char **ret_error)
{
        (void) pthread_once(&once, load);
        if (!git2.init) {
                *ret_error = load_error;
                return -ELIBACC;
        }
        git_diff_options opts;
        if (git2.options_init(&opts, GIT_DIFF_OPTIONS_VERSION) < 0) {
                *ret_error = "libgit2: diff options";
                return -EIO;
        }
        opts.context_lines = 3;
        git_patch *patch = NULL;
        /* A NULL side is a file that is not there (libgit2 shows /dev/null). */
        if (git2.patch_from_buffers(&patch, old, old ? old_size : 0, path, new_data, new_data ? new_size : 0, path,
                                    &opts) < 0) {
                const git_error *e = git2.error_last();
                *ret_error = e && e->message ? e->message : "libgit2: diff failed";
                return -EIO;
        }
        const git_diff_delta *delta = git2.patch_get_delta(patch);
        if (delta && (delta->flags & GIT_DIFF_FLAG_BINARY)) {
                git2.patch_free(patch);
                return 0;
        }
        git_buf buf = { 0 };
        int r = git2.patch_to_buf(&buf, patch);
        git2.patch_free(patch);
        if (r < 0) {
                git2.buf_dispose(&buf);
                *ret_error = "libgit2: could not write the diff";
                return -EIO;
        }
        char *text = strndup(buf.ptr ? buf.ptr : "", buf.size);
        git2.buf_dispose(&buf);
        if (!text)
                return -ENOMEM;
        *ret = text;
        return 1;
}
