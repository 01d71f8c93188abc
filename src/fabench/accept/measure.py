"""What each kind of check measures, through the existing commands' own functions.

Each `measure_*` returns a `Measured` (value, interval, evidence); the p2p, collective and
HPL ones can measure again (`more`), which the budget loop uses for inconclusive checks.
Measurements are shared: the latency checks at 8 B and at 4 KiB of one transport are one
mpi.latency sweep over both sizes, the two HPL checks one table, the two matrix checks one
matrix.
"""

from __future__ import annotations

import os
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ..congestion import CongestionConfig, VictimSettings, congestion_campaign
from ..diagnose.reorder import ReorderOptions, run_reorder
from ..diagnose.session import TransportsOptions, run_transports
from ..doctor.checks import mpi_checks
from ..errors import FabenchError
from ..host.target import Target
from ..hpc.options import HpccOptions
from ..hpl.nodes import NodeReport, OnNodes, run_nodes
from ..kernels import get_kernel
from ..kernels.native import kernel_status
from ..matrix.measure import MatrixOptions, measure_matrix, probe_hosts
from ..metrics import BANDWIDTH, LATENCY, Metric
from ..model.catalog import load_fabric
from ..model.collectives import predict_all
from ..model.cost import Cluster
from ..model.topology import TopologySpec
from ..plan.plan import KernelSettings, PlannedRun, Sizes, plan_run
from ..run.runner import execute_run
from ..schedulers import DirectScheduler, Scheduler
from ..schedulers.testbed import AutoScheduler, TestbedScheduler
from ..store.database import Store
from ..tune.audit import check as tune_check
from ..tune.profiles import load_profile
from ..tune.targets import testbed_targets
from ..util.stats import median_ci, median_ci_runs
from .checks import SEVERITIES
from .spec import AcceptSpec, PlannedCheck
from .verdict import Measured

Say = Callable[[str], None]


def _say(text: str) -> None:
    print(f"fabench: {text}", file=sys.stderr)


@dataclass
class Context:
    spec: AcceptSpec
    scheduler: Scheduler
    store_path: Path
    campaign_id: int  # the acceptance's own campaign: p2p and collective runs go there
    say: Say = _say
    cache: dict[object, object] = field(default_factory=dict)

    @property
    def mpi(self) -> str:
        return self.spec.model.mpi

    def hosts(self) -> list[str]:
        if isinstance(self.scheduler, DirectScheduler):
            return list(self.scheduler.allocation(plan_run("mpi.latency", ranks=2,
                                                           mpi=self.mpi)).execs)
        return []


# ---- runs of one configuration, pooled ----------------------------------------------------
@dataclass
class Series:
    """Runs of one kernel configuration; each size's values per run."""

    planned: PlannedRun
    scheduler: Scheduler
    metric: Metric
    run_ids: list[int] = field(default_factory=list)
    values: dict[int, list[list[float]]] = field(default_factory=dict)  # size -> per run

    def run_once(self, ctx: Context) -> None:
        with Store(ctx.store_path) as store:
            rep = len(self.run_ids)
            planned = replace(self.planned, repeat=rep)
            oc = execute_run(store, self.scheduler, planned, ctx.campaign_id)
            self.run_ids.append(oc.run_id)
            if oc.status != "ok":
                raise FabenchError(f"{planned.label_text}: run {oc.run_id} {oc.status}: "
                                   f"{oc.reason}")
            for rec in store.results(oc.run_id):
                vals = self.metric.values(rec.times, rec.bytes_per_sample,
                                          rec.messages_per_sample)
                self.values.setdefault(rec.size, []).append(
                    [float(v) for v in vals if np.isfinite(v)])

    def at(self, size: int) -> Measured:
        per_run = self.values.get(size)
        if not per_run:
            raise FabenchError(f"{self.planned.kernel.name}: no result at {size} B "
                               f"(runs {', '.join(map(str, self.run_ids))})")
        pooled = [v for r in per_run for v in r]
        ci = median_ci_runs(per_run)
        how = f"median of {len(pooled)} samples in {len(per_run)} run(s), 95 % {ci.method}"
        if ci.point_outside:  # runs that disagree: the bootstrap's interval misses the median
            how += " (the interval misses the median: the runs disagree; repeat more)"
        return Measured(float(np.median(pooled)), ci.low if ci.defined else None,
                        ci.high if ci.defined else None, how, list(self.run_ids),
                        runs=len(per_run))


