#!/usr/bin/env python3
# A podman service that stops answering mid-run, as one stuck on a lock does: relays a unix
# socket to the real service until a client sends a request whose line contains PATTERN,
# then forwards nothing more on that connection and never answers it. Logs "stalled PATH".
# Usage: stall-podman.py REAL_SOCKET SOCKET PATTERN LOG. Serves until killed, or 15 minutes.
import asyncio, os, sys

real, path, pattern, log = sys.argv[1], sys.argv[2], sys.argv[3].encode(), sys.argv[4]

async def pipe(reader, writer, watch):
    try:
        while data := await reader.read(65536):
            if watch and pattern in data:
                line = data.split(b"\r\n", 1)[0]
                with open(log, "ab") as f:
                    f.write(b"stalled " + line + b"\n")
                await asyncio.sleep(3600)
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()

async def client(reader, writer):
    up_reader, up_writer = await asyncio.open_unix_connection(real)
    await asyncio.gather(pipe(reader, up_writer, True), pipe(up_reader, writer, False))

async def main():
    server = await asyncio.start_unix_server(client, path)
    os.chmod(path, 0o600)
    print("ready", flush=True)
    await asyncio.sleep(900)

asyncio.run(main())
