#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A run asks on its terminal (a pty the test reads through pyte, a terminal emulator).

The sandbox's command draws a screen of its own, waits, then asks the gate twice for a name no
entry lists (curl through the proxy aisb gives it). The question must appear, one key answers
it, the screen must then be what it was before the question (the alternate screen put it
back), and the command's requests get what the answer says.

ANSWER-KEY "@ask" answers from another process (aisb ask RUN ID allow) while the question
shows: the run serves that meanwhile, and the question goes. MODE "alt": the command draws
on the alternate screen and redraws on SIGWINCH; after the answer it must have redrawn.

Usage: ask-tty.py AISB NAME PORT ANSWER-KEY EXPECT-CODE [MODE]
Prints "ok: ..." lines; exits 1 on the first failure.
"""
import subprocess
import os
import pty
import select
import struct
import fcntl
import sys
import termios
import time

import pyte

aisb, name, port, key, expect = sys.argv[1:6]
alt = len(sys.argv) > 6 and sys.argv[6] == "alt"
ROWS, COLS = 24, 80

script = (
    ('printf "\\033[?1049h\\033[H\\033[2J"; trap \'printf "\\033[H\\033[2Jharness redrawn\\r\\n"\' WINCH; '
     if alt else '') +
    'printf "harness line one\\r\\nharness line two\\r\\n"; sleep 2; '
    f'a=$(curl -s -o /dev/null -w "%{{http_code}}" -m 40 http://{name}:{port}/first); '
    f'b=$(curl -s -o /dev/null -w "%{{http_code}}" -m 40 http://{name}:{port}/second); '
    'printf "codes:$a,$b\\r\\n"; sleep 1'
)
argv = [aisb, "run", "--net", "allow", "--allow", "listed-%d.test" % os.getpid(), "--gate-add-host", f"{name}:127.0.0.1", "--ask", "tty",
        "--ask-timeout", "40", "--", "sh", "-c", script]

pid, fd = pty.fork()
if pid == 0:
    os.execv(aisb, argv)
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))

class Screen(pyte.Screen):
    """pyte with xterm's alternate screen (CSI ?1049h/l), which pyte 0.8 ignores: h saves
    the cursor and the screen and clears it, l puts both back."""

    def set_mode(self, *modes, **kwargs):
        if kwargs.get("private") and 1049 in modes:
            self.saved_screen = ({y: dict(line) for y, line in self.buffer.items()}, self.cursor.x, self.cursor.y)
            self.erase_in_display(2)
        super().set_mode(*modes, **kwargs)

    def reset_mode(self, *modes, **kwargs):
        if kwargs.get("private") and 1049 in modes and getattr(self, "saved_screen", None):
            lines, x, y = self.saved_screen
            self.erase_in_display(2)
            for row, line in lines.items():
                self.buffer[row].update(line)
            self.dirty.update(range(self.lines))
            self.cursor.x, self.cursor.y = x, y
            self.saved_screen = None
        super().reset_mode(*modes, **kwargs)


screen = Screen(COLS, ROWS)
stream = pyte.ByteStream(screen)
raw = b""


def fail(why):
    sys.stdout.write("FAIL: %s\nscreen:\n%s\nraw tail: %r\n" % (why, "\n".join(screen.display), raw[-600:]))
    sys.stdout.flush()
    try:
        os.kill(pid, 9)
    except OSError:
        pass
    sys.exit(1)


def pump(until, timeout):
    global raw
    deadline = time.monotonic() + timeout
    while not until():
        left = deadline - time.monotonic()
        if left <= 0:
            fail("timed out waiting")
        r, _, _ = select.select([fd], [], [], min(left, 0.2))
        if r:
            try:
                data = os.read(fd, 65536)
            except OSError:
                data = b""
            if not data:
                if not until():
                    fail("the run ended before")
                return
            raw += data
            stream.feed(data)


def shown(text):
    return any(text in line for line in screen.display)


# The harness's screen, settled: what it must be again after the question.
pump(lambda: shown("harness line two"), 300)
time.sleep(1)
before = list(screen.display)
pump(lambda: shown("the sandbox asks to reach"), 60)
print("ok: the question is on the terminal")
if not shown(f"{name}:{port} (GET /first)"):
    fail("the question names the destination and request")
print("ok: it names the name, port, method and path")
if key == "@ask":
    listed = subprocess.run([aisb, "ask"], capture_output=True, text=True, timeout=30).stdout.split()
    if len(listed) < 3 or listed[2] != f"{name}:{port}":
        fail("aisb ask does not list the question shown: %r" % listed)
    answered = subprocess.run([aisb, "ask", listed[0], listed[1], "allow"], capture_output=True, text=True, timeout=30)
    if answered.returncode != 0:
        fail("aisb ask could not answer while the question showed: %s" % answered.stderr)
    print("ok: aisb ask answered while the question showed")
else:
    os.write(fd, key.encode())
top = next(i for i, line in enumerate(before) if "harness line two" in line)
pump(lambda: any("codes:" in line for line in screen.display), 90)
after = list(screen.display)
if any("allow for this run" in line or "asks to reach" in line for line in after):
    fail("the question is still on the screen: %r" % after[:12])
if alt:
    if not shown("harness redrawn"):
        fail("the harness on its alternate screen was not made to redraw: %r" % after[:4])
    print("ok: the harness on its alternate screen redrew")
else:
    if after[: top + 1] != before[: top + 1]:
        fail("the screen is not what it was: before %r after %r" % (before[: top + 2], after[: top + 2]))
    print("ok: the harness's screen is back as it was")
codes = next(line for line in screen.display if "codes:" in line).split("codes:")[1].strip()
if codes != f"{expect},{expect}":
    fail(f"the requests got {codes}, not {expect},{expect}")
print(f"ok: both requests got {expect}")
if raw.count(b"the sandbox asks to reach") != 1:
    fail("the second request for the name asked again")
print("ok: the second request did not ask again")
_, status = os.waitpid(pid, 0)
print("ok: run ended with status %d" % os.waitstatus_to_exitcode(status))
