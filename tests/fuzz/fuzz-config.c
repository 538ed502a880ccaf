/* SPDX-License-Identifier: MIT */
/*
 * The config file reader (aisb_policy_load_config): "key = value" lines, '#' comments, every
 * key of aisb_policy_set(). A config can come from a repository (--config) or a dotfiles
 * checkout. The input is the file itself, served from a memfd through /proc/self/fd/N so that
 * the real fopen/getline path runs. Keys that open files stay inside the fixture directory
 * (fixture.h). Checked: a failure is one line that starts with "PATH:LINE: ", and a failed
 * load leaves a policy that can still be freed.
 */
#include <sys/mman.h>

#include "internal.h"
#include "fixture.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
        fixture_setup();
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (!fixture_input_safe(data, size))
                return 0;
        fixture_setup(); /* the standalone driver calls LLVMFuzzerInitialize too; harmless */
        int fd = memfd_create("aisb-fuzz-config", MFD_CLOEXEC);
        if (fd < 0 || (size && write(fd, data, size) != (ssize_t) size))
                abort();
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);

        int saved = fixture_enter();
        aisb_policy *p = NULL;
        aisb_error *err = NULL;
        /* As aisb(1) makes it: the fixture, the current directory, is the project. */
        FUZZ_CHECK(aisb_policy_new(&p, &err) == 0 && aisb_policy_apply_environment(p, &err) == 0);
        int r = aisb_policy_load_config(p, path, 0, &err);
        if (r < 0) {
                FUZZ_CHECK(err && fuzz_one_line(aisb_error_message(err)));
                const char *m = aisb_error_message(err);
                FUZZ_CHECK(strncmp(m, path, strlen(path)) == 0 && m[strlen(path)] == ':');
                FUZZ_CHECK(aisb_error_code(err) == r);
                aisb_error_free(err);
        } else {
                FUZZ_CHECK(r == 0 && !err);
        }
        aisb_policy_free(p);
        fixture_leave(saved);
        close(fd);
        return 0;
}
