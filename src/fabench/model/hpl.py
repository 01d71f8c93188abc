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
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .fabric import Fabric


def peak_gflops(sockets: int, cores: int, ghz: float, flops_per_cycle: int) -> float:
    """Document 000: 2 sockets x 12 cores x 2.7 GHz x 8 DP flops/cycle = 518.4 GFLOPS."""
    return sockets * cores * ghz * flops_per_cycle


@dataclass
class HplParams:
    node_peak_gflops: float = 518.4
    efficiency_1node: float = 0.7727  # doc 000's 1-node figure on RoCEv2
    mem_per_node_gb: float = 64.0
    mem_fraction: float = 0.8
    nb: int = 192
    overlap: float = 0.5
    node_cv: float = 0.005  # relative spread of node rates (doc 000 per-node HPL: 0.07 %)
    hops: int = 3  # switches on the typical path (cross-spine on a leaf/spine tree)


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


def grid(nodes: int) -> tuple[int, int]:
    p = int(math.isqrt(nodes))
    while nodes % p:
        p -= 1
    return p, nodes // p


def hpl_point(fabric: Fabric, nodes: int, prm: HplParams) -> HplPoint:
    p, q = grid(nodes)
    n = int(math.sqrt(prm.mem_fraction * prm.mem_per_node_gb * 1e9 * nodes / 8))
    n -= n % prm.nb
    flops = 2.0 / 3.0 * n**3 + 1.5 * n**2
    gamma = prm.efficiency_1node * prm.node_peak_gflops * 1e9  # flop/s per node
    slow = 1.0 - prm.node_cv * math.sqrt(2 * math.log(nodes)) if nodes > 1 else 1.0
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
    (bisection; efficiency falls as the spread grows). None if out of [0, 20 %]."""
    from dataclasses import replace

    def eff(cv: float) -> float:
        return hpl_point(fabric, nodes, replace(prm, node_cv=cv)).efficiency

    lo, hi = 0.0, 0.2
    if not eff(hi) <= target_efficiency <= eff(lo):
        return None
    for _ in range(60):
        mid = (lo + hi) / 2
        if eff(mid) > target_efficiency:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2
