"""Per-family defaults: what a fabric of a family has when the user's figures do not say.

Each default carries its source (sources.py) or says "assumed", and a range that prediction
bands draw from. `model define` and the presets take these unless overridden; calibrations
take the ones no measurement gives (hop latency, in-network reduction).

Families: ib (InfiniBand), roce (RoCEv2 on an Ethernet switch), ethernet (RDMA-less MPI over
Ethernet, e.g. TCP), tcp (alias of ethernet), custom (no family: wide assumed ranges).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..choices import IN_NETWORK_KINDS
from .fabric import InNetwork, Provenance
from .sources import cite


@dataclass(frozen=True)
class Default:
    value: float
    prov: Provenance


def _d(value: float, source: str, low: float, high: float, assumed: bool = False) -> Default:
    return Default(value, Provenance(source, assumed, low, high))


# Switch latency per hop (us). IB: 86 ns port to port for an IB switch chip [SUNIB]; document
# 000 measured its Ethernet switch chip 0.6-0.7 us slower than its EDR IB switch at every size
# [000]; cut-through Ethernet 400 ns [004].
HOP_US = {
    "ib": _d(0.1, cite("SUNIB", "86 ns port to port; range up to 0.15 us assumed for larger "
                                "switch chips"), 0.086, 0.15),
    "roce": _d(0.75, cite("000", "Ethernet switch chip 0.6-0.7 us slower than an IB one "
                                 "(~0.1 us)"), 0.4, 0.8),
    "ethernet": _d(0.4, cite("004", "cut-through 400 ns; store-and-forward up to ~1 us "
                                    "assumed"), 0.3, 1.0),
    "custom": _d(0.4, "assumed: no family given (0.1 us InfiniBand to 1 us store-and-forward "
                      "Ethernet)", 0.1, 1.0, assumed=True),
}

# Eager limit (bytes) and the rendezvous handshake's extra fixed cost. Open MPI's tcp BTL eager
# limit is 65536 [OMPI41]; RDMA transports switch to rendezvous between 8 and 64 KiB
# depending on library and settings: assumed. The handshake is endpoint work (a request and
# a reply): document 000 measured the IB-RoCE gap constant at every size (0.6-0.7 us), so
# the switch latency is not paid again by it; 1-3 us assumed.
EAGER = {
    "ib": _d(12288, "assumed: RDMA eager/rendezvous switch, 8-64 KiB by library", 8192, 65536,
             assumed=True),
    "roce": _d(12288, "assumed: RDMA eager/rendezvous switch, 8-64 KiB by library", 8192,
               65536, assumed=True),
    "ethernet": _d(65536, cite("OMPI41", "btl_tcp_eager_limit 65536"), 65536, 65536),
    "custom": _d(16384, "assumed: no family given", 4096, 65536, assumed=True),
}
RENDEZVOUS_US = {
    "ib": _d(2.0, "assumed: one request/reply handshake at the endpoints", 1.0, 3.0, True),
    "roce": _d(2.0, "assumed: one request/reply handshake at the endpoints", 1.0, 3.0, True),
    "ethernet": _d(15.0, "assumed: a handshake through the TCP stack", 5.0, 30.0, True),
    "custom": _d(2.0, "assumed: no family given", 0.5, 30.0, True),
}

# Same-node (shared memory) segment and local reduction rate: properties of the node, not of
# the fabric, and published with none of the sources; assumed with wide ranges unless the
# user gives or calibrates them (`--shm-latency-us`, `--shm-MBps`, `--gamma-MBps`; `model
# calibrate` with shm runs measures the first two and the host's reduction rate).
SHM_LAT_US = _d(0.4, "assumed: not published for this fabric (x86 servers, MPI shared "
                     "memory, 0.2-0.8 us)", 0.2, 0.8, assumed=True)
SHM_MBPS = _d(8000.0, "assumed: not published for this fabric (single-copy shared memory, "
                      "3-20 GB/s)", 3000.0, 20000.0, assumed=True)
GAMMA_MBPS = _d(6000.0, "assumed: not measured (a core summing floats from memory, "
                        "2-15 GB/s)", 2000.0, 15000.0, assumed=True)


# The memory bandwidth a node's ranks share when they copy or reduce at once (Fabric.
# node_memory_MBps): no point-to-point figure shows it, and none of the sources publishes it
# with its collectives. The published corpus's systems whose small runs at several ranks per
# node fitted it (scale.py; issue 30's fifth round, docs/model.md) give the prior: their
# median, 56 GB/s, between 10 GB/s (ABCI V) and 316 GB/s (AWS hpc6a on EKS). A value, not a
# measurement of this node: `--node-memory-MBps` (a STREAM figure, say) or collectives on a
# few nodes (`model calibrate --scale-runs`) replace it.
NODE_MEMORY_MBPS = _d(56234.13, "assumed: the median of the published corpus's fitted node "
                                "memory (7 systems' small runs at several ranks per node, "
                                "docs/model.md)", 10000.0, 316227.77, assumed=True)


def scale_provenance() -> dict[str, Provenance]:
    """The scale-dependent terms (Fabric.nic_gap_us, Fabric.noise_us) before any fit: 0, said
    as assumed. Neither shows in a two-node ping-pong; collectives measured on a few nodes fit
    them (scale.py). The node's memory: NODE_MEMORY_MBPS."""
    why = ("assumed 0: not seen in two-node figures; fitted on small node counts' collectives "
           "(docs/model.md, \"Small to large\")")
    return {"nic_gap_us": Provenance(why, True), "noise_us": Provenance(why, True),
            "noise_exponent": Provenance(why, True),
            "node_memory_MBps": NODE_MEMORY_MBPS.prov}


