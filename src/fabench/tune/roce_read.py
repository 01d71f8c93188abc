"""Reading a RoCE host's lossless configuration and NIC counters through a Target.

Every command runs inside the target (its network namespace decides which interfaces and
which /sys/class/net it sees), as an argv list; data reaches the fixed shell snippets only as
positional arguments. What a command prints is parsed by roce_parse, which trusts nothing.
A tool that is missing or fails is noted on the evidence, never fatal: most hosts lack
mlnx_qos, and an interface without DCB support answers `dcb` with "Operation not supported".
"""

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from ..host.target import Target, TargetError
from . import readers
from . import roce_parse as rp
from .lossless import Evidence, Window
from .profiles import LosslessSetting

_Parsed = TypeVar("_Parsed", rp.PfcState, rp.DscpMap)
_IFNAME = re.compile(r"[A-Za-z0-9_.:@-]{1,15}")
_DEV = re.compile(r"[A-Za-z0-9_.-]{1,32}")

# RDMA devices and the netdev behind each port (GID 0's), one "DEV PORT NETDEV" per line.
_RDMA_PORTS = ('for d in /sys/class/infiniband/*; do [ -d "$d/ports" ] || continue; '
               'for p in "$d"/ports/*; do n=$(cat "$p/gid_attrs/ndevs/0" 2>/dev/null); '
               'printf "%s %s %s\\n" "${d##*/}" "${p##*/}" "$n"; done; done; exit 0')
# ECN enablement per priority (MLNX_OFED's sysfs, under /sys/class/net/IF):
# "roce_np|roce_rp PRIO 0|1".
_ECN_FLAGS = ('for g in roce_np roce_rp; do for f in "$1"/ecn/$g/enable/*; do '
              '[ -f "$f" ] && printf "%s %s %s\\n" "$g" "${f##*/}" "$(cat "$f")"; done; done; '
              'exit 0')
# DCQCN parameters: MLNX_OFED's sysfs files, then the upstream driver's debugfs cc_params.
_DCQCN = ('for f in "$1"/ecn/roce_rp/* "$1"/ecn/roce_np/* "$2"/*; do [ -f "$f" ] && '
          'printf "%s %s\\n" "${f##*/}" "$(head -c 64 "$f" | tr -d "\\n")"; done; exit 0')
# A loop's status is its last test's: every snippet ends with `exit 0`, as a missing file is
# an answer ("not offered here"), not a failure that should discard what was printed.
_GREP_DIR = ('for f in "$1"/*; do [ -f "$f" ] && printf "%s:%s\\n" "$f" "$(cat "$f")"; done; '
             'exit 0')


@dataclass(frozen=True)
class RdmaPort:
    dev: str
    port: int
    netdev: str


def rdma_ports(t: Target) -> list[RdmaPort]:
    out = []
    for line in _sh(t, _RDMA_PORTS).splitlines():
        toks = line.split()
        if len(toks) == 3 and _DEV.fullmatch(toks[0]) and toks[1].isdigit() \
                and _IFNAME.fullmatch(toks[2]):
            out.append(RdmaPort(toks[0], int(toks[1]), toks[2]))
    return out


def _sh(t: Target, script: str, *args: str) -> str:
    try:
        p = t.run(["sh", "-c", script, "sh", *args], check=False)
    except TargetError:
        return ""
    return p.stdout if p.returncode == 0 else ""


def _tool(t: Target, argv: list[str]) -> tuple[str | None, str]:
    """(stdout, "") when the tool ran, (None, why not) otherwise."""
    try:
        p = t.run(argv, check=False)
    except TargetError as exc:
        return None, str(exc).split(": ", 1)[-1]
    if p.returncode != 0:
        msg = (p.stderr or p.stdout).strip().splitlines()
        return None, f"{argv[0]}: {msg[-1][:120] if msg else f'exit {p.returncode}'}"
    return p.stdout, ""


def _dcb(t: Target, args: list[str], from_json: Callable[[str], _Parsed | None],
         from_text: Callable[[str], _Parsed]) -> tuple[_Parsed | None, str]:
    """(what dcb says, "") or (None, why not): its JSON (`-j`, in every dcb since the first,
    iproute2 5.11), its text only where the output is not JSON."""
    out, why = _tool(t, ["dcb", "-j", *args])
    if out is None:
        return None, why
    parsed = from_json(out)
    if parsed is not None:
        return parsed, ""
    out, why = _tool(t, ["dcb", *args])
    return (None, why) if out is None else (from_text(out), "")


def audited_interfaces(t: Target, s: LosslessSetting) -> tuple[list[str], list[RdmaPort], str]:
    """(interfaces, RDMA ports, why these): the RoCE netdevs, those the profile names, or,
    on a host without RDMA devices, every link that is up (counters only)."""
    up = [link.name for link in readers.links(t) if not link.down and link.name != "lo"
          and _IFNAME.fullmatch(link.name)]
    ports = [p for p in rdma_ports(t) if p.netdev in up]
    if s.interfaces:
        return [i for i in up if s.matches(i)], ports, "named by the profile"
    if ports:
        return sorted({p.netdev for p in ports}), ports, "the netdevs of RDMA ports"
    return up, [], "no RDMA device here: every link that is up, for what it exposes"


def read_ecn(t: Target, netdir: str) -> dict[str, dict[int, bool]]:
    """ECN enablement per priority from an interface's sysfs directory."""
    return rp.parse_flags(_sh(t, _ECN_FLAGS, netdir))


