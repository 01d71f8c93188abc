"""Aggressors: traffic on hosts other than the victims', started in the background for a
congested phase and stopped after it, by process group.

GPCNeT's congestors (Chunduri et al., SC'19): incast (many senders to one receiver),
all-to-all, broadcast, and an endless bulk stream. Here each is an existing kernel run
without end: tcp.streams in time mode (incast: one client per aggressor host toward the
target, each with its own server there; bulk: one stream), mpi.alltoall and mpi.bcast with an
iteration count no phase reaches. Every process is started in a session of its own (an
nsenter line execs into the kernel, so the session is the kernel's, and mpirun's agents are
its children) and stopped with SIGTERM, then SIGKILL, to that group only.

Where the aggressor's traffic meets the victim's is the testbed's business: incast and bulk
send to `target` (by default the victims' second host, so they share its link: the victim's
link is the bottleneck); all-to-all and broadcast stay among the aggressor hosts, and share a
bottleneck with the victims only where their paths cross one (the uplink of a `--switches 2`
testbed with victims and aggressors on both leaves). On one switch they measure what the
victims lose to the host's CPUs alone, a control worth having on a shared machine.
"""

import os
import select
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import FabenchError
from ..native import kernel_executable
from ..placement import Allocation
from ..plan import PlannedRun, plan_run, settings_for
from ..process import terminate
from ..records import parse_line
from ..starters.mpirun import MpirunStarter

PATTERNS = ("incast", "alltoall", "bcast", "bulk")
READY_TIMEOUT_S = 60.0
# No phase lasts this long; the aggressor is stopped long before (a day of streaming).
ENDLESS_S = 86400
ENDLESS_ITERATIONS = 100_000_000
# Message sizes: large enough that the pattern is bandwidth-bound (GPCNeT's congestors move
# 128 KiB-4 MiB messages).
STREAM_WRITE = "128K"
ALLTOALL_SIZE = "64K"
BCAST_SIZE = "1M"
INCAST_STREAMS = 2  # per aggressor host: several flows per sender, as an MPI incast has


@dataclass(frozen=True)
class AggressorPlan:
    """One pattern, on which hosts, toward which host (incast, bulk)."""

    pattern: str
    hosts: tuple[str, ...]
    target: str
    mpi: str = "openmpi"
    transport: str = "tcp"

    def __post_init__(self) -> None:
        if self.pattern not in PATTERNS:
            raise FabenchError(f"--aggressor {self.pattern!r}: one of {', '.join(PATTERNS)}")
        need = 1 if self.pattern in ("incast", "bulk") else 2
        if len(self.hosts) < need:
            raise FabenchError(f"aggressor {self.pattern} needs {need} aggressor host(s), "
                               f"got {len(self.hosts)}")
        if self.target in self.hosts and self.pattern in ("incast", "bulk"):
            raise FabenchError(f"aggressor {self.pattern}: the target {self.target} is one "
                               "of its senders")


@dataclass
class _Proc:
    """One started process group and the records it printed (drained in the background)."""

    what: str
    argv: list[str]
    proc: subprocess.Popen[str]
    records: list[dict[str, Any]] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    _threads: list[threading.Thread] = field(default_factory=list)

    def drain(self) -> None:
        def out() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                obj = parse_line(line)
                if obj is not None and obj.get("type") != "result" and len(self.records) < 50:
                    self.records.append(obj)

        def err() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                if len(self.stderr) < 200:
                    self.stderr.append(line)
        self._threads = [threading.Thread(target=f, daemon=True) for f in (out, err)]
        for t in self._threads:
            t.start()


def _popen(what: str, argv: list[str], env: dict[str, str]) -> _Proc:
    try:
        p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, bufsize=1, start_new_session=True)
    except OSError as exc:
        raise FabenchError(f"aggressor {what}: cannot start {argv[0]}: {exc}") from exc
    return _Proc(what, argv, p)


def _read_until(p: _Proc, want: str, deadline: float) -> dict[str, Any]:
    """Records of p's stdout until one of type `want` (the kernel is running); an error,
    skip or exit first is a failure naming it."""
    assert p.proc.stdout is not None
    while time.monotonic() < deadline:
        ready, _, _ = select.select([p.proc.stdout], [], [], 0.2)
        if not ready:
            if p.proc.poll() is not None:
                break
            continue
        line = p.proc.stdout.readline()
        if not line:
            break
        obj = parse_line(line)
        if obj is None:
            continue
        if obj.get("type") == want:
            return obj
        if obj.get("type") in ("error", "skip"):
            raise FabenchError(f"aggressor {p.what}: {obj.get('reason') or obj}")
    terminate(p.proc)
    tail = (p.proc.stderr.read() if p.proc.stderr and p.proc.poll() is not None else "")[-400:]
    raise FabenchError(f"aggressor {p.what}: no {want!r} record within {READY_TIMEOUT_S:.0f} "
                       f"s (exit {p.proc.returncode}): {tail.strip()}")


