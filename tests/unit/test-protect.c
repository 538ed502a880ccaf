/* SPDX-License-Identifier: MIT */
/* Protected paths (lib/policy/protect.c): the key's values; the plan a project gives (what is
 * mounted read-only, what a git directory gets, a worktree's directories, what is refused);
 * and the sweep after a run (what is new or replaced is quarantined, and nothing else). */
#include <check.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "protect.h"
#include "unit.h"
#include "../suite-table.h"
#include "fileio.h"

static char top[64], project[96], quarantine_dir[128];

static void setup(void)
{
        snprintf(top, sizeof top, "/tmp/aisb-test-protect-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(top));
        snprintf(project, sizeof project, "%s/project", top);
        snprintf(quarantine_dir, sizeof quarantine_dir, "%s/state/quarantine/p/stamp", top);
        ck_assert_int_eq(mkdir(project, 0755), 0);
        ck_assert_int_eq(setenv("HOME", top, 1), 0); /* no ~/.gitconfig of the user's */
        unsetenv("XDG_CONFIG_HOME");
}

static void teardown(void)
{
        char cmd[160];
        snprintf(cmd, sizeof cmd, "rm -rf %s", top);
        ck_assert_int_eq(system(cmd), 0);
}

/* Make path (below top; a trailing / makes a directory) with text. */
static void make(const char *path, const char *text)
{
        char full[512], cmd[1200];
        snprintf(full, sizeof full, "%s/%s", top, path);
        size_t n = strlen(full);
        if (full[n - 1] == '/') {
                snprintf(cmd, sizeof cmd, "mkdir -p '%s'", full);
                ck_assert_int_eq(system(cmd), 0);
                return;
        }
        snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", full);
        ck_assert_int_eq(system(cmd), 0);
        int fd = open(full, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write_all(fd, text, strlen(text)), 0);
        close(fd);
}

static bool exists(const char *path)
{
        char full[512];
        struct stat st;
        snprintf(full, sizeof full, "%s/%s", top, path);
        return lstat(full, &st) == 0;
}

/* A git directory as git makes one, at dir (below top). */
static void gitdir(const char *dir)
{
        char p[256];
        snprintf(p, sizeof p, "%s/HEAD", dir);
        make(p, "ref: refs/heads/main\n");
        snprintf(p, sizeof p, "%s/config", dir);
        make(p, "[core]\n\trepositoryformatversion = 0\n");
        snprintf(p, sizeof p, "%s/objects/", dir);
        make(p, NULL);
        snprintf(p, sizeof p, "%s/refs/heads/", dir);
        make(p, NULL);
        snprintf(p, sizeof p, "%s/hooks/", dir);
        make(p, NULL);
}

static const protect_mount *mount_at(const protect_plan *plan, const char *destination)
{
        for (size_t i = 0; i < plan->n_mounts; i++)
                if (streq(plan->mounts[i].destination, destination))
                        return &plan->mounts[i];
        return NULL;
}

static const char *const defaults[] = { ".git", ".vscode", ".idea", ".devcontainer", ".devcontainer.json", ".claude",
                                        ".mcp.json", ".codex", ".cursor", ".gemini", ".zed", ".pi", NULL };

static void plan_of(protect_plan *plan)
{
        aisb_error *err = NULL;
        int r = protect_plan_make(project, false, defaults, (unsigned) getuid(), plan, &err);
        ck_assert_msg(r == 0, "plan: %s", err ? aisb_error_message(err) : "?");
}

/* Each of dests mounted, read-only or over itself (read-write). */
static void mounted(const protect_plan *plan, const char *const *dests, size_t n, bool read_only)
{
        for (size_t i = 0; i < n; i++) {
                const protect_mount *m = mount_at(plan, dests[i]);
                ck_assert_msg(m && m->read_only == read_only, "%s is not %s", dests[i],
                              read_only ? "read-only" : "over itself");
        }
}

/* As root nothing is refused by permissions: a case of what the agent locks runs as nobody. */
static void as_nobody(void)
{
        if (geteuid() != 0)
                return;
        ck_assert_int_eq(chown(top, 65534, 65534), 0);
        ck_assert_int_eq(chown(project, 65534, 65534), 0);
        ck_assert_int_eq(setresgid(65534, 65534, 65534), 0);
        ck_assert_int_eq(setresuid(65534, 65534, 65534), 0);
}

/* The project's plan refused with a line holding why (NULL: any line); the plan holds nothing. */
static void plan_refused(const char *why)
{
        protect_plan plan = {};
        aisb_error *err = NULL;
        ck_assert_int_eq(protect_plan_make(project, false, defaults, (unsigned) getuid(), &plan, &err), -EINVAL);
        ck_assert_msg(!why || strstr(aisb_error_message(err), why), "%s", aisb_error_message(err));
        ck_assert_ptr_null(plan.mounts);
        aisb_error_free(err);
}

typedef struct found {
        char lines[16][512];
        size_t n;
} found;

static void on_found(const char *was, const char *now, const char *why, void *userdata)
{
        found *f = userdata;
        ck_assert_uint_lt(f->n, 16);
        snprintf(f->lines[f->n++], sizeof f->lines[0], "%s -> %s (%s)", was, now, why);
}

static bool found_has(const found *f, const char *was_suffix);

/* The sweep after the run: moved entries moved, each reported to f; each of was (NULL-ended;
 * NULL: none named) among what was reported. */
static void swept(const protect_plan *plan, int moved, found *f, const char *const *was)
{
        aisb_error *err = NULL;
        int r = protect_sweep(plan, quarantine_dir, on_found, f, NULL, &err);
        ck_assert_msg(r == moved, "%d moved (%s)", r, err ? aisb_error_message(err) : "");
        aisb_error_free(err);
        for (; was && *was; was++)
                ck_assert_msg(found_has(f, *was), "%s was not reported", *was);
}

static bool found_has(const found *f, const char *was_suffix)
{
        for (size_t i = 0; i < f->n; i++) {
                char was[512];
                snprintf(was, sizeof was, "%s", f->lines[i]);
                char *arrow = strstr(was, " -> ");
                *arrow = 0;
                size_t a = strlen(was), b = strlen(was_suffix);
                if (a >= b && streq(was + a - b, was_suffix))
                        return true;
        }
        return false;
}

/* The key: a list replaces, +/- change, none empties, and what is not a path below the
 * project is refused with why. */
START_TEST(test_key)
{
        aisb_policy *p = NULL;
        ck_assert_int_eq(aisb_policy_new(&p, NULL), 0);
        char *v = NULL;
        ck_assert_int_eq(aisb_policy_get(p, "protect", &v, NULL), 0);
        ck_assert_str_eq(v, PROTECT_DEFAULT);
        free(v);
        ck_assert_int_eq(aisb_policy_set(p, "protect", "-.vscode,+tools/hooks", NULL), 0);
        ck_assert_int_eq(aisb_policy_get(p, "protect", &v, NULL), 0);
        ck_assert_str_eq(v, ".git,.idea,.devcontainer,.devcontainer.json,.claude,.mcp.json,.codex,.cursor,.gemini,.zed,"
                            ".pi,tools/hooks");
        free(v);
        ck_assert_int_eq(aisb_policy_set(p, "protect", ".git,.vscode", NULL), 0);
        ck_assert_int_eq(aisb_policy_get(p, "protect", &v, NULL), 0);
        ck_assert_str_eq(v, ".git,.vscode");
        free(v);
        ck_assert_int_eq(aisb_policy_set(p, "protect", "none", NULL), 0);
        ck_assert_int_eq(aisb_policy_get(p, "protect", &v, NULL), 0);
        ck_assert_str_eq(v, "none");
        free(v);
        static const char *const refused[][2] = {
                { "/etc", "relative" }, { "a/../b", "'..'" }, { "./x", "'.'" }, { "a//b", "empty" },
                { "x/", "empty" }, { ".git,-.vscode", "mixes" }, { "-", "below the project" },
        };
        for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
                aisb_error *err = NULL;
                ck_assert_int_eq(aisb_policy_set(p, "protect", refused[i][0], &err), -EINVAL);
                ck_assert_msg(strstr(aisb_error_message(err), refused[i][1]), "%s: %s", refused[i][0],
                              aisb_error_message(err));
                aisb_error_free(err);
        }
        aisb_policy_free(p);
}
END_TEST

