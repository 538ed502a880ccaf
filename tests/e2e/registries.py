#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# A stand-in npm registry and a PyPI simple index on 127.0.0.1, for the tests of Node and
# Python in the sandbox: one package each, built here, so no test depends on a public
# registry. npm: the packument at /aisb-demo and its tarball (a module and a bin). PyPI: a
# PEP 503 index at /simple/aisbdemo/ and a pure-Python wheel. Prints "PORT" once listening,
# then serves until killed or for at most 15 minutes; every request path goes to stderr.
import base64, hashlib, http.server, io, json, socketserver, sys, tarfile, threading, time, zipfile

def npm_tarball():
    files = {
        "package/package.json": json.dumps({"name": "aisb-demo", "version": "1.0.0", "main": "index.js",
                                            "bin": {"aisb-demo": "cli.js"}}),
        "package/index.js": "module.exports = () => 'aisb-demo works';\n",
        "package/cli.js": "#!/usr/bin/env node\nconsole.log('aisb-demo cli: ' + require('./index.js')());\n",
    }
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as t:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o755 if name.endswith("cli.js") else 0o644, 0
            t.addfile(info, io.BytesIO(data))
    return out.getvalue()

def wheel():
    def digest(data):
        return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    files = {
        "aisbdemo/__init__.py": b"def hello():\n    return 'aisbdemo works'\n",
        "aisbdemo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: aisbdemo\nVersion: 1.0\n",
        "aisbdemo-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: aisb-e2e\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join("%s,%s,%d\n" % (n, digest(d), len(d)) for n, d in files.items())
    record += "aisbdemo-1.0.dist-info/RECORD,,\n"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
        z.writestr("aisbdemo-1.0.dist-info/RECORD", record)
    return out.getvalue()

TGZ, WHL = npm_tarball(), wheel()

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        sys.stderr.write("request %s\n" % self.path)
        sys.stderr.flush()
        host = self.headers.get("Host", "")
        if self.path in ("/aisb-demo", "/aisb-demo/"):
            tarball = "http://%s/aisb-demo/-/aisb-demo-1.0.0.tgz" % host
            integrity = "sha512-" + base64.b64encode(hashlib.sha512(TGZ).digest()).decode()
            body = json.dumps({"name": "aisb-demo", "dist-tags": {"latest": "1.0.0"},
                               "versions": {"1.0.0": {"name": "aisb-demo", "version": "1.0.0",
                                                      "bin": {"aisb-demo": "cli.js"},
                                                      "dist": {"tarball": tarball, "integrity": integrity,
                                                               "shasum": hashlib.sha1(TGZ).hexdigest()}}}}).encode()
            kind = "application/json"
        elif self.path == "/aisb-demo/-/aisb-demo-1.0.0.tgz":
            body, kind = TGZ, "application/octet-stream"
        elif self.path in ("/simple/aisbdemo/", "/simple/aisbdemo"):
            sha = hashlib.sha256(WHL).hexdigest()
            body = ('<html><body><a href="/packages/aisbdemo-1.0-py3-none-any.whl#sha256=%s">'
                    'aisbdemo-1.0-py3-none-any.whl</a></body></html>' % sha).encode()
            kind = "text/html"
        elif self.path == "/packages/aisbdemo-1.0-py3-none-any.whl":
            body, kind = WHL, "application/octet-stream"
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

def main():
    s = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=s.serve_forever, daemon=True).start()
    print(s.server_address[1], flush=True)
    time.sleep(900)

main()
