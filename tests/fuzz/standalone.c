/* SPDX-License-Identifier: MIT */
/*
 * A plain main() for any harness of this directory, so that the seeds and the kept crashers
 * are replayed on every test run with any compiler, no libFuzzer needed. Each file named on
 * the command line (a directory: each file in it) is fed whole and then as every one of its
 * prefixes, since truncated input is the commonest kind of hostile input. Without
 * arguments the harness's own seeds/ and crashers/ directories are used (FUZZ_SEED_DIR and
 * FUZZ_CRASHER_DIR, set by meson). Exits non-zero when a seed cannot be read or there is
 * none; a broken invariant aborts.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

/* Prefix runs stop here: each is a full harness run. */
#define PREFIX_RUNS_MAX 4096

static int read_file(const char *path, uint8_t **ret, size_t *ret_size)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        size_t size = 0, allocated = 4096;
        uint8_t *data = malloc(allocated);
        for (;;) {
                if (!data) {
                        close(fd);
                        return -ENOMEM;
                }
                if (size == allocated) {
                        uint8_t *bigger = realloc(data, allocated *= 2);
                        if (!bigger)
                                free(data);
                        data = bigger;
                        continue;
                }
                ssize_t n = read(fd, data + size, allocated - size);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        int r = -errno;
                        free(data);
                        close(fd);
                        return r;
                }
                if (n == 0)
                        break;
                size += (size_t) n;
        }
        close(fd);
        /* An exact-size copy, so that a sanitizer sees any read past the input. */
        uint8_t *exact = malloc(size ? size : 1);
        if (!exact) {
                free(data);
                return -ENOMEM;
        }
        memcpy(exact, data, size);
        free(data);
        *ret = exact;
        *ret_size = size;
        return 0;
}

static int run_file(const char *path, unsigned long *runs)
{
        uint8_t *data = NULL;
        size_t size = 0;
        int r = read_file(path, &data, &size);
        if (r < 0) {
                fprintf(stderr, "%s: %s\n", path, strerror(-r));
                return r;
        }
        LLVMFuzzerTestOneInput(data, size);
        (*runs)++;
        for (size_t n = 0; n < size && n < PREFIX_RUNS_MAX; n++) {
                uint8_t *prefix = malloc(n ? n : 1);
                if (!prefix)
                        abort();
                memcpy(prefix, data, n);
                LLVMFuzzerTestOneInput(prefix, n);
                free(prefix);
                (*runs)++;
        }
        free(data);
        return 0;
}

static int compare_names(const struct dirent **a, const struct dirent **b)
{
        return strcmp((*a)->d_name, (*b)->d_name);
}

/* A file, or each regular file in a directory (in name order, for reproducible runs). */
static int run_path(const char *path, bool missing_ok, unsigned long *files, unsigned long *runs)
{
        struct stat st;
        if (stat(path, &st) < 0) {
                if (errno == ENOENT && missing_ok)
                        return 0;
                fprintf(stderr, "%s: %s\n", path, strerror(errno));
                return -errno;
        }
        if (!S_ISDIR(st.st_mode)) {
                (*files)++;
                return run_file(path, runs);
        }
        struct dirent **entries;
        int n = scandir(path, &entries, NULL, compare_names);
        if (n < 0) {
                fprintf(stderr, "%s: %s\n", path, strerror(errno));
                return -errno;
        }
        int r = 0;
        for (int i = 0; i < n; i++) {
                if (entries[i]->d_name[0] != '.' && r == 0) {
                        char *child;
                        if (asprintf(&child, "%s/%s", path, entries[i]->d_name) < 0)
                                abort();
                        if (stat(child, &st) == 0 && S_ISREG(st.st_mode)) {
                                (*files)++;
                                r = run_file(child, runs);
                        }
                        free(child);
                }
                free(entries[i]);
        }
        free(entries);
        return r;
}

int main(int argc, char **argv)
{
        if (LLVMFuzzerInitialize)
                LLVMFuzzerInitialize(&argc, &argv);
        unsigned long files = 0, runs = 0;
        int r = 0;
        if (argc > 1) {
                for (int i = 1; i < argc && r == 0; i++)
                        r = run_path(argv[i], false, &files, &runs);
        } else {
#if defined(FUZZ_SEED_DIR) && defined(FUZZ_CRASHER_DIR)
                r = run_path(FUZZ_SEED_DIR, false, &files, &runs);
                if (r == 0)
                        r = run_path(FUZZ_CRASHER_DIR, true, &files, &runs);
#else
                fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
                return 2;
#endif
        }
        if (r < 0)
                return 1;
        if (files == 0) {
                fprintf(stderr, "%s: no input files\n", argv[0]);
                return 1;
        }
        printf("%s: %lu files, %lu runs (prefixes included), every invariant held\n", argv[0],
               files, runs);
        return 0;
}
