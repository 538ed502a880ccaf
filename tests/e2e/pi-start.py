#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""pi's interactive start in a sandbox, on a pty: what it prints until its editor is up.

Runs AISB ARGS... on a pty, waits until pi has drawn its screen and gone quiet, types ^C
^D (pi's way out on an empty editor), and prints everything the terminal received (pi's output and aisb's
own lines, the egress summary among them) on stdout, escape sequences dropped.

Usage: pi-start.py AISB ARGS...
Exits 1 when pi drew nothing or did not end.
"""
import os
import pty
import re
import select
import struct
import fcntl
import sys
import termios
import time

pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))

raw = b""


def read_for(seconds, quiet=None):
    """Read until seconds pass, or until quiet seconds pass without output (after some)."""
    global raw
    deadline = time.monotonic() + seconds
    last = time.monotonic()
    while time.monotonic() < deadline:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                data = os.read(fd, 65536)
            except OSError:
                return False
            if not data:
                return False
            raw += data
            last = time.monotonic()
        elif quiet and raw and time.monotonic() - last > quiet:
            return True
    return True


# The image is built before (the test's first run); pi starts within seconds, then waits.
read_for(120, quiet=8)
if not raw:
    sys.stdout.write("FAIL: pi drew nothing\n")
    os.kill(pid, 9)
    sys.exit(1)
os.write(fd, b"\x04")
alive = read_for(30)
end = time.monotonic() + 10
status = None
while time.monotonic() < end:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    read_for(0.5)
else:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    sys.stdout.write("FAIL: pi did not end on ^D\n")
text = re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[()][A-Za-z0-9]|\x1b[=>78]", b"", raw)
sys.stdout.write(text.decode("utf-8", "replace").replace("\r", ""))
sys.exit(0 if status is not None else 1)