/* A git project: the git directory over itself (read-write), its configuration, hooks and
 * info read-only, a submodule's git directory the same, editors' directories read-only, a
 * nested repository and a bare one below the project protected as git directories; what
 * does not exist is not mounted (the user's tree gains nothing). */
START_TEST(test_plan)
{
        gitdir("project/.git");
        make("project/.git/info/exclude", "");
        gitdir("project/.git/modules/lib/sub");
        make("project/lib/sub/.git", "gitdir: ../../.git/modules/lib/sub\n");
        make("project/.vscode/settings.json", "{}");
        make("project/.mcp.json", "{}");
        gitdir("project/vendor/nested/.git");
        gitdir("project/fixtures/bare.git");
        protect_plan plan = {};
        plan_of(&plan);
        const protect_mount *m = mount_at(&plan, "/project/.git");
        ck_assert_msg(m && !m->read_only, "the git directory over itself, read-write");
        char source[256];
        snprintf(source, sizeof source, "%s/.git", project);
        ck_assert_str_eq(m->source, source);
        struct stat st;
        ck_assert_int_eq(stat(source, &st), 0);
        ck_assert(m->dev == (unsigned long long) st.st_dev && m->ino == (unsigned long long) st.st_ino);
        static const char *const ro[] = { "/project/.git/config", "/project/.git/hooks", "/project/.git/info",
                                          "/project/.git/modules/lib/sub/config", "/project/.git/modules/lib/sub/hooks",
                                          "/project/lib/sub/.git", "/project/.vscode", "/project/.mcp.json",
                                          "/project/vendor/nested/.git/config", "/project/fixtures/bare.git/hooks" };
        mounted(&plan, ro, ELEMENTSOF(ro), true);
        static const char *const rw[] = { "/project/.git/modules/lib/sub", "/project/vendor/nested/.git",
                                          "/project/fixtures/bare.git" };
        mounted(&plan, rw, ELEMENTSOF(rw), false);
        static const char *const absent[] = { "/project/.idea", "/project/.git/commondir", "/project/.git/objects",
                                              "/project/.git/modules/lib/sub/info" };
        for (size_t i = 0; i < ELEMENTSOF(absent); i++)
                ck_assert_msg(!mount_at(&plan, absent[i]), "%s is mounted", absent[i]);
        ck_assert(!exists("project/.idea") && !exists("project/.git/commondir"));
        ck_assert_ptr_null(plan.outside);
        ck_assert_ptr_null(plan.repository_top);
        protect_plan_done(&plan);
}
END_TEST

