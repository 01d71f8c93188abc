"""`tune check`: audit a target against a profile, plus what every audit reports.

Each finding has the current value, the recommended one, why (with its source) and the risk.
Nothing here changes anything.
"""

import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from ..errors import FabenchError
from ..host import topology as topology
from ..host.process import run_once
from ..host.target import Target
from . import delack, readers, roce_read, sysctl_scope
from . import lossless as lossless_
from .apply import NOOP_SYSCTLS, merge_fields
from .findings import Finding
from .profiles import (
    CpuSetting,
    EnvSetting,
    LosslessSetting,
    MtuSetting,
    NumaSetting,
    OffloadSetting,
    Profile,
    QuickackSetting,
    RtoMinSetting,
    SocketSetting,
    SysctlSetting,
)

FACTS = "[measured] (verified on this host)"


def check(profile: Profile | None, targets: list[Target], window: float = 0.0
          ) -> list[Finding]:
    """The audit. `window` > 0: NIC counters are read, then read again that many seconds
    later, and judged over the interval (a PFC storm shows only as counters that grow)."""
    lossless = [s for s in profile.settings if isinstance(s, LosslessSetting)] \
        if profile else []
    before = [roce_read.snapshot(targets, s) for s in lossless] if window > 0 else []
    if before:
        time.sleep(window)
    out: list[Finding] = []
    evidence: list[list[lossless_.Evidence]] = [[] for _ in lossless]
    for t in targets:
        if t.meta.get("role") == "switch":  # a testbed's switch only follows its hosts' MTU
            continue
        out += check_target(profile, t)
        for k, s in enumerate(lossless):
            found, evs = _lossless(t, s, before[k] if before else None)
            out += found
            evidence[k] += evs
    switch_mtus = {f"{t.name}/{link.name}": m for t in targets
                   if t.meta.get("role") == "switch" for link in readers.links(t)
                   if not link.down and link.name != "lo"
                   and (m := readers.mtu(t, link.name)) is not None}
    for evs in evidence:
        out += lossless_.judge_fabric(evs, switch_mtus)
    return out + delack_probe(profile.settings if profile else [])


def _lossless(t: Target, s: LosslessSetting, before: roce_read.Snapshot | None
              ) -> tuple[list[Finding], list[lossless_.Evidence]]:
    ifaces, ports, why = roce_read.audited_interfaces(t, s)
    found = [Finding(t.name, "lossless", "interfaces audited", ", ".join(ifaces) or "none",
                     "-", "info", _iface_scope(t), why)]
    evs = []
    now = time.monotonic()
    for i in ifaces:
        ev = roce_read.read_evidence(t, i, ports)
        win = None
        if before is not None and (t.name, i) in before.counters:
            win = lossless_.Window(before.counters[(t.name, i)], now - before.taken)
        found += lossless_.judge(ev, s, win)
        evs.append(ev)
    return found, evs


