/* SPDX-License-Identifier: MIT */
/*
 * The gate's helper scripts: real files in lib/gate/scripts/ (each says what it does), which
 * the unit suite parses with their own tools (dash, bash, mawk), held by the library as C
 * strings that embed-scripts.py makes from them at build time, without their comment lines.
 * Their paths are the gate's mounts (gate.c's GATE_*_INSIDE).
 */
#pragma once

/* scripts/start.sh: the gate container's first process, run by sh -c with its idle time
 * ("held" for a run's own gate), its port and whether it intercepts (0 or 1). */
extern const char gate_start_script[];
/* scripts/held.sh: squid's helper of a run's own gate, refusing once the run is gone. */
extern const char gate_held_helper[];
/* scripts/ask.sh: run by /bin/sh with the run's ask/ directory at GATE_ASK_INSIDE, whose
 * FIFOs questions (it writes) and answers (it reads) the run holds open. */
extern const char gate_squid_ask_helper[];
#define GATE_ASK_INSIDE "/aisb-gate/ask"
/* scripts/tunnel.awk: squid asks it about each request inside a TLS connection the gate
 * opened, through this command. */
extern const char gate_squid_tunnel_helper[];
#define GATE_TUNNEL_HELPER_AWK "/usr/bin/mawk -W interactive -f"
