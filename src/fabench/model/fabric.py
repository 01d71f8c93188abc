"""A fabric as the models see it: a piecewise point-to-point cost plus where its latency sits.

The point-to-point part is a LogGP-family model split at protocol breakpoints (eager,
rendezvous, ...): within segment i a message of m bytes costs t(m) = alpha_i + beta_i * m
end to end (the half round trip of a ping-pong). alpha holds both CPU overheads and the wire
latency; `overhead_us` (o, per side) separates them so that L = alpha - 2 o, and `gap_us` (g) is
the per-message injection gap seen when streaming small messages.

Where latency sits matters at scale: `alpha` was measured across `calibrated_hops` switches;
a path with h switches costs (h - calibrated_hops) * hop_latency_us more.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

FABRICS_DIR = "fabrics"


@dataclass
class Segment:
    """t(m) = alpha_us + beta_us_per_byte * m for start <= m < the next segment's start."""

    start: int
    alpha_us: float
    beta_us_per_byte: float
    n_points: int = 0
    median_rel_err: float = 0.0
    max_rel_err: float = 0.0

    @property
    def bandwidth_MBps(self) -> float:
        return 1.0 / self.beta_us_per_byte if self.beta_us_per_byte > 0 else float("inf")


@dataclass
class Fabric:
    name: str
    segments: list[Segment]
    origin: str = "preset"  # "preset" or "calibrated"
    source: str = ""  # where the figures come from (document, run ids)
    assumptions: list[str] = field(default_factory=list)
    overhead_us: float = 0.0  # o: CPU overhead per side per message
    gap_us: float = 0.0  # g: injection gap between consecutive small messages
    calibrated_hops: int = 1  # switches on the measured path (0: loopback, one host)
    hop_latency_us: float = 0.4  # per additional switch (doc 004: cut-through 400 ns)
    link_bandwidth_MBps: float = 0.0  # nominal link rate, for the simulator's platform
    # [size, factor]: a rank exchanging m bytes with its partner (both send at once) moves
    # them `factor` times slower than a one-way flow, mpi.bw / (mpi.bibw / 2) at that size;
    # empty: full duplex (not measured). Open MPI's tcp BTL: 1 below 64 KiB, 2 from it.
    exchange_slowdown: list[list[float]] = field(default_factory=list)
    # Ranks time-sharing cores (emulated nodes on one machine): a ping-pong measured while
    # `ranks` ranks in all share the cores, as [size, factor] of its time over the 2-rank
    # ping-pong's. Empty: not measured (the model then assumes active ranks / cores).
    contention_ranks: int = 0
    contention: list[list[float]] = field(default_factory=list)
    reduce_us_per_byte: float = 0.00025  # gamma: local reduction (4 GB/s of float sums)
    intra: list[Segment] = field(default_factory=list)  # same-node (shared memory) model
    fit: dict[str, Any] = field(default_factory=dict)
    # Whether the switches can reduce (document 000's in-network computing, SHARP-class IB and
    # RoCE switches): a property of the switch and transport, never seen in a calibration's
    # point-to-point curves, so it is declared (presets; `model calibrate --in-network`).
    in_network_reduction: bool = False

    # -- point-to-point cost ----------------------------------------------------------------
    def segment(self, m: float, intra: bool = False) -> Segment:
        segs = self.intra if intra and self.intra else self.segments
        chosen = segs[0]
        for s in segs:
            if m >= s.start:
                chosen = s
        return chosen

    def alpha(self, m: float, hops: int | None = None, intra: bool = False) -> float:
        s = self.segment(m, intra)
        extra = 0.0
        if not intra and hops is not None:
            extra = (hops - self.calibrated_hops) * self.hop_latency_us
        return max(s.alpha_us + extra, 0.0)

    def beta(self, m: float, intra: bool = False) -> float:
        return self.segment(m, intra).beta_us_per_byte

    def exchange_factor(self, m: float) -> float:
        """Slowdown of an exchange's bytes at size m: the factor measured at the largest
        size <= m (the smallest size's below it); 1 when none was measured."""
        if not self.exchange_slowdown:
            return 1.0
        factor = self.exchange_slowdown[0][1]
        for size, f in self.exchange_slowdown:
            if m >= size:
                factor = f
        return max(1.0, factor)

    def contention_factor(self, m: float) -> float:
        """Measured slowdown of a step's latency part at size m with `contention_ranks`
        ranks sharing the cores (the factor at the largest size <= m)."""
        factor = self.contention[0][1] if self.contention else 1.0
        for size, f in self.contention:
            if m >= size:
                factor = f
        return max(1.0, factor)

    def contention_share(self, active: int, cores: int, m: float) -> float:
        """Stretch of a step's latency part when `active` ranks share `cores` cores. Measured
        at contention_ranks: 1 at `cores` ranks, the measured factor at contention_ranks,
        linear in the ranks between and beyond (each extra rank adds a share of waiting).
        Without a measurement: active / cores, each rank getting an equal slice."""
        if active <= cores:
            return 1.0
        if not self.contention or self.contention_ranks <= cores:
            return active / cores
        per_rank = (self.contention_factor(m) - 1.0) / (self.contention_ranks - cores)
        return 1.0 + per_rank * (active - cores)

    def time(self, m: float, hops: int | None = None, intra: bool = False) -> float:
        """Half round trip of an m-byte message across `hops` switches (default: as measured)."""
        return self.alpha(m, hops, intra) + self.beta(m, intra) * m

    @property
    def latency_us(self) -> float:
        return self.time(8)

    @property
    def peak_bandwidth_MBps(self) -> float:
        return self.segments[-1].bandwidth_MBps

    @property
    def wire_latency_us(self) -> float:
        """LogGP's L at small sizes: alpha minus the two CPU overheads."""
        return max(self.segments[0].alpha_us - 2 * self.overhead_us, 0.0)

    def loggp(self) -> dict[str, float]:
        return {"L_us": self.wire_latency_us, "o_us": self.overhead_us, "g_us": self.gap_us,
                "G_us_per_byte": self.segments[-1].beta_us_per_byte}

    # -- persistence ------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Fabric:
        d = dict(d)
        d["segments"] = [Segment(**s) for s in d.get("segments", [])]
        d["intra"] = [Segment(**s) for s in d.get("intra", [])]
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in known})


def fabrics_dir(out: Path) -> Path:
    return out / FABRICS_DIR


def save_fabric(fabric: Fabric, out: Path) -> Path:
    """Calibrations live beside the store as `<results dir>/fabrics/<name>.json`: plain files a
    user can read, diff and copy to another results directory."""
    d = fabrics_dir(out)
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{fabric.name}.json"
    path.write_text(json.dumps(fabric.to_dict(), indent=1) + "\n")
    return path