/* Every directory between the project and a protected one is over itself too (a parent can
 * be renamed with its mounts inside); a repository's hooks are found where its git looks:
 * core.hooksPath of a nested repository, a file the config includes, a hook manager's
 * configuration when its hooks are installed. */
START_TEST(test_plan_around)
{
        gitdir("project/.git");
        make("project/.git/config", "[core]\n\tbare = false\n[include]\n\tpath = ../.gitconfig-project\n");
        make("project/.gitconfig-project", "[includeIf \"gitdir:/x/\"]\n\tpath = tools/more.gitconfig\n");
        make("project/tools/more.gitconfig", "");
        make("project/.git/hooks/pre-commit", "#!/bin/sh\npre-commit run\n");
        make("project/.pre-commit-config.yaml", "repos: []\n");
        gitdir("project/.git/modules/lib/sub");
        gitdir("project/vendor/nested/.git");
        make("project/vendor/nested/.git/config", "[core]\n\thooksPath = .githooks\n");
        make("project/vendor/nested/.githooks/pre-commit", "#!/bin/sh\n");
        protect_plan plan = {};
        plan_of(&plan);
        static const char *const over_itself[] = { "/project/.git/modules", "/project/.git/modules/lib",
                                                   "/project/vendor", "/project/vendor/nested" };
        mounted(&plan, over_itself, ELEMENTSOF(over_itself), false);
        static const char *const ro[] = { "/project/.gitconfig-project", "/project/tools/more.gitconfig",
                                          "/project/.pre-commit-config.yaml", "/project/vendor/nested/.githooks" };
        mounted(&plan, ro, ELEMENTSOF(ro), true);
        protect_plan_done(&plan);
        /* Without installed hooks, a hook manager's configuration is the project's own. */
        char p[256], sample_path[300];
        snprintf(p, sizeof p, "%s/.git/hooks/pre-commit", project);
        snprintf(sample_path, sizeof sample_path, "%s.sample", p);
        ck_assert_int_eq(rename(p, sample_path), 0);
        plan_of(&plan);
        ck_assert_ptr_null(mount_at(&plan, "/project/.pre-commit-config.yaml"));
        protect_plan_done(&plan);
}
END_TEST

