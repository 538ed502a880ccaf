#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What an image build prints reaches the terminal without its control strings.

A build runs the Containerfile's commands: an npm package's install script among them
prints what it likes. This serves, at a unix socket of its own, enough of the libpod API for
"aisb build --socket" to start a build, and streams build lines that hold an OSC title
(ESC ] 0 ; ... BEL), an OSC 52 clipboard write, a DCS, a CSI, and C1 controls as UTF-8
(U+009D, U+009B, U+0090), then an error that ends the build. The CLI runs with pipes (the
step as it begins, then the failed build's last output, "build: ..."), on a pseudo-terminal
(one line rewritten in place, then that last output), and with pipes for a build that
succeeds (its steps only, or every line with --verbose). No output holds one of those
controls raw; each shows as text, and the terminal's display is still its one line.

Usage: build-output.py AISB
"""
import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import tempfile
import termios

sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_libpod  # noqa: E402

aisb = os.path.abspath(sys.argv[1])
work = tempfile.mkdtemp(prefix="aisb-build-output-")
sock = os.path.join(work, "podman.sock")

LINES = [
    "STEP 1/2: FROM debian:12\n",
    "title \x1b]0;PWNED\x07 done\n",
    "clipboard \x1b]52;c;cHduZWQ=\x07 done\n",
    "dcs \x1bP1$qm\x1b\\ done\n",
    "csi \x1b[2J\x1b[31m done\n",
    "c1 \u009d0;PWNED\u009c and \u009b31m and \u0090q\u009c done\n",
]


# A build that fails (the error ends it), or one that succeeds (the image exists after it).
state = {"fail": True, "built": False}


def answer(method, path):
    if path.endswith("/build"):
        body = b"".join(json.dumps({"stream": line}).encode() + b"\n" for line in LINES)
        if not state["fail"]:
            state["built"] = True
            return 200, body + json.dumps({"stream": "COMMIT localhost/aisb:test\n"}).encode() + b"\n"
        return 200, body + json.dumps({"error": "the test ends the build here"}).encode() + b"\n"
    if method == "DELETE" and state.get("delete_fails"):
        return 500, b'{"cause":"test","message":"the test refuses this","response":500}'
    if path.endswith("/exists") and (state["built"] or (state.get("gate") and "aisb-gate" not in path)):
        return 204, b""  # built; or, for the run, the sandbox's image and its volume
    return fake_libpod.NOT_FOUND  # no image exists: build it


server, requests = fake_libpod.serve(sock, answer)

# A config of the test's own: a registry base (no bootstrap), nothing fetched to pack.
config_home = os.path.join(work, "config")
os.makedirs(os.path.join(config_home, "ai-sandbox"))
with open(os.path.join(config_home, "ai-sandbox", "config"), "w") as f:
    f.write("base-image = docker.io/library/debian:12\nnode-source = npm\nnet = none\n")
env = dict(os.environ, HOME=work, XDG_CONFIG_HOME=config_home, XDG_STATE_HOME=os.path.join(work, "state"),
           NO_COLOR="1")
command = [aisb, "build", "--socket", sock]

failures = []


def check(name, ok, detail=""):
    print(("ok: " if ok else "FAIL: ") + name + ("" if ok else ": " + detail))
    if not ok:
        failures.append(name)


def raw_controls(data):
    """The control strings of a build line found raw in data: every ESC but the CLI's own
    line erase, BEL, and C1 controls as UTF-8 or as single bytes."""
    found = []
    for m in re.finditer(rb"\x1b(.?)", data, re.S):
        if data[m.start():m.start() + 3] != b"\x1b[K":
            found.append(data[m.start():m.start() + 4])
    found += re.findall(rb"\x07|\xc2[\x80-\x9f]", data)
    return found


def expect_shown(name, data):
    # The build lines only: the error line after them quotes the last one (escaped).
    text = data[data.index(b"build: "):data.rindex(b"aisb: ")].decode("utf-8", "replace")
    for shown in ["\\x1b]0;PWNED\\x07", "\\x1b]52;c;cHduZWQ=\\x07", "\\x1bP1$qm\\x1b\\", "\\x1b[2J",
                  "\\xc2\\x9d0;PWNED\\xc2\\x9c", "\\xc2\\x9b31m"]:
        check(name + ": shown as text: " + shown, shown in text, repr(text[-2000:]))


# ---- pipes: every line, "build: ..." ----
p = subprocess.run(command, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
out = p.stdout + p.stderr
check("pipes: the build ran against the fake service", any(r.endswith("/build") for r in requests),
      "requests: %s; output: %r" % (requests, out))
check("pipes: the build's error ends aisb (125)", p.returncode == 125, "exit %d: %r" % (p.returncode, out))
check("pipes: no control of the build reaches stdout or stderr raw", not raw_controls(out),
      repr(raw_controls(out)))
expect_shown("pipes", p.stderr)
check("pipes: one line per build line (the step as it began, the rest as the failed build's last output)",
      sum(1 for l in p.stderr.split(b"\n") if l.startswith(b"build: ")) == len(LINES), repr(p.stderr))

# ---- pipes, a build that succeeds: the steps only; the commands' output with --verbose ----
state.update(fail=False, built=False)
p = subprocess.run(command, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
shown = [l for l in p.stderr.split(b"\n") if l.startswith(b"build: ")]
check("pipes, built: aisb succeeds", p.returncode == 0, "exit %d: %r" % (p.returncode, p.stderr))
check("pipes, built: only the step and the commit are shown",
      shown == [b"build: STEP 1/2: FROM debian:12", b"build: COMMIT localhost/aisb:test"], repr(p.stderr))
state.update(fail=False, built=False)
p = subprocess.run(command + ["--verbose"], env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
shown = [l for l in p.stderr.split(b"\n") if l.startswith(b"build: ")]
check("pipes, built, --verbose: every line", len(shown) == len(LINES) + 1 and p.returncode == 0, repr(p.stderr))
state.update(fail=True, built=False)

# ---- a terminal: one line, rewritten in place ----
def on_terminal(argv):
    master, slave = pty.openpty()
    # Wide enough that no line of the test is cut.
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    proc = subprocess.Popen(argv, env=env, stdin=slave, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    data = b""
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        if not ready:
            proc.kill()
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the last writer closed the terminal
            break
        if not chunk:
            break
        data += chunk
    rc = proc.wait(timeout=60)
    os.close(master)
    return rc, data


requests.clear()
rc, data = on_terminal(command)
check("terminal: the build ran against the fake service", any(r.endswith("/build") for r in requests),
      "requests: %s; output: %r" % (requests, data))
check("terminal: the build's error ends aisb (125)", rc == 125, "exit %d: %r" % (rc, data))
check("terminal: no control of the build reaches the terminal raw", not raw_controls(data),
      repr(raw_controls(data)))
expect_shown("terminal", data)
# Each line rewrites the one line; the line is erased at the end, and a failed build's last
# output follows as lines of their own.
check("terminal: each build line rewrites the one line", data.count(b"\r\x1b[Kbuild: ") == len(LINES) + 1
      and data.count(b"\r\x1b[K") == len(LINES) + 1, repr(data))
check("terminal: the failed build's last output follows",
      data.count(b"\nbuild: ") == len(LINES) - 2 and data.count(b"\r\x1b[Kbuild: title ") == 2, repr(data))

# --verbose changes nothing on a terminal: still the one line, and a failure's last output.
rc, data = on_terminal(command + ["--verbose"])
check("terminal, --verbose: the failed build's last output follows",
      rc == 125 and data.count(b"\nbuild: ") == len(LINES) - 2, repr(data))

# ---- a run whose gate's image is built, then fails on something else ----
# The sandbox's image exists, the gate's is built (successfully) within the run, and the run
# then fails (the fake refuses what follows): the gate build's output is not shown as if it
# had failed, and nothing of it is left to erase.
state.update(fail=False, built=False, gate=True)
with open(os.path.join(config_home, "ai-sandbox", "config"), "w") as f:
    f.write("base-image = docker.io/library/debian:12\nnode-source = npm\nnet = allow\n")
project = os.path.join(work, "project")
os.makedirs(project)
p = subprocess.run([aisb, "run", "--socket", sock, "--allow", "example.org", "--no-pi-config", "--no-agents",
                    "--", "true"], env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=120, cwd=project)
gate_builds = [r for r in requests if r.endswith("/build")]
check("run: the gate's image was built, then the run failed", len(gate_builds) >= 1 and p.returncode == 125,
      "exit %d: %r; requests %s" % (p.returncode, p.stderr, requests))
check("run: only the gate build's step and commit are shown, none of its output",
      [l for l in p.stderr.split(b"\n") if l.startswith(b"build: ")] ==
      [b"build: STEP 1/2: FROM debian:12", b"build: COMMIT localhost/aisb:test"], repr(p.stderr))

# The same on a terminal (raw while the run goes on): nothing of the build is left to show
# after the failure, and aisb's messages start lines of their own.
state.update(fail=False, built=False, gate=True)
rc, data = on_terminal([aisb, "run", "--socket", sock, "--allow", "example.org", "--no-pi-config", "--no-agents",
                        "--", "true"])
check("run on a terminal: the gate built, then the run failed", rc == 125, "exit %d: %r" % (rc, data))
check("run on a terminal: no build line after the build, none glued to a message",
      b"\nbuild: " not in data and b"build: COMMIT localhost/aisb:test\r\x1b[K\raisb: " not in data
      and b"done\raisb:" not in data and b"\r\x1b[Kaisb: " in data, repr(data))

# A gate build that fails within a run on a terminal: its last output is shown once the
# terminal is restored (lines end with \r\n), even when removing the run's gate fails too
# and warns (--secret: a gate of the run's own; the fake refuses the DELETE).
state.update(fail=True, built=False, gate=True, delete_fails=True)
env["AISB_TEST_TOKEN"] = "not-a-real-token"
rc, data = on_terminal([aisb, "run", "--socket", sock, "--allow", "example.org", "--no-pi-config", "--no-agents",
                        "--secret", "AISB_TEST_TOKEN@example.org", "--", "true"])
tail = [l for l in data.split(b"\n") if l.startswith(b"build: ")]
check("run on a terminal, the gate's build failed: its last output shown after the warning",
      rc == 125 and len(tail) == len(LINES) - 1 and b"warning" in data.split(b"\nbuild: ")[0], repr(data))
check("run on a terminal, the gate's build failed: shown with the terminal restored",
      all(l.endswith(b"\r") for l in tail), repr(data))
state.update(delete_fails=False)

server.shutdown()
subprocess.run(["rm", "-rf", work])
sys.exit(1 if failures else 0)
