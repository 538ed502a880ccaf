#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# A stand-in container registry (the OCI distribution API, as much of it as a push uses) on
# 127.0.0.1, plain HTTP: blobs are hashed as they arrive and only their digests kept (a push
# of a whole image must not fill memory); a blob whose content does not match the digest it
# is put under is refused. Prints its port, then one line per manifest put on stderr:
#   {"repository": "team/aisb", "reference": "TAG", "layers": [digests...], "missing": [...]}
# where missing lists blobs the manifest names that never arrived.
import hashlib, http.server, json, re, sys, threading, uuid

blobs = set()
uploads = {}
lock = threading.Lock()


class Registry(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, code, headers=(), body=b""):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Docker-Distribution-API-Version", "registry/2.0")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def body_into(self, digest):
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return
                self.copy_into(digest, size)
                self.rfile.readline()
        self.copy_into(digest, int(self.headers.get("Content-Length") or 0))

    def copy_into(self, digest, n):
        while n > 0:
            chunk = self.rfile.read(min(n, 1 << 20))
            if not chunk:
                break
            digest.update(chunk)
            n -= len(chunk)

    def do_GET(self):
        if self.path.rstrip("/") == "/v2":
            return self.reply(200, body=b"{}")
        self.reply(404)

    def do_HEAD(self):
        m = re.match(r"^/v2/(.+)/blobs/(sha256:[0-9a-f]{64})$", self.path)
        if m and m.group(2) in blobs:
            return self.reply(200, [("Docker-Content-Digest", m.group(2))])
        self.reply(404)

    def do_POST(self):
        m = re.match(r"^/v2/(.+)/blobs/uploads/", self.path)
        if not m:
            return self.reply(404)
        self.body_into(hashlib.sha256())
        upload = str(uuid.uuid4())
        with lock:
            uploads[upload] = hashlib.sha256()
        self.reply(202, [("Location", f"/v2/{m.group(1)}/blobs/uploads/{upload}"), ("Range", "0-0"),
                         ("Docker-Upload-UUID", upload)])

    def do_PATCH(self):
        m = re.match(r"^/v2/(.+)/blobs/uploads/([0-9a-f-]+)$", self.path)
        if not m or m.group(2) not in uploads:
            return self.reply(404)
        self.body_into(uploads[m.group(2)])
        self.reply(202, [("Location", self.path), ("Range", "0-0"), ("Docker-Upload-UUID", m.group(2))])

    def do_PUT(self):
        m = re.match(r"^/v2/(.+)/blobs/uploads/([0-9a-f-]+)\?(.*)$", self.path)
        if m and m.group(2) in uploads:
            h = uploads.pop(m.group(2))
            self.body_into(h)
            want = dict(p.split("=", 1) for p in m.group(3).split("&") if "=" in p).get("digest", "")
            want = want.replace("%3A", ":").replace("%3a", ":")
            got = "sha256:" + h.hexdigest()
            if got != want:
                return self.reply(400, body=b'{"errors":[{"code":"DIGEST_INVALID"}]}')
            blobs.add(got)
            return self.reply(201, [("Location", f"/v2/{m.group(1)}/blobs/{got}"), ("Docker-Content-Digest", got)])
        m = re.match(r"^/v2/(.+)/manifests/([^/?]+)$", self.path)
        if not m:
            return self.reply(404)
        chunks = []
        class Keep:
            def update(self, b):
                chunks.append(b)
        self.body_into(Keep())
        body = b"".join(chunks)
        manifest = json.loads(body)
        named = [manifest["config"]["digest"]] + [layer["digest"] for layer in manifest.get("layers", [])]
        print(json.dumps({"repository": m.group(1), "reference": m.group(2), "layers": named,
                          "missing": [d for d in named if d not in blobs]}), file=sys.stderr, flush=True)
        digest = "sha256:" + hashlib.sha256(body).hexdigest()
        self.reply(201, [("Location", self.path), ("Docker-Content-Digest", digest)])


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Registry)
print(server.server_address[1], flush=True)
server.serve_forever()
