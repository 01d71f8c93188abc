"""A matrix pass without MPI: each wanted direction src -> dst measured by two transport
kernels started as client/server pair jobs, `tcp.latency` (8-byte ping-pong started by src)
and `tcp.bw` (windows of --size streamed from src, each closed by a 1-byte ack), in the same
round-robin tournament and the same four phases per round as mpi.matrix (native/mpi/matrix.c):
latency a -> b, bandwidth a -> b, latency b -> a, bandwidth b -> a.

In concurrent mode every pair of a round runs each phase at once, one thread per pair, and
the phase ends when every pair's job has (mpi.matrix's barrier); in isolated mode the pairs
take their turn one at a time. The samples become the same `pair` records mpi.matrix writes,
so judging, storing and reporting do not know which way a matrix was measured. NVIDIA's
ngc_multinode_perf runs its per-pair perftest jobs in rounds the same way.

A pass is one stored run (`matrix.tcp`, not a kernel of its own: its jobs are tcp.latency and
tcp.bw) whose rows of `matrix_pairs` are the directions it measured.
"""

from __future__ import annotations

import os
import shlex
import signal
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import FabenchError
from ..host.leftovers import kill_same
from ..host.placement import Allocation, HostExec, HostSlots
from ..host.proc_stat import proc_start
from ..host.process import descendants
from ..host.provenance import load_snapshot
from ..plan.plan import KernelSettings, PlannedRun, Sizes, plan_run
from ..records import PairRecord, ResultRecord
from ..run.runner import SKIP_EXIT, failure_reason
from ..schedulers import DirectScheduler, Scheduler
from ..starters import Starter
from .passes import Pass
from .stored import MatrixStore

PASS_NAME = "matrix.tcp"
LAT_KERNEL, BW_KERNEL = "tcp.latency", "tcp.bw"
LAT_SIZE = 8
# A host whose jobs failed with this many different partners is taken as gone for the rest of
# the pass, its other directions left unmeasured (unreachable, for --resume): a bad link fails
# with one partner, a dead host with every one, and each of its jobs could otherwise wait out
# the rendezvous timeout.
DEAD_AFTER_PARTNERS = 2
# How long the processes of an interrupted pass get to end after SIGTERM before SIGKILL.
TEARDOWN_GRACE_S = 5.0

Link = tuple[int, int]


def tournament(n: int) -> list[list[Link]]:
    """The rounds of the circle method over n hosts, each a list of pairs (a, b), a < b; an odd
    n gives one host a bye per round. The same schedule as mpi.matrix's partner()."""
    slots = n + n % 2
    turn = slots - 1
    rounds = []
    for r in range(turn):
        pairs = []
        for rank in range(slots):
            p = r if rank == turn else turn if rank == r else (2 * r - rank) % turn
            if rank < p < n:
                pairs.append((rank, p))
        rounds.append(pairs)
    return rounds


@dataclass(frozen=True)
class PairPlans:
    """The two jobs of one direction, planned once; each job gets its own deadline."""

    latency: PlannedRun
    bandwidth: PlannedRun

    @classmethod
    def of(cls, size: str, window: int, iterations: int, warmup: int, lat_iterations: int,
           lat_warmup: int) -> PairPlans:
        sizes = Sizes.parse(size)
        if len(sizes.values) != 1:
            raise FabenchError(f"--size {size}: a matrix measures one bandwidth size")
        lat = KernelSettings(sizes=Sizes.of([LAT_SIZE]), iterations=lat_iterations,
                             warmup=lat_warmup)
        bw = KernelSettings(sizes=sizes, iterations=iterations, warmup=warmup, window=window)
        return cls(plan_run(LAT_KERNEL, ranks=2, settings=lat),
                   plan_run(BW_KERNEL, ranks=2, settings=bw))


@dataclass
class Job:
    """One kernel between src (client) and dst (server): its result or why there is none."""

    src: int
    dst: int
    result: ResultRecord | None = None
    failure: str | None = None
    timed_out: bool = False  # the pass's time ran out: says nothing about the hosts
    command: str = ""


@dataclass
class PassState:
    """What a pass has measured and lost so far."""

    n: int
    records: list[PairRecord] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    failed_with: dict[int, set[int]] = field(default_factory=dict)
    dead: set[int] = field(default_factory=set)
    timed_out: bool = False
    command: str = ""

    def lost(self, job: Job, hosts: Sequence[HostExec]) -> None:
        self.failures.append(f"{hosts[job.src].name} -> {hosts[job.dst].name}: {job.failure}")
        if job.timed_out:
            self.timed_out = True
            return
        for a, b in ((job.src, job.dst), (job.dst, job.src)):
            self.failed_with.setdefault(a, set()).add(b)
            if len(self.failed_with[a]) >= DEAD_AFTER_PARTNERS:
                self.dead.add(a)


