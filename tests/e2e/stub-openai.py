#!/usr/bin/env python3
# A tiny OpenAI-compatible chat-completions server on the host's loopback, streaming its
# answer as server-sent events in chunks (Transfer-Encoding: chunked), as the real API does.
# Every request is appended to LOG as one JSON line with the Authorization header, every
# header (names lower-cased) and the body, for the test to check what the harness sent.
# With a third argument, COMMAND, it is an agent loop: the first answer asks for the tool
# "bash" with {"command": COMMAND}; once a request carries the tool's result, the answer is
# ANSWER followed by " tool said: " and that result.
# Prints its port once listening; serves until killed or for at most 15 minutes. With STUB_TLS
# set, it speaks HTTPS with tests/e2e/tls/stub.pem (api.stub.test).
import http.server, json, os, socketserver, ssl, sys, threading, time

LOG = sys.argv[1]
ANSWER = sys.argv[2] if len(sys.argv) > 2 else "STUB-ANSWER"
COMMAND = sys.argv[3] if len(sys.argv) > 3 else None

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
        results = [m for m in request.get("messages", []) if isinstance(m, dict) and m.get("role") == "tool"]
        if COMMAND and not results:
            call = {"index": 0, "id": "call_stub_1", "type": "function",
                    "function": {"name": "bash", "arguments": json.dumps({"command": COMMAND})}}
            deltas, finish = [{"role": "assistant", "content": None, "tool_calls": [call]}], "tool_calls"
        else:
            said = ""
            if results:
                content = results[-1].get("content")
                if isinstance(content, list):
                    content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
                said = " tool said: " + str(content).strip()
            deltas, finish = [{"role": "assistant", "content": ANSWER}, {"content": said}], "stop"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        def chunk(data):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        for i, delta in enumerate(deltas + [{}]):
            last = i == len(deltas)
            event = {"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": int(time.time()),
                     "model": request.get("model", "stub-model"),
                     "choices": [{"index": 0, "delta": delta, "finish_reason": finish if last else None}]}
            if last:
                event["usage"] = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
            chunk(("data: " + json.dumps(event) + "\n\n").encode())
            time.sleep(0.02)
        chunk(b"data: [DONE]\n\n")
        chunk(b"")

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