def check_target(profile: Profile | None, t: Target) -> list[Finding]:
    found: list[Finding] = []
    covered: set[str] = set()
    all_links = [link for link in readers.links(t) if link.name != "lo"]
    # A link that is down carries no traffic: advice on its MTU, offloads, routes or NUMA
    # node would be noise (virtual ifb devices sit down on many hosts).
    links = [link.name for link in all_links if not link.down]
    down = [link for link in all_links if link.down]
    settings = profile.settings if profile else []
    scopes = _sysctl_scopes(t, [s.name for s in settings if isinstance(s, SysctlSetting)])
    for s in settings:
        covered.add(s.kind)
        if isinstance(s, SysctlSetting):
            found.append(_sysctl_finding(t, s, scopes.get(s.name)))
        elif isinstance(s, MtuSetting):
            for i in (i for i in links if s.matches(i)):
                cur = readers.mtu(t, i)
                found.append(Finding(t.name, "mtu", f"{i} mtu", str(cur), str(s.value),
                                     "ok" if cur == s.value else "differs",
                                     _iface_scope(t), s.why, s.source, s.risk))
        elif isinstance(s, OffloadSetting):
            for i in (i for i in links if s.matches(i)):
                feats = readers.offloads(t, i)
                on = readers.feature_on(feats, s.long_name) if feats else None
                cur = "unknown" if on is None else ("on" if on else "off")
                st = "unknown" if on is None else ("ok" if cur == s.value else "differs")
                found.append(Finding(t.name, "offload", f"{i} {s.long_name}", cur, s.value,
                                     st, _iface_scope(t), s.why, s.source, s.risk))
        elif isinstance(s, QuickackSetting | RtoMinSetting):
            found += _routes(t, links, s)
        elif isinstance(s, CpuSetting):
            found += _cpu(t, s.name, s.value, s.why, s.source, s.risk)
        elif isinstance(s, NumaSetting):
            found += _numa(t, links, s.why, s.source, s.risk)
        elif isinstance(s, EnvSetting):
            found.append(_env(t, s))
        elif isinstance(s, LosslessSetting):
            pass  # check() reads the NICs, and judges the fabric across targets
        elif isinstance(s, SocketSetting):
            want = ("set" if s.value else "unset") if s.name in ("nodelay", "quickack") \
                else str(s.value)
            found.append(Finding(t.name, "socket", s.name, "per socket (kernel default: "
                                 "unset)", want, "info", "run-time", s.why, s.source, s.risk))
    # What every audit reports, whatever the profile asks.
    if down:
        found.append(_skipped_down(t, down))
    if "mtu" not in covered:
        for i in links:
            found.append(Finding(t.name, "mtu", f"{i} mtu", str(readers.mtu(t, i)), "-",
                                 "info", _iface_scope(t)))
    if "offload" not in covered:
        for i in links:
            feats = readers.offloads(t, i)
            if feats:
                desc = ", ".join(f"{n} {'on' if readers.feature_on(feats, long) else 'off'}"
                                 for n, long in (("rx", "rx-checksumming"),
                                                 ("tx", "tx-checksumming"),
                                                 ("tso", "tcp-segmentation-offload"),
                                                 ("gso", "generic-segmentation-offload"),
                                                 ("gro", "generic-receive-offload"))
                                 if long in feats)
                found.append(Finding(t.name, "offload", f"{i} offloads", desc, "-", "info",
                                     _iface_scope(t), "with TSO/GSO/GRO on, MTU barely "
                                     "matters on veth (64 KB GSO frames)", FACTS))
    if not covered & {"quickack", "rto_min"}:
        found += _routes(t, links, None)
    found += _low_latency_note(t, settings)
    if "numa" not in covered:
        found += _numa(t, links, "the NIC-near cores cut latency (004: 1.9 -> 1.4 us)",
                       "[004]", "")
    found += _irqs(t, links)
    if "cpu" not in covered:
        for name in ("governor", "turbo", "smt"):
            found += _cpu(t, name, None, "", "", "")
    found += _mpi_env(t, {s.name for s in settings if isinstance(s, EnvSetting)})
    return found


def _iface_scope(t: Target) -> str:
    return "per-interface (this host)" if t.host_wide else "per-interface (namespace)"


def _sysctl_scopes(t: Target, names: list[str]) -> dict[str, sysctl_scope.Scope]:
    """Whether each sysctl follows the network namespace, as the kernel decides it (see
    sysctl_scope): the same answer for every target of this kernel."""
    return sysctl_scope.decide(names) if names else {}


def _scope_label(t: Target, sc: sysctl_scope.Scope | None) -> str:
    if sc is None:
        return "?"
    if t.host_wide or sc.namespaced:
        return sc.label
    # On a namespace target the value read is the host's own: apply refuses to write it.
    return f"{sc.label}: shared with the host, not applied here"


def _sysctl_finding(t: Target, s: SysctlSetting, sc: sysctl_scope.Scope | None) -> Finding:
    scope = _scope_label(t, sc)
    st = readers.sysctl(t, s.name)
    rec = {"exact": "", "at-least": ">= ", "at-most": "<= "}[s.match] + readers.normalize(s.value)
    if s.name in NOOP_SYSCTLS:
        return Finding(t.name, "sysctl", s.name, st.value or "(absent here)", rec, "no-op",
                       scope,
                       f"{s.why}; but {NOOP_SYSCTLS[s.name]}: changing it does nothing",
                       f"{s.source}; {FACTS}", s.risk)
    if st.value is None:
        return Finding(t.name, "sysctl", s.name, "(absent)", rec, "unknown", scope,
                       s.why, s.source, s.risk)
    ok = merge_fields(st.value, readers.normalize(s.value), s.match) == st.value
    why = f"{s.why}; scope: {sc.how}" if sc else s.why
    return Finding(t.name, "sysctl", s.name, st.value, rec, "ok" if ok else "differs",
                   scope, why, s.source, s.risk)


