# SPDX-License-Identifier: MIT
"""A libpod service for the CLI's tests, at a unix socket: each request's method and path
(its query cut) go to answer(method, path), which returns (status, body); every answer
carries the Libpod-Api-Version header a client looks for. serve() returns the server
(shutdown() ends it) and the list of requests it took, "METHOD PATH" each."""
import http.server
import socketserver
import threading


def serve(sock_path, answer, version="4.3.1"):
    requests = []

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def reply(self):
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            elif self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                while True:
                    size = int(self.rfile.readline().split(b";")[0], 16)
                    self.rfile.read(size + 2)
                    if size == 0:
                        break
            path = self.path.split("?")[0]
            requests.append("%s %s" % (self.command, path))
            if path.endswith("/_ping"):
                status, body = 200, b"OK"
            else:
                status, body = answer(self.command, path)
            self.send_response(status)
            self.send_header("Libpod-Api-Version", version)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_DELETE = do_HEAD = reply

        def log_message(self, *args):
            pass

    class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
        daemon_threads = True

        def get_request(self):
            request, _ = super().get_request()
            return request, ("test", 0)

    server = Server(sock_path, Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, requests


NOT_FOUND = (404, b'{"cause":"no such object","message":"no such object","response":404}')
