#!/usr/bin/env python3
# A tiny OpenAI-compatible chat-completions server on the host's loopback, streaming its
# answer as server-sent events in chunks (Transfer-Encoding: chunked), as the real API does.
# Every request is appended to LOG as one JSON line with the Authorization header, every
# header (names lower-cased) and the body, for the test to check what the harness sent.
# With a third argument, COMMAND, it is an agent loop: the first answer asks for the tool
# "bash" with {"command": COMMAND}; once a request carries the tool's result, the answer is
# ANSWER followed by " tool said: " and that result.
# POST .../responses is the Responses API (codex): the same loop, answered as its typed events
# (output items, call arguments, response.completed with usage). The tool called is the first
# shell tool the request offers: exec_command, shell_command, shell, code mode's exec, else
# local_shell; the result is the text after "Output:" in the request's call output.
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
        if self.path.split("?")[0].rstrip("/").endswith("/responses"):
            return self.responses_api(request)
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
    def responses_api(self, request):
        outputs = [i for i in request.get("input", []) if isinstance(i, dict)
                   and i.get("type") in ("function_call_output", "custom_tool_call_output")]
        if COMMAND and not outputs:
            item = shell_call(offered_tools(request))
        else:
            said = ""
            if outputs:
                content = outputs[-1].get("output")
                if isinstance(content, list):
                    content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
                # exec_command and shell_command put a header (exit code, wall time...) before "Output:"
                said = " tool said: " + str(content).split("\nOutput:\n", 1)[-1].strip()
            item = {"id": "msg_stub_1", "type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": ANSWER + said, "annotations": []}]}
        response = {"id": "resp_stub_%d" % len(outputs), "object": "response", "created_at": int(time.time()),
                    "status": "in_progress", "model": request.get("model", "stub-model"), "output": []}
        where = {"output_index": 0, "item_id": item["id"]}
        empty = {"message": {"content": []}, "function_call": {"arguments": ""}, "custom_tool_call": {"input": ""}}
        events = [("response.created", {"response": response}), ("response.in_progress", {"response": response}),
                  ("response.output_item.added", {"output_index": 0, "item": dict(
                      item, status="in_progress", **empty.get(item["type"], {}))})]
        if item["type"] == "message":
            text = item["content"][0]["text"]
            part = dict(item["content"][0], text="")
            events.append(("response.content_part.added", dict(where, content_index=0, part=part)))
            events += [("response.output_text.delta", dict(where, content_index=0, delta=d))
                       for d in (ANSWER, text[len(ANSWER):])]
            events.append(("response.output_text.done", dict(where, content_index=0, text=text)))
            events.append(("response.content_part.done", dict(where, content_index=0, part=dict(part, text=text))))
        elif item["type"] != "local_shell_call":
            field, prefix = (("arguments", "response.function_call_arguments") if item["type"] == "function_call"
                             else ("input", "response.custom_tool_call_input"))
            events.append((prefix + ".delta", dict(where, delta=item[field])))
            events.append((prefix + ".done", dict(where, **{field: item[field]})))
        item = dict(item, status="completed")
        events.append(("response.output_item.done", {"output_index": 0, "item": item}))
        usage = {"input_tokens": 1, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 1,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 2}
        events.append(("response.completed", {"response": dict(response, status="completed", output=[item], usage=usage)}))
        stubapi.stream(self, [("event: %s\ndata: %s\n\n" % (name, json.dumps(dict(type=name, sequence_number=n, **data))))
                              .encode() for n, (name, data) in enumerate(events)])

def shell_call(tools):
    """The output item calling the first shell tool offered with COMMAND."""
    call = {"id": "fc_stub_1", "type": "function_call", "call_id": "call_stub_1"}
    if "exec_command" in tools:
        return dict(call, name="exec_command", arguments=json.dumps({"cmd": COMMAND}))
    if "shell_command" in tools:
        return dict(call, name="shell_command", arguments=json.dumps({"command": COMMAND}))
    if "shell" in tools:
        return dict(call, name="shell", arguments=json.dumps({"command": ["bash", "-lc", COMMAND]}))
    if "exec" in tools:  # code mode: JavaScript calling the nested exec_command
        script = "text((await tools.exec_command(%s)).output);" % json.dumps({"cmd": COMMAND})
        return dict(call, type="custom_tool_call", name="exec", input=script)
    return dict(call, id="lsh_stub_1", type="local_shell_call",
                action={"type": "exec", "command": ["bash", "-lc", COMMAND]})

def offered_tools(request):
    """The tools a Responses request offers, by name: its tools list and, for models in code mode,
    its additional_tools input items, namespaces flattened."""
    found, todo = {}, list(request.get("tools", []))
    for item in request.get("input", []):
        if isinstance(item, dict) and item.get("type") == "additional_tools":
            todo += item.get("tools", [])
    while todo:
        tool = todo.pop()
        if isinstance(tool, dict):
            todo += tool.get("tools", []) if tool.get("type") == "namespace" else []
            found[tool.get("name") or tool.get("type")] = tool
    return found

stubapi.serve(Handler)
