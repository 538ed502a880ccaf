/* SPDX-License-Identifier: MIT */
/* Every internal header of libaisb, for the tests (which link the static internal library
 * and may look inside any module). The library itself includes only what each file needs. */
#pragma once

#include "allowlist.h"
#include "container.h"
#include "context.h"
#include "createpatch.h"
#include "describe.h"
#include "entrypoint-args.h"
#include "error.h"
#include "gate-squid.h"
#include "gate.h"
#include "harness.h"
#include "http.h"
#include "image.h"
#include "jsonutil.h"
#include "network.h"
#include "pibridge.h"
#include "podman.h"
#include "policy.h"
#include "project.h"
#include "run.h"
#include "session-log.h"
#include "skills-lint.h"
#include "skills.h"
#include "userdirs.h"
#include "util.h"
