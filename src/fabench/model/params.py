"""Every scalar a fabric's predictions depend on, by name: how to read it, how to set it.

`model show` lists these with their provenance (or "assumed"); prediction bands draw the
parameters that carry a range; fabric files name them in `provenance`. A parameter that does
not apply to a fabric (no rendezvous segment, no in-network reduction) reads None.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .fabric import Fabric


@dataclass(frozen=True)
class Param:
    name: str
    unit: str
    doc: str
    get: Callable[[Fabric], float | None]
    set: Callable[[Fabric, float], None]


def _shift_alphas(f: Fabric, value: float) -> None:
    """The small-message latency moves every segment's fixed cost with it: the later
    segments keep their extra (rendezvous) cost over the first."""
    delta = value - f.segments[0].alpha_us
    for s in f.segments:
        s.alpha_us = max(s.alpha_us + delta, 0.0)


def _scale_betas(segs_attr: str) -> Callable[[Fabric, float], None]:
    def setter(f: Fabric, value: float) -> None:
        segs = getattr(f, segs_attr)
        if not segs or value <= 0 or segs[-1].beta_us_per_byte <= 0:
            return
        k = (1.0 / value) / segs[-1].beta_us_per_byte
        for s in segs:
            s.beta_us_per_byte *= k
    return setter


def _last_bw(segs_attr: str) -> Callable[[Fabric], float | None]:
    def getter(f: Fabric) -> float | None:
        segs = getattr(f, segs_attr)
        if not segs or segs[-1].beta_us_per_byte <= 0:
            return None
        return 1.0 / segs[-1].beta_us_per_byte
    return getter


def _rendezvous_get(f: Fabric) -> float | None:
    if len(f.segments) < 2:
        return None
    return f.segments[1].alpha_us - f.segments[0].alpha_us


def _rendezvous_set(f: Fabric, value: float) -> None:
    if len(f.segments) < 2:
        return
    delta = value - (f.segments[1].alpha_us - f.segments[0].alpha_us)
    for s in f.segments[1:]:
        s.alpha_us = max(s.alpha_us + delta, 0.0)


def _eager_get(f: Fabric) -> float | None:
    return float(f.segments[1].start) if len(f.segments) > 1 else None


def _eager_set(f: Fabric, value: float) -> None:
    if len(f.segments) > 1:
        f.segments[1].start = int(value)


def _shm_lat_set(f: Fabric, value: float) -> None:
    if f.intra:
        delta = value - f.intra[0].alpha_us
        for s in f.intra:
            s.alpha_us = max(s.alpha_us + delta, 0.0)


def _gamma_get(f: Fabric) -> float | None:
    return 1.0 / f.reduce_us_per_byte if f.reduce_us_per_byte > 0 else None


def _gamma_set(f: Fabric, value: float) -> None:
    f.reduce_us_per_byte = 1.0 / value if value > 0 else 0.0


def _attr(name: str) -> tuple[Callable[[Fabric], float | None], Callable[[Fabric, float], None]]:
    def getter(f: Fabric) -> float | None:
        return float(getattr(f, name))

    def setter(f: Fabric, value: float) -> None:
        setattr(f, name, value)
    return getter, setter


def _inn(name: str, integer: bool = False) -> tuple[Callable[[Fabric], float | None],
                                                     Callable[[Fabric, float], None]]:
    def getter(f: Fabric) -> float | None:
        if f.in_network is None:
            return None
        if name.startswith("streaming") and not (f.in_network.streaming_MBps > 0
                                                 or f.in_network.streaming_fraction > 0):
            return None  # no streaming engine: its figures do not apply
        return float(getattr(f.in_network, name))

    def setter(f: Fabric, value: float) -> None:
        if f.in_network is not None:
            setattr(f.in_network, name, int(round(value)) if integer else value)
    return getter, setter


PARAMS: list[Param] = [
    Param("latency_us", "us", "small-message half round trip across the measured path "
          "(first segment's fixed cost)", lambda f: f.segments[0].alpha_us, _shift_alphas),
    Param("bandwidth_MBps", "MB/s", "one flow's large-message rate (last segment)",
          _last_bw("segments"), _scale_betas("segments")),
    Param("eager_limit_B", "B", "first size of the second protocol segment",
          _eager_get, _eager_set),
    Param("rendezvous_us", "us", "extra fixed cost of the second segment (handshake)",
          _rendezvous_get, _rendezvous_set),
    Param("hop_latency_us", "us", "latency of each switch beyond the measured path",
          *_attr("hop_latency_us")),
    Param("overhead_us", "us", "LogGP o: CPU overhead per side and message",
          *_attr("overhead_us")),
    Param("gap_us", "us", "LogGP g: injection gap of small messages", *_attr("gap_us")),
    Param("nic_gap_us", "us", "the NIC's gap per message (1 / message rate): ranks of a "
          "node sending through it in one step queue behind each other", *_attr("nic_gap_us")),
    Param("noise_us", "us", "mean random delay of a rank per step (a step waits for its "
          "slowest rank: noise_us * H(ranks))", *_attr("noise_us")),
    Param("noise_exponent", "", "tail of the step noise: 0 exponential (H(ranks)), b > 0 "
          "heavy (ranks^b)", *_attr("noise_exponent")),
    Param("node_memory_MBps", "MB/s", "memory bandwidth a node's ranks share when they copy "
          "or reduce at once (0: not limiting)", *_attr("node_memory_MBps")),
    Param("link_bandwidth_MBps", "MB/s", "link rate that flows sharing a link divide",
          *_attr("link_bandwidth_MBps")),
    Param("gamma_MBps", "MB/s", "local reduction rate (float sums) inside a collective",
          _gamma_get, _gamma_set),
    Param("shm_latency_us", "us", "same-node (shared memory) small-message latency",
          lambda f: f.intra[0].alpha_us if f.intra else None, _shm_lat_set),
    Param("shm_bandwidth_MBps", "MB/s", "same-node (shared memory) large-message rate",
          _last_bw("intra"), _scale_betas("intra")),
    Param("in_network.host_overhead_us", "us", "in-network reduction: host post and "
          "completion of one operation", *_inn("host_overhead_us")),
    Param("in_network.level_us", "us", "in-network reduction: per switch level and "
          "direction", *_inn("level_us")),
    Param("in_network.fragment_bytes", "B", "in-network reduction: payload of one "
          "aggregation operation", *_inn("fragment_bytes", integer=True)),
    Param("in_network.fragment_us", "us", "in-network reduction: cost of each further "
          "fragment", *_inn("fragment_us")),
    Param("in_network.max_bytes", "B", "in-network reduction: larger messages fall back to "
          "host-based algorithms", *_inn("max_bytes", integer=True)),
    Param("in_network.streaming_MBps", "MB/s", "in-network reduction: streaming rate of "
          "large messages (0: no streaming engine)", *_inn("streaming_MBps")),
    Param("in_network.streaming_fraction", "", "in-network reduction: streaming rate as a "
          "fraction of the link rate (0: streaming_MBps applies)",
          *_inn("streaming_fraction")),
    Param("in_network.streaming_us", "us", "in-network reduction: fixed cost of one "
          "streaming operation", *_inn("streaming_us")),
    Param("in_network.streaming_from_bytes", "B", "in-network reduction: first size that "
          "streams", *_inn("streaming_from_bytes", integer=True)),
    Param("in_network.min_nodes", "nodes", "in-network reduction: fewer nodes stay "
          "host-based", *_inn("min_nodes", integer=True)),
]

BY_NAME: dict[str, Param] = {p.name: p for p in PARAMS}


def applicable(f: Fabric) -> list[Param]:
    """The parameters that have a value on this fabric."""
    return [p for p in PARAMS if p.get(f) is not None]