@dataclass
class Running:
    """A started aggressor: its process groups, until stop()."""

    plan: AggressorPlan
    procs: list[_Proc]
    started: float
    commands: list[list[str]]

    def alive(self) -> list[str]:
        return [p.what for p in self.procs if p.proc.poll() is None]

    def stop(self) -> "Stopped":
        died = [f"{p.what} (exit {p.proc.returncode})" for p in self.procs
                if p.proc.poll() is not None]
        for p in self.procs:
            terminate(p.proc)
        for p in self.procs:
            for t in p._threads:
                t.join(timeout=5)
        return Stopped(self.plan.pattern, time.monotonic() - self.started,
                       [p.proc.pid for p in self.procs], died,
                       [ln.rstrip() for p in self.procs for ln in p.stderr[-3:]])


@dataclass(frozen=True)
class Stopped:
    """What an aggressor did: how long it ran, its PIDs, and any process that ended before it
    was stopped (then the phase was not congested all along: the runs are flagged)."""

    pattern: str
    seconds: float
    pids: list[int]
    died_early: list[str]
    stderr_tail: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"pattern": self.pattern, "seconds": round(self.seconds, 3), "pids": self.pids,
                "died_early": self.died_early}


# How the aggressor reaches hosts: an allocation for a run on some hosts (a testbed view).
AllocationFor = Callable[[PlannedRun, list[str]], Allocation]


def _stream_run(streams: int) -> PlannedRun:
    kernel = "tcp.streams"
    settings = settings_for(plan_run(kernel).kernel, sizes=STREAM_WRITE,
                            extra=["--streams", str(streams), "--duration", str(ENDLESS_S),
                                   "--omit", "0", "--interval", "1"])
    return plan_run(kernel, settings=settings, timeout_s=float(ENDLESS_S))


def _start_stream(src: str, dst: str, streams: int,
                  alloc_for: AllocationFor) -> list[_Proc]:
    """A tcp.streams server on dst, then its client on src, both without end."""
    run = _stream_run(streams)
    alloc = alloc_for(run, [src, dst])
    client, server = alloc.pair()
    exe = str(kernel_executable(run.kernel))
    env = dict(os.environ)
    srv = _popen(f"stream {src}>{dst} (server)",
                 [*server.prefix, exe, *run.kernel_argv(), "--role", "server",
                  "--bind", server.address, "--port", "0"], env)
    try:
        port = int(_read_until(srv, "listen", time.monotonic() + READY_TIMEOUT_S)["port"])
        srv.drain()
        cli = _popen(f"stream {src}>{dst}",
                     [*client.prefix, exe, *run.kernel_argv(), "--role", "client",
                      "--peer", server.address, "--port", str(port)], env)
    except BaseException:
        terminate(srv.proc)
        raise
    return [srv, cli]


def _start_mpi(pattern: str, plan: AggressorPlan, alloc_for: AllocationFor) -> _Proc:
    kernel = f"mpi.{pattern}"
    size = ALLTOALL_SIZE if pattern == "alltoall" else BCAST_SIZE
    base = plan_run(kernel, transport=plan.transport, ranks=len(plan.hosts), mpi=plan.mpi)
    settings = settings_for(base.kernel, sizes=size, iterations=ENDLESS_ITERATIONS, warmup=0,
                            extra=["--osu-iterations", "0"])
    run = plan_run(kernel, transport=plan.transport, ranks=len(plan.hosts), mpi=plan.mpi,
                   settings=settings, timeout_s=float(ENDLESS_S))
    alloc = alloc_for(run, list(plan.hosts))
    cmd = MpirunStarter().command(run, alloc)
    return _popen(f"{kernel} on {','.join(plan.hosts)}", cmd.argv, {**os.environ, **cmd.env})


def start(plan: AggressorPlan, alloc_for: AllocationFor) -> Running:
    """Start the pattern and return once every process of it is running (its kernels have
    printed their start record): the congested phase starts from there."""
    procs: list[_Proc] = []
    t0 = time.monotonic()
    try:
        if plan.pattern in ("incast", "bulk"):
            senders = plan.hosts if plan.pattern == "incast" else plan.hosts[:1]
            streams = INCAST_STREAMS if plan.pattern == "incast" else 1
            for src in senders:
                procs.extend(_start_stream(src, plan.target, streams, alloc_for))
            waiting = [p for p in procs if not p.what.endswith("(server)")]
        else:
            procs.append(_start_mpi(plan.pattern, plan, alloc_for))
            waiting = list(procs)
        deadline = time.monotonic() + READY_TIMEOUT_S
        for p in waiting:
            _read_until(p, "meta", deadline)
            p.drain()
    except BaseException:
        for p in procs:
            terminate(p.proc)
        raise
    return Running(plan, procs, t0, [p.argv for p in procs])
