# SPDX-License-Identifier: MIT
"""What the provider stand-ins share (stub-openai.py, stub-anthropic.py): each request logged
as one JSON line, server-sent events written in chunks as the real APIs stream them, and the
server itself on the host's loopback (HTTPS with tests/e2e/tls/stub.pem, api.stub.test, when
STUB_TLS is set), its port printed once listening, serving for at most 15 minutes."""
import http.server, json, os, socketserver, ssl, threading, time


def log_request(path, handler, body, **fields):
    """Append the request to path: its path, the given fields, every header (lower-cased)."""
    entry = {"path": handler.path, **fields,
             "headers": {k.lower(): v for k, v in handler.headers.items()}, "body": body}
    with open(path, "a") as f:
        f.write(json.dumps(entry) + "\n")


def read_json(handler):
    raw = handler.rfile.read(int(handler.headers.get("Content-Length", "0")))
    try:
        return json.loads(raw)
    except ValueError:
        return {"unparsed": raw.decode(errors="replace")}


def stream(handler, events):
    """Answer with events (bytes each, one SSE event) as a chunked text/event-stream."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Cache-Control", "no-cache")
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    for i, data in enumerate(events):
        if i:
            time.sleep(0.02)
        handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        handler.wfile.flush()
    # The end at once, with the last event, as an API server ends its stream: a client (codex)
    # that closes the connection on the last event must not find the body unfinished.
    handler.wfile.write(b"0\r\n\r\n")
    handler.wfile.flush()


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def serve(handler_class):
    server = _Server(("127.0.0.1", 0), handler_class)
    if os.environ.get("STUB_TLS"):
        here = os.path.dirname(os.path.abspath(__file__))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(os.path.join(here, "tls", "stub.pem"), os.path.join(here, "tls", "stub.key"))
        server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(server.server_address[1], flush=True)
    time.sleep(900)
