"""Reading the tunable state of a target: sysctls, interfaces, MTU, offloads, routes, CPU.

check and apply share these readers, so what check reports is exactly what apply journals.
"""

import json
import re
from dataclasses import dataclass

from ..host.target import Target, sysctl_path


@dataclass(frozen=True)
class SysctlState:
    value: str | None  # None: absent in this target (e.g. root-namespace-only in a netns)
    writable: bool


def sysctl(t: Target, name: str) -> SysctlState:
    path = sysctl_path(name)
    value = t.read(path)
    return SysctlState(None if value is None else normalize(value),
                       value is not None and t.writable(path))


def normalize(value: str) -> str:
    """/proc/sys separates fields with tabs; profiles and users write spaces."""
    return " ".join(value.split())


def interfaces(t: Target) -> list[str]:
    return [link.name for link in links(t)]


# Operational states (RFC 2863, as `ip link` prints them) of a link that carries nothing: no
# carrier, or the device it is stacked on is down. UNKNOWN is what lo, dummy and tun report
# while working, so it counts as up.
_DOWN_OPERSTATES = {"DOWN", "LOWERLAYERDOWN", "NOTPRESENT"}


@dataclass(frozen=True)
class Link:
    name: str
    down: str  # why it carries no traffic ("not up", "operstate DOWN"); "" when it can


def links(t: Target) -> list[Link]:
    p = t.run(["ip", "-j", "link", "show"])
    out = []
    for d in json.loads(p.stdout or "[]"):
        oper = str(d.get("operstate", "UNKNOWN"))
        if "UP" not in d.get("flags", []):
            down = "not up"  # administratively down (no IFF_UP)
        elif oper in _DOWN_OPERSTATES:
            down = f"operstate {oper}"
        else:
            down = ""
        out.append(Link(d["ifname"], down))
    return out


def mtu(t: Target, iface: str) -> int | None:
    # From netlink, not /sys: a target entered with nsenter may still see the host's sysfs.
    p = t.run(["ip", "-j", "link", "show", "dev", iface], check=False)
    try:
        return int(json.loads(p.stdout)[0]["mtu"]) if p.returncode == 0 else None
    except (ValueError, LookupError):
        return None


@dataclass(frozen=True)
class Feature:
    name: str
    on: bool
    fixed: bool
    parent: str | None  # the legacy aggregate (tcp-segmentation-offload) it belongs to


def offloads(t: Target, iface: str) -> dict[str, Feature] | None:
    p = t.run(["ethtool", "-k", iface], check=False)
    if p.returncode != 0:
        return None
    out: dict[str, Feature] = {}
    parent = None
    for line in p.stdout.splitlines():
        m = re.match(r"^(\s*)([\w-]+):\s+(on|off)(\s+\[fixed\])?", line)
        if not m:
            continue
        child = bool(m.group(1))
        name = m.group(2)
        if not child:
            parent = name
        out[name] = Feature(name, m.group(3) == "on", bool(m.group(4)),
                            parent if child else None)
    return out


def leaf_features(feats: dict[str, Feature]) -> dict[str, bool]:
    """Features that can be set one by one: children, and aggregates without children.

    Restoring leaves is exact; restoring an aggregate (tso) would also flip children that were
    deliberately different (tx-tcp-ecn-segmentation off under tso on).
    """
    parents = {f.parent for f in feats.values() if f.parent}
    return {n: f.on for n, f in feats.items() if not f.fixed and n not in parents}


def feature_on(feats: dict[str, Feature], name: str) -> bool | None:
    f = feats.get(name)
    if f is None:
        return None
    if f.name not in {g.parent for g in feats.values()}:
        return f.on
    # ethtool prints an aggregate "on" when any child is on; the setting holds only if the
    # settable children agree.
    kids = [g for g in feats.values() if g.parent == name and not g.fixed]
    return all(g.on for g in kids) if f.on and kids else f.on


@dataclass(frozen=True)
class Route:
    line: str  # as `ip route show` prints it: also the argument list to restore it exactly
    dev: str | None
    quickack: int | None
    rto_min_ms: int | None = None


def _route_ms(toks: list[str], name: str) -> int | None:
    """`rto_min lock 5ms` (as `ip route show` prints it) or `rto_min 5ms`, in ms."""
    if name not in toks:
        return None
    rest = toks[toks.index(name) + 1:]
    if rest[:1] == ["lock"]:
        rest = rest[1:]
    m = re.fullmatch(r"(\d{1,9})(ms|s|us)?", rest[0]) if rest else None
    if not m:
        return None
    n = int(m.group(1))
    return {"s": n * 1000, "us": n // 1000}.get(m.group(2) or "ms", n)


def routes(t: Target) -> list[Route]:
    p = t.run(["ip", "-4", "route", "show", "table", "main"])
    out = []
    for line in p.stdout.splitlines():
        line = line.strip()
        if not line:
            continue
        toks = line.split()
        dev = toks[toks.index("dev") + 1] if "dev" in toks[:-1] else None
        qa = toks[toks.index("quickack") + 1] if "quickack" in toks[:-1] else None
        out.append(Route(line, dev, int(qa) if qa in ("0", "1") else None,
                         _route_ms(toks, "rto_min")))
    return out


CPU_ROOT = "/sys/devices/system/cpu"


def cpu_governors(t: Target) -> dict[str, str]:
    p = t.run(["sh", "-c", f"for f in {CPU_ROOT}/cpu[0-9]*/cpufreq/scaling_governor; do "
                           '[ -r "$f" ] && printf "%s %s\\n" "$f" "$(cat "$f")"; done'],
              check=False)
    return dict(ln.split(" ", 1) for ln in p.stdout.splitlines() if " " in ln)


def turbo_file(t: Target) -> tuple[str, bool] | None:
    """(path, inverted): intel_pstate says no_turbo=1 for off, acpi-cpufreq boost=0."""
    for path, inverted in ((f"{CPU_ROOT}/intel_pstate/no_turbo", True),
                           (f"{CPU_ROOT}/cpufreq/boost", False)):
        if t.read(path) is not None:
            return path, inverted
    return None


def smt(t: Target) -> tuple[str | None, str | None]:
    """(control, active): control is on/off/forceoff/notsupported/notimplemented."""
    return t.read(f"{CPU_ROOT}/smt/control"), t.read(f"{CPU_ROOT}/smt/active")
