/* SPDX-License-Identifier: MIT */
/* What the unit tests share: the runner's main, and a context talking to a fake libpod
 * service (fake-podman.h). */
#pragma once

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "aisb.h"
#include "fake-podman.h"

/* Run every test of s; the exit status says whether any failed. */
static inline int unit_run(Suite *s)
{
        SRunner *sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        int failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* A fake service started, and a context on its socket; undone by unit_podman_stop. */
static inline void unit_podman_start(fake_podman **fp, aisb_ctx **ctx)
{
        *fp = fake_podman_start();
        ck_assert_ptr_nonnull(*fp);
        ck_assert_int_eq(aisb_ctx_new(ctx, NULL), 0);
        ck_assert_int_eq(aisb_ctx_set_socket(*ctx, fake_podman_socket(*fp), NULL), 0);
}

static inline void unit_podman_stop(fake_podman *fp, aisb_ctx *ctx)
{
        aisb_ctx_free(ctx);
        fake_podman_stop(fp);
}

/* The home volume's inspect, answered with an empty directory of the process's own for its
 * mount point (every run opens it: harness-home.c); removed at exit while still empty. */
static char unit_volume_dir[64];
static inline void unit_volume_dir_remove(void)
{
        (void) rmdir(unit_volume_dir);
}
static inline void unit_route_home_volume(fake_podman *fp)
{
        if (!unit_volume_dir[0]) {
                snprintf(unit_volume_dir, sizeof unit_volume_dir, "/tmp/aisb-unit-volume-XXXXXX");
                ck_assert_ptr_nonnull(mkdtemp(unit_volume_dir));
                atexit(unit_volume_dir_remove);
        }
        char body[128];
        snprintf(body, sizeof body, "{\"Mountpoint\":\"%s\"}", unit_volume_dir);
        fake_podman_route(fp, "GET", "/volumes/*/json", 200, "application/json", body, FAKE_NORMAL, 0);
}
