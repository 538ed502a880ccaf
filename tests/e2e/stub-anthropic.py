#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# A tiny Anthropic Messages API on the host's loopback, streaming as the real one does
# (server-sent events, Transfer-Encoding: chunked). Every request is appended to LOG as one
# JSON line: its path, the x-api-key and authorization headers, every header (names
# lower-cased) and the body, for the test to check what the harness sent.
# An agent loop: a request that offers the tool "Bash" and carries no tool result gets a
# tool_use of Bash with {"command": COMMAND}; one that carries a tool result gets ANSWER
# followed by " tool said: " and that result; any other request (the harness's own small
# ones) gets ANSWER alone.
# Usage: stub-anthropic.py LOG ANSWER COMMAND. Prints its port once listening; serves until
# killed or for at most 15 minutes. With STUB_TLS set, it speaks HTTPS with
# tests/e2e/tls/stub.pem (api.stub.test).
import http.server, json, os, socketserver, ssl, sys, threading, time

LOG, ANSWER, COMMAND = sys.argv[1], sys.argv[2], sys.argv[3]


def tool_results(body):
    out = []
    for m in body.get("messages", []):
        if isinstance(m, dict) and isinstance(m.get("content"), list):
            for part in m["content"]:
                if isinstance(part, dict) and part.get("type") == "tool_result":
                    content = part.get("content")
                    if isinstance(content, list):
                        content = "".join(c.get("text", "") for c in content if isinstance(c, dict))
                    out.append(str(content))
    return out


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            body = {"unparsed": raw.decode(errors="replace")}
        with open(LOG, "a") as f:
            f.write(json.dumps({"path": self.path, "x-api-key": self.headers.get("x-api-key"),
                                "authorization": self.headers.get("Authorization"),
                                "headers": {k.lower(): v for k, v in self.headers.items()},
                                "body": body}) + "\n")
        if not self.path.startswith("/v1/messages") or self.path.startswith("/v1/messages/count_tokens"):
            data = json.dumps({"input_tokens": 1}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        results = tool_results(body)
        offers_bash = any(isinstance(t, dict) and t.get("name") == "Bash" for t in body.get("tools", []) or [])
        model = body.get("model", "stub-model")
        events = [("message_start", {"type": "message_start", "message": {
            "id": "msg_stub", "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}})]
        if offers_bash and not results:
            events += [
                ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
                    "type": "tool_use", "id": "toolu_stub_1", "name": "Bash", "input": {}}}),
                ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
                    "type": "input_json_delta",
                    "partial_json": json.dumps({"command": COMMAND, "description": "the stub's command"})}}),
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ]
            stop = "tool_use"
        else:
            text = ANSWER + (" tool said: " + results[-1].strip() if results else "")
            events += [
                ("content_block_start", {"type": "content_block_start", "index": 0,
                                         "content_block": {"type": "text", "text": ""}}),
                ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "text_delta", "text": text}}),
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ]
            stop = "end_turn"
        events += [("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                      "usage": {"output_tokens": 1}}),
                   ("message_stop", {"type": "message_stop"})]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for name, data in events:
            chunk = ("event: %s\ndata: %s\n\n" % (name, json.dumps(data))).encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
            time.sleep(0.02)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    do_GET = do_POST


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


server = Server(("127.0.0.1", 0), Handler)
if os.environ.get("STUB_TLS"):
    here = os.path.dirname(os.path.abspath(__file__))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(os.path.join(here, "tls", "stub.pem"), os.path.join(here, "tls", "stub.key"))
    server.socket = context.wrap_socket(server.socket, server_side=True)
threading.Thread(target=server.serve_forever, daemon=True).start()
print(server.server_address[1], flush=True)
time.sleep(900)