/* Git directories git would take, however made: a .git/modules that did not exist, a bare
 * repository whose HEAD and refs are links, one whose commondir names the rest. */
START_TEST(test_sweep_git_kinds)
{
        gitdir("project/.git");
        protect_plan plan = {};
        plan_of(&plan);
        gitdir("project/.git/modules/new");
        make("project/tools/linked/objects/", NULL);
        make("project/tools/real-refs/", NULL);
        char p[256], t[256];
        snprintf(p, sizeof p, "%s/tools/linked/HEAD", project);
        ck_assert_int_eq(symlink("../../.git/HEAD", p), 0);
        snprintf(p, sizeof p, "%s/tools/linked/refs", project);
        snprintf(t, sizeof t, "%s/tools/real-refs", project);
        ck_assert_int_eq(symlink(t, p), 0);
        make("project/docs/wt/HEAD", "ref: refs/heads/main\n");
        make("project/docs/wt/commondir", "../../.git\n");
        found f = {};
        /* Of a directory git takes for a git directory, what makes it one goes (it may have
         * been the user's), the rest stays. */
        swept(&plan, 4, &f, (const char *const[]) { "/project/.git/modules", "/project/tools/linked/HEAD",
                                                    "/project/docs/wt/HEAD", "/project/docs/wt/commondir", NULL });
        ck_assert(exists("project/tools/real-refs") && exists("project/tools/linked/objects"));
        protect_plan_done(&plan);
}
END_TEST

/* What the second attack review found: a hook that is a link into the project, a hooks
 * directory that is one, a hooks path set in an included file, a submodule checkout's hooks
 * path, worktrees made during the run, the project made a bare repository, and a plan that
 * would need more mounts than it may make (refused). */
START_TEST(test_plan_review_two)
{
        gitdir("project/.git");
        make("project/scripts/pre-commit", "#!/bin/sh\n");
        char p[256];
        snprintf(p, sizeof p, "%s/.git/hooks/pre-commit", project);
        ck_assert_int_eq(symlink("../../scripts/pre-commit", p), 0);
        make("project/.git/config", "[include]\n\tpath = ../team.gitconfig\n");
        make("project/team.gitconfig", "[core]\n\thooksPath = .githooks\n");
        make("project/.githooks/post-checkout", "#!/bin/sh\n");
        gitdir("project/.git/modules/lib");
        make("project/.git/modules/lib/config", "[core]\n\tworktree = ../../../lib\n\thooksPath = .hooks\n");
        make("project/lib/.git", "gitdir: ../.git/modules/lib\n");
        make("project/lib/.hooks/pre-commit", "#!/bin/sh\n");
        gitdir("project/other/.git");
        make("project/config/vscode/settings.json", "{}");
        snprintf(p, sizeof p, "%s/other/.git/hooks", project);
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s' && ln -s ../../config/vscode '%s'", p, p);
        ck_assert_int_eq(system(cmd), 0);
        protect_plan plan = {};
        plan_of(&plan);
        static const char *const ro[] = { "/project/scripts/pre-commit", "/project/.githooks", "/project/lib/.hooks",
                                          "/project/config/vscode" };
        mounted(&plan, ro, ELEMENTSOF(ro), true);
        /* After the run: a worktree registered, the project itself made a git directory. */
        gitdir("project/.git/worktrees/planted");
        make("project/HEAD", "ref: refs/heads/main\n");
        make("project/objects/", NULL);
        make("project/refs/", NULL);
        found f = {};
        swept(&plan, 4, &f, (const char *const[]) { "/project/.git/worktrees", "/project/HEAD", "/project/objects",
                                                    "/project/refs", NULL });
        protect_plan_done(&plan);
        /* 300 worktrees: more mounts than a plan may make. */
        for (int i = 0; i < 300; i++) {
                char w[96];
                snprintf(w, sizeof w, "project/.git/worktrees/w%d/", i);
                make(w, NULL);
        }
        plan_refused("more to keep read-only than aisb mounts");
}
END_TEST