def _low_latency_note(t: Target, settings: list[Any]) -> list[Finding]:
    name = "net.ipv4.tcp_low_latency"
    if any(isinstance(s, SysctlSetting) and s.name == name for s in settings):
        return []
    st = readers.sysctl(t, name)
    if st.value is None:
        return []
    return [Finding(t.name, "sysctl", name, st.value, "(any)", "no-op", "root-ns only",
                    f"{NOOP_SYSCTLS[name]}; 001's tcp_low_latency=1 does nothing on this kernel",
                    f"[001]; {FACTS}", "none")]


def _skipped_down(t: Target, down: list[readers.Link]) -> Finding:
    return Finding(t.name, "interfaces", "skipped: down",
                   ", ".join(f"{link.name} ({link.down})" for link in down), "-", "info",
                   _iface_scope(t), "a link that is down carries no traffic, so its MTU, "
                   "offloads, routes and NUMA node are not checked")


def _routes(t: Target, links: list[str], s: QuickackSetting | RtoMinSetting | None
            ) -> list[Finding]:
    """Each route's delayed-ACK attributes: against a setting, or as information."""
    out = []
    for r in readers.routes(t):
        # Only routes over links that are up (a route over a link without carrier stays in
        # the table, flagged linkdown).
        if r.dev not in links or (s is not None and not s.matches(r.dev)):
            continue
        dst = r.line.split()[0]
        qa = str(r.quickack or 0)
        rto = f"{r.rto_min_ms}ms" if r.rto_min_ms is not None else "unset"
        if s is None:
            out.append(Finding(t.name, "delayed-ack", f"route {dst} delayed ACK",
                               f"quickack {qa}, rto_min {rto}", "-", "info", "per-route",
                               "without quickack (or an rto_min this kernel derives the "
                               "delayed-ACK ceiling from) a small reply waits for the delayed "
                               "ACK: Nagle x delayed ACK costs ~44 ms per round trip", FACTS))
        elif isinstance(s, QuickackSetting):
            out.append(Finding(t.name, "delayed-ack", f"route {dst} quickack", qa,
                               str(s.value), "ok" if qa == str(s.value) else "differs",
                               "per-route", s.why, s.source, s.risk))
        else:
            out.append(Finding(t.name, "delayed-ack", f"route {dst} rto_min", rto, s.value,
                               "ok" if rto == s.value else "differs", "per-route", s.why,
                               s.source, s.risk))
    return out


def delack_probe(settings: list[Any]) -> list[Finding]:
    """Whether this kernel honours the profile's delayed-ACK change, measured now in two
    throwaway namespaces (delack.measure): a claim about the user's kernel, not ours."""
    modes = ["default"]
    for s in settings:
        if isinstance(s, RtoMinSetting) and f"rto_min {s.value}" not in modes:
            modes.append(f"rto_min {s.value}")
        elif isinstance(s, QuickackSetting) and s.value == 1 and "quickack 1" not in modes:
            modes.append("quickack 1")
    if len(modes) == 1:
        return []
    if os.geteuid() != 0:
        return [Finding("kernel", "delayed-ack", "delayed ACK on this kernel",
                        "not measured (needs root for two throwaway namespaces)", "-",
                        "unknown", "host-wide")]
    try:
        res = delack.measure(modes)
    except FabenchError as exc:
        return [Finding("kernel", "delayed-ack", "delayed ACK on this kernel",
                        f"not measured: {exc}", "-", "unknown", "host-wide")]
    base = res.median("default")
    parts = [f"default {_ms(base)}"]
    worked, ignored = [], []
    for m in modes[1:]:
        med = res.median(m)
        parts.append(f"{m}: {_ms(med)}")
        # A change the kernel honours shortens the stall by far more than the noise of a
        # loaded host (the default waits for a timer of tens of ms).
        (worked if med < base / 2 else ignored).append(m)
    why = ("write 100 B, write 100 B, read 8 B (Nagle x delayed ACK), medians of "
           f"{len(res.samples['default'])} round trips per mode, measured now in two "
           "throwaway namespaces with the route change tune apply makes")
    if ignored:
        why += f"; this kernel ignores {', '.join(ignored)} for delayed ACKs"
    return [Finding("kernel", "delayed-ack", "delayed ACK on this kernel", "; ".join(parts),
                    ", ".join(worked) or "-", "ok" if not ignored else "differs", "host-wide",
                    why, "[001] (optimization 4); [measured] (on this host, now)",
                    "rto_min also lowers the retransmission timeout floor")]


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"


