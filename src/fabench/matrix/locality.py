"""NIC locality within a node: which cores sit on the NIC's NUMA node, which ranks are bound far
from it, and the binding that keeps ranks near it.

Why it matters: on the dual-socket nodes of document 004 a ping-pong from the socket the NIC
hangs off took 1.4 us, from the other socket 1.9 us (the PCIe traffic crosses the inter-socket
link). hwloc (`lstopo-no-graphics --of xml`) attaches every PCI NIC to the NUMA node(s) it is
local to (host/topology.py reads that); a rank's binding is the CPU list the MPI kernels report
per rank (meta `cpus`, sched_getaffinity). A rank is *far* when none of its CPUs is near the
NIC, *unbound* when its CPUs span near and far ones (the scheduler may move it across).

The advice names one binding per launcher, for the cores of the NIC's node: Open MPI's
`--bind-to core --cpu-set LIST` takes *logical* cpus (hwloc's logical indices: cores, unless
--use-hwthread-cpus; Open MPI 4.1's mpirun(1)), so the list is the cores' logical indices, hwloc's
left-to-right order, which on many dual-socket machines is not the OS numbering; Slurm's
`--cpu-bind=map_cpu:LIST` takes OS CPU ids (a core's first PU); numactl takes the node, and
any launcher can start the ranks through it.
"""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from ..errors import FabenchError
from ..host.process import run_once
from ..host.topology import LSTOPO, Topology, bitmap, parse_lstopo_xml, parse_ranges, ranges

LSTOPO_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class NicLocality:
    nic: str
    numa: tuple[int, ...]  # the NUMA nodes the NIC is local to
    near: frozenset[int]  # the CPUs of those nodes
    cores: tuple[tuple[int, int], ...]  # the cores among them: (logical index, first OS PU)
    far: frozenset[int]  # every other CPU of the node
    source: str

    @property
    def where(self) -> str:
        nodes = ",".join(map(str, self.numa))
        return f"{self.nic} (NUMA node {nodes}: cpus {ranges(sorted(self.near))})"