/* What the third attack review found: an existing directory made a git directory together
 * with a .git in it (the quarantine's directory for the one must not stop the other), a
 * replace ref made during the run, an alternates file. */
START_TEST(test_sweep_review_three)
{
        gitdir("project/.git");
        make("project/src/main.c", "int main;\n");
        protect_plan plan = {};
        plan_of(&plan);
        make("project/src/.git", "gitdir: /nonexistent\n");
        make("project/src/HEAD", "ref: refs/heads/main\n");
        make("project/src/objects/", NULL);
        make("project/src/refs/heads/", NULL);
        make("project/src/config", "[core]\n\tworktree = .\n");
        make("project/.git/refs/replace/0123456789012345678901234567890123456789", "abcd\n");
        make("project/.git/objects/info/alternates", "/elsewhere/objects\n");
        found f = {};
        swept(&plan, 4, &f, (const char *const[]) { "/project/src/.git", "/project/src/HEAD", "/project/.git/refs/replace",
                                                    "/project/.git/objects/info/alternates", NULL });
        ck_assert(exists("project/src/main.c") && !exists("project/src/HEAD"));
        protect_plan_done(&plan);
}
END_TEST

/* Links are never followed: a .vscode that is a link is not mounted (podman would follow it),
 * a hooks directory that is a link is not either, and neither is what is below a linked
 * directory. The sweep then quarantines a link that was swapped. */
START_TEST(test_links)
{
        gitdir("project/.git");
        make("elsewhere/secret", "x");
        char target[256], link_path[256];
        snprintf(target, sizeof target, "%s/elsewhere", top);
        snprintf(link_path, sizeof link_path, "%s/.vscode", project);
        ck_assert_int_eq(symlink(target, link_path), 0);
        snprintf(link_path, sizeof link_path, "%s/.git/info", project);
        ck_assert_int_eq(symlink(target, link_path), 0);
        protect_plan plan = {};
        plan_of(&plan);
        ck_assert_ptr_null(mount_at(&plan, "/project/.vscode"));
        ck_assert_ptr_null(mount_at(&plan, "/project/.git/info"));
        for (size_t i = 0; i < plan.n_mounts; i++)
                ck_assert_msg(!strstr(plan.mounts[i].source, "elsewhere"), "%s", plan.mounts[i].source);
        /* Swapped for another link during the run: quarantined. */
        snprintf(link_path, sizeof link_path, "%s/.vscode", project);
        ck_assert_int_eq(unlink(link_path), 0);
        ck_assert_int_eq(symlink("/", link_path), 0);
        found f = {};
        aisb_error *err = NULL;
        ck_assert_int_eq(protect_sweep(&plan, quarantine_dir, on_found, &f, NULL, &err), 1);
        ck_assert(found_has(&f, "/project/.vscode"));
        ck_assert(!exists("project/.vscode") && exists("state/quarantine/p/stamp/.vscode"));
        ck_assert(exists("elsewhere/secret"));
        protect_plan_done(&plan);
}
END_TEST

