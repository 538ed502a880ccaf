#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Usage: plan-shape.py PLAN.json INSPECT.json

Whether the plan `aisb inspect --json` showed is the one a running sandbox got (podman
inspect's view): the environment's names, the mounts' destinations and the entrypoint's
argv. Only what a description cannot know may differ: the gate's port. What podman and the
image add to the environment (PATH, HOSTNAME, container, DEBIAN_FRONTEND) is no difference.
Prints each difference on one line; exit 1 if any."""
import json
import re
import sys

ADDED_BY_PODMAN = {"PATH", "HOSTNAME", "container", "DEBIAN_FRONTEND"}


def argv(v):
    return v.split() if isinstance(v, str) else list(v or [])


def main():
    plan = json.load(open(sys.argv[1]))
    real = json.load(open(sys.argv[2]))[0]
    diffs = []
    shown = set(plan["env"])
    got = {e.split("=", 1)[0] for e in real["Config"]["Env"]}
    for name in sorted(shown - got):
        diffs.append(f"env: {name} is in the plan, not in the sandbox")
    for name in sorted(got - shown - ADDED_BY_PODMAN):
        diffs.append(f"env: {name} is in the sandbox, not in the plan")
    create = plan["create"]
    planned = sorted([m["destination"] for m in create.get("mounts", []) if m["type"] == "bind"] +
                     [v["Dest"] for v in create.get("volumes") or []])
    mounted = sorted(m["Destination"] for m in real["Mounts"])
    if planned != mounted:
        diffs.append(f"mounts: planned {planned}, mounted {mounted}")
    port = re.compile(r"^(\S+):\d+$")
    ep_plan = plan["entrypoint"]
    ep_real = argv(real["Config"]["Entrypoint"])[: len(ep_plan)]
    norm = lambda v: [port.sub(r"\1:PORT", a) if i and v[i - 1] == "--allow" else a for i, a in enumerate(v)]
    if norm(ep_plan) != norm(ep_real):
        diffs.append(f"entrypoint: planned {ep_plan}, ran {ep_real}")
    if not plan["env"] or not mounted or not ep_plan:
        diffs.append("nothing to compare")
    for d in diffs:
        print(d)
    return 1 if diffs else 0


sys.exit(main())