def read_hwloc(path: Path | None) -> tuple[Topology, str]:
    """A node's topology: a saved `lstopo-no-graphics --of xml` file, else this machine's; with
    the XML text (the core list needs the Core objects)."""
    if path is not None:
        try:
            text = path.read_text()
        except OSError as exc:
            raise FabenchError(f"--hwloc {path}: {exc.strerror}") from None
        where = str(path)
    else:
        try:
            p = run_once([LSTOPO, "--of", "xml"], capture_output=True, text=True,
                               timeout=LSTOPO_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise FabenchError(f"{LSTOPO}: {exc} (Debian: apt-get install hwloc)") from None
        if p.returncode != 0:
            raise FabenchError(f"{LSTOPO} failed: {p.stderr.strip()[:200]}")
        text, where = p.stdout, f"{LSTOPO} on this machine"
    try:
        topo = parse_lstopo_xml(text)
    except ValueError as exc:
        raise FabenchError(f"{where}: {exc}") from None
    topo.source += f", {where}"
    return topo, text


def _cores(xml: str) -> list[tuple[int, int]]:
    """(logical index, first OS PU) of every Core: hwloc's logical index is the objects' order
    in the tree, i.e. the XML's document order. Where hwloc lists no cores, the PUs."""
    objs = list(ET.fromstring(xml).iter("object"))
    kind = "Core" if any(o.get("type") == "Core" for o in objs) else "PU"
    sets = [bitmap(o.get("cpuset")) for o in objs if o.get("type") == kind]
    return [(i, min(s)) for i, s in enumerate(sets) if s]


def nic_locality(topo: Topology, xml: str, nic: str | None = None) -> NicLocality:
    """The NIC's locality: `nic` by name, else the only network device hwloc lists with a NUMA
    locality."""
    if nic is not None:
        if nic not in topo.nics:
            known = ", ".join(sorted(topo.nics)) or "none"
            raise FabenchError(f"--nic {nic}: hwloc lists no such network device ({known})")
        name = nic
    else:
        placed = sorted(n for n, numa in topo.nics.items() if numa)
        if len(placed) != 1:
            raise FabenchError("hwloc lists " + (f"several NICs ({', '.join(placed)}): name one "
                               "with --nic" if placed else "no PCI NIC with a NUMA locality "
                               "(a VM's virtual NIC, or hwloc without PCI support)"))
        name = placed[0]
    numa = topo.nics[name]
    near = frozenset(c for n in topo.nodes if n.index in numa for c in n.cpus)
    every = frozenset(c for n in topo.nodes for c in n.cpus)
    cores = tuple(c for c in _cores(xml) if c[1] in near)
    return NicLocality(name, numa, near, cores, every - near, topo.source)


@dataclass(frozen=True)
class RankPlace:
    rank: int
    host: str
    cpus: frozenset[int] | None  # None: the kernel could not say
    place: str  # near, far, unbound, unknown

    @property
    def line(self) -> str:
        bound = ranges(sorted(self.cpus)) if self.cpus else "?"
        return {"far": f"rank {self.rank} on {self.host} bound to cpus {bound}: far from the NIC",
                "unbound": f"rank {self.rank} on {self.host} may run on cpus {bound}, near and "
                           "far from the NIC (not bound)",
                "unknown": f"rank {self.rank} on {self.host}: binding not reported",
                "near": f"rank {self.rank} on {self.host} bound to cpus {bound}: near the NIC",
                }[self.place]


def rank_places(loc: NicLocality, hosts: list[str], cpus: list[str]) -> list[RankPlace]:
    """Each rank's place against the NIC, from the kernel's per-rank CPU lists."""
    out = []
    for r, (host, text) in enumerate(zip(hosts, cpus, strict=False)):
        try:
            s: frozenset[int] | None = frozenset(parse_ranges(text)) if text != "?" else None
        except ValueError:
            s = None
        if not s:
            place = "unknown"
        elif s <= loc.near:
            place = "near"
        elif s & loc.near:
            place = "unbound"
        else:
            place = "far"
        out.append(RankPlace(r, host, s, place))
    return out


def binding_advice(loc: NicLocality, ppn: int) -> list[str]:
    """Launcher options that keep `ppn` ranks per node on the NIC's cores."""
    if ppn < 1:
        raise FabenchError("--ppn must be >= 1")
    if not loc.cores:
        raise FabenchError(f"{loc.where}: hwloc lists no core near the NIC")
    cores = loc.cores[:ppn]
    logical = ",".join(str(c[0]) for c in cores)
    os_ids = ",".join(str(c[1]) for c in cores)
    numa = ",".join(map(str, loc.numa))
    out = [f"NIC {loc.where}; from {loc.source}",
           f"Open MPI: mpirun --bind-to core --cpu-set {logical} -N {ppn}  (logical core ids)",
           f"Slurm:    srun --ntasks-per-node={ppn} --cpu-bind=map_cpu:{os_ids}  (OS cpu ids)",
           f"numactl:  mpirun ... numactl --cpunodebind={numa} --membind={numa} -- PROGRAM"]
    if ppn > len(loc.cores):
        out.append(f"note: {ppn} ranks per node, {len(loc.cores)} cores near the NIC: the "
                   f"binding lists those {len(loc.cores)}; more ranks would sit far from it "
                   "or share a core")
    return out


def locality_lines(loc: NicLocality, hosts: list[str], cpus: list[str], ppn: int) -> list[str]:
    """What `fabench matrix advise` prints below the hosts: the ranks of the stored matrix bound
    far from the NIC (or not bound), then the binding that keeps `ppn` ranks near it."""
    places = rank_places(loc, hosts, cpus)
    out = [p.line for p in places if p.place in ("far", "unbound")]
    near = sum(p.place == "near" for p in places)
    if places:
        out.append(f"# {near} of {len(places)} ranks of the matrix bound near the NIC "
                   "(every host read as having this topology)")
    return [*out, *binding_advice(loc, ppn)]


def binding_lines(hwloc: Path | None, nic: str | None, ppn: int, hosts: list[str],
                  cpus: list[str]) -> list[str]:
    """locality_lines from a saved topology (or this machine's). Without --hwloc and --nic a
    topology that names no NIC (a VM) is one comment line: the hosts advised stand without it;
    with them it is an error."""
    try:
        topo, xml = read_hwloc(hwloc)
        loc = nic_locality(topo, xml, nic)
    except FabenchError as exc:
        if hwloc is not None or nic is not None:
            raise
        return [f"# no binding advice: {exc}"]
    return locality_lines(loc, hosts, cpus, ppn)
