"""An analytic HPL model: efficiency against the number of nodes on a fabric.

The time is netlib HPL's own scalability model (HPL "Scalability" notes, 1ring broadcast):

    T = 2 n^3 / (3 P Q gamma) + beta n^2 (3P + Q) / (2 P Q) + alpha n ((NB + 1) log2 P + P) / NB

with one process per node on a P x Q grid (P <= Q, as square as possible), gamma the per-node
rate (the single-node HPL efficiency times the peak: everything inside a node is in there),
beta the time per 8-byte word of a large message and alpha the small-message latency across
the fabric (a cross-spine path). Two corrections the formula lacks:
- look-ahead overlaps the panel broadcast and row swaps (the beta term) with the trailing
  update: a fraction `overlap` of it is hidden; the pivoting latency (alpha term) is on the
  critical path and never is;
- node-to-node variability: every iteration waits for the slowest node, whose rate is
  gamma (1 - cv sqrt(2 ln N)) (the expected maximum of N normal deviates).
The problem size fills `mem_fraction` of each node's memory (n = sqrt(f M N / 8)).

Nothing here defaults to a particular cluster: the peak, the memory per node and the 1-node
efficiency are given or come from a measured node table (`NodeTable`: per-node HPL rates, as
`fabench hpl nodes` measures them), which also gives the node spread.
"""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..errors import FabenchError
from ..store.database import Store
from ..util.textfile import read_text
from .fabric import Fabric


def peak_gflops(sockets: int, cores: int, ghz: float, flops_per_cycle: int) -> float:
    """Document 000: 2 sockets x 12 cores x 2.7 GHz x 8 DP flops/cycle = 518.4 GFLOPS."""
    return sockets * cores * ghz * flops_per_cycle


@dataclass
class NodeTable:
    """Per-node single-node HPL results (a node-consistency check, document 000's table 3):
    the input hook for `fabench hpl nodes` and for files (`load_node_table`)."""

    gflops: dict[str, float]
    source: str
    peak_gflops: float | None = None  # per node, when the table carries it
    mem_gb: float | None = None  # per node, when the table carries it

    def __post_init__(self) -> None:
        if len(self.gflops) < 1 or any(not v > 0 for v in self.gflops.values()):
            raise FabenchError(f"{self.source}: a node table needs at least one node with a "
                               "positive GFLOPS value")

    @property
    def median(self) -> float:
        return float(statistics.median(self.gflops.values()))

    @property
    def cv(self) -> float:
        """Relative spread of the node rates (0 with one node)."""
        vals = list(self.gflops.values())
        if len(vals) < 2:
            return 0.0
        return float(statistics.stdev(vals) / statistics.mean(vals))


def load_node_table(path: Path) -> NodeTable:
    """A node table from a file: JSON {"nodes": {"name": gflops, ...}, "peak_gflops": x,
    "mem_gb": y} or CSV with columns node,gflops (optionally peak_gflops, mem_gb)."""
    try:
        text = read_text(path, "node table")
    except FileNotFoundError:
        raise FabenchError(f"cannot read node table {path}: no such file") from None
    src = str(path)
    try:
        if path.suffix == ".json":
            d = json.loads(text)
            nodes = {str(k): float(v) for k, v in dict(d["nodes"]).items()}
            return NodeTable(nodes, src, _opt(d.get("peak_gflops")), _opt(d.get("mem_gb")))
        rows = list(csv.DictReader(io.StringIO(text)))
        nodes = {str(r["node"]): float(r["gflops"]) for r in rows}
        peaks = {float(r["peak_gflops"]) for r in rows if r.get("peak_gflops")}
        mems = {float(r["mem_gb"]) for r in rows if r.get("mem_gb")}
        return NodeTable(nodes, src, min(peaks) if peaks else None, min(mems) if mems else None)
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        raise FabenchError(f"{src}: not a node table (JSON with 'nodes', or CSV with columns "
                           f"node,gflops): {exc}") from None


def _opt(v: object) -> float | None:
    return None if v is None else float(str(v))


@dataclass
class HplParams:
    node_peak_gflops: float
    efficiency_1node: float
    mem_per_node_gb: float
    mem_fraction: float = 0.8
    nb: int = 192
    overlap: float = 0.5
    node_cv: float = 0.0
    hops: int = 3  # switches on the typical path (cross-spine on a leaf/spine tree)
    sources: dict[str, str] = field(default_factory=dict)  # parameter -> where it came from
    # Nodes emulated on one machine (fabench's testbed) share these cores: each node's rate
    # is its single-node rate x cores / nodes once the nodes outnumber them. None: a real
    # cluster, every node its own cores.
    cores: int | None = None


def params_from(*, peak: float | None, efficiency: float | None, mem_gb: float | None,
                table: NodeTable | None, mem_fraction: float = 0.8, nb: int = 192,
                overlap: float = 0.5, node_cv: float | None = None, hops: int = 3
                ) -> HplParams:
    """HPL parameters from what was given and the node table; an error names what is
    missing (no cluster's figures stand in for it)."""
    src: dict[str, str] = {}
    if peak is None and table is not None and table.peak_gflops:
        peak, src["peak"] = table.peak_gflops, f"node table {table.source}"
    elif peak is not None:
        src["peak"] = "given"
    if mem_gb is None and table is not None and table.mem_gb:
        mem_gb, src["mem_gb"] = table.mem_gb, f"node table {table.source}"
    elif mem_gb is not None:
        src["mem_gb"] = "given"
    missing = [w for w, v in (("--peak or --node-gflops", peak), ("--mem-gb", mem_gb))
               if v is None]
    if missing:
        raise FabenchError(f"HPL needs {' and '.join(missing)} (per node), or a node table "
                           "(--node-table) that carries them; fabench assumes no cluster's "
                           "figures")
    assert peak is not None and mem_gb is not None
    if efficiency is None:
        if table is None:
            raise FabenchError("HPL needs --efficiency-1node or a node table (--node-table) "
                               "whose per-node rates give it")
        efficiency = table.median / peak
        src["efficiency_1node"] = (f"node table {table.source}: median of "
                                   f"{len(table.gflops)} nodes / peak")
    else:
        src["efficiency_1node"] = "given"
    if node_cv is None:
        if table is not None and len(table.gflops) > 1:
            node_cv = table.cv
            src["node_cv"] = (f"node table {table.source}: spread of {len(table.gflops)} "
                              "nodes")
        else:
            node_cv = 0.0
            src["node_cv"] = "assumed 0: no node table (--node-table) measured the spread"
    else:
        src["node_cv"] = "given"
    return HplParams(peak, efficiency, mem_gb, mem_fraction, nb, overlap, node_cv, hops, src)


