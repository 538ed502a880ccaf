#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# A git server over smart HTTP on 127.0.0.1, for fetch and push from a sandbox through the
# gate: each request goes to git http-backend (CGI) for the bare repositories below ROOT,
# push allowed. Prints "PORT" once listening, then serves until killed or for at most 15
# minutes; every request line goes to stderr.
import http.server, os, socketserver, subprocess, sys, threading, time

ROOT = sys.argv[1]

class Handler(http.server.BaseHTTPRequestHandler):
    def backend(self):
        path, _, query = self.path.partition("?")
        sys.stderr.write("request %s %s\n" % (self.command, self.path))
        sys.stderr.flush()
        size = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(size) if size else b""
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_PROJECT_ROOT": ROOT,
               "GIT_HTTP_EXPORT_ALL": "1", "REQUEST_METHOD": self.command, "PATH_INFO": path,
               "QUERY_STRING": query, "CONTENT_TYPE": self.headers.get("Content-Type", ""),
               "CONTENT_LENGTH": str(len(body)), "REMOTE_USER": "e2e", "REMOTE_ADDR": "127.0.0.1",
               "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.receivepack", "GIT_CONFIG_VALUE_0": "true"}
        out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True).stdout
        head, _, rest = out.partition(b"\r\n\r\n")
        status, headers = 200, []
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(rest)))
        self.end_headers()
        self.wfile.write(rest)

    do_GET = do_POST = backend

    def log_message(self, *args):
        pass

class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

s = Server(("127.0.0.1", 0), Handler)
threading.Thread(target=s.serve_forever, daemon=True).start()
print(s.server_address[1], flush=True)
time.sleep(900)
