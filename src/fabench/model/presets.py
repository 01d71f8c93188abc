"""Fabric presets from published figures, each with its source and what had to be assumed.

Documents 004 and 000 give a small-message latency and a large-message bandwidth (or only
differences), not curves: each preset is `model define` with those figures (define.py) and
the family's defaults for the rest (families.py). See docs/model.md ("Presets").
"""

from __future__ import annotations

from collections.abc import Callable

from .define import Figure, Published, define_fabric
from .fabric import Fabric, Provenance
from .families import hop_default
from .sources import cite

DOC004 = cite("004", "IMB PingPong table: latency at 4 B, bandwidth at 4 MB")
DOC000 = cite("000", "relative results only: IB 0.6-0.7 us lower latency at every size, "
                     "bibw IB ~= RoCEv2")
# Document 000 publishes differences only. The absolute anchor (ConnectX-4 EDR through one
# MSB7790 switch) is assumed: EDR (100 Gb/s, 64b/66b) carries at most ~12.1 GB/s of data.
EDR_LAT = Figure(1.0, 0.7, 1.3)
EDR_BW = Figure(12000.0, 11000.0, 12300.0)
ROCE_EXTRA = Figure(0.65, 0.6, 0.7)  # [000]: RoCEv2 above IB at every size, in the switch
NOMINAL = "the link's nominal data rate (line rate less encoding)"


def tcp_1g() -> Fabric:
    return define_fabric(Published("tcp-1g", "ethernet", Figure(24.5), Figure(112.0),
                                   source=DOC004, link_MBps=125.0, link_note=NOMINAL,
                                   origin="preset"))


def tcp_40g() -> Fabric:
    return define_fabric(Published(
        "tcp-40g", "ethernet", Figure(7.8), Figure(1126.0), source=DOC004, link_MBps=5000.0,
        link_note=NOMINAL, origin="preset",
        assumptions=["untuned socket buffers (doc 004: the 256 KB-1 MB dip; 2 MB buffers gave "
                     "1.5x)"]))


def roce_40g() -> Fabric:
    return define_fabric(Published(
        "roce-40g", "roce", Figure(1.65, 1.4, 1.9), Figure(4456.5, 4300.0, 4613.0),
        source=DOC004, hop_latency_us=Figure(0.4), link_MBps=5000.0, link_note=NOMINAL,
        origin="preset",
        assumptions=["the published ranges' midpoints; bands span the ranges",
                     "doc 004's switch: cut-through 0.4 us per hop"]))


def ib_qdr() -> Fabric:
    return define_fabric(Published("ib-qdr", "ib", Figure(1.5), Figure(3400.0), source=DOC004,
                                   link_MBps=4000.0, link_note=NOMINAL, origin="preset"))


def ib_fdr() -> Fabric:
    return define_fabric(Published("ib-fdr", "ib", Figure(1.13, 0.86, 1.4),
                                   Figure(5650.0, 5300.0, 6000.0), source=DOC004,
                                   link_MBps=6780.0, link_note=NOMINAL, origin="preset",
                                   assumptions=["the published ranges' midpoints"]))


def _anchor_assumed(f: Fabric) -> Fabric:
    why = ("assumed: document 000 publishes no absolute figure; ConnectX-4 EDR through one "
           "switch")
    f.provenance["latency_us"] = Provenance(why, True, EDR_LAT.low, EDR_LAT.high)
    f.provenance["bandwidth_MBps"] = Provenance(why, True, EDR_BW.low, EDR_BW.high)
    return f


def ib_edr_100g() -> Fabric:
    return _anchor_assumed(define_fabric(Published(
        "ib-100g", "ib", EDR_LAT, EDR_BW, source=DOC000, link_MBps=12500.0, link_note=NOMINAL,
        origin="preset",
        in_network="sharp1",
        assumptions=["MSB7790 (Switch-IB 2) switches: SHARPv1 in-network reduction ([G16] "
                     "figures)"])))


def roce_100g() -> Fabric:
    ib_hop = hop_default("ib").value
    f = define_fabric(Published(
        "roce-100g", "roce", Figure(EDR_LAT.value + ROCE_EXTRA.value),
        EDR_BW, source=DOC000, link_MBps=12500.0, link_note=NOMINAL, origin="preset",
        in_network="roce-inc",
        overhead_us=min(EDR_LAT.value / 4, 1.0),
        overhead_note="assumed: ib-100g's (the hosts and NICs are the same; the 0.65 us is in "
                      "the switch)",
        hop_latency_us=Figure(ib_hop + ROCE_EXTRA.value, ib_hop + ROCE_EXTRA.low,
                              ib_hop + 0.15 + ROCE_EXTRA.high),
        assumptions=["IB anchor + 0.65 us at every size (doc 000), same bandwidth (bibw "
                     "equal)", "the 0.65 us sits in the switch chip (doc 000's "
                           "explanation): each further switch adds it again; the "
                           "rendezvous handshake does not (the gap is constant)",
                     "lossless (PFC + ECN): no loss or retransmission modelled"]))
    f = _anchor_assumed(f)
    f.provenance["latency_us"] = Provenance(
        "assumed anchor (ib-100g) + [000] 0.6-0.7 us", True,
        (EDR_LAT.low or 0) + (ROCE_EXTRA.low or 0), (EDR_LAT.high or 0) + (ROCE_EXTRA.high or 0))
    return f


def tcp_100g() -> Fabric:
    return define_fabric(Published(
        "tcp-100g", "ethernet", Figure(7.8), Figure(2815.0), source=DOC000 + "; " + DOC004,
        link_MBps=12500.0, link_note=NOMINAL, origin="preset",
        hop_latency_us=Figure(hop_default("roce").value),
        no_in_network_reason="doc 000's in-network computing is a feature of the IB and "
                             "RoCEv2 fabrics (the switch takes part in the RDMA transport); "
                             "TCP streams between hosts give it nothing to reduce",
        assumptions=["doc 000 gives no TCP figure beyond 'far behind'; latency from doc "
                     "004's 40G TCP (7.8 us: the stack dominates, not the link)",
                     "bandwidth = doc 004's 40G TCP link fraction (1126 of 5000 MB/s, "
                     "22.5 %) applied to 100G: 2815 MB/s",
                     "same Ethernet switch as RoCEv2 (lossless features off)"]))


PRESETS: dict[str, Callable[[], Fabric]] = {
    "tcp-1g": tcp_1g, "tcp-40g": tcp_40g, "roce-40g": roce_40g, "ib-qdr": ib_qdr,
    "ib-fdr": ib_fdr, "ib-100g": ib_edr_100g, "roce-100g": roce_100g, "tcp-100g": tcp_100g,
}
