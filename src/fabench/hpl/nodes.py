"""`fabench hpl nodes`: single-node HPL on every node, the node-consistency table of document
000 (per-node GFLOPS and efficiency, min, max, spread, CV), nodes below the median flagged.

Each node runs hpcc.hpl with its ranks on that node only (one rank per physical core unless
asked), through the scheduler's own way of reaching it, concurrently by default (as a cluster
check runs: the nodes are independent, and running them at once is what makes the check
fast). Every run is stored like any other, each with its own provenance.
"""

from __future__ import annotations

import statistics
import threading
from dataclasses import dataclass, replace
from pathlib import Path

from ..choices import HPL_NODE_THRESHOLD
from ..errors import FabenchError
from ..host.files import machine_id
from ..host.launched import LaunchResult, RecordCallback
from ..host.netcounters import IfCounters
from ..host.placement import Allocation, HostSlots
from ..host.process import terminate_all
from ..host.provenance import host_provenance
from ..hpc.options import HpccOptions
from ..hpc.peak import read_peak
from ..plan.plan import KernelSettings, PlannedRun, Sizes, plan_run
from ..run.runner import execute_run
from ..schedulers import DirectScheduler
from ..store.database import Store
from ..util.textable import Col, header, row, signed_percent

DEFAULT_THRESHOLD = HPL_NODE_THRESHOLD


class OnNodes(DirectScheduler):
    """A scheduler's hosts, with a run's ranks on these of them only, the same number on
    each (`hpl nodes`: one node a run; `hpl scaling`: the first k)."""

    name = "node"

    def __init__(self, base: DirectScheduler, nodes: list[str]) -> None:
        super().__init__(None)
        if not nodes:
            raise FabenchError("no node to run on")
        self.base, self.nodes = base, list(nodes)
        self.ranks_here = base.ranks_here  # type: ignore[misc]
        self.oversubscribe = base.oversubscribe

    def slots(self) -> tuple[int, str] | None:
        """The slot rule for these nodes only: a hostfile's slots of them; where the hosts
        are this machine (local, a testbed) its slots, shared by them."""
        base = self.base.slots()
        hosts = getattr(self.base, "hosts", None)
        if base is None or not isinstance(hosts, list):
            return base
        mine = [h for h in hosts if getattr(h, "name", None) in self.nodes]
        return sum(h.slots for h in mine), f"{base[1]}, of {','.join(self.nodes)}"

    def allocation(self, run: PlannedRun) -> Allocation:
        a = self.base.allocation(run)
        for n in self.nodes:
            if n not in a.execs:
                raise FabenchError(f"node {n!r} is not one of {', '.join(a.execs)}")
        if run.ranks % len(self.nodes):
            raise FabenchError(f"{run.ranks} ranks do not divide over {len(self.nodes)} nodes")
        # mpirun starts where the scheduler starts it: inside the first node itself when the
        # scheduler enters its hosts (a testbed), from here otherwise.
        launch = a.execs[self.nodes[0]].prefix if a.launch_prefix else ()
        per = run.ranks // len(self.nodes)
        return replace(a, placed=[HostSlots(n, per) for n in self.nodes], launch_prefix=launch,
                       crosses=len(self.nodes) > 1, oversubscribe=a.oversubscribe)

    def run(self, run: PlannedRun, on_record: RecordCallback | None = None) -> LaunchResult:
        return DirectScheduler.run(self, run, on_record)

    # a run across nodes checks the base's link counters, as any run of it would
    def counters(self, hosts: list[str]) -> dict[str, IfCounters]:
        return self.base.counters(hosts)

    def counters_where(self) -> str:
        return self.base.counters_where()

    def describe(self) -> str:
        one = len(self.nodes) == 1
        return f"{self.base.describe()}, node{'' if one else 's'} {','.join(self.nodes)}"


@dataclass
class NodeResult:
    node: str
    ranks: int
    status: str
    gflops: float | None = None
    efficiency: float | None = None
    n: int | None = None
    reason: str | None = None
    run_id: int | None = None
    peak_gflops: float | None = None  # of the ranks run (the node's Rpeak at a rank per core)


@dataclass
class NodeReport:
    nodes: list[NodeResult]
    threshold: float

    @property
    def rates(self) -> list[float]:
        return [r.gflops for r in self.nodes if r.gflops is not None]

    @property
    def median(self) -> float | None:
        return statistics.median(self.rates) if self.rates else None

    @property
    def cv(self) -> float | None:
        v = self.rates
        return statistics.stdev(v) / statistics.mean(v) if len(v) > 1 else None

    @property
    def flagged(self) -> list[NodeResult]:
        med = self.median
        if med is None:
            return []
        return [r for r in self.nodes if r.gflops is not None
                and r.gflops < med * (1 - self.threshold)]

    def lines(self) -> list[str]:
        cols = (Col("node", 14, text=True), Col("ranks", 5), Col("N", 7), Col("GFLOPS", 10),
                Col("eff", 7), Col("vs median", 9), Col("status", 30, text=True))
        med = self.median
        out = [header(cols)]
        flagged = {r.node for r in self.flagged}
        for r in self.nodes:
            rel = signed_percent(r.gflops / med - 1, 2) if r.gflops and med else "-"
            status = "SLOW" if r.node in flagged else r.status if r.status != "ok" else "ok"
            if r.reason:
                status += f": {r.reason}"
            out.append(row(cols, [r.node, str(r.ranks), str(r.n or "-"),
                                  f"{r.gflops:.3f}" if r.gflops is not None else "-",
                                  f"{r.efficiency:.2%}" if r.efficiency is not None else "-",
                                  rel, status]))
        v = self.rates
        if v:
            cv = self.cv
            out.append(f"# {len(v)} of {len(self.nodes)} nodes: min {min(v):.3f}  max "
                       f"{max(v):.3f}  median {statistics.median(v):.3f}  spread "
                       f"{max(v) - min(v):.3f} GFLOPS  CV "
                       f"{f'{cv:.2%}' if cv is not None else '- (one node)'}")
        for r in self.flagged:
            out.append(f"# FLAG {r.node}: {r.gflops:.3f} GFLOPS, more than "
                       f"{self.threshold:.0%} below the median")
        return out

    def to_json(self) -> dict[str, object]:
        """The node table `model hpl --node-table` reads (nodes, peak_gflops), and more."""
        peaks = [r.peak_gflops for r in self.nodes if r.peak_gflops]
        return {"nodes": {r.node: r.gflops for r in self.nodes if r.gflops is not None},
                "peak_gflops": min(peaks) if peaks else None,
                "results": [vars(r) for r in self.nodes], "median": self.median,
                "min": min(self.rates) if self.rates else None,
                "max": max(self.rates) if self.rates else None, "cv": self.cv,
                "threshold": self.threshold, "flagged": [r.node for r in self.flagged]}


