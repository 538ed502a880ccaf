/* SPDX-License-Identifier: MIT */
/* The addresses of this host's own interfaces. */
#pragma once

#include "util.h"

/* Every address of this host's interfaces, as text; NULL for none. */
int host_own_addresses(char ***ret);
