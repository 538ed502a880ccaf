/* SPDX-License-Identifier: MIT */
/*
 * A scratch directory for the harnesses that drive aisb_policy_set(): some keys open files
 * (ca-cert, env-file) and a fuzzer that spells "/dev/tty" or a FIFO would make them block.
 * Each run therefore happens inside this directory, which holds only the regular files
 * below, and an input that names a file-reading key together with a '/' is skipped, so
 * those keys can reach nothing else. The other path keys (mount, project, entrypoint) only
 * resolve and stat their paths, which is harmless anywhere.
 */
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

static char fixture_dir[] = "/tmp/aisb-fuzz-XXXXXX";
static int fixture_fd = -1;

static void fixture_write(const char *name, const char *text, mode_t mode)
{
        int fd = openat(fixture_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t) strlen(text) ||
            fchmod(fd, mode) < 0)
                abort();
        close(fd);
}

static void fixture_remove(void)
{
        static const char *const names[] = { "ca.pem", "not-a-cert", "env", "env-open" };
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
                (void) unlinkat(fixture_fd, names[i], 0);
        (void) rmdir(fixture_dir);
}

static void fixture_setup(void)
{
        if (fixture_fd >= 0)
                return;
        if (!mkdtemp(fixture_dir))
                abort();
        fixture_fd = open(fixture_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fixture_fd < 0)
                abort();
        fixture_write("ca.pem", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", 0644);
        fixture_write("not-a-cert", "hello\n", 0644);
        fixture_write("env", "FUZZ_A=1\n# comment\nFUZZ_B=two words\r\n", 0600);
        fixture_write("env-open", "FUZZ_C=3\n", 0644);
        atexit(fixture_remove);
}

/* Whether this input may run: no path outside the fixture for the keys that open files. */
static bool fixture_input_safe(const uint8_t *data, size_t size)
{
        if (!data || size == 0)
                return true;
        return !memchr(data, '/', size) ||
               (!memmem(data, size, "ca-cert", 7) && !memmem(data, size, "env-file", 8));
}

/* Enter the fixture for one run; fixture_leave() goes back, so that libFuzzer's own relative
 * paths (corpus, artifacts) keep working between runs. */
static int fixture_enter(void)
{
        int saved = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (saved < 0 || fchdir(fixture_fd) < 0)
                abort();
        return saved;
}

static void fixture_leave(int saved)
{
        if (fchdir(saved) < 0)
                abort();
        close(saved);
}
