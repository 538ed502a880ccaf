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
import http.server, json, sys

sys.dont_write_bytecode = True  # the source tree may be read-only, or the user's
import stubapi  # noqa: E402

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
        body = stubapi.read_json(self)
        stubapi.log_request(LOG, self, body, **{"x-api-key": self.headers.get("x-api-key"),
                                                "authorization": self.headers.get("Authorization")})
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
        stubapi.stream(self, [("event: %s\ndata: %s\n\n" % (name, json.dumps(data))).encode() for name, data in events])

    do_GET = do_POST


stubapi.serve(Handler)
