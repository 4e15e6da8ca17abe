"""A stdio MCP server that is a pipe to the conductor's MCP bridge (see `_mcp_bridge`).

`python -m acpstack.proxy._mcp_shim SOCKET TOKEN SERVER_ID`: introduces itself on the Unix
socket with the token and the server id, then copies stdin to the socket and the socket
to stdout, line by line, until either side ends.
"""

from __future__ import annotations

import json
import socket
import sys
import threading


def _copy_stdin(sock: socket.socket) -> None:
    try:
        for line in sys.stdin.buffer:
            sock.sendall(line)
    except OSError:
        pass
    finally:
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        sys.stderr.write("usage: python -m acpstack.proxy._mcp_shim SOCKET TOKEN SERVER_ID\n")
        return 2
    path, token, server_id = argv
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError as exc:
        sys.stderr.write(f"acpstack MCP shim: cannot reach the conductor at {path}: {exc}\n")
        return 1
    sock.sendall(json.dumps({"token": token, "serverId": server_id}).encode() + b"\n")
    threading.Thread(target=_copy_stdin, args=(sock,), daemon=True).start()
    out = sys.stdout.buffer
    while data := sock.recv(65536):
        out.write(data)
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
