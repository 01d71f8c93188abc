"""A fabric from published figures (`fabench model define`, and the presets).

A publication gives a small-message latency and a large-message bandwidth (IMB PingPong, OSU
latency/bw), sometimes as a range. The fabric is a Hockney line per protocol segment: an eager
segment t = latency + m / bandwidth and, from the eager limit on, the same line plus the
rendezvous handshake's fixed cost. Everything else comes from the family's defaults
(families.py) unless given, and every parameter records where it came from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..choices import FAMILIES
from ..errors import FabenchError
from .fabric import Fabric, Provenance, Segment
from .families import (
    GAMMA_MBPS,
    NODE_MEMORY_MBPS,
    SHM_LAT_US,
    SHM_MBPS,
    Default,
    eager_default,
    hop_default,
    in_network_defaults,
    rendezvous_default,
    scale_provenance,
)
from .schema import NAME_RE


@dataclass
class Figure:
    """A published value, or a published range (value = its midpoint)."""

    value: float
    low: float | None = None
    high: float | None = None

    @classmethod
    def parse(cls, text: str, what: str) -> Figure:
        """'1.2' or '1.0:1.4' (a range, e.g. a table's '1.0-1.4')."""
        try:
            if ":" in text:
                lo_s, hi_s = text.split(":", 1)
                lo, hi = float(lo_s), float(hi_s)
                # `not (a <= b)` also catches NaN, which compares false with everything
                if not (0 <= lo <= hi < math.inf):
                    raise ValueError
                return cls((lo + hi) / 2, lo, hi)
            v = float(text)
            if not (0 <= v < math.inf):
                raise ValueError
            return cls(v)
        except ValueError:
            raise FabenchError(f"{what} {text!r}: a finite number >= 0 or a range "
                               "LOW:HIGH") from None


@dataclass
class Published:
    """The figures `model define` takes. Figures left None take the family's defaults."""

    name: str
    family: str
    latency_us: Figure
    bandwidth_MBps: Figure
    source: str = ""
    hop_latency_us: Figure | None = None
    eager_limit: int | None = None
    rendezvous_us: Figure | None = None
    link_MBps: float | None = None
    calibrated_hops: int = 1
    in_network: str | None = None  # kind (families.IN_NETWORK_KINDS) or None: none
    no_in_network_reason: str = "not declared (--in-network KIND declares it)"
    shm_latency_us: Figure | None = None
    shm_MBps: Figure | None = None
    gamma_MBps: Figure | None = None
    node_memory_MBps: Figure | None = None
    overhead_us: float | None = None
    overhead_note: str = ""  # where a given overhead comes from (default: the source)
    link_note: str = ""  # where a given link rate comes from (default: the source)
    assumptions: list[str] = field(default_factory=list)
    origin: str = "defined"


def _given(fig: Figure, source: str) -> Provenance:
    return Provenance(source, False, fig.low, fig.high)


def _pick(fig: Figure | None, default: Default, source: str) -> tuple[float, Provenance]:
    if fig is None:
        return default.value, default.prov
    return fig.value, _given(fig, source)


MIN_LATENCY_US = 0.001


def define_fabric(p: Published) -> Fabric:
    if p.family not in FAMILIES:
        raise FabenchError(f"--family {p.family!r}: one of {', '.join(FAMILIES)}")
    if not NAME_RE.match(p.name) or ".." in p.name:
        raise FabenchError(f"fabric name {p.name!r}: 1-64 letters, digits, '_', '.', '-'")
    if p.latency_us.value <= 0 or p.bandwidth_MBps.value <= 0:
        raise FabenchError("latency and bandwidth must be positive")
    # A floor from physics, not from any machine: light travels 30 cm in 1 ns, and no MPI
    # message has crossed a network that fast (1e-300 us was taken and priced every step 0)
    if min(p.latency_us.value, p.latency_us.low or p.latency_us.value) < MIN_LATENCY_US:
        raise FabenchError(f"--latency-us must be at least {MIN_LATENCY_US} us (1 ns), got "
                           f"{p.latency_us.value:g}")
    # rates are divided by: a zero one is no rate (and a range must be above zero at both ends)
    for what, fig in (("--bandwidth-MBps", p.bandwidth_MBps), ("--shm-MBps", p.shm_MBps),
                      ("--gamma-MBps", p.gamma_MBps),
                      ("--node-memory-MBps", p.node_memory_MBps)):
        if fig is not None and not min(fig.value, fig.low or fig.value) > 0:
            raise FabenchError(f"{what} must be above 0 MB/s")
    if p.link_MBps is not None and not 0 < p.link_MBps < math.inf:
        raise FabenchError(f"--link-MBps must be a finite rate above 0, got {p.link_MBps}")
    if p.overhead_us is not None and not 0 <= p.overhead_us < math.inf:
        raise FabenchError(f"overhead must be a finite time >= 0, got {p.overhead_us}")
    if p.eager_limit is not None and not 0 <= p.eager_limit <= 2**40:
        raise FabenchError(f"--eager-limit must be 0..2^40 bytes, got {p.eager_limit}")
    if not 0 <= p.calibrated_hops <= 64:
        raise FabenchError(f"--hops must be 0..64 switches, got {p.calibrated_hops}")
    src = p.source or "given on the command line (no source named)"
    fam = "ethernet" if p.family == "tcp" else p.family
    lat, bw = p.latency_us.value, p.bandwidth_MBps.value
    beta = 1.0 / bw
    hop, hop_prov = _pick(p.hop_latency_us, hop_default(fam), src)
    rndv, rndv_prov = _pick(p.rendezvous_us, rendezvous_default(fam), src)
    eager_d = eager_default(fam)
    eager = p.eager_limit if p.eager_limit is not None else int(eager_d.value)
    eager_prov = Provenance(src) if p.eager_limit is not None else eager_d.prov
    shm_lat, shm_lat_prov = _pick(p.shm_latency_us, SHM_LAT_US, src)
    shm_bw, shm_bw_prov = _pick(p.shm_MBps, SHM_MBPS, src)
    gamma, gamma_prov = _pick(p.gamma_MBps, GAMMA_MBPS, src)
    mem, mem_prov = _pick(p.node_memory_MBps, NODE_MEMORY_MBPS, src)
    o = p.overhead_us if p.overhead_us is not None else min(lat / 4, 1.0)
    link = p.link_MBps or bw
    prov: dict[str, Provenance] = {
        "latency_us": _given(p.latency_us, src),
        "bandwidth_MBps": _given(p.bandwidth_MBps, src),
        "hop_latency_us": hop_prov,
        "eager_limit_B": eager_prov,
        "rendezvous_us": rndv_prov,
        "overhead_us": (Provenance(p.overhead_note or src, bool(p.overhead_note))
                        if p.overhead_us is not None else
                        Provenance("assumed: min(latency/4, 1 us), not published", True,
                                   o / 2, min(2 * o, lat / 2))),
        "gap_us": Provenance("assumed: equal to o", True),
        "link_bandwidth_MBps": (Provenance(p.link_note or src) if p.link_MBps else
                                Provenance("assumed: one flow fills the link", True)),
        "shm_latency_us": shm_lat_prov,
        "shm_bandwidth_MBps": shm_bw_prov,
        "gamma_MBps": gamma_prov,
        **scale_provenance(),
        "node_memory_MBps": mem_prov,
        # LogGP's g at the NIC: the ranks of a node sending through it queue by the gap per
        # message, as `model calibrate` takes it (its mpi.bw's g, else its assumed one)
        "nic_gap_us": Provenance("assumed: the gap per message (g = o, assumed) queues the "
                                 "ranks of a node at its NIC; collectives on a few nodes fit "
                                 "it (docs/model.md, \"Small to large\")", True, 0.0, o),
    }
    assumptions = [
        f"Hockney line t = {lat:g} us + m / {bw:g} MB/s; from {eager} B on a rendezvous "
        f"handshake adds {rndv:g} us",
        f"the published latency was measured across {p.calibrated_hops} switch(es)",
        *p.assumptions,
    ]
    inn = None
    if p.in_network:
        inn, inn_prov = in_network_defaults(fam, p.in_network)
        prov |= inn_prov
        assumptions.append(f"in-network reduction: {p.in_network} (docs/model.md)")
    else:
        assumptions.append(f"no in-network reduction: {p.no_in_network_reason}")
    return Fabric(
        name=p.name, origin=p.origin, family=p.family, source=src,
        segments=[Segment(0, lat, beta), Segment(eager, lat + rndv, beta)],
        assumptions=assumptions, overhead_us=o, gap_us=o, nic_gap_us=o,
        calibrated_hops=p.calibrated_hops, hop_latency_us=hop, link_bandwidth_MBps=link,
        reduce_us_per_byte=1.0 / gamma, intra=[Segment(0, shm_lat, 1.0 / shm_bw)],
        node_memory_MBps=mem,
        fit={"breakpoints": [eager]}, in_network=inn, provenance=prov,
    )