def hop_default(family: str) -> Default:
    return HOP_US["ethernet" if family == "tcp" else family]


def eager_default(family: str) -> Default:
    return EAGER["ethernet" if family == "tcp" else family]


def rendezvous_default(family: str) -> Default:
    return RENDEZVOUS_US["ethernet" if family == "tcp" else family]


# -- in-network reduction ---------------------------------------------------------------------
# [G16], 128 hosts on Switch-IB 2 EDR (36-port switches: 18 hosts per leaf, one level above
# the leaves, so 2 levels): SHArP allreduce 8 B 2.83 us, 4096 B 14.48 us (pipelined
# fragments of at most 256 B [SHARPv1]). With a per-level-and-direction latency of
# level_us (assumed 0.25 us: an IB hop [SUNIB] plus the aggregation unit), the host's post and
# completion are what is left of 2.83 us after 2 x 2 levels, and each further fragment costs
# (14.48 - 2.83 - 4096 B at EDR's 12 GB/s) / 15.
G16_LEVELS, G16_8B_US, G16_4K_US, EDR_MBPS = 2, 2.83, 14.48, 12000.0
SHARP1_LEVEL_US = 0.25
SHARP1_LEVEL_RANGE = (0.15, 0.4)


def sharp1_fit(level_us: float = SHARP1_LEVEL_US) -> tuple[float, float]:
    """(host overhead, per-fragment cost) that reproduce [G16]'s two SHArP figures."""
    host = G16_8B_US - 2 * G16_LEVELS * level_us
    frag = (G16_4K_US - G16_8B_US - 4096 / EDR_MBPS) / (4096 // 256 - 1)
    return host, frag


# [NVSHARP]: osu_allreduce on 128 nodes x 1 rank with SHARP and streaming aggregation
# (SHARPv2, HDR): 4 B 7.44 us .. 2048 B 10.43 us (low-latency trees), 4096 and 8192 B 42.61
# and 37.93 us (host-based fallback), 16 KiB 15.48 us .. 1 MiB 101.53 us (streaming).
NV_8B_US, NV_2K_US, NV_16K_US, NV_1M_US = 8.43, 10.43, 15.48, 101.53


# [G20]: streaming aggregation's allreduce bandwidth on HDR is about 95 % of the network's
# (96 % of point-to-point in the ISC 2020 summary). [NVSHARP]'s 16 KiB-1 MiB rows stream at
# 12.0 GB/s, 96 % of an HDR100 link (12.5 GB/s), 48 % of HDR200's: its nodes' links are not
# published. The streaming rate is this fraction of the fabric's own link rate, so a fabric
# with 200 or 400 Gb/s links streams 2 or 4 times faster than [NVSHARP]'s table.
SHARP2_STREAM_FRACTION = 0.95
SHARP2_STREAM_RANGE = (0.90, 0.96)


def sharp2_fit(level_us: float = SHARP1_LEVEL_US) -> dict[str, float]:
    host = NV_8B_US - 2 * G16_LEVELS * level_us
    frag = (NV_2K_US - NV_8B_US) / (2048 // 256 - 1)
    stream = ((1 << 20) - (16 << 10)) / (NV_1M_US - NV_16K_US)
    return {"host": host, "frag": frag, "stream_MBps": stream,
            "stream_us": NV_16K_US - (16 << 10) / stream}




def in_network_defaults(family: str, kind: str | None = None
                        ) -> tuple[InNetwork, dict[str, Provenance]]:
    """The in-network reduction a family's switches do by default (`kind` overrides): sharp1
    (Switch-IB 2, [G16]), sharp2 (Quantum HDR with streaming, [NVSHARP]), roce-inc (document
    000's RoCE in-network computing: no figures published; SHARPv1's structure with the
    Ethernet switch's extra latency per level), generic (assumed)."""
    if kind is None:
        kind = {"ib": "sharp1", "roce": "roce-inc"}.get(family, "generic")
    if kind not in IN_NETWORK_KINDS:
        raise ValueError(f"in-network kind {kind!r}: one of {', '.join(IN_NETWORK_KINDS)}")
    lo, hi = SHARP1_LEVEL_RANGE
    host, frag = sharp1_fit()
    host_lo, host_hi = sharp1_fit(hi)[0], sharp1_fit(lo)[0]
    g16 = cite("G16", "fitted to 8 B 2.83 us and 4096 B 14.48 us on 128 hosts")
    level = Provenance("assumed: an IB switch hop plus the aggregation unit, per level and "
                       "direction", True, lo, hi)
    prov: dict[str, Provenance] = {
        "in_network.level_us": level,
        "in_network.min_nodes": Provenance(cite("NVSHARP", "HCOLL_SHARP_NP default 4")),
    }
    if kind == "sharp1":
        inn = InNetwork(host, SHARP1_LEVEL_US, 256, frag, 4096, 0.0, 0, 4)
        prov |= {
            "in_network.host_overhead_us": Provenance(g16, False, host_lo, host_hi),
            "in_network.fragment_us": Provenance(g16),
            "in_network.fragment_bytes": Provenance(cite("SHARPv1", "256 B per aggregation")),
            "in_network.max_bytes": Provenance("assumed: [G16] measured SHArP up to 4096 B",
                                               True, 2048, 16384),
        }
    elif kind == "sharp2":
        f = sharp2_fit()
        nv = cite("NVSHARP", "fitted to 8 B 8.43, 2 KiB 10.43, 16 KiB 15.48, 1 MiB 101.53 us")
        inn = InNetwork(f["host"], SHARP1_LEVEL_US, 256, f["frag"], 2048, f["stream_MBps"],
                        16384, 4, f["stream_us"], SHARP2_STREAM_FRACTION)
        prov |= {
            "in_network.host_overhead_us": Provenance(nv, False, f["host"] - 2 * (hi - 0.25),
                                                      f["host"] + 2 * (0.25 - lo)),
            "in_network.fragment_us": Provenance(nv),
            "in_network.fragment_bytes": Provenance(cite("SHARPv1", "256 B per aggregation "
                                                                    "(low-latency trees)")),
            "in_network.max_bytes": Provenance(nv + "; 4-8 KiB fell back to host-based"),
            "in_network.streaming_MBps": Provenance(nv + "; used only without a link rate"),
            "in_network.streaming_fraction": Provenance(
                cite("G20", "about 95 % of the network bandwidth on HDR") + "; "
                + cite("NVSHARP", "12.0 GB/s at 16 KiB-1 MiB, 96 % of HDR100"), False,
                *SHARP2_STREAM_RANGE),
            "in_network.streaming_from_bytes": Provenance(nv),
            "in_network.streaming_us": Provenance(nv),
        }
    else:
        extra = hop_default("roce").value - hop_default("ib").value if kind == "roce-inc" \
            else 0.0
        why = ("assumed: document 000 publishes no in-network figures; SHARPv1's ([G16]) "
               "with the Ethernet switch's extra latency per level ([000])"
               if kind == "roce-inc" else "assumed: no figures for this switch")
        inn = InNetwork(host, SHARP1_LEVEL_US + extra, 256, frag, 4096, 0.0, 0, 4)
        prov = {
            "in_network.host_overhead_us": Provenance(why, True, host_lo, host_hi * 1.5),
            "in_network.level_us": Provenance(why, True, lo + extra, hi + extra),
            "in_network.fragment_bytes": Provenance(why, True, 128, 1024),
            "in_network.fragment_us": Provenance(why, True, frag * 0.5, frag * 2),
            "in_network.max_bytes": Provenance(why, True, 1024, 16384),
            "in_network.min_nodes": Provenance(why, True),
        }
    return inn, prov
