#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""watch-open.py DIR: print "watching" once an inotify watch on DIR is set, then exit 0 with
"opened NAME" at the first open of a file in DIR (the directory's own opens do not count),
or 1 when none comes within 120 s. For a test that must act while some process, whose
/proc/PID/fd is not the test's to read (aisb is not dumpable), reads DIR's files."""
import ctypes
import os
import select
import struct
import sys

IN_OPEN = 0x20

libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(os.O_CLOEXEC)
if fd < 0 or libc.inotify_add_watch(fd, sys.argv[1].encode(), IN_OPEN) < 0:
    sys.exit("inotify: " + os.strerror(ctypes.get_errno()))
print("watching", flush=True)
while select.select([fd], [], [], 120)[0]:
    data = os.read(fd, 65536)
    while len(data) >= 16:
        _, _, _, size = struct.unpack("iIII", data[:16])
        name = data[16:16 + size].rstrip(b"\0").decode(errors="replace")
        data = data[16 + size:]
        if name:
            print("opened", name, flush=True)
            sys.exit(0)
print("no file of", sys.argv[1], "was opened in 120 s", file=sys.stderr)
sys.exit(1)