def _sizes_of(ctx: Context, pick: Callable[[PlannedCheck], bool]) -> str:
    sizes = sorted({c.check.size for c in ctx.spec.checks if pick(c) and c.check.size is not None})
    return ",".join(str(s) for s in sizes)


def _largest(ctx: Context, pick: Callable[[PlannedCheck], bool], option: str) -> int | None:
    """The largest value of a check option (iterations, warmup, window) that the checks sharing
    one series ask for; None: the kernel's own."""
    vs = [v for c in ctx.spec.checks if pick(c) and (v := getattr(c.item, option)) is not None]
    return max(vs) if vs else None


def _series(ctx: Context, key: object, make: Callable[[], Series]) -> Series:
    s = ctx.cache.get(key)
    if not isinstance(s, Series):
        s = make()
        for _ in range(ctx.spec.model.repeats):
            s.run_once(ctx)
        ctx.cache[key] = s
    return s


# ---- point to point -------------------------------------------------------------------------
def _p2p_series(ctx: Context, pc: PlannedCheck) -> Series:
    kernel = "mpi.latency" if pc.check.metric.name == "latency_us" else "mpi.bw"
    transport = pc.item.transport
    hosts = tuple(pc.item.hosts or ())

    def same(o: PlannedCheck) -> bool:
        return o.check.metric == pc.check.metric and o.item.transport == transport and \
            tuple(o.item.hosts or ()) == hosts

    def make() -> Series:
        settings = KernelSettings(sizes=Sizes.parse(_sizes_of(ctx, same)),
                                  iterations=_largest(ctx, same, "iterations"),
                                  warmup=_largest(ctx, same, "warmup"),
                                  window=_largest(ctx, same, "window"))
        planned = plan_run(kernel, transport=transport, ranks=2, mpi=ctx.mpi, settings=settings,
                           timeout_s=ctx.spec.model.timeout_s, label="accept")
        sched = ctx.scheduler
        if isinstance(sched, DirectScheduler):
            names = list(hosts) or ctx.hosts()[:2]
            on = names[:1] if planned.transport.on_node or len(names) < 2 else names
            sched = OnNodes(sched, on)
        elif not planned.transport.on_node and (sched.allocation_nodes() or 1) >= 2:
            # a batch system would place both ranks on one node where it has the cores
            sched = sched.spread(2, 1)
        return Series(planned, sched, LATENCY if kernel == "mpi.latency" else BANDWIDTH)

    return _series(ctx, ("p2p", kernel, transport, hosts), make)


def measure_p2p(ctx: Context, pc: PlannedCheck, more: bool = False) -> Measured:
    s = _p2p_series(ctx, pc)
    if more:
        s.run_once(ctx)
    assert pc.check.size is not None
    m = s.at(pc.check.size)
    where = s.scheduler.describe()
    m.detail.append(f"{s.planned.kernel.name} {s.planned.transport} on {where}")
    return m


# ---- collectives against the model ----------------------------------------------------------
def allocation_shape(ctx: Context, ranks_per_node: int | None) -> tuple[int, int]:
    """(nodes, ranks per node) of a run over the whole allocation: every host the scheduler
    places ranks on, or every node a batch system allocates (Slurm: -N, else the partition's
    nodes that take jobs); one rank per node unless the check or the job says otherwise, two
    on a single node, so that there is a collective to time."""
    nodes = len(ctx.hosts()) or ctx.scheduler.allocation_nodes() or 2
    asked = ctx.scheduler.ranks_per_node_asked()
    return nodes, ranks_per_node or asked or (2 if nodes == 1 else 1)


def _coll_series(ctx: Context, pc: PlannedCheck) -> tuple[Series, int, int]:
    coll = pc.check.collective
    transport = pc.item.transport
    key = ("shape", pc.item.ranks_per_node)
    shape = ctx.cache.get(key)
    if not isinstance(shape, tuple):  # a batch system's size is asked once per acceptance
        shape = ctx.cache[key] = allocation_shape(ctx, pc.item.ranks_per_node)
    nodes, ppn = shape

    def same(o: PlannedCheck) -> bool:
        return o.check.kind == "collective" and o.check.collective == coll and \
            o.item.transport == transport and (o.item.ranks_per_node or ppn) == ppn

    def make() -> Series:
        settings = KernelSettings(sizes=Sizes.parse(_sizes_of(ctx, same)),
                                  iterations=_largest(ctx, same, "iterations"),
                                  warmup=_largest(ctx, same, "warmup"))
        planned = plan_run(f"mpi.{coll}", transport=transport, ranks=nodes * ppn, mpi=ctx.mpi,
                           settings=settings, timeout_s=ctx.spec.model.timeout_s,
                           label="accept")
        # a batch system is told the shape, else it may pack the ranks onto fewer nodes
        sched = ctx.scheduler if isinstance(ctx.scheduler, DirectScheduler) else \
            ctx.scheduler.spread(nodes, ppn)
        return Series(planned, sched, LATENCY)

    return _series(ctx, ("coll", coll, transport, ppn), make), nodes, ppn


