"""A fabric as the models see it: a piecewise point-to-point cost plus where its latency sits.

The point-to-point part is a LogGP-family model split at protocol breakpoints (eager,
rendezvous, ...): within segment i a message of m bytes costs t(m) = alpha_i + beta_i * m
end to end (the half round trip of a ping-pong). alpha holds both CPU overheads and the wire
latency; `overhead_us` (o, per side) separates them so that L = alpha - 2 o, and `gap_us` (g) is
the per-message injection gap seen when streaming small messages.

Where latency sits matters at scale: `alpha` was measured across `calibrated_hops` switches;
a path with h switches costs (h - calibrated_hops) * hop_latency_us more.

Every figure has a provenance (`provenance`, keyed by the parameter names of `params.py`): the
source it was taken from, or "assumed" with the range the prediction bands draw from. The file
form of a fabric, its schema and its validation live in `schema.py`; finding a fabric by name
in `catalog.py`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


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
class InNetwork:
    """Switch-based reduction (SHARP-class) as measured systems behave (docs/model.md).

    A reduction of m bytes posts ceil(m / fragment_bytes) aggregation operations; the first
    costs the host's post and completion overhead plus the trip up the switch tree and back
    (per level and direction `level_us`, plus the wire), each further fragment
    `fragment_us` (pipelined: the host issues and completes one after the other). Above
    `max_bytes` the MPI library falls back to a host-based algorithm; from
    `streaming_from_bytes` on (0: never) a streaming engine moves the bytes at
    `streaming_MBps` after a fixed `streaming_us`, instead of fragment by fragment. Fewer
    than `min_nodes` nodes: no switch tree is built (host-based)."""

    host_overhead_us: float
    level_us: float
    fragment_bytes: int
    fragment_us: float
    max_bytes: int
    streaming_MBps: float = 0.0
    streaming_from_bytes: int = 0
    min_nodes: int = 2
    streaming_us: float = 0.0  # fixed cost of one streaming operation
    # > 0: the streaming rate is this fraction of the fabric's link rate (streaming_MBps is
    # then ignored): a streaming engine moves the bytes at a share of whatever link the
    # fabric has, HDR100 or NDR alike
    streaming_fraction: float = 0.0

    def streaming_rate(self, link_MBps: float) -> float:
        if self.streaming_fraction > 0 and link_MBps > 0:
            return self.streaming_fraction * link_MBps
        return self.streaming_MBps


@dataclass
class Provenance:
    """Where one parameter's value comes from. `assumed`: no measurement or publication gives
    it for this fabric; `low`/`high`: the range prediction bands draw it from."""

    source: str
    assumed: bool = False
    low: float | None = None
    high: float | None = None


@dataclass
class Replicate:
    """One bootstrap refit of a calibration (the runs resampled): the prediction band draws
    from these."""

    segments: list[Segment]
    intra: list[Segment] = field(default_factory=list)


@dataclass
class Fabric:
    name: str
    segments: list[Segment]
    origin: str = "preset"  # "preset", "defined" (published figures) or "calibrated"
    family: str = "custom"  # ib, roce, ethernet, tcp, custom: which defaults apply
    source: str = ""  # where the figures come from (document, run ids)
    assumptions: list[str] = field(default_factory=list)
    overhead_us: float = 0.0  # o: CPU overhead per side per message
    gap_us: float = 0.0  # g: injection gap between consecutive small messages
    # The NIC's own gap (1 / its message rate): k ranks of a node whose messages leave through
    # one NIC in the same step are serialised there, (k - 1) * nic_gap_us after the first
    # (LogGP's g at the shared NIC, Alexandrov et al. 1995; docs/model.md). 0: not limited.
    nic_gap_us: float = 0.0
    # Mean of a rank's random delay per step (OS noise, background traffic): a step ends when
    # its slowest rank does, the expected maximum of n exponential delays being
    # noise_us * H(n) (H: the harmonic number, ~ ln n + 0.58). 0: a noiseless machine. Fitted
    # on small node counts by `published.fit_scale` (docs/model.md, "Small to large").
    noise_us: float = 0.0
    # The noise's tail: 0 for exponential delays (the slowest of n ranks ~ ln n), b > 0 for a
    # heavy (Pareto-like, shape 1/b) tail whose slowest of n grows as n^b: the step adds
    # noise_us * n^b. Fitted with noise_us when the small runs span two node counts or more.
    noise_exponent: float = 0.0
    # The node's memory bandwidth that its ranks share (MB/s; 0: not limiting): k ranks of a
    # node copying or reducing at once get at most node_memory_MBps / k each, however fast one
    # rank's same-node copy is. Fitted on small node counts with the scale terms.
    node_memory_MBps: float = 0.0
    calibrated_hops: int = 1  # switches on the measured path (0: loopback, one host)
    hop_latency_us: float = 0.0  # per additional switch (family default: families.py)
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
    reduce_us_per_byte: float = 0.0  # gamma: local reduction (float sums), per byte
    intra: list[Segment] = field(default_factory=list)  # same-node (shared memory) model
    fit: dict[str, Any] = field(default_factory=dict)
    # Switches that reduce (document 000's in-network computing, SHARP-class IB and RoCE
    # switches): a property of the switch and transport, never seen in a calibration's
    # point-to-point curves, so it is declared (presets, `model define --in-network`,
    # `model calibrate --in-network`).
    in_network: InNetwork | None = None
    provenance: dict[str, Provenance] = field(default_factory=dict)
    replicates: list[Replicate] = field(default_factory=list)

    # -- point-to-point cost ----------------------------------------------------------------
    def segment(self, m: float, intra: bool = False) -> Segment:
        segs = self.intra if intra and self.intra else self.segments
        chosen = segs[0]
        for s in segs:
            if m >= s.start:
                chosen = s
        return chosen

    def rendezvous_bytes(self) -> float:
        """Where sends start to wait for their receiver (the rendezvous handshake): the
        breakpoint at which the fixed cost rises most, a round trip added to every message
        from there on (the other breakpoints of a calibrated curve, inline or copy-in
        protocol switches, add fractions of a microsecond). inf: a single segment."""
        rises = [(b.alpha_us - a.alpha_us, b.start)
                 for a, b in zip(self.segments, self.segments[1:], strict=False)]
        return float(max(rises)[1]) if rises else float("inf")

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
    def in_network_reduction(self) -> bool:
        return self.in_network is not None

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

    def to_dict(self) -> dict[str, Any]:
        """The fabric's file form (schema.py validates it back)."""
        d = asdict(self)
        if self.in_network is None:
            d["in_network"] = None
        return d