def _device_dir(t: Target, iface: str) -> Path | None:
    # Network namespaces share /sys/devices: resolve through the target's own /sys/class/net.
    p = t.run(["readlink", "-f", f"/sys/class/net/{iface}/device"], check=False)
    d = Path(p.stdout.strip()) if p.returncode == 0 and p.stdout.strip() else None
    return d if d and d.exists() else None


def _walk_up(d: Path, name: str) -> Path | None:
    for parent in (d, *d.parents):
        if (parent / name).exists():
            return parent / name
        if parent == Path("/sys/devices"):
            break
    return None


def _numa(t: Target, links: list[str], why: str, source: str, risk: str) -> list[Finding]:
    topo = topology.topology(t)
    out = [_numa_layout(t, topo)]
    cpus = sorted(os.sched_getaffinity(0))
    node_of = topo.node_of_cpu()
    used = sorted({node_of.get(c, 0) for c in cpus})
    for i in links:
        out.append(_nic_numa(t, topo, i, cpus, used, why, source,
                             risk or "binding all ranks near one NIC can crowd one socket"))
    return out


def _numa_layout(t: Target, topo: topology.Topology) -> Finding:
    """Cores per NUMA node: what a run near one NIC can use without crossing nodes."""
    n = len(topo.nodes)
    desc = ", ".join(f"node{nd.index} {nd.cores} cores (cpus {topology.ranges(sorted(nd.cpus))})"
                     for nd in topo.nodes)
    why = f"from {topo.source}" + (f"; {topo.note}" if topo.note else "")
    return Finding(t.name, "numa", "NUMA layout", f"{n} node{'s' if n != 1 else ''}: {desc}",
                   "-", "info", "host-wide", why)


def _nic_numa(t: Target, topo: topology.Topology, iface: str, cpus: list[int],
              used: list[int], why: str, source: str, risk: str) -> Finding:
    item = f"{iface} NUMA node"
    nodes = topo.nics.get(iface)
    origin = topo.source
    if nodes is None:
        # hwloc lists PCI NICs only; a veth or bridge has no device, hence no locality.
        d = _device_dir(t, iface)
        if d is None:
            return Finding(t.name, "numa", item, "virtual (no device)", "nic-local", "info",
                           "run-time", why, source, risk)
        f = _walk_up(d, "numa_node")
        node = int(f.read_text().strip()) if f else -1
        nodes = (node,) if node >= 0 else ()
        origin = "sysfs numa_node" + ("" if topo.source == "sysfs"
                                      else f" ({topo.source} did not list {iface})")
    why = f"{why}; locality from {origin}" if why else f"locality from {origin}"
    if len(nodes) != 1:
        # No node, or a NIC local to the whole machine: nothing to place against.
        cur = f"no NUMA affinity reported; cores {topology.ranges(cpus)}"
        st = "ok" if len(topo.nodes) <= 1 else "unknown"
        return Finding(t.name, "numa", item, cur, "nic-local", st, "run-time", why, source,
                       risk)
    nd = topo.node(nodes[0])
    cores = f" ({nd.cores} cores)" if nd else ""
    cur = (f"NIC on node {nodes[0]}{cores}; this run's cores {topology.ranges(cpus)} "
           f"on node(s) {used}")
    return Finding(t.name, "numa", item, cur, f"ranks on node {nodes[0]} cores",
                   "ok" if used == [nodes[0]] else "differs", "run-time", why, source, risk)