def predicted_us(ctx: Context, collective: str, size: int, nodes: int, ppn: int) -> float:
    """The model's time for the algorithm the MPI library picks by default, on a single
    switch of `nodes` hosts (docs/model.md); emulated hosts share this machine's cores."""
    name = ctx.spec.model.fabric
    assert name is not None
    fabric = load_fabric(name, ctx.store_path.parent)
    shared = ctx.scheduler.ranks_here and nodes > 1
    cluster = Cluster(nodes, ppn, TopologySpec("single").build(nodes),
                      cores=(os.cpu_count() or 1) if shared else None,
                      nics=ctx.spec.model.nics_per_node)
    lib = ctx.mpi if ctx.mpi in ("openmpi", "mpich") else "openmpi"
    pred = predict_all(fabric, cluster, collective, [size], libraries=(lib,))
    return float(pred.times[lib][0])


def measure_collective(ctx: Context, pc: PlannedCheck, more: bool = False) -> Measured:
    s, nodes, ppn = _coll_series(ctx, pc)
    if more:
        s.run_once(ctx)
    assert pc.check.size is not None
    m = s.at(pc.check.size)
    m.detail.append(f"{s.planned.kernel.name} {s.planned.transport} at {s.planned.ranks} ranks "
                    f"({nodes} x {ppn}) on {s.scheduler.describe()}")
    if not pc.check.relative:
        return m
    p = predicted_us(ctx, pc.check.collective, pc.check.size, nodes, ppn)
    m.detail.append(f"measured {m.value:.4g} us, predicted {p:.4g} us by fabric "
                    f"{ctx.spec.model.fabric} ({ctx.mpi}'s default algorithm)")
    assert m.value is not None
    return Measured(m.value / p, m.low / p if m.low is not None else None,
                    m.high / p if m.high is not None else None,
                    m.method + "; divided by the prediction", m.run_ids, [], m.detail, m.runs)


# ---- node consistency: HPL per node ---------------------------------------------------------
def _hpl_reports(ctx: Context, pc: PlannedCheck, more: bool) -> list[NodeReport]:
    key = ("hpl",)
    reports = ctx.cache.get(key)
    if not isinstance(reports, list) or more:
        if not isinstance(ctx.scheduler, DirectScheduler):
            raise FabenchError(f"HPL per node runs under mpirun on each node; --on "
                               f"{ctx.scheduler.name} cannot place a run on one node")
        hpl = [c.item for c in ctx.spec.checks if c.check.kind == "hpl"]
        sizes = next((i.sizes for i in hpl if i.sizes), None)
        rpn = next((i.ranks_per_node for i in hpl if i.ranks_per_node), None)
        nodes = next((i.hosts for i in hpl if i.hosts), None)
        runs = [] if not isinstance(reports, list) else reports
        for _ in range(1 if more else ctx.spec.model.repeats):
            ctx.say("accept: HPL on every node")
            # testbed hosts share one machine: with a given N they may run at once
            runs.append(run_nodes(ctx.scheduler, ctx.store_path, HpccOptions(), sizes, rpn,
                                  ctx.mpi, concurrent=sizes is not None and
                                  not ctx.scheduler.ranks_here,
                                  timeout_s=ctx.spec.model.timeout_s, nodes=nodes))
        ctx.cache[key] = runs
        reports = runs
    return reports


