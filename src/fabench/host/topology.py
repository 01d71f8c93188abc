"""Where the cores and the NICs are: NUMA nodes, the cores of each, and each NIC's node.

hwloc is asked first (`lstopo-no-graphics --of xml`): it attaches every PCI device, NICs
included, to the NUMA node it hangs off, and counts physical cores, which sysfs leaves to
the reader to work out from per-CPU files. Without hwloc, sysfs answers (`numa_node` of the
device, `/sys/devices/system/node`), and the finding says so.
"""

import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from .target import Target, TargetError

LSTOPO = "lstopo-no-graphics"
NET_OSDEV = "2"  # hwloc's osdev_type of a network interface
# Objects that hang off a NUMA locality rather than defining one: a NIC's locality is that of
# its first ancestor that is none of these.
_IO_TYPES = {"Bridge", "PCIDev", "OSDev", "Misc"}
_SYS_NODE = Path("/sys/devices/system/node")
_SYS_CPU = Path("/sys/devices/system/cpu")


@dataclass(frozen=True)
class NumaNode:
    index: int
    cpus: frozenset[int]  # logical CPUs (hwloc PUs)
    cores: int  # physical cores among them


@dataclass
class Topology:
    source: str  # where the numbers come from, shown with the findings
    nodes: list[NumaNode]
    # interface -> the NUMA nodes it is local to; only what hwloc lists (PCI NICs)
    nics: dict[str, tuple[int, ...]] = field(default_factory=dict)
    note: str = ""  # why the source is not hwloc, when it is not

    def node_of_cpu(self) -> dict[int, int]:
        return {c: n.index for n in self.nodes for c in n.cpus}

    def node(self, index: int) -> NumaNode | None:
        return next((n for n in self.nodes if n.index == index), None)


def bitmap(text: str | None) -> frozenset[int]:
    """An hwloc bitmap: 32-bit words, highest first ("0x00000003", "0x1,0x00000000"); hwloc
    leaves a zero word empty ("0x1,,0x0" is bit 64)."""
    if not text:
        return frozenset()
    words = text.split(",")
    if words[0] == "0xf...f":  # every higher bit set: only in unbounded sets, not locality
        words = words[1:]
    value = 0
    for w in words:
        value = (value << 32) | (int(w, 16) if w else 0)
    return frozenset(i for i in range(value.bit_length()) if value >> i & 1)


def parse_lstopo_xml(text: str) -> Topology:
    """NUMA nodes, cores per node and NIC locality from `lstopo --of xml` (hwloc 1.x or 2.x).
    Raises ValueError on text that is not such a topology."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ValueError(f"not hwloc XML: {exc}") from exc
    objs = list(root.iter("object"))
    if not objs:
        raise ValueError("hwloc XML without objects")
    version = next((i.get("value") for i in root.iter("info")
                    if i.get("name") == "hwlocVersion"), None)
    cores = [bitmap(o.get("cpuset")) for o in objs if o.get("type") == "Core"]
    nodes = []
    for o in objs:
        if o.get("type") == "NUMANode":
            cpus = bitmap(o.get("cpuset"))
            # Some machines (and hwloc builds) have no Core objects: then a PU is a core.
            n_cores = sum(1 for c in cores if c and c <= cpus) if cores else len(cpus)
            nodes.append(NumaNode(int(o.get("os_index", "0")), cpus, n_cores))
    if not nodes:
        raise ValueError("hwloc XML without a NUMANode")
    return Topology(f"hwloc {version}" if version else "hwloc", sorted(nodes,
                    key=lambda n: n.index), _nic_locality(root))


def _nic_locality(root: ET.Element) -> dict[str, tuple[int, ...]]:
    parents = {child: parent for parent in root.iter() for child in parent}
    out: dict[str, tuple[int, ...]] = {}
    for o in root.iter("object"):
        if o.get("type") != "OSDev" or o.get("osdev_type") != NET_OSDEV or not o.get("name"):
            continue
        anc = parents.get(o)
        while anc is not None and anc.get("type") in _IO_TYPES:
            anc = parents.get(anc)
        if anc is not None:
            out[str(o.get("name"))] = tuple(sorted(bitmap(anc.get("nodeset"))))
    return out


def from_hwloc(t: Target) -> Topology | None:
    """The topology as the target sees it (its own /sys/class/net names the NICs); None
    without a working lstopo."""
    try:
        p = t.run([LSTOPO, "--of", "xml"], check=False, timeout=60)
    except TargetError:
        return None
    if p.returncode != 0:
        return None
    try:
        topo = parse_lstopo_xml(p.stdout)
    except ValueError:
        return None
    topo.source += " (lstopo)"
    return topo


def from_sysfs(note: str) -> Topology:
    """The fallback: /sys/devices/system/node, cores counted from per-CPU topology files."""
    nodes = []
    for d in sorted(_SYS_NODE.glob("node[0-9]*"), key=lambda d: int(d.name[4:])):
        try:
            cpus = frozenset(parse_ranges((d / "cpulist").read_text()))
        except OSError:
            continue
        nodes.append(NumaNode(int(d.name[4:]), cpus, _sysfs_cores(cpus)))
    if not nodes:  # a kernel without NUMA support: one node holding every CPU
        try:
            cpus = frozenset(parse_ranges((_SYS_CPU / "online").read_text()))
        except OSError:
            cpus = frozenset(range(os.cpu_count() or 1))
        nodes.append(NumaNode(0, cpus, _sysfs_cores(cpus)))
    return Topology("sysfs", nodes, {}, note)


def _sysfs_cores(cpus: frozenset[int]) -> int:
    """Distinct (package, core) pairs: hyper-threads of one core count once."""
    seen = set()
    for c in cpus:
        top = _SYS_CPU / f"cpu{c}" / "topology"
        try:
            seen.add(((top / "physical_package_id").read_text().strip(),
                      (top / "core_id").read_text().strip()))
        except OSError:
            seen.add(("cpu", str(c)))
    return len(seen)


def topology(t: Target) -> Topology:
    topo = from_hwloc(t)
    if topo is not None:
        return topo
    return from_sysfs(f"{LSTOPO} not found or failed (Debian: hwloc); read from sysfs")


def parse_ranges(text: str) -> list[int]:
    """A kernel CPU list ("0-3,8,10-11")."""
    out: list[int] = []
    for part in text.strip().split(","):
        if "-" in part:
            a, b = part.split("-")
            out += range(int(a), int(b) + 1)
        elif part:
            out.append(int(part))
    return out


def ranges(cpus: list[int]) -> str:
    """The inverse of parse_ranges, for display."""
    if not cpus:
        return "-"
    parts, start, prev = [], cpus[0], cpus[0]
    for c in [*cpus[1:], None]:
        if c is not None and c == prev + 1:
            prev = c
            continue
        parts.append(f"{start}-{prev}" if prev != start else str(start))
        if c is not None:
            start = prev = c
    return ",".join(parts)
