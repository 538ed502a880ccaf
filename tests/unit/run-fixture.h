/* SPDX-License-Identifier: MIT */
/*
 * What the tests of a run against the fake service share (test-run.c, test-cancel.c,
 * test-oom.c, and test-container.c's policies): a policy written as its list of settings, the
 * routes that lead to a sandbox, an io without input, and a main whose runs keep their state
 * in a directory of their own.
 */
#pragma once

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "unit.h"

static inline aisb_policy *policy_of(const char *const (*settings)[2])
{
        aisb_policy *p = NULL;
        ck_assert_int_eq(aisb_policy_new(&p, NULL), 0);
        ck_assert_int_eq(aisb_policy_apply_environment(p, NULL), 0);
        for (; (*settings)[0]; settings++)
                ck_assert_msg(aisb_policy_set(p, (*settings)[0], (*settings)[1], NULL) == 0, "%s %s",
                              (*settings)[0], (*settings)[1] ? (*settings)[1] : "(no value)");
        return p;
}

/* A policy as the CLI starts one (the environment applied, AISB_ENTRYPOINT among it), then
 * these settings in order: { key, value } pairs, the value NULL for a flag. */
#define POLICY(...) policy_of((const char *const[][2]) { __VA_ARGS__, { NULL } })

/* The settings of a run against the fake service: no network, and neither the pi bridge nor
 * the agents' files, which read the host's home (the e2e suite covers them). */
#define RUN_SETTINGS { "net", "none" }, { "no-pi-config", "true" }, { "no-agents", "true" }

/* Every image asked for is there, and the home volume (with its mount point). */
static inline void route_images_and_home(fake_podman *fp)
{
        fake_podman_route(fp, "GET", "/images/*/exists", 204, NULL, "", FAKE_NORMAL, 0);
        fake_podman_route(fp, "GET", "/volumes/*/exists", 204, NULL, "", FAKE_NORMAL, 0);
        unit_route_home_volume(fp);
}

/* The way to a sandbox: the images and the home there, the create answered with the sandbox
 * c0ffee and these warnings (a JSON array), its start, each `times` times (0: always), and
 * its remove. The caller routes the attach and, for a sandbox that exits, the wait. */
static inline void route_sandbox(fake_podman *fp, const char *warnings, int times)
{
        char created[256];
        route_images_and_home(fp);
        snprintf(created, sizeof created, "{\"Id\":\"c0ffee\",\"Warnings\":%s}", warnings);
        fake_podman_route(fp, "POST", "/containers/create", 201, "application/json", created, FAKE_NORMAL, times);
        fake_podman_route(fp, "POST", "/containers/c0ffee/start", 204, NULL, "", FAKE_NORMAL, times);
        fake_podman_route(fp, "DELETE", "/containers/c0ffee", 200, "application/json", "[]", FAKE_NORMAL, 0);
}

/* The io of a run that reads no input; its output goes to fds 1 and 2 unless the caller
 * sets a callback. */
static inline aisb_io *io_without_input(void)
{
        aisb_io *io = NULL;
        ck_assert_int_eq(aisb_io_new(&io, NULL), 0);
        aisb_io_set_stdin(io, -1);
        return io;
}

/* rm -rf of a directory a test made; whether it went. */
static inline bool remove_tree(const char *dir)
{
        char command[PATH_MAX + 16];
        snprintf(command, sizeof command, "rm -rf '%s'", dir);
        return system(command) == 0;
}

/* Runs s with the state and configuration homes in the directory made from the mkdtemp
 * template dir (session logs, gates and the user's allowlist go there), removed after;
 * without a home volume of the caller's. The exit status says whether all went well. */
static inline int unit_run_in_state_home(Suite *s, char *dir)
{
        unsetenv("AISB_HOME_VOLUME");
        if (!mkdtemp(dir))
                return EXIT_FAILURE;
        setenv("XDG_STATE_HOME", dir, 1);
        setenv("XDG_CONFIG_HOME", dir, 1);
        int status = unit_run(s);
        return remove_tree(dir) ? status : EXIT_FAILURE;
}