/* After the run: what appeared at a watched name, a new submodule git directory, a new .git
 * and a new bare repository anywhere below the project go into the quarantine, with the same
 * path below it; what was there, ordinary new files, and what replaced an entry the sandbox
 * had read-only (the host's doing), stay. */
START_TEST(test_sweep)
{
        gitdir("project/.git");
        gitdir("project/.git/modules/old");
        make("project/.vscode/settings.json", "{}");
        make("project/src/main.c", "int main;\n");
        protect_plan plan = {};
        plan_of(&plan);
        /* The agent's doing. */
        make("project/.git/commondir", "../evil\n");
        make("project/.git/config.worktree", "[core]\n");
        make("project/.idea/workspace.xml", "<x/>");
        gitdir("project/.git/modules/new");
        gitdir("project/src/deep/er/.git");
        gitdir("project/src/bare");
        make("project/src/new.c", "int n;\n");
        make("project/.git/COMMIT_EDITMSG", "two\n");
        char a[256], b[256];
        snprintf(a, sizeof a, "%s/.vscode", project);
        snprintf(b, sizeof b, "%s/.vscode-moved", project);
        ck_assert_int_eq(rename(a, b), 0);
        make("project/.vscode/tasks.json", "{\"runOn\": \"folderOpen\"}");
        found f = {};
        swept(&plan, 6, &f, NULL);
        static const char *const moved[] = { ".git/commondir", ".git/config.worktree", ".idea", ".git/modules/new",
                                             "src/deep/er/.git", "src/bare/HEAD" };
        for (size_t i = 0; i < ELEMENTSOF(moved); i++) {
                char was[128], now[192];
                snprintf(was, sizeof was, "project/%s", moved[i]);
                snprintf(now, sizeof now, "state/quarantine/p/stamp/%s", moved[i]);
                ck_assert_msg(!exists(was) && exists(now), "%s was not quarantined", moved[i]);
                snprintf(was, sizeof was, "/project/%s", moved[i]);
                ck_assert_msg(found_has(&f, was), "%s was not reported", moved[i]);
        }
        /* .vscode was read-only over itself in the sandbox: what replaced it was on the host's
         * side (the user's editor), and stays. */
        static const char *const kept[] = { "project/src/new.c", "project/.git/COMMIT_EDITMSG", "project/.git/modules/old/HEAD",
                                            "project/.git/config", "project/.vscode-moved/settings.json",
                                            "project/.vscode/tasks.json" };
        for (size_t i = 0; i < ELEMENTSOF(kept); i++)
                ck_assert_msg(exists(kept[i]), "%s was moved", kept[i]);
        /* Nothing new: nothing moved, and no quarantine directory made. */
        protect_plan_done(&plan);
        teardown();
        setup();
        gitdir("project/.git");
        plan_of(&plan);
        swept(&plan, 0, &f, NULL);
        ck_assert(!exists("state"));
        protect_plan_done(&plan);
}
END_TEST

/* aisb diff and apply read the project against a plan and change nothing in it: a directory
 * of the user's made unreadable stays so (a run's start gives its owner's access back). As
 * root nothing is refused by permissions, so the case runs as nobody. */
START_TEST(test_plan_look_changes_nothing)
{
        as_nobody();
        gitdir("project/hide/x/.git");
        char p[256];
        snprintf(p, sizeof p, "%s/hide", project);
        ck_assert_int_eq(chmod(p, 0), 0);
        protect_plan plan = {};
        aisb_error *err = NULL;
        ck_assert_msg(protect_plan_look(project, false, defaults, geteuid(), &plan, &err) == 0, "%s",
                      aisb_error_message(err));
        protect_plan_done(&plan);
        struct stat st;
        ck_assert_int_eq(lstat(p, &st), 0);
        ck_assert_uint_eq(st.st_mode & 07777, 0);
        /* A run's start: the walk gives the directory back to its owner. */
        ck_assert_msg(protect_plan_make(project, false, defaults, geteuid(), &plan, &err) == 0, "%s",
                      aisb_error_message(err));
        protect_plan_done(&plan);
        ck_assert_int_eq(lstat(p, &st), 0);
        ck_assert_uint_eq(st.st_mode & 0700, 0700);
}
END_TEST

