/* SPDX-License-Identifier: MIT */
/*
 * The protected paths' plan (protect_plan_make) reads what the agent may have written: a
 * project's .git/config (core.hooksPath, includes, core.worktree) and a .git file (gitdir:).
 * Byte 0 bit 0: the rest is a .git file; else .git is a directory and the rest its config
 * (with a hooks directory and a .git-real directory beside it, for a gitdir: to name).
 * Checked: a refusal is one line; a plan mounts nothing outside the project (no input names
 * a git directory of the user's that names this project back), every destination is below
 * /project, and a sweep of the unchanged tree moves nothing and makes no quarantine.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "fuzz.h"
#include "protect.h"

static char top[] = "/tmp/aisb-fuzz-protect-XXXXXX";
static char project[64], quarantine_dir[96];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
        if (project[0])
                return 0;
        if (!mkdtemp(top))
                abort();
        snprintf(project, sizeof project, "%s/p", top);
        snprintf(quarantine_dir, sizeof quarantine_dir, "%s/q/stamp", top);
        return 0;
}

static void put(const char *rel, const uint8_t *data, size_t size)
{
        char path[128];
        snprintf(path, sizeof path, "%s/%s", project, rel);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || (size && write(fd, data, size) != (ssize_t) size))
                abort();
        close(fd);
}

static void reset(void)
{
        static const char *const files[] = { ".git/config", ".git/HEAD" };
        static const char *const dirs[] = { ".git/hooks", ".git-real/objects", ".git-real/refs", ".git-real", ".git", "" };
        char path[128];
        for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
                snprintf(path, sizeof path, "%s/%s", project, files[i]);
                (void) unlink(path);
        }
        snprintf(path, sizeof path, "%s/.git-real/HEAD", project);
        (void) unlink(path);
        snprintf(path, sizeof path, "%s/.git", project);
        (void) unlink(path);
        for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
                snprintf(path, sizeof path, "%s/%s", project, dirs[i]);
                (void) rmdir(path);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        LLVMFuzzerInitialize(NULL, NULL);
        if (size == 0)
                return 0;
        reset();
        char path[128];
        if (mkdir(project, 0755) < 0)
                abort();
        snprintf(path, sizeof path, "%s/.git-real", project);
        if (mkdir(path, 0755) < 0)
                abort();
        snprintf(path, sizeof path, "%s/.git-real/objects", project);
        (void) mkdir(path, 0755);
        snprintf(path, sizeof path, "%s/.git-real/refs", project);
        (void) mkdir(path, 0755);
        put(".git-real/HEAD", (const uint8_t *) "ref: refs/heads/main\n", 21);
        if (data[0] & 1)
                put(".git", data + 1, size - 1);
        else {
                snprintf(path, sizeof path, "%s/.git", project);
                if (mkdir(path, 0755) < 0)
                        abort();
                snprintf(path, sizeof path, "%s/.git/hooks", project);
                if (mkdir(path, 0755) < 0)
                        abort();
                put(".git/HEAD", (const uint8_t *) "ref: refs/heads/main\n", 21);
                put(".git/config", data + 1, size - 1);
        }
        static const char *const names[] = { ".git", ".vscode", ".mcp.json", NULL };
        protect_plan plan = {};
        aisb_error *err = NULL;
        int r = protect_plan_make(project, false, names, (unsigned) getuid(), &plan, &err);
        if (r < 0) {
                FUZZ_CHECK(err && fuzz_one_line(aisb_error_message(err)));
                aisb_error_free(err);
                reset();
                return 0;
        }
        size_t n = strlen(project);
        for (size_t i = 0; i < plan.n_mounts; i++) {
                const protect_mount *m = &plan.mounts[i];
                FUZZ_CHECK(strncmp(m->source, project, n) == 0 && (m->source[n] == '/' || m->source[n] == 0));
                FUZZ_CHECK(strncmp(m->destination, "/project/", 9) == 0);
                FUZZ_CHECK(streq(m->source + n, m->destination + strlen("/project")));
        }
        FUZZ_CHECK(!plan.outside);
        FUZZ_CHECK(protect_sweep(&plan, quarantine_dir, NULL, NULL, NULL, &err) == 0);
        snprintf(path, sizeof path, "%s/q", top);
        struct stat st;
        FUZZ_CHECK(lstat(path, &st) < 0);
        protect_plan_done(&plan);
        reset();
        return 0;
}
