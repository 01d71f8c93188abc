"""SimGrid platforms and SMPI settings generated from a fabric (calibration or preset).

Where the latency goes: the calibrated path crossed `calibrated_hops` switches, i.e. two host
links for one switch. Each platform link gets the fabric's per-hop latency, so a path's wire
latency grows by one hop latency per extra switch as in the analytic model; everything else of
a segment's fixed cost (the NIC/stack part) goes into the SMPI send/receive overheads
smpi/os and smpi/or, which do not grow with distance. smpi/lat-factor stays 1 for that reason;
smpi/bw-factor per segment maps the platform's nominal link rate onto the measured per-flow
bandwidth.

SimGrid 3.32 formats (checked against this host's smpirun): smpi/os and smpi/or take
`size:offset_s:per_byte_s;...`, smpi/bw-factor and smpi/lat-factor `size:factor;...`, each entry
applying from its size on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from ..errors import FabenchError
from ..model.fabric import Fabric
from ..model.topology import TopologySpec, torus_dims

HOST_PREFIX = "node-"  # written into an XML attribute as it is: no quote, <, or &
MIN_LINK_LAT_US = 0.01  # SimGrid needs a positive latency


@dataclass
class Platform:
    xml: str
    hosts: list[str]  # every host of the platform, in rank-placement order
    topology: str
    description: str


def _hop_us(fabric: Fabric) -> float:
    return max(fabric.hop_latency_us, MIN_LINK_LAT_US)


def _cluster(spec: TopologySpec, nodes: int) -> tuple[str, int, str]:
    """(topology attributes, host count, description), the same tree or dragonfly the
    analytic model builds from the spec (model/topology.py)."""
    if spec.kind == "fat-tree":
        k = max(1, min(spec.hosts_per_leaf, nodes))
        over = spec.oversubscription or (1.0,)
        t1, t2 = over[0], over[min(1, len(over) - 1)]
        leaves = math.ceil(nodes / k)
        if leaves == 1:
            return "", k, f"one switch, {k} hosts"
        if spec.tree_levels(nodes) == 2:
            spines = max(1, round(k / t1))
            return (f' topology="FAT_TREE" topo_parameters="2;{k},{leaves};1,{spines};1,1"',
                    k * leaves, f"fat tree: {leaves} leaves x {k} hosts, {spines} spines")
        lpp = spec.leaves_per_pod or spec.hosts_per_leaf
        pods = math.ceil(leaves / lpp)
        up2 = max(1, round(k / t1))  # a leaf's uplinks: one per aggregation switch of its pod
        up3 = max(1, round(lpp / t2))  # an aggregation switch's uplinks to the spines
        return (f' topology="FAT_TREE" topo_parameters="3;{k},{lpp},{pods};1,{up2},{up3};'
                f'1,1,1"', k * lpp * pods,
                f"fat tree, 3 levels: {pods} pods x {lpp} leaves x {k} hosts, {up2} "
                f"aggregation switches per pod, {up3} uplinks each")
    if spec.kind == "torus":
        d = spec.dims or torus_dims(nodes)
        return (f' topology="TORUS" topo_parameters="{",".join(map(str, d))}"', math.prod(d),
                f"torus {'x'.join(map(str, d))}")
    if spec.kind == "dragonfly":
        g, c, r, h = spec.dragonfly_shape(nodes)
        blue, black, green = spec.dragonfly_links
        return (f' topology="DRAGONFLY" topo_parameters="{g},{blue};{c},{black};{r},{green};'
                f'{h}"', g * c * r * h,
                f"dragonfly: {g} groups x {c} chassis x {r} routers x {h} hosts")
    if spec.kind in ("single", "loopback"):
        return "", nodes, f"one switch, {nodes} hosts"
    raise FabenchError(f"no SimGrid platform for topology {spec.kind!r}")


def make_platform(fabric: Fabric, spec: TopologySpec | str, nodes: int, *,
                  hosts_per_leaf: int = 24, oversubscription: float = 1.0,
                  dims: tuple[int, ...] | None = None) -> Platform:
    """`spec`: the topology (or its kind, with the keyword options of a two-level tree or a
    torus)."""
    if isinstance(spec, str):
        spec = TopologySpec(spec, hosts_per_leaf, (oversubscription,), dims=dims)
    attrs, count, desc = _cluster(spec, nodes)
    link_MBps = fabric.link_bandwidth_MBps or fabric.peak_bandwidth_MBps
    shm = fabric.intra[0] if fabric.intra else None
    loop_bw = f"{shm.bandwidth_MBps:.6g}MBps" if shm else "10GBps"
    loop_lat = f"{max(shm.alpha_us, MIN_LINK_LAT_US):.6g}us" if shm else "0.1us"
    # A plain <cluster> is a star through a backbone: give the backbone the rate of a
    # non-blocking switch so it never is the bottleneck, and no latency of its own.
    backbone = "" if attrs else (f' bb_bw="{link_MBps * max(nodes, 1):.6g}MBps"'
                                 f' bb_lat="0us"')
    xml = (
        "<?xml version='1.0'?>\n"
        '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
        '<platform version="4.1">\n'
        '  <zone id="world" routing="Full">\n'
        f'    <cluster id="fabench" prefix="{HOST_PREFIX}" suffix="" '
        f'radical="0-{count - 1}" speed="1Gf" bw="{link_MBps:.6g}MBps" '
        f'lat="{_hop_us(fabric):.6g}us" sharing_policy="SPLITDUPLEX"'
        f' loopback_bw="{loop_bw}" loopback_lat="{loop_lat}"{backbone}{attrs}/>\n'
        "  </zone>\n"
        "</platform>\n"
    )
    return Platform(xml, [f"{HOST_PREFIX}{i}" for i in range(count)], spec.kind, desc)


def hostfile_lines(platform: Platform, nodes: int, ppn: int) -> list[str]:
    """Block placement: ppn consecutive ranks per node."""
    if nodes > len(platform.hosts):
        raise FabenchError(f"{platform.description} has {len(platform.hosts)} hosts, "
                           f"{nodes} asked")
    return [h for h in platform.hosts[:nodes] for _ in range(ppn)]


def smpi_factors(fabric: Fabric, ranks: int = 0, cores: int | None = None,
                 exchanges: bool = False) -> dict[str, str]:
    """smpi/os, smpi/or, smpi/bw-factor, smpi/lat-factor from the fabric's segments.

    With `cores` (simulating nodes that an emulation ran on one machine's cores), each
    segment's endpoint overhead is stretched as the analytic model stretches a step's
    latency part (Fabric.contention_share): SimGrid itself knows nothing of CPU sharing.
    With `exchanges` (a collective pinned to an algorithm made of pairwise exchanges), each
    segment's bandwidth factor carries the fabric's measured exchange slowdown, which SimGrid's
    full-duplex links would not show."""
    link_MBps = fabric.link_bandwidth_MBps or fabric.peak_bandwidth_MBps
    # A platform path across h switches has h + 1 links of one hop latency each (same leaf:
    # 2, across the spine: 4), so the wire part of the calibrated path is (h0 + 1) hops and
    # the rest of alpha is endpoint overhead; then a path of h switches costs
    # alpha + (h - h0) * hop, as in the analytic model.
    wire_us = _hop_us(fabric) * (fabric.calibrated_hops + 1)
    os_parts, bw_parts = [], []
    for s in fabric.segments:
        # SMPI applies an entry to sizes strictly above its threshold (checked here: a
        # 65536 entry does not cover 64 KiB itself); the segments start at their first size
        start = max(s.start - 1, 0)
        endpoint = max(s.alpha_us - wire_us, 0.0)
        if cores:
            endpoint *= max(1.0, fabric.contention_share(ranks, cores, s.start))
        os_parts.append(f"{start}:{endpoint / 2 * 1e-6:.6g}:0")
        bwf = 1.0 / (s.beta_us_per_byte * link_MBps) if s.beta_us_per_byte > 0 else 1.0
        bwf = min(bwf, 1.0)
        if exchanges:
            bwf /= fabric.exchange_factor(s.start)
        bw_parts.append(f"{start}:{bwf:.6g}")
    return {
        "smpi/os": ";".join(os_parts),
        "smpi/or": ";".join(os_parts),
        # MPI_Isend (every collective's sends) is charged smpi/ois, not smpi/os
        "smpi/ois": ";".join(os_parts),
        "smpi/bw-factor": ";".join(bw_parts),
        "smpi/lat-factor": "0:1",
    }


def write_platform(platform: Platform, hosts: list[str], workdir: Path) -> tuple[Path, Path]:
    workdir.mkdir(parents=True, exist_ok=True)
    pxml, hfile = workdir / "platform.xml", workdir / "hostfile"
    pxml.write_text(platform.xml)
    hfile.write_text("\n".join(hosts) + "\n")
    return pxml, hfile
