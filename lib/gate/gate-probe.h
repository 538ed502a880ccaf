/* SPDX-License-Identifier: MIT */
/* aisb's request to a run's own gate, which tells a gate that serves from one that cannot. */
#pragma once

#include "aisb.h"

/* Whether the gate on 127.0.0.1:port answers a request with its key (a run's own gate): the
 * request passes the key, is put to squid's held helper, and is then refused (no allowlist
 * names the name). squid holds a request unanswered while that helper is not running, as
 * when something held every port on the loopback as squid started it (another local user
 * can): such a gate serves nothing, and once enough requests pile up squid exits and lets
 * its port go. 0; -ETIMEDOUT when no answer came within timeout_ms; -EIO when the answer was
 * the refusal of a gate whose run is gone (GATE_HELD_PAGE: it cannot see its marker); or
 * -ECANCELED when ctx was stopped meanwhile. A run sends it before its sandbox exists. */
int gate_probe(aisb_ctx *ctx, unsigned port, const char *key, long timeout_ms, aisb_error **err);
