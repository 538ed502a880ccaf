/* SPDX-License-Identifier: MIT */
/*
 * aisb undo without podman: the record a plain run makes before and after it
 * (undo_record_begin, undo_record_end), with the project changed in between as an agent
 * would, then aisb_undo: what the run changed, made or deleted comes back, what the user
 * changed since is a conflict, the store copies a file once, auto declines a large project.
 * The e2e test undo proves the same around a real sandbox.
 */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "digest.h"
#include "fileio.h"
#include "internal.h"
#include "review.h"
#include "tree-walk.h"
#include "undo.h"
#include "tree-hash.h"
#include "unit.h"
#include "../suite-table.h"

static char top[64], project[128], state[128];

static void setup(void)
{
        snprintf(top, sizeof top, "/tmp/aisb-test-undo-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(top));
        snprintf(project, sizeof project, "%s/proj", top);
        snprintf(state, sizeof state, "%s/state", top);
        ck_assert_int_eq(mkdir(project, 0755), 0);
        ck_assert_int_eq(mkdir(state, 0700), 0);
        ck_assert_int_eq(setenv("XDG_STATE_HOME", state, 1), 0);
}

static void teardown(void)
{
        ck_assert_int_eq(tree_remove(AT_FDCWD, top), 0);
}

static void put(const char *rel, const char *text, mode_t mode)
{
        char path[512];
        snprintf(path, sizeof path, "%s/%s", project, rel);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
        ck_assert_int_eq(write_all(fd, text, strlen(text)), 0);
        ck_assert_int_eq(fchmod(fd, mode), 0);
        close(fd);
}

static void dir(const char *rel, mode_t mode)
{
        char path[512];
        snprintf(path, sizeof path, "%s/%s", project, rel);
        ck_assert_int_eq(mkdir(path, mode), 0);
}

static void gone(const char *rel)
{
        int fd = open(project, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_eq(tree_remove(fd, rel), 0);
        close(fd);
}

static char *tree_hash(void)
{
        return tree_hash_of(project, true);
}

static aisb_policy *policy_of_project(void)
{
        aisb_policy *p = NULL;
        ck_assert_int_eq(aisb_policy_new(&p, NULL), 0);
        ck_assert_int_eq(aisb_policy_set(p, "project", project, NULL), 0);
        return p;
}

/* A plain run: the record before, what the agent does, the record after. */
static undo_record run(const char *name, undo_when mode, void (*agent)(void), int *ret_recorded, const char **ret_why)
{
        int fd = open(project, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        undo_record rec = UNDO_RECORD_NULL;
        aisb_error *err = NULL;
        const char *why = NULL;
        int r = undo_record_begin(NULL, project, fd, name, mode, &rec, &why, &err);
        ck_assert_msg(r >= 0, "%s", aisb_error_message(err));
        if (ret_recorded)
                *ret_recorded = r;
        if (ret_why)
                *ret_why = why;
        if (agent)
                agent();
        ck_assert_msg(undo_record_end(&rec, fd, &err) == 0, "%s", aisb_error_message(err));
        close(fd);
        return rec;
}

static void project_files(void)
{
        put("a.txt", "hello\n", 0644);
        put("script.sh", "#!/bin/sh\n", 0755);
        dir("sub", 0755);
        put("sub/b.txt", "b\n", 0644);
        dir("sub/deep", 0700);
        put("sub/deep/d", "d\n", 0600);
        char path[512];
        snprintf(path, sizeof path, "%s/link", project);
        ck_assert_int_eq(symlink("a.txt", path), 0);
        dir("thing", 0755);
        dir(".git", 0755);
        put(".git/index", "index before\n", 0644);
}

static void agent_destroys(void)
{
        gone("sub");
        gone("link");
        put("a.txt", "changed by the agent\n", 0644);
        put("new.txt", "new\n", 0644);
        dir("newdir", 0755);
        put("newdir/x", "x\n", 0644);
        char path[512];
        snprintf(path, sizeof path, "%s/script.sh", project);
        ck_assert_int_eq(chmod(path, 0644), 0);
        gone("thing");
        put("thing", "a file where a directory was\n", 0644);
        put(".git/index", "index after\n", 0644);
}

typedef struct listed {
        char **lines;
        size_t n;
} listed;

static int list_change(const aisb_change *c, void *userdata)
{
        listed *l = userdata;
        char line[512];
        snprintf(line, sizeof line, "%s %s", c->action, c->path);
        ck_assert_int_eq(strv_push(&l->lines, line), 0);
        l->n++;
        fprintf(stderr, "undo: %s%s%s\n", line, c->reason ? ": " : "", c->reason ? c->reason : "");
        return 0;
}

static bool has_line(const listed *l, const char *line)
{
        for (size_t i = 0; i < l->n; i++)
                if (streq(l->lines[i], line))
                        return true;
        return false;
}

/* Each of lines listed. */
static void listed_all(const listed *l, const char *const *lines, size_t n)
{
        for (size_t i = 0; i < n; i++)
                ck_assert_msg(has_line(l, lines[i]), "not listed: %s", lines[i]);
}

/* aisb undo of the newest run with flags: its result; what it listed in *got (of this undo
 * only), the run's name in *ret_name (may be NULL). */
static int undo_listed(const aisb_policy *p, unsigned flags, listed *got, char **ret_name)
{
        strv_free(got->lines);
        *got = (listed) {};
        aisb_error *err = NULL;
        int r = aisb_undo(p, NULL, flags, list_change, got, ret_name, &err);
        if (r < 0)
                fprintf(stderr, "undo: %s\n", aisb_error_message(err));
        aisb_error_free(err);
        return r;
}

/* A run with agent's doing, its record ended and let go. */
static void ran(const char *name, void (*agent)(void))
{
        undo_record rec = run(name, UNDO_AUTO, agent, NULL, NULL);
        undo_record_done(&rec);
}

START_TEST(test_undo_puts_everything_back)
{
        project_files();
        _cleanup_free_ char *before = tree_hash();
        undo_record rec = run("aisb-proj-00000001", UNDO_AUTO, agent_destroys, NULL, NULL);
        ck_assert_uint_gt(rec.changed, 5);
        undo_record_done(&rec);
        _cleanup_free_ char *changed = tree_hash();
        ck_assert_str_ne(before, changed);
        aisb_policy *p = policy_of_project();
        listed got = {};
        char *name = NULL;
        /* A dry run changes nothing. */
        ck_assert_int_eq(undo_listed(p, AISB_APPLY_DRY_RUN, &got, NULL), 0);
        _cleanup_free_ char *still = tree_hash();
        ck_assert_str_eq(still, changed);
        ck_assert_int_eq(undo_listed(p, 0, &got, &name), 0);
        ck_assert_str_eq(name, "aisb-proj-00000001");
        static const char *const lines[] = { "removed new.txt", "removed newdir", "restored sub/deep/d", "restored link",
                                             "restored thing" };
        listed_all(&got, lines, ELEMENTSOF(lines));
        _cleanup_free_ char *after = tree_hash();
        ck_assert_str_eq(before, after);
        /* Undone: nothing of it is undone again, and no run is left. */
        aisb_error *err = NULL;
        ck_assert_int_eq(aisb_undo(p, NULL, 0, NULL, NULL, NULL, &err), -ENOENT);
        aisb_error_free(err);
        free(name);
        strv_free(got.lines);
        aisb_policy_free(p);
}
END_TEST

static void agent_edits_a(void)
{
        put("a.txt", "agent\n", 0644);
        put("b.txt", "agent's new file\n", 0644);
}

START_TEST(test_undo_refuses_what_the_user_changed)
{
        project_files();
        ran("aisb-proj-00000002", agent_edits_a);
        /* The user, after the run: a.txt edited, the git index rewritten (git status does). */
        put("a.txt", "the user's\n", 0644);
        put(".git/index", "refreshed by git status\n", 0644);
        aisb_policy *p = policy_of_project();
        listed got = {};
        ck_assert_int_eq(undo_listed(p, 0, &got, NULL), 1);
        static const char *const lines[] = { "conflict a.txt", "removed b.txt", "restored .git/index" };
        listed_all(&got, lines, ELEMENTSOF(lines));
        char path[512];
        snprintf(path, sizeof path, "%s/a.txt", project);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        _cleanup_free_ char *text = NULL;
        ck_assert_int_ge(read_full_fd(fd, 4096, &text, NULL), 0);
        close(fd);
        ck_assert_str_eq(text, "the user's\n");
        /* Not all came back: the run is still there to undo, and forced, it all does. */
        ck_assert_int_eq(undo_listed(p, AISB_APPLY_FORCE, &got, NULL), 0);
        ck_assert(has_line(&got, "restored a.txt"));
        strv_free(got.lines);
        aisb_policy_free(p);
}
END_TEST

/* A directory found at the project's path that is not the one the run began in (the project
 * replaced, or its path swapped for another directory): undo does nothing there. */
START_TEST(test_undo_refuses_another_directory)
{
        project_files();
        ran("aisb-proj-00000003", agent_destroys);
        char moved[512];
        snprintf(moved, sizeof moved, "%s.moved", project);
        ck_assert_int_eq(rename(project, moved), 0);
        ck_assert_int_eq(mkdir(project, 0755), 0);
        aisb_policy *p = policy_of_project();
        aisb_error *err = NULL;
        ck_assert_int_eq(aisb_undo(p, NULL, 0, NULL, NULL, NULL, &err), -ESTALE);
        ck_assert_msg(strstr(aisb_error_message(err), "is not the directory aisb-proj-00000003 began in"), "%s",
                      aisb_error_message(err));
        aisb_error_free(err);
        /* Nothing was made in it. */
        ck_assert_int_eq(rmdir(project), 0);
        ck_assert_int_eq(rename(moved, project), 0);
        aisb_policy_free(p);
}
END_TEST

/* While a record copies the project, its info is there already: another run's prune of the
 * store, which passes over a directory without one, sees a record being written and keeps
 * every object (the ones it copies, and the older ones it shares). Looked at from inside the
 * walk, through the context's stop hook, which the walk asks. */
typedef struct peek {
        char info[512];
        int calls, seen;
} peek;

static bool peek_info(void *userdata)
{
        peek *k = userdata;
        k->calls++;
        k->seen += access(k->info, F_OK) == 0;
        return false;
}

START_TEST(test_record_has_info_while_copying)
{
        project_files();
        char *state_top = NULL;
        ck_assert_int_eq(project_state_dir("undo", project, true, &state_top, NULL), 0);
        peek k = {};
        snprintf(k.info, sizeof k.info, "%s/runs/aisb-proj-00000004/info", state_top);
        free(state_top);
        aisb_ctx *ctx = NULL;
        ck_assert_int_eq(aisb_ctx_new(&ctx, NULL), 0);
        ctx->stop_fn = peek_info;
        ctx->stop_userdata = &k;
        int fd = open(project, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        undo_record rec = UNDO_RECORD_NULL;
        const char *why = NULL;
        aisb_error *err = NULL;
        ck_assert_msg(undo_record_begin(ctx, project, fd, "aisb-proj-00000004", UNDO_ALWAYS, &rec, &why, &err) == 1, "%s",
                      aisb_error_message(err));
        ck_assert_int_gt(k.calls, 0);
        ck_assert_int_eq(k.seen, k.calls);
        ck_assert_int_eq(undo_record_end(&rec, fd, &err), 0);
        undo_record_done(&rec);
        close(fd);
        aisb_ctx_free(ctx);
}
END_TEST

/* An agent that writes one file, rel with text: putting() says which, agent_puts writes it. */
static const char *agent_rel, *agent_text;

static void agent_puts(void)
{
        put(agent_rel, agent_text, 0644);
}

static void (*putting(const char *rel, const char *text))(void)
{
        agent_rel = rel;
        agent_text = text;
        return agent_puts;
}

START_TEST(test_store_and_runs)
{
        project_files();
        int recorded = 0;
        undo_record rec = run("aisb-proj-00000010", UNDO_AUTO, NULL, &recorded, NULL);
        ck_assert_int_eq(recorded, 1);
        ck_assert_uint_gt(rec.bytes_copied, 0);
        ck_assert_uint_eq(rec.changed, 0);
        undo_record_done(&rec);
        /* Nothing changed since: nothing is copied again. */
        rec = run("aisb-proj-00000011", UNDO_AUTO, putting("one.txt", "1\n"), NULL, NULL);
        ck_assert_uint_eq(rec.bytes_copied, 0);
        ck_assert_uint_eq(rec.changed, 1);
        undo_record_done(&rec);
        rec = run("aisb-proj-00000012", UNDO_AUTO, putting("two.txt", "2\n"), NULL, NULL);
        ck_assert_uint_eq(rec.bytes_copied, 2); /* one.txt, new since */
        undo_record_done(&rec);
        /* Each undo goes one run further back; the run that changed nothing is passed over. */
        aisb_policy *p = policy_of_project();
        char *name = NULL;
        aisb_error *err = NULL;
        listed got = {};
        ck_assert_int_eq(undo_listed(p, 0, &got, &name), 0);
        strv_free(got.lines);
        ck_assert_str_eq(name, "aisb-proj-00000012");
        free(name);
        ck_assert_int_eq(aisb_undo(p, NULL, 0, NULL, NULL, &name, &err), 0);
        ck_assert_str_eq(name, "aisb-proj-00000011");
        free(name);
        ck_assert_int_eq(aisb_undo(p, NULL, 0, NULL, NULL, NULL, &err), -ENOENT);
        aisb_error_free(err);
        err = NULL;
        char path[512];
        snprintf(path, sizeof path, "%s/one.txt", project);
        ck_assert_int_eq(access(path, F_OK), -1);
        /* Only the newest UNDO_KEEP_RUNS are kept. */
        for (int i = 0; i < UNDO_KEEP_RUNS + 2; i++) {
                char run_name[64];
                snprintf(run_name, sizeof run_name, "aisb-proj-%08x", 0x100 + i);
                ran(run_name, putting("one.txt", "1\n"));
        }
        char runs[512];
        snprintf(runs, sizeof runs, "%s/ai-sandbox/undo", state);
        int n = 0;
        DIR *top_dir = opendir(runs);
        ck_assert_ptr_nonnull(top_dir);
        for (struct dirent *de; (de = readdir(top_dir));) {
                if (de->d_name[0] == '.')
                        continue;
                char sub[1024];
                snprintf(sub, sizeof sub, "%s/%s/runs", runs, de->d_name);
                DIR *d = opendir(sub);
                ck_assert_ptr_nonnull(d);
                for (struct dirent *r2; (r2 = readdir(d));)
                        n += r2->d_name[0] != '.';
                closedir(d);
        }
        closedir(top_dir);
        ck_assert_int_eq(n, UNDO_KEEP_RUNS);
        aisb_policy_free(p);
}
END_TEST

/* Two runs over one file: each undo goes one run back, aisb's own rewrite of the file by the
 * first undo is no change of the user's. */
START_TEST(test_undo_twice_over_one_file)
{
        project_files();
        _cleanup_free_ char *before = tree_hash();
        ran("aisb-proj-00000030", putting("a.txt", "v2\n"));
        ran("aisb-proj-00000031", putting("a.txt", "v3\n"));
        aisb_policy *p = policy_of_project();
        aisb_error *err = NULL;
        ck_assert_int_eq(aisb_undo(p, NULL, 0, NULL, NULL, NULL, &err), 0);
        listed got = {};
        ck_assert_int_eq(undo_listed(p, 0, &got, NULL), 0);
        ck_assert(has_line(&got, "restored a.txt"));
        _cleanup_free_ char *after = tree_hash();
        ck_assert_str_eq(before, after);
        strv_free(got.lines);
        aisb_policy_free(p);
}
END_TEST

START_TEST(test_auto_declines_a_large_project)
{
        dir("many", 0755);
        for (int i = 0; i <= UNDO_AUTO_MAX_ENTRIES; i++) {
                char name[64];
                snprintf(name, sizeof name, "many/%d", i);
                put(name, "", 0644);
        }
        int recorded = -1;
        const char *why = NULL;
        undo_record rec = run("aisb-proj-00000020", UNDO_AUTO, NULL, &recorded, &why);
        ck_assert_int_eq(recorded, 0);
        ck_assert_ptr_nonnull(strstr(why, UNDO_AUTO_MAX_ENTRIES_TEXT));
        undo_record_done(&rec);
        rec = run("aisb-proj-00000021", UNDO_ALWAYS, NULL, &recorded, NULL);
        ck_assert_int_eq(recorded, 1);
        undo_record_done(&rec);
        rec = run("aisb-proj-00000022", UNDO_NEVER, NULL, &recorded, &why);
        ck_assert_int_eq(recorded, 0);
        undo_record_done(&rec);
}
END_TEST

static Suite *undo_suite(void)
{
        Suite *s = suite_create("undo");
        TCase *t = suite_add_tests(s, "undo", setup, teardown, test_undo_puts_everything_back,
                                   test_undo_refuses_what_the_user_changed, test_undo_refuses_another_directory,
                                   test_record_has_info_while_copying, test_store_and_runs, test_undo_twice_over_one_file,
                                   test_auto_declines_a_large_project);
        tcase_set_timeout(t, 60);
        return s;
}

int main(void)
{
        return unit_run(undo_suite());
}