def measure_hpl(ctx: Context, pc: PlannedCheck, more: bool = False) -> Measured:
    reports = _hpl_reports(ctx, pc, more)
    per_node: dict[str, list[float]] = {}
    field_ = "efficiency" if pc.check.metric.name == "hpl.efficiency" else "gflops"
    run_ids = []
    failed = []
    for rep in reports:
        for r in rep.nodes:
            if r.run_id is not None:
                run_ids.append(r.run_id)
            v = getattr(r, field_)
            if r.status != "ok" or v is None:
                failed.append(f"{r.node}: {r.status} {r.reason or ''}".strip())
                continue
            per_node.setdefault(r.node, []).append(float(v))
    if failed:
        raise FabenchError("HPL did not finish on every node: " + "; ".join(failed[:4]))
    with Store(ctx.store_path) as store:
        cids = sorted({store.run(i).campaign_id or 0 for i in run_ids} - {0})
    meds = {n: statistics.median(v) for n, v in per_node.items()}
    detail = [f"{n}: {field_} {meds[n]:.4g} over {len(v)} run(s)" for n, v in per_node.items()]
    if pc.check.metric.name == "hpl.spread_pct":
        mid = statistics.median(meds.values())
        spread = (max(meds.values()) - min(meds.values())) / mid * 100 if mid else float("nan")
        return Measured(spread, None, None, "(max - min) / median of the nodes' GFLOPS; a "
                        "statistic over the nodes, no interval", run_ids, cids, detail,
                        len(reports))
    worst = min(meds, key=lambda n: meds[n])
    ci = median_ci(per_node[worst]) if len(per_node[worst]) >= 2 else None
    low = ci.low if ci is not None and ci.defined else None
    high = ci.high if ci is not None and ci.defined else None
    return Measured(meds[worst], low, high, f"the worst node ({worst}); interval over its "
                    f"{len(per_node[worst])} run(s)" if low is not None else
                    f"the worst node ({worst}); one run per node, no interval", run_ids, cids,
                    detail, len(reports))


# ---- the all-pairs matrix -------------------------------------------------------------------
def measure_matrix_check(ctx: Context, pc: PlannedCheck, more: bool = False) -> Measured:
    out = ctx.cache.get(("matrix",))
    if out is None:
        ctx.say("accept: the all-pairs matrix")
        out = measure_matrix(ctx.store_path, ctx.scheduler,
                             MatrixOptions(mpi=ctx.mpi, transport=pc.item.transport or "tcp",
                                           timeout_s=ctx.spec.model.timeout_s))
        ctx.cache[("matrix",)] = out
    kinds = ("bad link", "asymmetric link") if pc.check.metric.name == "matrix.bad_links" \
        else ("slow node", "unreachable")
    hits = [v for v in out.judgement.verdicts if v.kind in kinds]  # type: ignore[attr-defined]
    runs = [p.run_id for p in out.passes]  # type: ignore[attr-defined]
    return Measured(float(len(hits)), None, None, "the matrix's verdicts (modified z-score, "
                    "retested; docs/matrix.md)", runs,
                    [out.campaign_id], [v.line for v in hits])  # type: ignore[attr-defined]


# ---- doctor ---------------------------------------------------------------------------------
def measure_doctor(ctx: Context, pc: PlannedCheck, more: bool = False) -> Measured:
    bad: list[str] = []
    for c in mpi_checks():
        if c.name == ctx.mpi and not c.ok:
            bad.append(f"MPI {c.name}: {c.detail}")
    kernels = {"mpi.latency", "mpi.bw", *(f"mpi.{c.check.collective}" for c in ctx.spec.checks
                                          if c.check.kind == "collective")}
    for name in sorted(kernels):
        ok, detail = kernel_status(get_kernel(name))
        if not ok:
            bad.append(f"kernel {name}: {detail}")
    bad += [u.line for u in probe_hosts(ctx.scheduler)]
    return Measured(float(len(bad)), None, None, "problems found", [], [], bad)


# ---- the rest: congestion, tuning audit, transport selection, reordering --------------------
def measure_congestion(ctx: Context, pc: PlannedCheck, more: bool = False) -> Measured:
    """The worst victim metric's median impact factor, with its interval (GPCNeT's method,
    docs/congestion.md)."""
    cfg = CongestionConfig(settings=VictimSettings(mpi=ctx.mpi,
                                                   transport=pc.item.transport or "tcp",
                                                   timeout_s=ctx.spec.model.timeout_s))
    ctx.say("accept: congestion (victims alone and under aggressors)")
    out = congestion_campaign(cfg, ctx.scheduler, ctx.store_path, f"{ctx.spec.name} congestion")
    rows = [(r, f) for r in out.rows for q, f in r.impact_factor.items() if q == "median"]
    if not rows:
        raise FabenchError(f"the congestion test measured no impact factor (campaign "
                           f"{out.campaign_id})")
    r, f = max(rows, key=lambda rf: rf[1].factor)
    detail = [f"{x.victim} under {x.aggressor}: median x{g.factor:.3g} [{g.low:.3g}, "
              f"{g.high:.3g}]" for x, g in rows]
    return Measured(f.factor, f.low, f.high, f"the worst victim ({r.victim} under "
                    f"{r.aggressor}), {f.method}", [i for x, _ in rows for i in x.run_ids],
                    [out.campaign_id], detail, 1)


