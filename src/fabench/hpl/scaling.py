"""`fabench hpl scaling`: HPL on 1, 2, 4 .. N of a scheduler's hosts, one campaign.

Each node count k runs hpcc.hpl on the first k hosts (the same ranks on each), one count
after the other, so the runs do not compete. N is either the memory rule of the starter
(`--memory-fraction` of every machine the ranks are on: weak scaling on a cluster, the same N
on a testbed whose hosts share one machine's memory) or given: one N for every count, or
one per count. The campaign's spec carries the fabric given for the model, so that the
report of the campaign shows the model beside each run without being told again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import FabenchError
from ..host.files import machine_id
from ..host.provenance import host_provenance
from ..hpc.options import HpccOptions
from ..hpc.peak import read_peak
from ..model.fabric import Fabric
from ..plan.plan import KernelSettings, Sizes, plan_run
from ..run.runner import RunOutcome, execute_run
from ..schedulers import DirectScheduler
from ..store.database import Store
from .nodes import OnNodes, node_names

SPEC_KEY = "hpl_scaling"  # the campaign spec key (report/hpl.py reads its fabric)


def node_counts(hosts: int, given: str | None = None) -> list[int]:
    """1, 2, 4 .. up to `hosts`, and `hosts` itself; or the counts given (comma-separated)."""
    if given:
        try:
            counts = [int(x) for x in given.split(",") if x.strip()]
        except ValueError:
            raise FabenchError(f"--nodes {given!r}: node counts, comma-separated") from None
        bad = [k for k in counts if not 1 <= k <= hosts]
        if not counts or bad:
            raise FabenchError(f"--nodes {given!r}: each count must be in 1..{hosts} (the "
                               "scheduler's hosts)")
        return sorted(set(counts))
    out, k = [], 1
    while k < hosts:
        out.append(k)
        k *= 2
    return [*out, hosts]


def sizes_per_count(sizes: str | None, counts: list[int]) -> list[Sizes | None]:
    """One N for every count, or one per count, in order; None: the memory rule."""
    if sizes is None:
        return [None] * len(counts)
    vals = Sizes.parse(sizes).values
    if len(vals) == 1:
        return [Sizes.of(vals)] * len(counts)
    if len(vals) != len(counts):
        raise FabenchError(f"--sizes {sizes!r}: one N, or one per node count "
                           f"({len(counts)}: {','.join(map(str, counts))})")
    return [Sizes.of([v]) for v in vals]


@dataclass
class Scaling:
    campaign_id: int
    hosts: list[str]
    counts: list[int]
    ranks_per_node: int
    outcomes: list[RunOutcome]
    notes: list[str]


def run_scaling(scheduler: DirectScheduler, store_path: Path, opts: HpccOptions,
                sizes: str | None, ranks_per_node: int | None, counts: str | None = None,
                mpi: str = "openmpi", timeout_s: float = 1800.0,
                fabric: Fabric | None = None, transport: str = "auto") -> Scaling:
    """`transport` at every count, the 1-node one too (the same library choice across the
    counts): "auto" lets MPI pick shared memory within a node and the network across."""
    hosts = node_names(scheduler, mpi)
    ks = node_counts(len(hosts), counts)
    per_count = sizes_per_count(sizes, ks)
    alloc = scheduler.allocation(plan_run("hpcc.hpl", ranks=1, mpi=mpi))
    notes: list[str] = []
    one_machine = len({machine_id(alloc.execs[h].prefix) for h in hosts}) < len(hosts)
    if ranks_per_node is None:
        if one_machine:
            # a testbed: the hosts share one machine's cores, a rank per core on each would
            # oversubscribe every multi-node run
            ranks_per_node = 1
            notes.append("the hosts are one machine (a testbed): 1 rank per node "
                         "(--ranks-per-node to change)")
        else:
            ranks_per_node = read_peak(alloc.execs[hosts[0]].prefix).cores
    if ranks_per_node < 1:
        raise FabenchError(f"--ranks-per-node must be >= 1, got {ranks_per_node}")
    spec: dict[str, Any] = {"hosts": hosts, "nodes": ks, "ranks_per_node": ranks_per_node,
                            "options": opts.argv(), "sizes": sizes,
                            "transport": transport,
                            "fabric": fabric.to_dict() if fabric is not None else None}
    outcomes: list[RunOutcome] = []
    with Store(store_path) as store:
        cid = store.begin_campaign("hpl scaling", {SPEC_KEY: spec}, host_provenance())
        for k, sz in zip(ks, per_count, strict=True):
            plan = plan_run("hpcc.hpl", ranks=k * ranks_per_node, mpi=mpi, transport=transport,
                            settings=KernelSettings(sizes=sz, extra=tuple(opts.argv())),
                            timeout_s=timeout_s, label=f"{k} nodes")
            try:
                outcomes.append(execute_run(store, OnNodes(scheduler, hosts[:k]), plan, cid))
            except FabenchError as exc:
                notes.append(f"{k} nodes: {exc}")
        ok = len(outcomes) == len(ks) and all(o.status == "ok" for o in outcomes)
        store.end_campaign(cid, "finished" if ok else "failed")
    return Scaling(cid, hosts, ks, ranks_per_node, outcomes, notes)
