/* SPDX-License-Identifier: MIT */
/* What the unit tests share: the runner's main, and a context talking to a fake libpod
 * service (fake-podman.h). */
#pragma once

#include <check.h>
#include <stdlib.h>

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