def read_dcqcn(t: Target, netdir: str, debugdir: str) -> dict[str, str]:
    """DCQCN parameters: file name -> value, from sysfs (MLNX_OFED) and debugfs (upstream)."""
    out = {}
    for line in _sh(t, _DCQCN, netdir, debugdir).splitlines():
        k, _, v = line.partition(" ")
        if re.fullmatch(r"[a-z0-9_]{1,40}", k) and re.fullmatch(r"[\w.-]{1,32}", v):
            out[k] = v
    return out


def read_hw_counters(t: Target, directory: str) -> rp.Counters:
    """An RDMA port's hw_counters directory, one file per counter."""
    return rp.parse_hw_counters(_sh(t, _GREP_DIR, directory))


def read_counters(t: Target, iface: str, ports: list[RdmaPort]) -> tuple[rp.Counters,
                                                                         rp.Counters | None]:
    """(ethtool -S, the RDMA port's hw_counters) of one interface."""
    out, why = _tool(t, ["ethtool", "-S", iface])
    stats = rp.parse_ethtool_stats(out) if out is not None else rp.Counters(problems=[why])
    hw = None
    for p in ports:
        if p.netdev == iface:
            hw = read_hw_counters(t, f"/sys/class/infiniband/{p.dev}/ports/{p.port}"
                                     "/hw_counters")
    return stats, hw


def read_evidence(t: Target, iface: str, ports: list[RdmaPort]) -> Evidence:
    ev = Evidence(t.name, iface)
    mine = [p for p in ports if p.netdev == iface]
    pfc, why = _dcb(t, ["-s", "pfc", "show", "dev", iface], rp.parse_dcb_pfc_json,
                    rp.parse_dcb_pfc)
    if pfc is not None:
        ev.pfc, ev.pfc_source = pfc, "dcb pfc show"
        ev.notes += [f"dcb pfc: {x}" for x in ev.pfc.problems]
    else:
        ev.notes.append(f"PFC (dcb pfc show): {why}")
    out, why = _tool(t, ["mlnx_qos", "-i", iface])
    if out is not None:
        q = rp.parse_mlnx_qos(out)
        ev.trust, ev.dscp2prio, ev.dscp_source = q.trust, q.dscp2prio, "mlnx_qos"
        if ev.pfc is None or not ev.pfc.complete:
            ev.pfc, ev.pfc_source = q.pfc, "mlnx_qos"
        ev.notes += [f"mlnx_qos: {x}" for x in q.problems]
    else:
        # Without mlnx_qos: the DSCP map from the kernel's DCB app table (numeric form).
        m, why2 = _dcb(t, ["-N", "app", "show", "dev", iface, "dscp-prio"],
                       rp.parse_dcb_app_json, rp.parse_dcb_app)
        if m is not None:
            ev.dscp2prio, ev.dscp_source = m.dscp2prio, "dcb app"
            ev.notes += [f"dcb app: {x}" for x in m.problems]
            ev.notes += [f"dcb app: DSCP {d} maps to two priorities" for d in sorted(m.ambiguous)]
        elif ev.pfc is None:
            ev.notes.append(f"trust and DSCP map (mlnx_qos, dcb app): {why}; {why2}")
    netdir = f"/sys/class/net/{iface}"
    ev.ecn = read_ecn(t, netdir)
    pci = _sh(t, 'basename "$(readlink -f "$1"/device)"', netdir).strip()
    ev.dcqcn = read_dcqcn(t, netdir, f"/sys/kernel/debug/mlx5/{pci}/cc_params"
                          if re.fullmatch(r"[0-9a-f:.]{1,16}", pci) else "/nonexistent")
    for p in mine:
        for path, src in ((f"/sys/kernel/config/rdma_cm/{p.dev}/ports/{p.port}/"
                           "default_roce_tos", "rdma_cm default_roce_tos"),
                          (f"/sys/class/infiniband/{p.dev}/tc/{p.port}/traffic_class",
                           "traffic_class")):
            tos = rp.parse_tos(t.read(path))
            if tos is not None and ev.roce_tos is None:
                ev.roce_tos, ev.tos_source = tos, src
        out, _ = _tool(t, ["ibv_devinfo", "-d", p.dev, "-i", str(p.port)])
        if out is not None:
            ev.ib_ports += rp.parse_ibv_devinfo(out).ports
    ev.netdev_mtu = readers.mtu(t, iface)
    ev.stats, ev.hw = read_counters(t, iface, ports)
    ev.notes += [f"ethtool -S: {x}" for x in ev.stats.problems if "header" not in x]
    return ev


@dataclass
class Snapshot:
    """Counters of every audited interface of some targets at one moment: take one before a
    run and one after, and `window` gives judge() the difference."""

    taken: float
    counters: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)

    def window(self, target: str, iface: str, later: "Snapshot") -> Window | None:
        before = self.counters.get((target, iface))
        return None if before is None else Window(before, later.taken - self.taken)


def snapshot(targets: list[Target], s: LosslessSetting) -> Snapshot:
    snap = Snapshot(time.monotonic())
    for t in targets:
        if t.meta.get("role") == "switch":
            continue
        ifaces, ports, _ = audited_interfaces(t, s)
        for i in ifaces:
            stats, hw = read_counters(t, i, ports)
            snap.counters[(t.name, i)] = {**stats.values, **(hw.values if hw else {})}
    return snap


def around(targets: list[Target], s: LosslessSetting, run: Callable[[], object]
           ) -> tuple[Snapshot, Snapshot]:
    """Counters before and after `run()`: what a campaign runner wraps a run in."""
    before = snapshot(targets, s)
    run()
    return before, snapshot(targets, s)
