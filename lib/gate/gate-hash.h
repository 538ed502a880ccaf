/* SPDX-License-Identifier: MIT */
/* The hash that names a gate (gate.c's container and state directory). Pure. */
#pragma once

#include "allowlist.h"

/* 16 hex characters naming the gate for this policy: SHA-256 over GATE_SQUID_VERSION, the
 * sorted canonical domain entries and the sorted canonical add-host entries. Independent of
 * order, duplicates and spelling ("*.Example.com." = "example.com"). -EINVAL for a bad
 * add-host entry (check them with allowlist_parse_add_host() first for a message). */
int gate_squid_hash(const allowlist *l, const char *const *add_hosts, char **ret_hex);