def node_names(scheduler: DirectScheduler, mpi: str) -> list[str]:
    probe = plan_run("hpcc.hpl", ranks=1, mpi=mpi)
    return list(scheduler.allocation(probe).execs)


def run_nodes(scheduler: DirectScheduler, store_path: Path, opts: HpccOptions,
              sizes: str | None, ranks_per_node: int | None, mpi: str = "openmpi",
              concurrent: bool = True, timeout_s: float = 1800.0,
              threshold: float = DEFAULT_THRESHOLD,
              nodes: list[str] | None = None) -> NodeReport:
    names = nodes or node_names(scheduler, mpi)
    probe_alloc = scheduler.allocation(plan_run("hpcc.hpl", ranks=1, mpi=mpi))
    if sizes is not None and not sizes.strip():
        # not "size N from memory": an empty --sizes is a mistake, and the default fills a node
        raise FabenchError("--sizes '': give HPL's N, or leave --sizes out")
    settings = KernelSettings(sizes=Sizes.parse(sizes) if sizes else None,
                              extra=tuple(opts.argv()))
    if settings.sizes is not None and not all(n >= 1 for n in settings.sizes.values):
        raise FabenchError(f"--sizes {sizes}: HPL's N is 1 or more")
    if sizes is None and concurrent:
        ids = [machine_id(probe_alloc.execs[n].prefix) for n in names if n in probe_alloc.execs]
        if len(set(ids)) < len(ids):
            raise FabenchError(
                "some of these nodes are one machine (a testbed's hosts share its memory): "
                "N from --memory-fraction on each at once would overcommit it; give --sizes, "
                "or --sequential")
    plans: dict[str, PlannedRun] = {}
    for name in names:
        if name not in probe_alloc.execs:
            raise FabenchError(f"node {name!r} is not one of {', '.join(probe_alloc.execs)}")
        ranks = ranks_per_node or read_peak(probe_alloc.execs[name].prefix).cores
        plans[name] = plan_run("hpcc.hpl", ranks=ranks, mpi=mpi, settings=settings,
                               timeout_s=timeout_s, label=name)
    for name in names:  # the slot rule, --ranks-per-node included, before anything starts
        OnNodes(scheduler, [name]).check_ranks(plans[name])
    results: dict[str, NodeResult] = {}
    # The registries load their modules on first use; load them here, before the threads.
    OnNodes(scheduler, [names[0]]).starter_for(plans[names[0]].kernel)
    stopping = threading.Event()
    with Store(store_path) as store:
        cid = store.begin_campaign("hpl nodes", {"hpl_nodes": {
            "nodes": names, "options": opts.argv(), "sizes": sizes,
            "concurrent": concurrent}}, host_provenance())

        def one(name: str) -> None:
            if stopping.is_set():
                return
            try:
                with Store(store_path) as own:
                    oc = execute_run(own, OnNodes(scheduler, [name]), plans[name], cid)
                    if stopping.is_set() and oc.status != "ok":
                        # its launch was ended by the interrupt, not by a fault of the node
                        own.finish_run(oc.run_id, status="interrupted",
                                       reason="interrupted: fabench was stopped")
                        oc.status = "interrupted"
            except FabenchError as exc:
                results[name] = NodeResult(name, plans[name].ranks, "failed", reason=str(exc))
                return
            rec = oc.results[0] if oc.results else None
            results[name] = NodeResult(
                name, plans[name].ranks, oc.status,
                gflops=rec.extra.get("gflops") if rec else None,
                efficiency=rec.extra.get("efficiency") if rec else None,
                n=rec.size if rec else None, reason=oc.reason, run_id=oc.run_id,
                peak_gflops=rec.extra.get("peak_gflops") if rec else None)

        threads: list[threading.Thread] = []
        try:
            if concurrent:
                threads = [threading.Thread(target=one, args=(n,)) for n in names]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
            else:
                for n in names:
                    one(n)
        except BaseException:
            # A signal reaches this thread only: the nodes' launches, started by the others,
            # are ended here, and their runs and the campaign stored as interrupted.
            stopping.set()
            terminate_all()
            for t in threads:
                t.join()
            store.end_campaign(cid, "interrupted")
            raise
        ok = all(r.status == "ok" for r in results.values())
        store.end_campaign(cid, "finished" if ok else "failed")
    return NodeReport([results[n] for n in names], threshold)
