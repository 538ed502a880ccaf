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
import http.server, json, sys, time

sys.dont_write_bytecode = True  # the source tree may be read-only, or the user's
import stubapi  # noqa: E402

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
        request = stubapi.read_json(self)
        stubapi.log_request(LOG, self, request, authorization=self.headers.get("Authorization"))
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
        events = []
        for i, delta in enumerate(deltas + [{}]):
            last = i == len(deltas)
            event = {"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": int(time.time()),
                     "model": request.get("model", "stub-model"),
                     "choices": [{"index": 0, "delta": delta, "finish_reason": finish if last else None}]}
            if last:
                event["usage"] = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
            events.append(("data: " + json.dumps(event) + "\n\n").encode())
        stubapi.stream(self, events + [b"data: [DONE]\n\n"])

stubapi.serve(Handler)
