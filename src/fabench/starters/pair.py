"""pair: a two-sided transport kernel's own start, no MPI: the server on the second host of
the allocation, then the client on the first.

The server is started with `--port 0`, prints {"type":"listen","port":N} once it listens, and
the client is pointed at hosts[1].address:N; so no port is guessed, and a prefix that runs the
command elsewhere (a namespace, ssh) changes nothing. The client's records are the run's
output; the server's error/skip records are merged in.
"""

import os
import shlex
import subprocess
import threading
import time
from typing import Any

from ..errors import FabenchError
from ..host.launched import LaunchResult, RecordCallback
from ..host.placement import Allocation, HostExec
from ..host.process import popen, run_streaming, terminate
from ..kernels.native import kernel_executable
from ..plan.plan import PlannedRun
from ..records import KernelOutput, parse_line
from . import STARTERS, Starter

LOOPBACK = HostExec(name="localhost", address="127.0.0.1")
LISTEN_TIMEOUT_S = 60.0
SERVER_EXIT_GRACE_S = 15.0


class _Server:
    """The server side: started first, read until it listens, then drained in the background."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.argv = argv
        try:
            self.proc = popen(argv, env=env, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True, bufsize=1,
                                         start_new_session=True)
        except OSError as exc:
            raise FabenchError(f"cannot start {argv[0]}: {exc}") from exc
        self.records: list[dict[str, Any]] = []
        self.stderr: list[str] = []
        self.port: int | None = None
        self._listening = threading.Event()
        self._out = threading.Thread(target=self._read_stdout, daemon=True)
        self._err = threading.Thread(target=self._read_stderr, daemon=True)
        self._out.start()
        self._err.start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            obj = parse_line(line)
            if obj is None:
                continue
            if obj.get("type") == "listen" and self.port is None:
                self.port = int(obj["port"])
                self._listening.set()
            else:
                self.records.append(obj)
        self._listening.set()  # EOF: it will never listen

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)

    def wait_listening(self, timeout_s: float) -> int | None:
        self._listening.wait(timeout_s)
        return self.port

    def finish(self, grace_s: float) -> int:
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            terminate(self.proc)
        self._out.join(timeout=5)
        self._err.join(timeout=5)
        return self.proc.returncode

    def kill(self) -> None:
        terminate(self.proc)


def run_pair(run: PlannedRun, on_record: RecordCallback | None,
             hosts: list[HostExec] | None) -> LaunchResult:
    """Run the kernel between hosts[0] (client) and hosts[1] (server); loopback if None."""
    client_host, server_host = (hosts[0], hosts[1]) if hosts else (LOOPBACK, LOOPBACK)
    if hosts is not None and len(hosts) < 2:
        raise FabenchError(f"{run.kernel.name} needs two hosts, got {len(hosts)}")
    exe = str(kernel_executable(run.kernel))
    args = run.kernel_argv()
    env = {**os.environ, **run.env}
    server_argv = [*server_host.prefix, exe, *args, "--role", "server",
                   "--bind", server_host.address, "--port", "0"]
    start = time.monotonic()
    server = _Server(server_argv, env)
    try:
        port = server.wait_listening(min(LISTEN_TIMEOUT_S, run.timeout_s))
        if port is None:
            # It ended (a skip: no device; or an error) or hung before listening.
            rc = server.finish(SERVER_EXIT_GRACE_S if server.proc.poll() is None else 0)
            out = KernelOutput()
            for obj in server.records:
                out.add(obj, on_record)
            return LaunchResult(
                output=out, returncode=rc, command=server_argv, stderr="".join(server.stderr),
                notes=[] if out.skip_reason else ["the server side never listened"],
                extra={"elapsed_s": time.monotonic() - start, "server_host": server_host.name,
                       "client_host": client_host.name})
        client_argv = [*client_host.prefix, exe, *args, "--role", "client",
                       "--peer", server_host.address, "--port", str(port)]
        remaining = max(1.0, run.timeout_s - (time.monotonic() - start))
        outcome = run_streaming(client_argv, env, remaining, on_record)
    except BaseException:
        server.kill()
        raise
    srv_rc = server.finish(SERVER_EXIT_GRACE_S if outcome.returncode == 0 else 2.0)
    out = outcome.output
    for obj in server.records:
        if obj.get("type") in ("error", "skip"):
            out.add(obj, on_record)
    rc = outcome.returncode
    if rc == 0 and srv_rc not in (0, None):
        rc = srv_rc
    notes = []
    if outcome.timed_out:
        notes.append(f"timed out after {run.timeout_s:.0f} s")
    if srv_rc not in (0, None, 77) and outcome.returncode == 0:
        notes.append(f"server side exited with status {srv_rc}")
    stderr = outcome.stderr
    if server.stderr:
        stderr += "".join(f"[server] {ln}" for ln in server.stderr)
    return LaunchResult(
        output=out, returncode=rc, command=client_argv, stderr=stderr,
        selected_transport=out.meta.get("selected_transport"),
        selected_detail=out.meta.get("selected_detail"), notes=notes,
        extra={"env": dict(run.env), "elapsed_s": outcome.elapsed_s,
               "server_command": shlex.join(server_argv), "server_host": server_host.name,
               "client_host": client_host.name, "server_returncode": srv_rc})


@STARTERS.register("pair")
class PairStarter(Starter):
    starts = "pair"
    description = "a transport kernel's server then client, meeting over a TCP rendezvous"

    def start(self, run: PlannedRun, alloc: Allocation,
              on_record: RecordCallback | None = None) -> LaunchResult:
        self.check(run)
        hosts = alloc.pair() if alloc.remote else None
        if hosts is not None and len(hosts) < 2:
            raise FabenchError(f"{run.kernel.name} needs two hosts")
        return run_pair(run, on_record, hosts)
