"""Measure an all-pairs matrix: plan mpi.matrix over a scheduler's hosts (one rank per host),
or tcp pair jobs round by round where there is no MPI (matrix/pairwise.py), run the first
pass, retest the suspects one pair at a time, judge, store.

A matrix is one campaign in the store (`matrix`): the first pass and the retest are its runs
(kernel mpi.matrix, or matrix.tcp), each measured direction a row of `matrix_pairs` with its
samples, and the judgement (verdicts with their evidence, the groups) a row of `matrices`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..analysis.host_load import load_warning
from ..errors import FabenchError
from ..host.placement import cpu_count
from ..host.provenance import host_provenance
from ..plan.plan import KernelSettings, PlannedRun, Sizes, plan_run
from ..records import PairRecord
from ..run.runner import execute_run
from ..schedulers import Scheduler
from .judge import (
    GROUP_KINDS,
    GroupFinding,
    Groups,
    Judgement,
    Link,
    Matrix,
    Suspects,
    analyse,
    find_suspects,
    judge,
)
from .pairwise import PairPlans, run_tcp_pass
from .passes import Pass
from .stored import MatrixStore
from .topology import Topology, infer_topology, read_topology

KERNEL = "mpi.matrix"
# Isolated retests a suspect must survive, each measuring only the survivors of the one before
# (ClusterKit retests in rounds too). One retest of a healthy direction on a loaded host still
# scores above 3.5 now and then (a burst of other work during its few windows); needing two
# makes that the product of two small chances, and costs time only where a fault is.
RETESTS = 2
MODES = ("concurrent", "isolated")
# How the directions are measured: one mpi.matrix job per pass, or tcp.latency and tcp.bw
# pair jobs (no MPI on the hosts).
KERNELS = ("mpi", "tcp")


@dataclass(frozen=True)
class MatrixOptions:
    """What one matrix measures. The defaults keep an 8-host matrix on a 2-core testbed to tens
    of seconds: 4 windows of 4 x 1 MiB per direction (16 MiB) and 200 ping-pongs."""

    size: str = "1M"
    window: int = 4
    iterations: int = 4
    warmup: int = 1
    lat_iterations: int = 200
    lat_warmup: int = 20
    mode: str = "concurrent"
    kernel: str = "mpi"  # mpi (mpi.matrix) or tcp (pair jobs, no MPI)
    pairs: tuple[Link, ...] | None = None  # only these directions (rank numbers)
    retest: bool = True
    mpi: str = "openmpi"
    transport: str = "tcp"
    hosts: int | None = None  # the number of hosts, where the scheduler cannot say
    timeout_s: float = 1800.0
    topology: str | None = None  # a declared topology file
    groups: int | None = None  # switch groups to cut the clustering into; None: inferred

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise FabenchError(f"matrix mode {self.mode!r}: concurrent or isolated")
        if self.kernel not in KERNELS:
            raise FabenchError(f"--kernel {self.kernel!r}: mpi (one mpi.matrix job) or tcp "
                               "(tcp.latency and tcp.bw pair jobs, no MPI)")
        for name, top in (("window", 1_000_000), ("iterations", MAX_COUNT),
                          ("lat_iterations", MAX_COUNT)):
            # the kernels' own bounds (native/common/fb_opts.c: --window 1..1e6,
            # --lat-iterations 1..1e8); --iterations windows of --window messages each
            if not 1 <= getattr(self, name) <= top:
                raise FabenchError(f"--{name.replace('_', '-')} must be 1..{top:,}, got "
                                   f"{getattr(self, name)}")
        if self.hosts is not None and not 2 <= self.hosts <= MAX_MATRIX_HOSTS:
            raise FabenchError(f"--hosts must be 2..{MAX_MATRIX_HOSTS:,}, got {self.hosts}")
        if self.groups is not None and self.groups < 1:
            raise FabenchError(f"--groups must be >= 1, got {self.groups}")
        Sizes.parse(self.size)


# Every ordered pair of N hosts is a direction: 4,096 hosts are 16.8 million of them, in 4,095
# rounds; beyond, the list of directions alone fills gigabytes (--hosts 1e6 hung building it).
MAX_MATRIX_HOSTS = 4096
MAX_COUNT = 100_000_000  # --lat-iterations' bound in the kernel (fb_opts.c)


def host_count(scheduler: Scheduler, asked: int | None) -> int:
    """One rank per host: how many hosts the scheduler offers."""
    names = scheduler.host_names()
    if names is not None:
        # host names are case-blind (RFC 4343): `node1` and `NODE1` are one machine
        folded = [h.lower() for h in names]
        twice = sorted({h for h in names if folded.count(h.lower()) > 1})
        if twice:
            # one rank per host: a host listed twice would be two ranks on one machine, a
            # "link" from the host to itself
            raise FabenchError(f"{scheduler.describe()}: {', '.join(twice)} listed more than "
                               "once; a matrix takes each host once")
    if names is not None and len(names) > 1:
        n = len(names)
    elif asked is None:
        raise FabenchError(f"{scheduler.name}: say how many hosts the matrix spans (--hosts N, "
                           "one rank per host; for Slurm also -N N --ntasks-per-node=1)")
    else:
        n = asked
    if asked is not None and asked != n:
        raise FabenchError(f"--hosts {asked}: {scheduler.describe()} has {n} hosts")
    if n < 2:
        raise FabenchError(f"a matrix needs at least 2 hosts, {scheduler.describe()} has {n}")
    if n > MAX_MATRIX_HOSTS:
        raise FabenchError(f"{scheduler.describe()} has {n:,} hosts; a matrix takes up to "
                           f"{MAX_MATRIX_HOSTS:,} ({MAX_MATRIX_HOSTS * (MAX_MATRIX_HOSTS - 1):,} "
                           "directions)")
    return n


@dataclass(frozen=True)
class Unreachable:
    host: str
    why: str

    @property
    def line(self) -> str:
        return f"host {self.host} unreachable ({self.why}): measured the others without it"


def probe_hosts(scheduler: Scheduler) -> list[Unreachable]:
    """Hosts the scheduler cannot reach now (a hostfile's host that does not answer ssh),
    each with why. A testbed's hosts are made here; Slurm gives what it allocated."""
    return [Unreachable(h, why) for h, why in scheduler.unreachable_hosts()]


def without(scheduler: Scheduler, gone: list[Unreachable]) -> Scheduler:
    """The same scheduler without the unreachable hosts."""
    if not gone:
        return scheduler
    names = {u.host for u in gone}
    return scheduler.on_hosts([h for h in scheduler.host_names() or [] if h not in names])


def host_names(scheduler: Scheduler) -> list[str] | None:
    """The hosts' names in rank order where the scheduler knows them (a testbed, a hostfile,
    a site's scheduler that offers them), so that --pairs may name hosts."""
    return scheduler.host_names()


def parse_pairs(text: str, hosts: Sequence[str] | None = None) -> tuple[Link, ...]:
    """`i:j,...` (rank numbers, or host names where hosts are known) as ordered pairs."""
    out = []
    for word in (w.strip() for w in text.split(",")):
        a, sep, b = word.partition(":")
        if not sep:
            raise FabenchError(f"--pairs {text!r}: each pair is SRC:DST (e.g. 0:3,3:0)")
        ends = []
        for x in (a.strip(), b.strip()):
            if x.isascii() and x.isdigit():  # '²' is a digit to isdigit(), not to int()
                ends.append(int(x))
            elif hosts is not None and x in hosts:
                ends.append(list(hosts).index(x))
            else:
                raise FabenchError(f"--pairs {text!r}: {x!r} is neither a rank number nor a "
                                   "host of this matrix")
        if ends[0] == ends[1]:
            raise FabenchError(f"--pairs {text!r}: a pair needs two different hosts")
        if (ends[0], ends[1]) in out:
            # a direction asked twice was measured twice, as two links
            raise FabenchError(f"--pairs {text!r}: {a.strip()}:{b.strip()} is given twice")
        out.append((ends[0], ends[1]))
    return tuple(out)


def plan_pass(n: int, opts: MatrixOptions, mode: str,
              pairs: Sequence[Link] | None) -> PlannedRun:
    extra = ["--mode", mode, "--lat-iterations", str(opts.lat_iterations),
             "--lat-warmup", str(opts.lat_warmup)]
    if pairs is not None:
        if any(not (0 <= i < n and 0 <= j < n) for i, j in pairs):
            raise FabenchError(f"--pairs: rank numbers are 0 .. {n - 1} here")
        extra += ["--pairs", ",".join(f"{i}:{j}" for i, j in pairs)]
    settings = KernelSettings(sizes=Sizes.parse(opts.size), iterations=opts.iterations,
                              warmup=opts.warmup, window=opts.window, extra=tuple(extra))
    return plan_run(KERNEL, transport=opts.transport, ranks=n, mpi=opts.mpi, settings=settings,
                    timeout_s=opts.timeout_s)


def run_pass(store: MatrixStore, scheduler: Scheduler, planned: PlannedRun, campaign_id: int,
             mode: str, role: str = "first") -> Pass:
    pairs: list[PairRecord] = []

    def on_pair(run_id: int, obj: dict[str, Any]) -> bool:
        if obj.get("type") != "pair":
            return False
        rec = PairRecord.from_json(obj)
        store.add_matrix_pair(run_id, rec)
        pairs.append(rec)
        return True

    t0 = time.monotonic()
    try:
        oc = execute_run(store, scheduler, planned, campaign_id, on_other=on_pair)
    finally:
        store.commit_pairs()
    meta = store.run(oc.run_id).kernel_meta or {}
    hosts = [str(h) for h in meta.get("hosts", [])]
    return Pass(oc.run_id, mode, role, oc.status, oc.reason, pairs, hosts,
                time.monotonic() - t0)


def _say(text: str) -> None:
    print(f"# matrix: {text}", file=sys.stderr, flush=True)


# The kernel takes its pairs as one argument, and Linux refuses an exec whose single argument
# exceeds MAX_ARG_STRLEN, 32 pages = 128 KiB (include/uapi/linux/binfmts.h). A resume or a
# retest at 1024 hosts can want a million pairs: they go in several jobs, each argument well
# inside the limit (launchers and remote shells may quote or relay it).
PAIRS_TEXT_MAX = 64 * 1024


def pair_chunks(pairs: Sequence[Link], limit: int = PAIRS_TEXT_MAX) -> list[list[Link]]:
    """The pairs in runs whose `--pairs i:j,...` text stays within `limit` characters."""
    chunks: list[list[Link]] = [[]]
    size = 0
    for i, j in pairs:
        cost = len(f"{i}:{j},")
        if chunks[-1] and size + cost > limit:
            chunks.append([])
            size = 0
        chunks[-1].append((i, j))
        size += cost
    return chunks


def measure_pass(store: MatrixStore, scheduler: Scheduler, n: int, opts: MatrixOptions, mode: str,
                 pairs: Sequence[Link] | None, campaign_id: int, role: str) -> list[Pass]:
    """One pass over the wanted directions (None: all), by the kernel the options name: one
    job, or several where the pairs are too many for one command line."""
    if opts.kernel == "mpi":
        chunks: Sequence[Sequence[Link] | None] = \
            [None] if pairs is None else pair_chunks(pairs, PAIRS_TEXT_MAX)
        return [run_pass(store, scheduler, plan_pass(n, opts, mode, chunk), campaign_id, mode,
                         role) for chunk in chunks]
    if pairs is not None and any(not (0 <= i < n and 0 <= j < n) for i, j in pairs):
        raise FabenchError(f"--pairs: rank numbers are 0 .. {n - 1} here")
    plans = PairPlans.of(opts.size, opts.window, opts.iterations, opts.warmup,
                         opts.lat_iterations, opts.lat_warmup)
    return [run_tcp_pass(store, scheduler, plans, n, mode, pairs, campaign_id, role,
                         opts.timeout_s, _say if role == "first" else None)]


@dataclass
class MatrixOutcome:
    campaign_id: int
    hosts: list[str]
    judgement: Judgement
    topology: Topology
    passes: list[Pass] = field(default_factory=list)
    unreachable: list[Unreachable] = field(default_factory=list)
    # the host was loaded while the ranks ran here (a testbed): latency verdicts then can
    # come from the load, not the fabric (seen at load average 11 on 2 cores)
    warnings: list[str] = field(default_factory=list)

    @property
    def exit_status(self) -> int:
        """0: nothing flagged; 3: a link or node flagged (the status a nightly job pages on)."""
        return 3 if self.judgement.flagged else 0

    def to_json(self) -> dict[str, Any]:
        return {"campaign_id": self.campaign_id, "hosts": self.hosts,
                **self.judgement.to_json(), "topology": self.topology.to_json(),
                "passes": [_pass_json(p.run_id, p.mode, p.role, p.status, p.reason,
                                      len(p.pairs), p.wall_s) for p in self.passes],
                "unreachable": [asdict(u) for u in self.unreachable],
                "warnings": self.warnings,
                "exit_status": self.exit_status}


def oversubscribed(passes: Sequence[Pass], n: int, kernel: str, cores: int,
                   flagged: Sequence[bool], here: bool) -> str | None:
    """One line when a pass ran more processes than this machine has cores, and what that does
    to the verdicts."""
    over = []
    for p, flag in zip(passes, flagged, strict=True):
        # mpi.matrix: every rank of the job exists in every pass, isolated ones too;
        # tcp: a concurrent round runs a client and a server per pair, an isolated one two
        procs = n if kernel == "mpi" else (2 * (n // 2) if p.mode == "concurrent" else 2)
        if flag or (here and procs > cores):
            over.append(f"{p.role} run {p.run_id} ({procs} processes)")
    if not over:
        return None
    return (f"oversubscribed: {len(over)} of {len(passes)} passes ran more processes than the "
            f"{cores} cores ({', '.join(over[:4])}{' ...' if len(over) > 4 else ''}): ranks "
            "that wait their turn share the cores with the pair being measured, so latencies "
            "carry the scheduler's delays: a latency verdict, or its absence, is weaker than a "
            "bandwidth one (bandwidth is measured over whole windows); fewer hosts per core, "
            "or real hosts, give latencies to trust")


def judged_groups(hosts: Sequence[str], topo: Topology) -> Groups | None:
    """The groups the judge scores within: the declared switches where a topology file names
    them, else the groups the links separate; None with one group."""
    if topo.declared:
        g = Groups.declared(hosts, topo.declared)
    else:
        g = Groups.of(topo.groups, hosts=hosts)
    return g if len(g.members) >= 2 else None


def survivors(verdict: Judgement, asked: Suspects) -> Suspects:
    """The suspects a retest confirmed, to be retested again (unreachable ones are not)."""
    idx = {h: i for i, h in enumerate(verdict.hosts)}
    links = frozenset((idx[v.src], idx[v.dst]) for v in verdict.verdicts
                      if v.dst is not None and v.kind in ("bad link", "asymmetric link"))
    nodes = frozenset(idx[v.src] for v in verdict.verdicts if v.kind == "slow node")
    # A suspect link of a host called slow was not judged (the host explains it): it stays
    # suspect while the host does, so a host cleared by the next retest leaves its link judged
    # (a 5-host testbed lost its planted 50 Mbit link h2 -> h4 behind a noise "slow node h2"
    # that the second retest cleared).
    links |= {link for link in asked.links if set(link) & nodes}
    held = {(v.kind, v.hosts) for v in verdict.verdicts if v.kind in GROUP_KINDS}
    groups = tuple(fd for fd in asked.groups if verdict.groups is not None and
                   (fd.kind, _hosts_of(verdict.groups, fd)) in held)
    return Suspects(links, nodes, asked.references, groups)


def _hosts_of(groups: Groups, fd: GroupFinding) -> tuple[str, ...]:
    return tuple(h for k in fd.groups for h in groups.members[k])


def _names(n: int, meta_hosts: list[str], pairs: list[PairRecord]) -> list[str]:
    """Host names by rank: the kernel's meta record, else the pair records."""
    by_rank = {p.src: p.src_host for p in pairs} | {p.dst: p.dst_host for p in pairs}
    hosts = meta_hosts if len(meta_hosts) == n else [by_rank.get(r, f"rank{r}")
                                                     for r in range(n)]
    # two ranks on one host name (a node's processor name repeated): tell them apart by rank
    return hosts if len(set(hosts)) == n else [f"{h}#{r}" for r, h in enumerate(hosts)]


@dataclass
class Resumed:
    """What an earlier attempt at a matrix left: its first-pass measurements and passes."""

    pairs: list[PairRecord]
    passes: list[dict[str, Any]]  # as the matrix's JSON lists them
    judged: bool  # the attempt ended with a stored judgement (else it was killed before)


def _pass_json(run_id: int, mode: str, role: str, status: str, reason: str | None,
               directions: int, wall_s: float | None) -> dict[str, Any]:
    return {"run_id": run_id, "mode": mode, "role": role, "status": status, "reason": reason,
            "directions": directions, "wall_s": None if wall_s is None else round(wall_s, 3)}


def _unjudged(store: MatrixStore, cid: int) -> Resumed:
    """An attempt killed before its judgement (Ctrl-C, a lost login, the batch job's time
    limit): each direction's earliest measurement among the campaign's runs is its first
    pass, so a retest the attempt had begun counts for nothing."""
    if store.campaign(cid).name != "matrix":
        raise FabenchError(f"campaign {cid} is not a matrix")
    seen: set[Link] = set()
    pairs: list[PairRecord] = []
    passes = []
    for run in store.runs(cid):
        mine = [p for p in store.matrix_pairs(run.id) if (p.src, p.dst) not in seen]
        if mine:
            seen.update((p.src, p.dst) for p in mine)
            pairs += mine
            passes.append(_pass_json(run.id, mine[0].mode, "first", run.status, run.reason,
                                     len(mine),  # a killed run has no end time
                                     run.finished - run.started if run.finished else None))
    return Resumed(pairs, passes, judged=False)


def _resumed(store: MatrixStore, cid: int, n: int, total: int,
             asked: list[Link]) -> tuple[Resumed, list[Link]]:
    """The directions a stored matrix's first pass measured, and those it still lacks."""
    if cid in store.matrices():
        hosts, old = store.matrix(cid)
        done = Resumed([rec for p in old.get("passes", []) if p.get("role") == "first"
                        for rec in store.matrix_pairs(int(p["run_id"]))],
                       list(old.get("passes", [])), judged=True)
        where = len(hosts)
    else:
        done = _unjudged(store, cid)
        where = max((max(p.src, p.dst) + 1 for p in done.pairs), default=0)
    # a killed attempt may have measured no direction of the last hosts yet
    if (where != total) if done.judged else (where > total):
        raise FabenchError(f"matrix {cid} spans {where} hosts, this place {total}: "
                           "resume it where it ran")
    measured = {(p.src, p.dst) for p in done.pairs}
    return done, [link for link in asked if link not in measured and max(link) < n]


def measure_matrix(store_path: Path, scheduler: Scheduler, opts: MatrixOptions,
                   resume: int | None = None) -> MatrixOutcome:
    """Measure, retest, judge and store a matrix; `resume` (a matrix's campaign id) measures
    only the directions its first pass lacks (a host died mid-matrix) and judges them all."""
    gone = probe_hosts(scheduler)
    total = host_count(scheduler, opts.hosts)
    scheduler = without(scheduler, gone)
    # the reachable hosts are ranks 0 .. n-1; the unreachable ones follow, with no link
    n = total - len(gone)
    if n < 2:
        raise FabenchError("fewer than 2 hosts reachable: " +
                           "; ".join(u.line for u in gone))
    declared = read_topology(opts.topology) if opts.topology else None
    if opts.groups is not None and opts.groups > total:
        # more switch groups than hosts was taken, and the matrix measured, then cut nothing
        raise FabenchError(f"--groups {opts.groups}: the matrix spans {total} hosts")
    asked = list(opts.pairs) if opts.pairs is not None else \
        [(i, j) for i in range(total) for j in range(total) if i != j]
    with MatrixStore(store_path) as store:
        earlier = Resumed([], [], judged=False)
        if resume is None:
            spec = {"matrix": {**asdict(opts), "pairs": opts.pairs and list(opts.pairs)},
                    "on": scheduler.describe()}
            cid = store.begin_campaign("matrix", spec, host_provenance())
            todo: list[Link] | None = list(opts.pairs) if opts.pairs is not None else None
        else:
            cid = resume
            earlier, todo = _resumed(store, cid, n, total, asked)
            if not todo and (earlier.judged or not earlier.pairs):
                raise FabenchError(f"matrix {cid} lacks no direction: nothing to resume")
            store.reopen_campaign(cid)
        try:
            # an attempt killed after its first pass has nothing left to measure: judge it
            firsts = [] if todo == [] else \
                measure_pass(store, scheduler, n, opts, opts.mode, todo, cid, "first")
            failed = [p for p in firsts if p.status != "ok"]
            status = failed[0].status if failed else "ok"
            measured = [*earlier.pairs, *(rec for p in firsts for rec in p.pairs)]
            if failed and not measured:
                store.end_campaign(cid, "failed")
                what = KERNEL if opts.kernel == "mpi" else "the tcp pair jobs"
                raise FabenchError(f"{what} failed before measuring any pair: "
                                   f"{failed[0].reason}")
            meta = next((p.hosts for p in firsts if len(p.hosts) == n), [])
            hosts = _names(n, meta, measured) + [u.host for u in gone]
            m1 = Matrix.of(hosts, measured)
            # groups first: links are scored within their switch-pair class, leaves and
            # uplinks against the other group pairs
            topo = infer_topology(m1, opts.groups, declared)
            groups = judged_groups(hosts, topo)
            analysis = analyse(m1, groups)
            suspects = find_suspects(m1, analysis=analysis, screen=opts.retest)
            passes = list(firsts)
            verdict = judge(m1, None, suspects, asked, analysis=analysis)
            current, cleared = suspects, []
            for _ in range(RETESTS if opts.retest else 0):
                if current.empty:
                    break
                again = measure_pass(store, scheduler, n, opts, "isolated",
                                     current.retest_pairs(n), cid, "retest")
                passes += again
                verdict = judge(m1, Matrix.of(hosts, [r for p in again for r in p.pairs]),
                                current, asked, analysis=analysis)
                cleared += verdict.cleared
                current = survivors(verdict, current)
            verdict.suspects, verdict.cleared = suspects, cleared
            loaded = load_warning([store.run(p.run_id) for p in passes], cpu_count()) \
                if scheduler.ranks_here else None
            over = oversubscribed(passes, n, opts.kernel, cpu_count(),
                                  [store.run(p.run_id).oversubscribed for p in passes],
                                  scheduler.ranks_here)
            if over:
                _say(over)
            out = MatrixOutcome(cid, hosts, verdict, topo, passes, gone,
                                [w for w in (over, loaded) if w])
            j = out.to_json()
            # the runs of the earlier attempt stay part of the matrix
            j["passes"] = [*earlier.passes, *j["passes"]]
            store.save_matrix(cid, hosts, j)
            store.end_campaign(cid, "finished" if status == "ok" else status)
        except KeyboardInterrupt:
            store.end_campaign(cid, "interrupted")
            raise
    return out
