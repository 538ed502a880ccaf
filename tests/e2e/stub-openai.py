#!/usr/bin/env python3
# A tiny OpenAI-compatible chat-completions server on the host's loopback, streaming its
# answer as server-sent events. Every request is appended to LOG as one JSON line with the
# Authorization header, every header (names lower-cased) and the body, for the test to check
# what the harness sent.
# Prints its port once listening; serves until killed or for at most 15 minutes. With STUB_TLS
# set, it speaks HTTPS with tests/e2e/tls/stub.pem (api.stub.test).
import http.server, json, os, socketserver, ssl, sys, threading, time

LOG = sys.argv[1]
ANSWER = sys.argv[2] if len(sys.argv) > 2 else "STUB-ANSWER"

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args):
        pass
    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": "stub-model", "object": "model"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        try:
            request = json.loads(raw)
        except ValueError:
            request = {"unparsed": raw.decode(errors="replace")}
        with open(LOG, "a") as f:
            f.write(json.dumps({"path": self.path, "authorization": self.headers.get("Authorization"),
                                "headers": {k.lower(): v for k, v in self.headers.items()},
                                "body": request}) + "\n")
        chunks = [{"role": "assistant", "content": ANSWER}, {}]
        # The whole stream at once, with its length: a TLS peer closing without close_notify
        # would make a body delimited by the close an error (OpenSSL 3 says so).
        body = b""
        for i, delta in enumerate(chunks):
            event = {"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": int(time.time()),
                     "model": request.get("model", "stub-model"),
                     "choices": [{"index": 0, "delta": delta, "finish_reason": "stop" if i else None}]}
            if i:
                event["usage"] = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
            body += ("data: " + json.dumps(event) + "\n\n").encode()
        body += b"data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

server = Server(("127.0.0.1", 0), Handler)
if os.environ.get("STUB_TLS"):
    # HTTPS with the e2e test certificate (api.stub.test), for providers reached by TLS.
    here = os.path.dirname(os.path.abspath(__file__))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(os.path.join(here, "tls", "stub.pem"), os.path.join(here, "tls", "stub.key"))
    server.socket = context.wrap_socket(server.socket, server_side=True)
threading.Thread(target=server.serve_forever, daemon=True).start()
print(server.server_address[1], flush=True)
time.sleep(900)