def pair_hosts(scheduler: Scheduler, plans: PairPlans) -> tuple[list[HostExec], Allocation]:
    """The hosts of the scheduler in its order (rank i is host i) and the allocation every
    pair job is cut from."""
    if not isinstance(scheduler, DirectScheduler):
        raise FabenchError(f"--kernel tcp starts its pair jobs from here: --on testbed or --on "
                           f"hosts FILE, not {scheduler.name} (inside a Slurm allocation: "
                           "`scontrol show hostnames > nodes.txt`, then --on hosts nodes.txt)")
    alloc = scheduler.allocation(plans.latency)
    hosts = list(alloc.execs.values())
    if len(hosts) < 2 or not alloc.remote:
        raise FabenchError(f"--kernel tcp needs two or more hosts; {scheduler.describe()} "
                           f"offers {len(hosts)}")
    return hosts, alloc


def run_job(starter: Starter, alloc: Allocation, planned: PlannedRun, job: Job,
            hosts: Sequence[HostExec], deadline: float) -> Job:
    """Start one kernel from hosts[src] (client) to hosts[dst] (server) with the scheduler's
    pair starter."""
    left = deadline - time.monotonic()
    if left <= 1.0:
        job.failure, job.timed_out = "the pass ran out of time (--timeout)", True
        return job
    placed = [HostSlots(hosts[job.src].name), HostSlots(hosts[job.dst].name)]
    run = replace(planned, timeout_s=left)
    try:
        res = starter.start(run, replace(alloc, placed=placed))
    except FabenchError as exc:
        job.failure = str(exc)
        return job
    job.command = shlex.join(res.command)
    out = res.output
    if out.skip_reason or res.returncode == SKIP_EXIT:
        job.failure = f"skipped: {out.skip_reason or 'the kernel cannot run here'}"
    elif res.returncode != 0 or out.errors or len(out.results) != 1:
        job.failure = failure_reason(res.stderr, res.returncode, out.errors) + \
            ("".join(f"; {n}" for n in res.notes))
        job.timed_out = time.monotonic() >= deadline
    else:
        job.result = out.results[0]
    return job


PAIR_THREADS = "matrix-pair"  # the name of the pair jobs' threads (_end_started)


def phase(starter: Starter, alloc: Allocation, planned: PlannedRun, jobs: list[Job],
          hosts: Sequence[HostExec], deadline: float, concurrent: bool) -> list[Job]:
    """One phase: every job at once (concurrent) or one after the other."""
    if not concurrent or len(jobs) == 1:
        return [run_job(starter, alloc, planned, j, hosts, deadline) for j in jobs]
    # Not `with`: its exit waits for every job, and an interrupted pass must get to end the
    # jobs' processes (run_tcp_pass) instead of waiting for them.
    ex = ThreadPoolExecutor(max_workers=len(jobs), thread_name_prefix=PAIR_THREADS)
    try:
        futures = [ex.submit(run_job, starter, alloc, planned, j, hosts, deadline)
                   for j in jobs]
        return [f.result() for f in futures]
    finally:
        ex.shutdown(wait=False, cancel_futures=True)


def record(lat: Job, bw: Job, hosts: Sequence[HostExec], rnd: int, mode: str) -> PairRecord:
    assert lat.result is not None and bw.result is not None
    b = bw.result
    return PairRecord(src=lat.src, dst=lat.dst, src_host=hosts[lat.src].name,
                      dst_host=hosts[lat.dst].name, round=rnd, mode=mode, size=b.size,
                      window=round(b.messages_per_sample), bytes_per_sample=b.bytes_per_sample,
                      latency_us=list(lat.result.times), bandwidth_us=list(b.times))


def measure_round(starter: Starter, alloc: Allocation, plans: PairPlans, rnd: int,
                  pairs: list[Link], wanted: set[Link], hosts: Sequence[HostExec],
                  state: PassState, mode: str, deadline: float,
                  on_pair: Callable[[PairRecord], None]) -> None:
    """The four phases of one round over its pairs (all at once, or pair by pair)."""
    concurrent = mode == "concurrent"
    groups = [pairs] if concurrent else [[p] for p in pairs]
    for group in groups:
        for way in (0, 1):
            dirs = [(a, b) if way == 0 else (b, a) for a, b in group]
            dirs = [d for d in dirs if d in wanted and not state.dead & set(d)]
            if not dirs:
                continue
            lat = phase(starter, alloc, plans.latency, [Job(*d) for d in dirs], hosts,
                        deadline, concurrent)
            ok = [j for j in lat if j.result is not None]
            bw = phase(starter, alloc, plans.bandwidth, [Job(j.src, j.dst) for j in ok],
                       hosts, deadline, concurrent) if ok else []
            by_dir = {(j.src, j.dst): j for j in bw}
            for j in lat:
                b = by_dir.get((j.src, j.dst))
                if b is None or b.result is None:
                    state.lost(b or j, hosts)  # no b: the latency job failed
                    continue
                state.command = state.command or b.command
                rec = record(j, b, hosts, rnd, mode)
                state.records.append(rec)
                on_pair(rec)


