#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A client that says one thing to the gate and another inside the tunnel, as a hostile agent
would, from inside a sandbox: a CONNECT to TARGET (host:port) through $https_proxy (its key
sent as squid expects it), TLS with the server name SNI ("-": none sent), then each REQUEST on
that one connection, in order. A REQUEST is "METHOD REQUEST-TARGET HOST-HEADER". For each it
prints "LABEL STATUS ERROR" (ERROR: the gate's X-Squid-Error, "-" when the answer did not come
from the gate) or "LABEL closed" when the connection ended first.

    tunnel-client.py LABEL TARGET SNI REQUEST...
"""
import base64
import os
import socket
import ssl
import sys
import urllib.parse

label, target, sni = sys.argv[1:4]
requests = sys.argv[4:]
proxy = urllib.parse.urlsplit(os.environ["https_proxy"])
s = socket.create_connection((proxy.hostname, proxy.port), timeout=20)
auth = ""
if proxy.username:
    token = base64.b64encode(f"{proxy.username}:{proxy.password}".encode()).decode()
    auth = f"Proxy-Authorization: Basic {token}\r\n"
s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n{auth}\r\n".encode())
head = b""
while b"\r\n\r\n" not in head:
    chunk = s.recv(1)
    if not chunk:
        break
    head += chunk
if b" 200 " not in head.split(b"\r\n")[0]:
    print(label, "connect", head.split(b"\r\n")[0].decode(errors="replace"))
    sys.exit(0)
ctx = ssl.create_default_context()
ctx.check_hostname = False  # the server name is the attacker's choice, the gate's certificate its own
ctx.verify_mode = ssl.CERT_NONE
try:
    t = ctx.wrap_socket(s, server_hostname=None if sni == "-" else sni)
    f = t.makefile("rb")
    for i, r in enumerate(requests):
        method, request_target, host = r.split(" ")
        t.sendall(f"{method} {request_target} HTTP/1.1\r\nHost: {host}\r\n"
                  f"Authorization: Bearer {os.environ.get('STUB_KEY', '-')}\r\nContent-Length: 0\r\n\r\n".encode())
        status = f.readline().split(b" ")
        if len(status) < 2:
            print(f"{label}.{i}", "closed")
            break
        length, error = 0, "-"
        while True:
            h = f.readline()
            if h in (b"\r\n", b""):
                break
            name, _, value = h.decode(errors="replace").partition(":")
            if name.lower() == "content-length":
                length = int(value)
            elif name.lower() == "x-squid-error":
                error = value.split()[0]
        f.read(length)
        print(f"{label}.{i}", status[1].decode(), error, flush=True)
except (ssl.SSLError, OSError) as e:
    print(label, "closed", type(e).__name__)
