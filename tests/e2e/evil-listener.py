#!/usr/bin/env python3
# Another local user's listener on a loopback port: records every connection and the first
# bytes sent on it in LOG. Prints "ready PORT PID" once listening (PORT 0: the kernel picks).
# Usage: evil-listener.py PORT LOG. Serves until killed, or for at most 15 minutes.
import os, socket, sys, threading, time

port, log_path = int(sys.argv[1]), sys.argv[2]
lock = threading.Lock()

def serve(conn):
    with conn:
        conn.settimeout(3)
        try:
            data = conn.recv(4096)
        except OSError:
            data = b""
        with lock, open(log_path, "ab") as f:
            f.write(b"connection " + data[:200].replace(b"\n", b" ") + b"\n")

s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.bind(("127.0.0.1", port))
s.listen(16)
print("ready", s.getsockname()[1], os.getpid(), flush=True)
threading.Thread(target=lambda: time.sleep(900) or os._exit(0), daemon=True).start()
while True:
    conn, _ = s.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
