#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# A stand-in npm registry and a PyPI simple index on 127.0.0.1, for the tests of Node and
# Python in the sandbox: one package each, built here, so no test depends on a public
# registry. npm: the packument at /aisb-demo and its tarball (a module and a bin), and a
# stand-in for husky 9 at /husky (its bin does what husky's install does: point git's
# core.hooksPath at .husky/_ and write there a script per hook that runs .husky/HOOK, or,
# when git refuses the config write, print git's message and exit 0, as husky 9.1.7 does,
# seen in a sandbox with the real package). PyPI: a
# PEP 503 index at /simple/aisbdemo/ and a pure-Python wheel. Prints "PORT" once listening,
# then serves until killed or for at most 15 minutes; every request path goes to stderr.
import base64, hashlib, http.server, io, json, socketserver, sys, tarfile, threading, time, zipfile

def npm_tarball(files):
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as t:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o755 if name.endswith("cli.js") else 0o644, 0
            t.addfile(info, io.BytesIO(data))
    return out.getvalue()

DEMO = {
    "package/package.json": json.dumps({"name": "aisb-demo", "version": "1.0.0", "main": "index.js",
                                        "bin": {"aisb-demo": "cli.js"}}),
    "package/index.js": "module.exports = () => 'aisb-demo works';\n",
    "package/cli.js": "#!/usr/bin/env node\nconsole.log('aisb-demo cli: ' + require('./index.js')());\n",
}
HOOKS = ["pre-commit", "commit-msg", "pre-push", "post-checkout", "post-merge"]
HUSKY = {
    "package/package.json": json.dumps({"name": "husky", "version": "9.1.7", "bin": {"husky": "cli.js"}}),
    "package/cli.js": """#!/usr/bin/env node
const { spawnSync } = require('child_process');
const fs = require('fs');
const set = spawnSync('git', ['config', 'core.hooksPath', '.husky/_'], { encoding: 'utf8' });
if (set.status !== 0) { process.stdout.write(set.stderr || 'git config failed'); process.exit(0); }
fs.mkdirSync('.husky/_', { recursive: true });
fs.writeFileSync('.husky/_/.gitignore', '*');
for (const hook of %s)
  fs.writeFileSync('.husky/_/' + hook, '#!/bin/sh\\nh="$(dirname "$0")/../$(basename "$0")"\\n[ -f "$h" ] || exit 0\\nexec sh -e "$h" "$@"\\n', { mode: 0o755 });
""" % json.dumps(HOOKS),
}
PACKAGES = {"aisb-demo": ("1.0.0", {"aisb-demo": "cli.js"}, npm_tarball(DEMO)),
            "husky": ("9.1.7", {"husky": "cli.js"}, npm_tarball(HUSKY))}

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

WHL = wheel()

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        sys.stderr.write("request %s\n" % self.path)
        sys.stderr.flush()
        host = self.headers.get("Host", "")
        name = self.path.strip("/")
        tarballs = {"/%s/-/%s-%s.tgz" % (n, n, v[0]): v[2] for n, v in PACKAGES.items()}
        if name in PACKAGES:
            version, bins, tgz = PACKAGES[name]
            tarball = "http://%s/%s/-/%s-%s.tgz" % (host, name, name, version)
            integrity = "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode()
            body = json.dumps({"name": name, "dist-tags": {"latest": version},
                               "versions": {version: {"name": name, "version": version, "bin": bins,
                                                      "dist": {"tarball": tarball, "integrity": integrity,
                                                               "shasum": hashlib.sha1(tgz).hexdigest()}}}}).encode()
            kind = "application/json"
        elif self.path in tarballs:
            body, kind = tarballs[self.path], "application/octet-stream"
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
