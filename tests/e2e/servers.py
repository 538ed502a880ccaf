#!/usr/bin/env python3
# Test servers for the network e2e tests, all on this machine: each answers "server:NAME"
# over HTTP (or HTTPS with the given certificate). Prints "NAME PORT" lines once listening,
# then serves until killed or for at most 15 minutes. With a third argument, a file that
# gets one line per request ("NAME PATH"): what reached the host.
import http.server, socketserver, ssl, sys, threading, time

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if len(sys.argv) > 3:
            with open(sys.argv[3], "a") as log:
                log.write("%s %s\n" % (self.server.name, self.path))
        body = ("server:%s\n" % self.server.name).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass

class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

def main():
    cert, key = sys.argv[1], sys.argv[2]
    specs = [("http", "127.0.0.1", False), ("tls", "127.0.0.1", True), ("other", "127.0.0.1", False),
             ("wide", "0.0.0.0", False), ("wide2", "0.0.0.0", False)]
    for name, addr, tls in specs:
        s = Server((addr, 0), Handler)
        s.name = name
        if tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(cert, key)
            s.socket = ctx.wrap_socket(s.socket, server_side=True)
        threading.Thread(target=s.serve_forever, daemon=True).start()
        print(name, s.server_address[1], flush=True)
    print("ready", 0, flush=True)
    time.sleep(900)

main()