@dataclass
class HplPoint:
    nodes: int
    grid: tuple[int, int]
    n: int
    efficiency: float
    gflops: float
    t_compute_s: float
    t_bandwidth_s: float
    t_latency_s: float
    band: tuple[float, float] | None = None  # efficiency over fabric variants


def grid(nodes: int) -> tuple[int, int]:
    p = int(math.isqrt(nodes))
    while nodes % p:
        p -= 1
    return p, nodes // p


def hpl_point(fabric: Fabric, nodes: int, prm: HplParams, n: int | None = None) -> HplPoint:
    """The model at `nodes`; `n`: this problem size (a measured run's) instead of the one
    that fills `mem_fraction` of the nodes' memory."""
    p, q = grid(nodes)
    if n is None:
        n = int(math.sqrt(prm.mem_fraction * prm.mem_per_node_gb * 1e9 * nodes / 8))
        n -= n % prm.nb
    flops = 2.0 / 3.0 * n**3 + 1.5 * n**2
    gamma = prm.efficiency_1node * prm.node_peak_gflops * 1e9  # flop/s per node
    slow = 1.0 - prm.node_cv * math.sqrt(2 * math.log(nodes)) if nodes > 1 else 1.0
    if prm.cores and nodes > prm.cores:
        gamma *= prm.cores / nodes  # time-shared: the single-node rate was one node alone
    t_comp = flops / (nodes * gamma * max(slow, 0.05))
    t_bw = t_lat = 0.0
    if nodes > 1:
        big = 1 << 22
        link = fabric.link_bandwidth_MBps
        per_byte = max(fabric.beta(big), 1 / link) if link > 0 else fabric.beta(big)
        beta_word = 8 * per_byte * 1e-6  # s per double
        alpha = fabric.alpha(8, prm.hops) * 1e-6
        t_bw = beta_word * n**2 * (3 * p + q) / (2 * p * q)
        t_lat = alpha * n * ((prm.nb + 1) * math.log2(max(p, 1)) + p) / prm.nb
    total = t_comp + (1 - prm.overlap) * t_bw + t_lat
    rate = flops / total
    return HplPoint(nodes, (p, q), n, rate / (nodes * prm.node_peak_gflops * 1e9), rate / 1e9,
                    t_comp, t_bw, t_lat)


def hpl_curve(fabric: Fabric, nodes: list[int], prm: HplParams) -> list[HplPoint]:
    return [hpl_point(fabric, k, prm) for k in nodes]


def fit_node_cv(fabric: Fabric, nodes: int, target_efficiency: float,
                prm: HplParams) -> float | None:
    """The node-to-node spread that makes the model hit `target_efficiency` at `nodes`
    (Brent's method; efficiency falls as the spread grows). None if out of [0, 20 %]. The curve it
    gives is fitted, not predicted: it reproduces the figure it was fitted to by
    construction."""
    def eff(cv: float) -> float:
        return hpl_point(fabric, nodes, replace(prm, node_cv=cv)).efficiency

    lo, hi = 0.0, 0.2
    if not eff(hi) <= target_efficiency <= eff(lo):
        return None
    # imported here: scipy.optimize costs seconds on a loaded host, and every campaign's report
    # imports this module while only an HPL sizing solves
    from scipy.optimize import brentq

    return float(brentq(lambda cv: eff(cv) - target_efficiency, lo, hi, xtol=1e-12))


@dataclass(frozen=True)
class MeasuredHpl:
    """A stored hpcc.hpl result, as the model compares it."""

    run_id: int
    nodes: int
    n: int
    gflops: float
    efficiency: float
    node_peak_gflops: float  # Rpeak of the ranks run on one node


def measured_hpl(store: Store, run_id: int) -> MeasuredHpl:
    run = store.run(run_id)
    if run.kernel != "hpcc.hpl" or run.status != "ok":
        raise FabenchError(f"run {run_id} is not a finished hpcc.hpl run ({run.kernel}, "
                           f"{run.status})")
    recs = list(store.results(run_id))
    if not recs:
        raise FabenchError(f"run {run_id} stored no HPL result")
    rec = recs[-1]
    nodes = int(rec.extra.get("nodes") or _placed_hosts(run.notes))
    peak = float(rec.extra.get("peak_gflops") or 0)
    eff = rec.extra.get("efficiency")
    if not peak or eff is None:
        raise FabenchError(f"run {run_id}: no peak or efficiency stored with its result")
    return MeasuredHpl(run_id, nodes, rec.size, float(rec.extra.get("gflops") or 0),
                       float(eff), peak / nodes)


def _placed_hosts(notes: list[str]) -> int:
    """Hosts of a run stored before its records carried them: the placement note."""
    for n in notes:
        if n.startswith("placement: "):
            return len(n.removeprefix("placement: ").split("(")[0].split(","))
    return 1