def _end_started(before: set[tuple[int, int | None]]) -> None:
    """End the processes this pass started (descendants of this process that were not there
    when it began), by PID and start time: a thread's pair job has no handle here.

    Swept again while pair-job threads live: a job between its two sides starts its client
    after the first sweep (its server already ended), and the client then waits for a peer
    that is gone while the interpreter waits for the thread (a SIGINT'd matrix did not exit
    within 60 s)."""
    end = time.monotonic() + TEARDOWN_GRACE_S
    while True:
        mine = [p for p in descendants(os.getpid()) if p not in before and p[1] is not None]
        kill_same(mine, signal.SIGTERM)
        while time.monotonic() < end and any(proc_start(p) == s for p, s in mine):
            time.sleep(0.05)
        kill_same(mine, signal.SIGKILL)
        if not _pair_threads_alive() or time.monotonic() >= end + TEARDOWN_GRACE_S:
            return
        time.sleep(0.05)


def _pair_threads_alive() -> bool:
    return any(t.name.startswith(PAIR_THREADS) and t.is_alive() for t in threading.enumerate())


def run_tcp_pass(store: MatrixStore, scheduler: Scheduler, plans: PairPlans, n: int, mode: str,
                 pairs: Sequence[Link] | None, campaign_id: int, role: str,
                 timeout_s: float, progress: Callable[[str], None] | None = None) -> Pass:
    """Measure the wanted directions among hosts 0 .. n-1 of the scheduler, store them as
    one run of the campaign, and return the pass."""
    hosts, alloc = pair_hosts(scheduler, plans)
    starter = scheduler.starter_for(plans.latency.kernel)  # here, not in each job's thread
    hosts = hosts[:n]
    wanted = {(i, j) for i in range(n) for j in range(n) if i != j} if pairs is None \
        else {p for p in pairs if max(p) < n}
    settings: dict[str, Any] = {
        "kernels": [LAT_KERNEL, BW_KERNEL], "mode": mode,
        "latency": plans.latency.record(), "bandwidth": plans.bandwidth.record(),
        **({"pairs": sorted(wanted)} if pairs is not None else {})}
    run_id = store.begin_run(campaign_id=campaign_id, key=f"{PASS_NAME}:{role}:{mode}",
                             kernel=PASS_NAME, transport="tcp", mpi="", ranks=n,
                             launcher=scheduler.name, repeat=0, settings=settings)
    state = PassState(n)
    load_start = load_snapshot()
    t0 = time.monotonic()
    deadline = t0 + timeout_s
    before = set(descendants(os.getpid()))
    lock = threading.Lock()

    def on_pair(rec: PairRecord) -> None:
        with lock:
            store.add_matrix_pair(run_id, rec)

    rounds = tournament(n)
    status, reason = "ok", None
    try:
        for r, rp in enumerate(rounds):
            todo = [p for p in rp if (p in wanted or p[::-1] in wanted)]
            if not todo:
                continue
            if time.monotonic() >= deadline:
                state.timed_out = True
                break
            if progress is not None:
                progress(f"round {r + 1}/{len(rounds)}: {len(todo)} pair"
                         f"{'s' if len(todo) != 1 else ''} {mode}")
            measure_round(starter, alloc, plans, r, todo, wanted, hosts, state, mode,
                          deadline, on_pair)
    except KeyboardInterrupt as exc:
        _end_started(before)
        store.finish_run(run_id, status="interrupted",
                         reason=str(exc) or "interrupted by the user",
                         provenance={"load_start": load_start, "load_end": load_snapshot()})
        raise
    missing = len(wanted) - len(state.records)
    if missing:
        gone = ", ".join(hosts[h].name for h in sorted(state.dead))
        status = "failed"
        reason = (f"{missing} of {len(wanted)} directions not measured"
                  + (f" (hosts given up: {gone})" if gone else "")
                  + (f" (the pass's --timeout of {timeout_s:g} s ran out)"
                     if state.timed_out else "")
                  + (f"; first: {state.failures[0]}" if state.failures else ""))
    store.finish_run(
        run_id, status=status, reason=reason, notes=state.failures[:50],
        command=state.command or None,
        kernel_meta={"hosts": [h.name for h in hosts], "kernels": [LAT_KERNEL, BW_KERNEL],
                     "dead": [hosts[h].name for h in sorted(state.dead)]},
        provenance={"load_start": load_start, "load_end": load_snapshot(),
                    "launcher": scheduler.describe(), "starter": "pair",
                    "elapsed_s": time.monotonic() - t0})
    return Pass(run_id, mode, role, status, reason, state.records,
                [h.name for h in hosts], time.monotonic() - t0)