def measure_tune(ctx: Context, pc: PlannedCheck, more: bool = False) -> Measured:
    """Findings of the tuning audit at or above the check's severity (unknown < differs <
    verdict: a named diagnosis)."""
    severity = pc.check.metric.name.partition("[")[2].rstrip("]")
    # tuning is audited per host namespace on a testbed, on this host elsewhere
    inner = ctx.scheduler.inner if isinstance(ctx.scheduler, AutoScheduler) else ctx.scheduler
    if isinstance(inner, TestbedScheduler):
        targets = testbed_targets(inner.state.name)
    else:
        targets = [Target.host()]
    profile = load_profile(pc.item.profile or "hpc-default")
    findings = tune_check(profile, targets)
    rank = {s: i for i, s in enumerate(SEVERITIES)}

    def level(status: str, verdict: str) -> int:
        return rank["verdict"] if verdict else rank.get(status, -1)

    hits = [f for f in findings if level(f.status, f.verdict) >= rank[severity]]
    return Measured(float(len(hits)), None, None, f"tune check against profile {profile.name}",
                    [], [], [f"{f.target} {f.area} {f.item}: {f.current} (recommended "
                             f"{f.recommended}) {f.verdict or f.status}" for f in hits])


def measure_transport(ctx: Context, pc: PlannedCheck, more: bool = False) -> Measured:
    """Sizes at which another path beat the MPI's own choice (`fabench diagnose
    transports`: its interval-based 'loses' verdict)."""
    placement = "intra" if ctx.scheduler.name == "local" else "inter"
    opts = TransportsOptions(placement=placement, hosts=pc.item.hosts, mpis=[ctx.mpi],
                             sizes=pc.item.sizes, iterations=pc.item.iterations, quick=True,
                             prove=False,
                             timeout_s=ctx.spec.model.timeout_s)
    out = run_transports(opts, ctx.scheduler, ctx.store_path, ctx.say)
    d = out.diagnosis
    if d is None:
        raise FabenchError("the transport diagnosis compared nothing")
    losing = [r for r in d.rows if r.loses]
    runs = sorted({i for p in d.paths for ids in p.run_ids.values() for i in ids})
    detail = [f"{r.kernel} ({r.mpi}) at {r.size} B: the library's choice ({r.chosen}) is "
              f"{r.loss:.2f}x [{r.loss_low:.2f}, {r.loss_high:.2f}] worse than {r.best}"
              for r in losing]
    return Measured(float(len(losing)), None, None, "sizes where another path beats the "
                    "library's choice beyond its interval (docs/diagnose.md)", runs,
                    [d.campaign_id], detail)


def measure_reorder(ctx: Context, pc: PlannedCheck, more: bool = False) -> Measured:
    """The share of datagrams that arrived out of order, with a Wilson 95 % interval over
    the datagrams received (E. B. Wilson, JASA 22 (1927) 209-212)."""
    opts = ReorderOptions(hosts=pc.item.hosts, iterations=pc.item.iterations or 200,
                          timeout_s=ctx.spec.model.timeout_s)
    d = run_reorder(opts, ctx.scheduler, ctx.store_path, ctx.say)
    n, k = d.received, d.reordered
    if n == 0:
        raise FabenchError("the reorder probe received no datagram")
    z = 1.959964
    p = k / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / den
    low = 0.0 if k == 0 else max(0.0, mid - half)  # no rounding residue above an exact 0
    return Measured(p * 100, low * 100, min(1.0, mid + half) * 100,
                    f"{k} of {n} datagrams reordered, Wilson 95 % interval",
                    [r.run_id for r in d.rounds], [], [d.recommendation()], len(d.rounds))


MEASURES: dict[str, Callable[[Context, PlannedCheck, bool], Measured]] = {
    "doctor": measure_doctor, "hpl": measure_hpl, "matrix": measure_matrix_check,
    "p2p": measure_p2p, "collective": measure_collective, "congestion": measure_congestion,
    "tune": measure_tune, "transport": measure_transport, "reorder": measure_reorder,
}
# kinds whose measurement can be repeated and pooled when a verdict is inconclusive
MORE = ("p2p", "collective", "hpl")
