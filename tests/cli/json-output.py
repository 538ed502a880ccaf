#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""--json reaches the terminal without a control character, and stays the same JSON.

json-c escapes the C0 controls in strings, not DEL and not the C1 controls, which UTF-8
writes as C2 80..C2 9F (U+009D starts an OSC as ESC ] does). Names from places others
write reach --json output: a file name in the agents directory (skill-lint), a project's
path (log, ps: the session log, a sandbox's labels), the agents directory's path (doctor).
Each holds U+009D ... U+009C, DEL and ESC here; the output must hold none of them raw,
and must parse to the very name.

Usage: json-output.py AISB
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_libpod  # noqa: E402

aisb = sys.argv[1]
work = tempfile.mkdtemp(prefix="aisb-json-output-")
EVIL = "evil\u009d0;PWNED\u009c\x7f\x1b]0;t\x07"
failures = []


def check(name, ok, detail=""):
    print(("ok: " if ok else "FAIL: ") + name + ("" if ok else ": " + detail))
    if not ok:
        failures.append(name)


def no_raw_control(name, out, err=b""):
    raw = re.findall(rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]", out + err)
    check(name + ": no control byte raw", not raw, "%r in %r" % (raw, out + err))


def objects(name, out):
    try:
        return [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    except ValueError as e:
        check(name + ": JSON lines", False, "%s: %r" % (e, out))
        return []


config_home = os.path.join(work, "config")
os.makedirs(os.path.join(config_home, "ai-sandbox"))
with open(os.path.join(config_home, "ai-sandbox", "config"), "w") as f:
    f.write("base-image = docker.io/library/debian:12\nnode-source = npm\nnet = none\n")
state = os.path.join(work, "state")
runtime = os.path.join(work, "run")
os.makedirs(os.path.join(runtime, "podman"), mode=0o700)
env = dict(os.environ, HOME=work, XDG_CONFIG_HOME=config_home, XDG_STATE_HOME=state,
           XDG_RUNTIME_DIR=runtime, NO_COLOR="1")


def run(*args):
    p = subprocess.run([aisb, *args], env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


# ---- skill-lint: a file name in the agents directory ----
agents = os.path.join(work, "agents")
os.makedirs(os.path.join(agents, "skills"))
name = "skills/" + EVIL + ".env"
with open(os.path.join(agents, name).encode(), "w") as f:
    f.write("T=npm_5LAg5nhJ5ipKq7apEfOsco4GxeaVXRd9rsJT\n")
rc, out, err = run("skill-lint", "--json", "--no-history", agents)
check("skill-lint --json: the finding (exit 1)", rc == 1, "exit %d: %r %r" % (rc, out, err))
no_raw_control("skill-lint --json", out)
found = objects("skill-lint --json", out)
check("skill-lint --json: the very path", any(o.get("path") == name for o in found), repr(found))

# ---- log --json: a project's path in the session log, as the library writes it ----
os.makedirs(os.path.join(state, "ai-sandbox"), exist_ok=True)
project = "/home/u/" + EVIL
line = json.dumps({"time": 1700000000, "project": project, "exit": 0}, ensure_ascii=False)
with open(os.path.join(state, "ai-sandbox", "sessions.log"), "w", encoding="utf-8") as f:
    f.write(line + "\n")
rc, out, err = run("log", "--json")
check("log --json: exit 0", rc == 0, "exit %d: %r %r" % (rc, out, err))
no_raw_control("log --json", out, err)
found = objects("log --json", out)
check("log --json: the very path", [o.get("project") for o in found] == [project], repr(found))


# ---- ps --json and doctor --json: a service whose sandbox and volume carry that path ----
def answer(method, path):
    labels = {"aisb.managed": "true", "aisb.project": project, "aisb.net": "none", "aisb.policy": "p"}
    if path.endswith("/containers/json"):
        return 200, json.dumps([{"Names": ["aisb-x"], "Labels": labels, "Image": "i", "State": "running",
                                 "Created": 1700000000}]).encode()
    if path.endswith("/volumes/json"):
        return 200, json.dumps([{"Name": "aisb-home-x", "Labels": labels,
                                 "CreatedAt": "2023-11-14T22:13:20Z"}]).encode()
    if path.endswith("/info"):
        return 200, json.dumps({"host": {"security": {"rootless": True}}, "version": {"Version": "4.3.1"}}).encode()
    return fake_libpod.NOT_FOUND


sock = os.path.join(runtime, "podman", "podman.sock")
server, requests = fake_libpod.serve(sock, answer)
rc, out, err = run("ps", "--json")
check("ps --json: exit 0", rc == 0, "exit %d: %r %r" % (rc, out, err))
no_raw_control("ps --json", out, err)
found = objects("ps --json", out)
check("ps --json: the very path, sandbox and volume", [o.get("project") for o in found] == [project, project],
      repr(found))

doctor_agents = os.path.join(work, EVIL)
os.makedirs(doctor_agents)
rc, out, err = run("doctor", "--json", "--socket", sock, "--agents-dir", doctor_agents)
no_raw_control("doctor --json", out)
found = objects("doctor --json", out)
skills = [o for o in found if o.get("check") == "skills"]
check("doctor --json: the skills check names the very directory",
      len(skills) == 1 and doctor_agents in skills[0].get("detail", ""), repr(found))

server.shutdown()
subprocess.run(["rm", "-rf", work])
sys.exit(1 if failures else 0)
