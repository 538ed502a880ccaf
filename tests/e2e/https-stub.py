#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""An API stand-in on the host's loopback for the gate's e2e tests: HTTPS (tls/stub.pem, for
api.stub.test, other.stub.test, rules.stub.test) and plain HTTP on two free ports, which it
prints as "TLS_PORT HTTP_PORT", on 127.0.0.1 and on 127.0.0.2 alike (so that a test can map
two names to two addresses and see which one a request reached). Every request is answered
200 with the path, except /redirect?to=URL (302 to URL) and TRACE (the request echoed, headers
and all, as a real server's TRACE does), and logged to stderr as one JSON
line: the address it reached, scheme, host, method, path and the credential headers it
carried (all values of Authorization and x-api-key, in order), and the names of all its
headers, in lower case."""
import http.server
import json
import os
import ssl
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        record = {
            "addr": self.connection.getsockname()[0],
            "scheme": self.server.scheme,
            "host": self.headers.get("Host", ""),
            "method": self.command,
            "path": self.path,
            "authorization": self.headers.get_all("Authorization") or [],
            "x-api-key": self.headers.get_all("x-api-key") or [],
            "headers": sorted(h.lower() for h in self.headers.keys()),
        }
        sys.stderr.write(json.dumps(record) + "\n")
        sys.stderr.flush()
        body = ("stub %s %s\n" % (self.command, self.path)).encode()
        if self.command == "TRACE":
            # What a real server's TRACE does: the request back, headers and all.
            body = ("%s %s %s\r\n%s" % (self.command, self.path, self.request_version, self.headers)).encode()
        if self.path.startswith("/redirect?to="):
            self.send_response(302)
            self.send_header("Location", self.path[len("/redirect?to="):])
        else:
            self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_TRACE = answer

    def log_message(self, *args):
        pass


def server(scheme, address="127.0.0.1", port=0):
    s = http.server.ThreadingHTTPServer((address, port), Handler)
    s.scheme = scheme
    if scheme == "https":
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(HERE, "tls", "stub.pem"), os.path.join(HERE, "tls", "stub.key"))
        s.socket = ctx.wrap_socket(s.socket, server_side=True)
    return s


tls, plain = server("https"), server("http")
also = [server("https", "127.0.0.2", tls.server_address[1]), server("http", "127.0.0.2", plain.server_address[1])]
print(tls.server_address[1], plain.server_address[1], flush=True)
for s in [plain] + also:
    threading.Thread(target=s.serve_forever, daemon=True).start()
tls.serve_forever()
