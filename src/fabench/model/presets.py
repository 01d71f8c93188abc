"""Fabric presets from published figures, each with its source and what had to be assumed.

Documents 004 and 000 give a small-message latency and a large-message bandwidth (or only
differences), not curves. A preset is therefore a Hockney line per protocol segment: an eager
segment (t = lat + m / bw) and a rendezvous segment from the eager limit on, whose extra fixed
cost is one more round trip (the request-to-send/clear-to-send handshake). See docs/model.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from ..errors import FabenchError
from .fabric import Fabric, Segment, fabrics_dir

DOC004 = ("document 004 (40G Ethernet on an Intel ONS switch), IMB PingPong table: "
          "latency at 4 B, bandwidth at 4 MB")
DOC000 = ("document 000 (RoCEv2 vs InfiniBand vs TCP/IP, PKU + Huawei 2024): relative results "
          "only (IB 0.6-0.7 us lower latency at every size, bibw IB ~= RoCEv2)")
# Shared memory inside a node: this host's measured figures (FACTS.md: Open MPI vader 8 B
# 0.40-0.55 us, memcpy 7.9 GB/s); used for every preset's same-node ranks.
SHM = [Segment(0, 0.45, 1 / 7900.0)]


def _hockney(name: str, lat_us: float, bw_MBps: float, *, eager: int, hop_us: float,
             link_MBps: float, source: str, assumptions: list[str],
             in_network: str | None = None,
             no_in_network: str = "the sources describe none for this switch and transport",
             gap_us: float | None = None) -> Fabric:
    """`in_network`: why the switches can reduce (document 000); None: they cannot, and
    `no_in_network` says why."""
    beta = 1.0 / bw_MBps
    # With one switch on the measured path the published latency includes one hop.
    o = gap_us if gap_us is not None else min(lat_us / 4, 1.0)
    return Fabric(
        name=name, origin="preset", source=source,
        segments=[Segment(0, lat_us, beta), Segment(eager, 3 * lat_us, beta)],
        assumptions=[
            f"Hockney line t = {lat_us} us + m / {bw_MBps:g} MB/s below the eager limit "
            f"{eager} B; above it one extra round trip (rendezvous handshake)",
            "the published latency was measured across one switch",
            f"o = {o:.2f} us per side (not published: min(latency/4, 1 us))",
            *assumptions,
            f"in-network reduction: {in_network}" if in_network else
            f"no in-network reduction: {no_in_network}",
        ],
        in_network_reduction=in_network is not None,
        overhead_us=o, gap_us=o, calibrated_hops=1, hop_latency_us=hop_us,
        link_bandwidth_MBps=link_MBps, intra=list(SHM),
        fit={"breakpoints": [eager]},
    )


def tcp_1g() -> Fabric:
    return _hockney("tcp-1g", 24.5, 112, eager=65536, hop_us=0.4, link_MBps=125,
                    source=DOC004, assumptions=["Open MPI tcp BTL eager limit 64 KiB",
                                                "switch hop 0.4 us (doc 004 cut-through)"])


def tcp_40g() -> Fabric:
    return _hockney("tcp-40g", 7.8, 1126, eager=65536, hop_us=0.4, link_MBps=5000,
                    source=DOC004, assumptions=["untuned socket buffers (doc 004: the 256 KB-1 MB"
                                                " dip; 2 MB buffers gave 1.5x)",
                                                "Open MPI tcp BTL eager limit 64 KiB"])


def roce_40g() -> Fabric:
    return _hockney("roce-40g", 1.65, 4457, eager=12288, hop_us=0.4, link_MBps=5000,
                    source=DOC004, assumptions=["midpoints of the published ranges 1.4-1.9 us "
                                                "and 4300-4613 MB/s",
                                                "openib BTL eager limit 12 KiB"])


def ib_qdr() -> Fabric:
    return _hockney("ib-qdr", 1.5, 3400, eager=12288, hop_us=0.1, link_MBps=4000,
                    source=DOC004, assumptions=["switch hop 0.1 us (typical IB switch; not "
                                                "published)", "eager limit 12 KiB"])


def ib_fdr() -> Fabric:
    return _hockney("ib-fdr", 1.13, 5650, eager=12288, hop_us=0.1, link_MBps=6780,
                    source=DOC004, assumptions=["midpoints of 0.86-1.4 us and 5300-6000 MB/s",
                                                "switch hop 0.1 us (not published)",
                                                "eager limit 12 KiB"])


# Document 000 publishes differences only; the absolute anchor is an assumption. EDR (100 Gb/s,
# 64b/66b) carries at most ~12.1 GB/s of data; ConnectX-4 osu_latency figures of ~1 us are the
# common published ones. The 0.65 us that doc 000 measured between IB and RoCEv2 at every size
# is attributed there to the switch chip, so it is put on the switch hop.
_EDR_LAT, _EDR_BW, _IB_HOP, _ROCE_EXTRA = 1.0, 12000.0, 0.09, 0.65


def ib_edr_100g() -> Fabric:
    return _hockney("ib-100g", _EDR_LAT, _EDR_BW, eager=12288, hop_us=_IB_HOP,
                    link_MBps=12500, source=DOC000,
                    assumptions=["absolute anchor assumed: 1.0 us, 12000 MB/s (ConnectX-4 EDR; "
                                 "doc 000 publishes no absolute figure)",
                                 "switch hop 0.09 us (MSB7790-class IB switch; vendor figure)"],
                    in_network="doc 000's in-network computing (SHARP-class IB switches)")


def roce_100g() -> Fabric:
    return _hockney("roce-100g", _EDR_LAT + _ROCE_EXTRA, _EDR_BW, eager=12288,
                    hop_us=_IB_HOP + _ROCE_EXTRA, link_MBps=12500, source=DOC000,
                    assumptions=["IB anchor + 0.65 us (doc 000: 0.6-0.7 us higher at every "
                                 "size), same bandwidth (doc 000: bibw equal)",
                                 "the 0.65 us sits in the switch (doc 000's explanation), so "
                                 "every extra hop adds it again",
                                 "lossless (PFC + ECN): no loss or retransmission modelled"],
                    in_network="doc 000's in-network computing on the lossless RoCEv2 fabric")


def tcp_100g() -> Fabric:
    return _hockney("tcp-100g", 7.8, 2815, eager=65536, hop_us=_IB_HOP + _ROCE_EXTRA,
                    link_MBps=12500, source=DOC000 + "; " + DOC004,
                    assumptions=["doc 000 gives no TCP figure beyond 'far behind'; latency from "
                                 "doc 004's 40G TCP (7.8 us: the stack dominates, not the "
                                 "link)", "bandwidth = doc 004's 40G TCP link fraction (1126 of "
                                 "5000 MB/s, 22.5 %) applied to 100G: 2815 MB/s",
                                 "same Ethernet switch as RoCEv2 (lossless features off)"],
                    no_in_network="doc 000's in-network computing is a feature of the IB and "
                                  "RoCEv2 fabrics (the switch takes part in the RDMA "
                                  "transport); TCP streams between hosts give it nothing to "
                                  "reduce")


PRESETS: dict[str, Callable[[], Fabric]] = {
    "tcp-1g": tcp_1g, "tcp-40g": tcp_40g, "roce-40g": roce_40g, "ib-qdr": ib_qdr,
    "ib-fdr": ib_fdr, "ib-100g": ib_edr_100g, "roce-100g": roce_100g, "tcp-100g": tcp_100g,
}


# Where fabrics come from, in the order a name is looked up: a calibration saved beside the
# store, a fabric file, a preset (so this lives with the presets).
def load_fabric(name: str, out: Path | None = None) -> Fabric:
    """A calibration saved under `out`, a JSON file path, or a preset, in that order."""
    if out is not None:
        path = fabrics_dir(out) / f"{name}.json"
        if path.is_file():
            return Fabric.from_dict(json.loads(path.read_text()))
    p = Path(name)
    if p.suffix == ".json" and p.is_file():
        return Fabric.from_dict(json.loads(p.read_text()))
    if name in PRESETS:
        return PRESETS[name]()
    saved = sorted(x.stem for x in fabrics_dir(out).glob("*.json")) if out else []
    raise FabenchError(f"unknown fabric {name!r}; presets: {', '.join(PRESETS)}"
                       + (f"; calibrated: {', '.join(saved)}" if saved else ""))


def list_fabrics(out: Path | None = None) -> list[str]:
    saved = sorted(x.stem for x in fabrics_dir(out).glob("*.json")) if out else []
    return [*PRESETS, *saved]
