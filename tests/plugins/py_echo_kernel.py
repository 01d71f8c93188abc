#!/usr/bin/env python3
"""py.echo: a two-sided ping-pong over TCP following docs/kernel-protocol.md's pair start
(server: --role server --bind ADDR --port 0, prints a listen record; client: --role client
--peer ADDR --port N, prints meta, one result per size and end)."""

import argparse
import json
import socket
import time


def emit(obj: dict) -> None:
    print(json.dumps(obj), flush=True)


def sizes(text: str) -> list[int]:
    if ":" in text:
        lo, hi = (int(x) for x in text.split(":"))
        out, s = [], max(lo, 1)
        while s <= hi:
            out.append(s)
            s *= 2
        return out
    return [int(x) for x in text.split(",")]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--role", required=True)
    ap.add_argument("--bind", default="127.0.0.1")
    ap.add_argument("--peer")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--sizes", default="1:64")
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    a = ap.parse_args()
    if a.role == "server":
        srv = socket.create_server((a.bind, a.port))
        emit({"type": "listen", "port": srv.getsockname()[1]})
        conn, _ = srv.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while True:
            head = conn.recv(4)
            if len(head) < 4:
                return
            n = int.from_bytes(head, "little")
            data = b""
            while len(data) < n:
                data += conn.recv(n - len(data))
            conn.sendall(head + data)
    sock = socket.create_connection((a.peer, a.port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    emit({"type": "meta", "kernel": "py.echo", "ranks": 2, "bootstrap": "tcp",
          "selected_transport": "python-tcp"})
    for size in sizes(a.sizes):
        msg = len(bytes(size)).to_bytes(4, "little") + bytes(size)
        times = []
        for i in range(a.warmup + a.iterations):
            t0 = time.perf_counter()
            sock.sendall(msg)
            got = b""
            while len(got) < len(msg):
                got += sock.recv(len(msg) - len(got))
            if i >= a.warmup:
                times.append((time.perf_counter() - t0) * 1e6 / 2)
        emit({"type": "result", "kernel": "py.echo", "size": size,
              "iterations": a.iterations, "warmup": a.warmup, "unit": "us",
              "bytes_per_sample": size, "messages_per_sample": 1,
              "times": [round(t, 4) for t in times]})
    emit({"type": "end", "kernel": "py.echo"})


if __name__ == "__main__":
    main()
