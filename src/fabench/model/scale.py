"""Small to large: the scale-dependent terms of a fabric fitted to collectives measured on a
few nodes, then used to predict many (docs/model.md, "Small to large").

Two terms grow with the job and are invisible in a two-node ping-pong:
- `noise_us`: a rank's mean random delay per step (OS noise, background traffic). A step ends
  when its slowest rank does; with exponential delays the expected maximum over n ranks is
  noise_us * H(n), so the term grows with ln(ranks) per step (cost.harmonic); with a heavy
  (Pareto-like) tail it grows as n^b (`noise_exponent` b, fitted when the small runs span
  two node counts or more);
- `nic_gap_us`: the NIC's gap per message; k ranks of a node sending through it in one step
  queue behind each other, (k - 1) * nic_gap_us (LogGP's g at the shared NIC);
- `node_memory_MBps`: the memory bandwidth a node's ranks share when they copy or reduce at
  once (not scale-dependent, but invisible in a 2-rank ping-pong as well: fitted with them).

Both are fitted by a grid search (each over 0 and a log-spaced range) minimising the sum of
squared log ratios of predicted to measured time over the small runs. A grid, not a local
optimiser: the objective is piecewise (algorithm switches, protocol segments), and with a
handful of runs a global search is cheap.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .fabric import Fabric, Provenance

NOISE_GRID = [0.0, *np.logspace(-2, 2, 17).tolist()]  # 0.01-100 us
NIC_GAP_GRID = [0.0, *np.logspace(-3, 1, 9).tolist()]  # 1 ns-10 us (1000-0.1 M msg/s)
# 0: exponential tails; b > 0 only when the runs span two node counts or more (one count
# cannot tell how the slowest rank grows with the count). At most 1/2: the slowest of n
# Pareto delays of shape a grows as n^(1/a); a finite mean needs a > 1 (b < 1), and the grid
# stops at the edge of finite variance (a = 2)
EXPONENT_GRID = [0.0, 0.25, 0.5]
MEMORY_GRID = [0.0, *np.logspace(3, 6, 13).tolist()]  # unlimited, 1 GB/s-1 TB/s per node


@dataclass
class Observation:
    """One measured collective time and how to predict it from a fabric."""

    predict: Callable[[Fabric], float]
    measured_us: float
    nodes: int = 0


@dataclass
class ScaleFit:
    noise_us: float
    nic_gap_us: float
    rms_log_error: float  # of the fit on its own runs
    n: int
    noise_exponent: float = 0.0
    node_memory_MBps: float = 0.0

    def apply(self, fabric: Fabric, what: str) -> Fabric:
        f = copy.deepcopy(fabric)
        f.noise_us = self.noise_us
        f.nic_gap_us = self.nic_gap_us
        f.noise_exponent = self.noise_exponent
        f.node_memory_MBps = self.node_memory_MBps
        why = f"fitted to {what} (rms log error {self.rms_log_error:.2f}, {self.n} runs)"
        for k in ("noise_us", "nic_gap_us", "noise_exponent", "node_memory_MBps"):
            f.provenance[k] = Provenance(why)
        return f


class _Objective:
    """The sum of squared log ratios of predicted to measured time over the runs.

    Once a partial sum passes `bound` (the best so far) the point cannot be the best: the
    partial sum is returned and the remaining predictions skipped (every term is >= 0). The
    run that ended an evaluation early is tried first next time (move to front): a grid's
    neighbours fail on the same runs (the published corpus's fits: 2.4 predictions per grid
    point, 3.1 in the runs' order). A point that completes is summed in the runs' own order,
    so the result does not depend on the order they were tried in."""

    def __init__(self, obs: list[Observation]) -> None:
        self.obs = obs
        self.order = list(range(len(obs)))

    def __call__(self, fabric: Fabric, bound: float = math.inf) -> float:
        terms = [0.0] * len(self.obs)
        partial = 0.0
        for pos, k in enumerate(self.order):
            o = self.obs[k]
            t = o.predict(fabric)
            if not (t > 0 and math.isfinite(t)):
                return math.inf
            terms[k] = math.log(t / o.measured_us) ** 2
            partial += terms[k]
            if partial > bound:
                if pos:
                    self.order.insert(0, self.order.pop(pos))
                return partial
        total = 0.0
        for x in terms:  # a running sum, as before (sum() compensates from Python 3.12 on)
            total += x
        return total


def _search(trial: Fabric, objective: _Objective, exponents: list[float],
            best: tuple[float, float, float, float]) -> tuple[float, float, float, float]:
    """(error, noise, gap, exponent) over the latency grids, the node's memory fixed."""
    for b in exponents:
        for gap in NIC_GAP_GRID:
            for noise in NOISE_GRID:
                if noise == 0.0 and b > 0:
                    continue  # the exponent of no noise is no parameter
                trial.nic_gap_us, trial.noise_us, trial.noise_exponent = gap, noise, b
                err = objective(trial, best[0])
                if err < best[0] - 1e-12:
                    best = (err, noise, gap, b)
    return best


def fit_scale(fabric: Fabric, obs: list[Observation], rounds: int = 2) -> ScaleFit:
    """The (noise_us, nic_gap_us, noise_exponent, node_memory_MBps) on the grids that best
    reproduce `obs`, by coordinate descent: the three latency terms on their joint grid with
    the node's memory fixed, then the memory with them fixed, `rounds` times. Ties go to the
    smaller terms (each grid is scanned upwards and only a strictly better fit replaces;
    memory 0, unlimited, first). The exponent stays 0 unless the runs span two node counts
    or more."""
    if not obs:
        raise ValueError("fit_scale needs at least one observation")
    trial = copy.deepcopy(fabric)
    trial.replicates = []
    exponents = EXPONENT_GRID if len({o.nodes for o in obs}) > 1 else [0.0]
    mem = 0.0
    err, noise, gap, b = math.inf, 0.0, 0.0, 0.0
    objective = _Objective(obs)
    for _ in range(rounds):
        trial.node_memory_MBps = mem
        err, noise, gap, b = _search(trial, objective, exponents, (math.inf, 0.0, 0.0, 0.0))
        trial.nic_gap_us, trial.noise_us, trial.noise_exponent = gap, noise, b
        best_mem = (err, mem)
        for cand in MEMORY_GRID:
            trial.node_memory_MBps = cand
            e = objective(trial, best_mem[0])
            if e < best_mem[0] - 1e-12:
                best_mem = (e, cand)
        err, mem = best_mem
    return ScaleFit(noise, gap, math.sqrt(err / len(obs)), len(obs), b, mem)


def extrapolation_error(fabric: Fabric, obs: list[Observation]) -> float | None:
    """How well the scale fit extrapolates on these runs alone: fitted to the smallest node
    count's runs, the rms log error of its predictions for the larger counts' runs (None when
    the runs span one node count). It is the difficulty that normalises a prediction
    interval (published.conformal_bands, intervals.py): known from the small runs only, and
    measuring what the prediction does, extrapolating in node count, where the fit's own
    rms error measures interpolation."""
    counts = sorted({o.nodes for o in obs})
    if len(counts) < 2:
        return None
    small = [o for o in obs if o.nodes == counts[0]]
    rest = [o for o in obs if o.nodes != counts[0]]
    f = fit_scale(fabric, small).apply(fabric, "the smallest node count")
    errs = [math.log(o.predict(f) / o.measured_us) ** 2 for o in rest]
    return math.sqrt(sum(errs) / len(errs))