/* What the agent made hard to move is moved all the same: a nested repository inside a
 * directory it made unreadable, a .idea it made unwritable, a repository in a directory it
 * made read-only. As root nothing is refused by permissions, so the case runs as nobody. */
START_TEST(test_sweep_stubborn)
{
        as_nobody();
        protect_plan plan = {};
        plan_of(&plan);
        gitdir("project/hide/x/.git");
        gitdir("project/locked/.git");
        make("project/.idea/workspace.xml", "<x/>");
        char p[256];
        snprintf(p, sizeof p, "%s/hide", project);
        ck_assert_int_eq(chmod(p, 0), 0);
        snprintf(p, sizeof p, "%s/.idea", project);
        ck_assert_int_eq(chmod(p, 0500), 0);
        snprintf(p, sizeof p, "%s/locked", project);
        ck_assert_int_eq(chmod(p, 0555), 0);
        found f = {};
        swept(&plan, 3, &f, (const char *const[]) { "/project/hide/x/.git", "/project/.idea", "/project/locked/.git", NULL });
        ck_assert(!exists("project/hide/x/.git") && !exists("project/.idea") && !exists("project/locked/.git"));
        protect_plan_done(&plan);
}
END_TEST

/* A project that is not a repository gets a .git made during the run quarantined too; one
 * that is inside a repository, below its top, is told so. */
START_TEST(test_no_repository)
{
        protect_plan plan = {};
        plan_of(&plan);
        ck_assert_ptr_null(plan.repository_top);
        gitdir("project/.git");
        found f = {};
        ck_assert_int_eq(protect_sweep(&plan, quarantine_dir, on_found, &f, NULL, NULL), 1);
        ck_assert(!exists("project/.git") && exists("state/quarantine/p/stamp/.git/HEAD"));
        protect_plan_done(&plan);

        gitdir(".git"); /* top itself is a repository; the project is below its top */
        make("project/.keep", "");
        char p2[128];
        snprintf(p2, sizeof p2, "%s/project", top);
        aisb_error *err = NULL;
        ck_assert_int_eq(protect_plan_make(p2, false, defaults, (unsigned) getuid(), &plan, &err), 0);
        ck_assert_str_eq(plan.repository_top, top);
        protect_plan_done(&plan);
}
END_TEST

/* A worktree: .git is a file naming a git directory outside the project; that directory
 * and the common directory are mounted at their own paths, the common directory's
 * configuration and hooks read-only, the other worktrees' state and the main worktree's
 * HEAD and index read-only; core.hooksPath inside the project is read-only too. */
