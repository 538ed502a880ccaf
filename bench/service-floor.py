#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/service-floor.py SOCKET IMAGE [CMD...]: the podman service's own cost for what aisb
asks of it in a run: the requests of `aisb run --net none -- CMD` (as its dry run lists them:
ping, image and volume checks, create, attach, start, the stream to its end, wait, delete),
sent from a minimal client over one connection plus the attach's, with nothing else done.
Prints "ns N" on stdout, N being the time from connecting to the answer to DELETE; the
stream's bytes are read and dropped. bench/run runs it beside aisb and the podman CLI: no
client of the service can start and run a sandbox faster than this on the same host."""
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.parse

sock_path, image, cmd = sys.argv[1], sys.argv[2], sys.argv[3:] or ["true"]
aisb = os.environ.get("AISB", "aisb")
extra = json.loads(os.environ.get("AISB_FLOOR_ARGS", "[]"))  # the options aisb is run with
dry = subprocess.run([aisb, "run", "--dry-run", "--socket", sock_path, *extra, "--net", "none", "--", *cmd],
                     capture_output=True, text=True, check=True).stdout
create = dry[dry.index("POST /v4.0.0/libpod/containers/create"):]
create = create[create.index("\n") + 1:]
spec = json.loads(create[:create.index("\n\n")])
# The dry run redacts values and shows the run directory's copies it did not make as stand-ins.
spec["env"] = {k: ("dumb" if v == "<redacted>" else v) for k, v in spec.get("env", {}).items()}
spec["mounts"] = [m for m in spec.get("mounts", []) if not m.get("source", "").startswith("(")]
spec["name"] = f"aisb-floor-{os.getpid()}"
spec["image"] = image
volume = re.search(r"libpod/volumes/([^/\s]+)/exists", dry).group(1)


def request(conn, method, path, payload=None):
    data = json.dumps(payload).encode() if payload is not None else b""
    conn.sendall(f"{method} /v4.0.0/libpod{path} HTTP/1.1\r\nHost: d\r\nContent-Length: {len(data)}\r\n"
                 "Content-Type: application/json\r\n\r\n".encode() + data)
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += conn.recv(65536)
    head, body = buf.split(b"\r\n\r\n", 1)
    m = re.search(rb"\r\ncontent-length: *(\d+)", head, re.I)
    if m:
        while len(body) < int(m.group(1)):
            body += conn.recv(65536)
    elif b"chunked" in head.lower():
        while not body.endswith(b"0\r\n\r\n"):
            body += conn.recv(65536)
    return head, body


q = lambda s: urllib.parse.quote(s, safe="")
t0 = time.perf_counter_ns()
c = socket.socket(socket.AF_UNIX)
c.connect(sock_path)
request(c, "GET", "/_ping")
request(c, "GET", f"/images/{q(image)}/exists")
request(c, "GET", f"/volumes/{q(volume)}/exists")
head, body = request(c, "POST", "/containers/create", spec)
cid = json.loads(body)["Id"]
a = socket.socket(socket.AF_UNIX)
a.connect(sock_path)
a.sendall(f"POST /v4.0.0/libpod/containers/{cid}/attach?stream=true&stdout=true&stderr=true HTTP/1.1\r\n"
          "Host: d\r\nUpgrade: tcp\r\nConnection: Upgrade\r\nContent-Length: 0\r\n\r\n".encode())
buf = b""
while b"\r\n\r\n" not in buf:
    buf += a.recv(65536)
request(c, "POST", f"/containers/{cid}/start")
sink = bytearray(1 << 18)
while a.recv_into(sink):
    pass
a.close()
request(c, "POST", f"/containers/{cid}/wait?condition=exited&condition=stopped&interval=20ms")
request(c, "DELETE", f"/containers/{cid}?force=true")
c.close()
print(f"ns {time.perf_counter_ns() - t0}")
