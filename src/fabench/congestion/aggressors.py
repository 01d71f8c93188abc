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
import queue
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..choices import CONGESTION_PATTERNS
from ..errors import FabenchError
from ..host.placement import Allocation
from ..host.process import popen, terminate
from ..kernels.native import kernel_executable
from ..plan.plan import PlannedRun, plan_run, settings_for
from ..records import parse_line
from ..starters.mpirun import MpirunStarter

PATTERNS = CONGESTION_PATTERNS
READY_TIMEOUT_S = 60.0
# An aggressor runs for its phase and is stopped after it; should the stop never come (fabench
# killed, and its supervisor too) it still ends by itself once the phase's longest time is
# past: the victims' run limits plus the wait for its start, never a day.
DEFAULT_SECONDS = 600.0
MAX_SECONDS = 6 * 3600.0
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
    seconds: float = DEFAULT_SECONDS  # the longest the phase can last

    def __post_init__(self) -> None:
        if not 0 < self.seconds <= MAX_SECONDS:
            raise FabenchError(f"aggressor {self.pattern}: a phase of {self.seconds} s is not "
                               f"0..{MAX_SECONDS:.0f} s")
        if self.pattern not in PATTERNS:
            raise FabenchError(f"--aggressor {self.pattern!r}: one of {', '.join(PATTERNS)}")
        need = 1 if self.pattern in ("incast", "bulk") else 2
        if len(self.hosts) < need:
            raise FabenchError(f"aggressor {self.pattern} needs {need} aggressor host(s), "
                               f"got {len(self.hosts)}")
        if self.target in self.hosts and self.pattern in ("incast", "bulk"):
            raise FabenchError(f"aggressor {self.pattern}: the target {self.target} is one "
                               "of its senders")


class _Proc:
    """One started process group; its stdout and stderr are read from the start by threads
    of their own (records of interest kept, the rest drained so the pipes never fill)."""

    def __init__(self, what: str, argv: list[str], proc: subprocess.Popen[str]) -> None:
        self.what, self.argv, self.proc = what, argv, proc
        self.records: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.stderr: list[str] = []
        self._threads = [threading.Thread(target=f, daemon=True)
                         for f in (self._out, self._err)]
        for t in self._threads:
            t.start()

    def _out(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            obj = parse_line(line)
            if obj is not None and obj.get("type") != "result":
                self.records.put(obj)
        self.records.put(None)  # EOF

    def _err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr = [*self.stderr[-199:], line]

    def wait_for(self, want: str, deadline: float) -> dict[str, Any]:
        """The first record of type `want` (the kernel is running); an error or skip record,
        an exit or the deadline first is a failure naming it."""
        while True:
            try:
                obj = self.records.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                obj = None
            if obj is not None and obj.get("type") == want:
                return obj
            if obj is not None and obj.get("type") in ("error", "skip"):
                terminate(self.proc)
                raise FabenchError(f"aggressor {self.what}: {obj.get('reason') or obj}")
            if obj is None:
                terminate(self.proc)
                tail = "".join(self.stderr[-5:]).strip()[-400:]
                raise FabenchError(f"aggressor {self.what}: no {want!r} record (exit "
                                   f"{self.proc.returncode}): {tail}")

    def join(self) -> None:
        for t in self._threads:
            t.join(timeout=5)


def _popen(what: str, argv: list[str], env: dict[str, str], seconds: int) -> _Proc:
    # timeout(1) bounds the whole launch (mpirun ends its ranks on its SIGTERM) even if
    # nothing is left to stop it.
    argv = ["timeout", "-k", "10", str(seconds), *argv]
    try:
        p = popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, bufsize=1, start_new_session=True)
    except OSError as exc:
        raise FabenchError(f"aggressor {what}: cannot start {argv[0]}: {exc}") from exc
    return _Proc(what, argv, p)


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
            p.join()
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


def _limit(plan: AggressorPlan) -> int:
    return int(plan.seconds + READY_TIMEOUT_S) + 1


def _stream_run(streams: int, seconds: int) -> PlannedRun:
    kernel = "tcp.streams"
    settings = settings_for(plan_run(kernel).kernel, sizes=STREAM_WRITE,
                            extra=["--streams", str(streams), "--duration", str(seconds),
                                   "--omit", "0", "--interval", "1"])
    return plan_run(kernel, settings=settings, timeout_s=float(seconds))


def _start_stream(src: str, dst: str, streams: int, seconds: int,
                  alloc_for: AllocationFor) -> list[_Proc]:
    """A tcp.streams server on dst, then its client on src, both for the phase."""
    run = _stream_run(streams, seconds)
    alloc = alloc_for(run, [src, dst])
    client, server = alloc.pair()
    exe = str(kernel_executable(run.kernel))
    env = dict(os.environ)
    srv = _popen(f"stream {src}>{dst} (server)",
                 [*server.prefix, exe, *run.kernel_argv(), "--role", "server",
                  "--bind", server.address, "--port", "0"], env, seconds)
    try:
        port = int(srv.wait_for("listen", time.monotonic() + READY_TIMEOUT_S)["port"])
        cli = _popen(f"stream {src}>{dst}",
                     [*client.prefix, exe, *run.kernel_argv(), "--role", "client",
                      "--peer", server.address, "--port", str(port)], env, seconds)
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
                   settings=settings, timeout_s=float(_limit(plan)))
    alloc = alloc_for(run, list(plan.hosts))
    cmd = MpirunStarter().command(run, alloc)
    return _popen(f"{kernel} on {','.join(plan.hosts)}", cmd.argv, {**os.environ, **cmd.env},
                  _limit(plan))


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
                procs.extend(_start_stream(src, plan.target, streams, _limit(plan),
                                           alloc_for))
            waiting = [p for p in procs if not p.what.endswith("(server)")]
        else:
            procs.append(_start_mpi(plan.pattern, plan, alloc_for))
            waiting = list(procs)
        deadline = time.monotonic() + READY_TIMEOUT_S
        for p in waiting:
            p.wait_for("meta", deadline)
    except BaseException:
        for p in procs:
            terminate(p.proc)
        raise
    return Running(plan, procs, t0, [p.argv for p in procs])