START_TEST(test_worktree)
{
        gitdir("repo/.git");
        make("repo/.git/index", "");
        make("repo/.git/config", "[core]\n\tbare = false\n\thooksPath = \".husky/_\"  \n");
        gitdir("repo/.git/worktrees/feature");
        make("repo/.git/worktrees/feature/commondir", "../..\n");
        char back[256];
        snprintf(back, sizeof back, "%s/.git\n", project);
        make("repo/.git/worktrees/feature/gitdir", back);
        gitdir("repo/.git/worktrees/other");
        char text[256];
        snprintf(text, sizeof text, "gitdir: %s/repo/.git/worktrees/feature\n", top);
        make("project/.git", text);
        make("project/.husky/_/pre-commit", "#!/bin/sh\n");
        protect_plan plan = {};
        plan_of(&plan);
        char common[192], own[224], path[256];
        snprintf(common, sizeof common, "%s/repo/.git", top);
        snprintf(own, sizeof own, "%s/worktrees/feature", common);
        ck_assert_uint_eq(strv_length((const char *const *) plan.outside), 2);
        const protect_mount *m = mount_at(&plan, own);
        ck_assert(m && !m->read_only && streq(m->source, own));
        m = mount_at(&plan, common);
        ck_assert(m && !m->read_only);
        static const char *const ro[] = { "config", "hooks", "HEAD", "index", "worktrees/other",
                                          "worktrees/feature/commondir", "worktrees/feature/gitdir" };
        for (size_t i = 0; i < ELEMENTSOF(ro); i++) {
                snprintf(path, sizeof path, "%s/%s", common, ro[i]);
                m = mount_at(&plan, path);
                ck_assert_msg(m && m->read_only, "%s is not read-only", path);
        }
        ck_assert(mount_at(&plan, "/project/.git") && mount_at(&plan, "/project/.git")->read_only);
        snprintf(path, sizeof path, "%s/worktrees", common);
        ck_assert_msg(mount_at(&plan, path) && !mount_at(&plan, path)->read_only,
                      "worktrees/, holding the run's own, cannot be moved aside");
        ck_assert_msg(mount_at(&plan, "/project/.husky") && mount_at(&plan, "/project/.husky")->read_only,
                      "core.hooksPath inside the project is read-only (husky's .husky/_: all of .husky)");
        /* The common directory gains a commondir during the run: quarantined. */
        make("repo/.git/commondir", "/tmp\n");
        found f = {};
        ck_assert_int_eq(protect_sweep(&plan, quarantine_dir, on_found, &f, NULL, NULL), 1);
        ck_assert(!exists("repo/.git/commondir"));
        ck_assert(found_has(&f, "/repo/.git/commondir"));
        protect_plan_done(&plan);
}
END_TEST

/* A .git file the agent wrote, naming a directory of the user's that is no git directory of
 * this project (a worktree's whose gitdir file names another worktree, the user's ~/.ssh):
 * refused, the plan holds nothing. */
START_TEST(test_worktree_not_ours)
{
        gitdir("repo/.git");
        gitdir("repo/.git/worktrees/feature");
        make("repo/.git/worktrees/feature/commondir", "../..\n");
        make("repo/.git/worktrees/feature/gitdir", "/somewhere/else/.git\n");
        char text[256];
        snprintf(text, sizeof text, "gitdir: %s/repo/.git/worktrees/feature\n", top);
        make("project/.git", text);
        plan_refused("names /somewhere/else/.git");
        make("secret/id_rsa", "key");
        snprintf(text, sizeof text, "gitdir: %s/secret\n", top);
        make("project/.git", text);
        plan_refused(NULL);
        /* The same with a commondir there naming another of the user's directories. */
        make("secret/commondir", "..\n");
        plan_refused("gitdir file names nothing");
}
END_TEST

/* A .git file naming a directory through a link, or one another user could swap, is
 * refused with one line; the plan holds nothing. */
START_TEST(test_worktree_refused)
{
        gitdir("repo/.git");
        char target[256], link_path[256], text[512];
        snprintf(target, sizeof target, "%s/repo", top);
        snprintf(link_path, sizeof link_path, "%s/link", top);
        ck_assert_int_eq(symlink(target, link_path), 0);
        snprintf(text, sizeof text, "gitdir: %s/link/.git\n", top);
        make("project/.git", text);
        plan_refused("through a link");
        /* A relative path out of the project names the same directory without the link, but
         * it is no linked worktree's (a separate git directory, a submodule's): refused. */
        make("project/.git", "gitdir: ../repo/.git\n");
        plan_refused("no linked worktree's");
        /* Writable by others on the way: refused before that. */
        snprintf(target, sizeof target, "%s/repo", top);
        ck_assert_int_eq(chmod(target, 0777), 0);
        plan_refused("will not give the sandbox");
}
END_TEST

static Suite *protect_suite(void)
{
        Suite *s = suite_create("protect");
        suite_add_tests(s, "protect", setup, teardown, test_key, test_plan, test_plan_around, test_sweep_git_kinds,
                        test_plan_review_two, test_sweep_review_three, test_links, test_sweep,
                        test_plan_look_changes_nothing, test_sweep_stubborn, test_no_repository, test_worktree,
                        test_worktree_refused, test_worktree_not_ours);
        return s;
}

int main(void)
{
        return unit_run(protect_suite());
}