def _irqs(t: Target, links: list[str]) -> list[Finding]:
    out = []
    for i in links:
        d = _device_dir(t, i)
        f = _walk_up(d, "msi_irqs") if d else None
        if f is None:
            continue
        irqs = sorted(int(x.name) for x in f.iterdir() if x.name.isdigit())
        aff = []
        for n in irqs:
            try:
                aff.append(f"{n}:{Path(f'/proc/irq/{n}/smp_affinity_list').read_text().strip()}")
            except OSError:
                aff.append(f"{n}:?")
        out.append(Finding(t.name, "irq", f"{i} IRQ affinity", " ".join(aff) or "-",
                           "on the NIC's NUMA node, away from the benchmark's cores", "info",
                           "host-wide", "interrupt handling competes with the ranks for the "
                           "cores near the NIC", "[004] (placement near the NIC)"))
    return out


def _cpu(t: Target, name: str, want: str | None, why: str, source: str, risk: str
         ) -> list[Finding]:
    why = why or "turbo and hyper-threading off remove noise between runs"
    source = source or "[000]"
    scope = "host-wide" + ("" if t.host_wide else " (shared by every namespace)")
    if name == "governor":
        govs = readers.cpu_governors(t)
        cur = ", ".join(sorted(set(govs.values()))) if govs else \
            "not exposed (no cpufreq: a VM or fixed frequency)"
    elif name == "turbo":
        tf = readers.turbo_file(t)
        if tf is None:
            cur = "not exposed (no intel_pstate/no_turbo or cpufreq/boost)"
        else:
            v = t.read(tf[0])
            cur = ("off" if v == "1" else "on") if tf[1] else ("on" if v == "1" else "off")
    else:
        control, active = readers.smt(t)
        cur = f"control {control}, active {active}" if control else "not exposed"
    if want is None:
        st = "info"
    elif "not exposed" in cur or "notsupported" in cur:
        st = "unknown"
    else:
        st = "ok" if cur == want or cur.startswith(f"control {want}") else "differs"
    return [Finding(t.name, "cpu", name, cur, want or "-", st, scope, why, source, risk)]


def _env(t: Target, s: EnvSetting) -> Finding:
    cur = os.environ.get(s.name)
    default = _mca_default(s.name)
    shown = cur if cur is not None else (f"unset (library default {default})" if default
                                         else "unset")
    ok = cur == s.value
    return Finding(t.name, "env", s.name, shown, s.value if s.value is not None else "unset",
                   "ok" if ok else "differs", "run-time", s.why, s.source, s.risk)


def _mpi_env(t: Target, covered: set[str]) -> list[Finding]:
    out = []
    for name in ("OMPI_MCA_btl_tcp_sndbuf", "OMPI_MCA_btl_tcp_rcvbuf", "UCX_TLS",
                 "FI_PROVIDER"):
        if name in covered:
            continue
        cur = os.environ.get(name)
        default = _mca_default(name)
        shown = cur if cur is not None else (f"unset (library default {default})"
                                             if default else "unset")
        why = {"UCX_TLS": "UCX picks transports per peer; a pinned list can send intra-node "
                          "traffic to the NIC (003)",
               "FI_PROVIDER": "the libfabric provider decides the path (002: verbs;ofi_rxm vs "
                              "tcp;ofi_rxm)"}.get(name, "2 MiB MPI TCP socket buffers gave "
                                                        "1.5x (004)")
        src = {"UCX_TLS": "[003]", "FI_PROVIDER": "[002]"}.get(
            name, "[004]")
        out.append(Finding(t.name, "env", name, shown, "-", "info", "run-time", why, src))
    return out


_MCA_CACHE: dict[str, str | None] = {}


def _mca_default(name: str) -> str | None:
    """Open MPI's own value for an OMPI_MCA_ variable (0 = leave the OS default)."""
    if not name.startswith("OMPI_MCA_btl_tcp_"):
        return None
    if not _MCA_CACHE and shutil.which("ompi_info"):
        try:
            p = run_once(["ompi_info", "--param", "btl", "tcp", "--level", "9",
                                "--parsable"], capture_output=True, text=True, timeout=30,
                               check=False)
        except subprocess.TimeoutExpired:
            return None
        for m in re.finditer(r"^mca:btl:tcp:param:(\w+):value:(.*)$", p.stdout, re.MULTILINE):
            _MCA_CACHE[m.group(1)] = m.group(2)
    return _MCA_CACHE.get(name.removeprefix("OMPI_MCA_"))
