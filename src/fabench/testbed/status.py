"""A testbed described for people: settings, hosts, and whether each host is alive."""

import shlex
from dataclasses import asdict
from typing import Any

from ..host.netcounters import read_host_counters
from ..host.proc_stat import proc_start
from . import links
from .state import TestbedState, burst_for


def host_alive(state: TestbedState) -> dict[str, bool]:
    return {h.name: bool(h.holder_pid) and proc_start(h.holder_pid) == h.holder_start
            for h in state.hosts}


def status_lines(state: TestbedState) -> list[str]:
    c = state.config
    rate = (f"{c.rate} both directions (tbf, burst {c.burst or burst_for(c.rate, c.mtu)}, "
            f"queue {c.queue})" if c.rate else "unlimited")
    offl = {None: "kernel default", True: "on", False: "off"}[c.offloads]
    lines = [
        f"testbed {state.name}: {len(state.hosts)} hosts, subnet {state.subnet}, mtu {c.mtu}, "
        f"rate {rate}, offloads {offl}, mode {state.mode}"
        + ("" if state.complete else "  [INCOMPLETE: `fabench testbed down` it]"),
    ]
    if c.sysctls:
        lines.append("  sysctls: " + ", ".join(f"{k}={v}" for k, v in c.sysctls.items()))
    if len(state.switches) > 1:
        groups = "; ".join(f"sw{sw.index}: " + ",".join(h.name for h in state.hosts
                                                         if h.switch == sw.index)
                           for sw in state.switches)
        up = f"uplinks {c.uplink_rate} (tbf)" if c.uplink_rate else "uplinks unlimited"
        lines.append(f"  {len(state.switches)} switches joined by spine {state.spine_ns}, "
                     f"{up}: {groups}")
    if state.links:
        netem = {None: "not looked for", True: "present", False: "absent"}[state.netem]
        lines.append(f"  impaired links (netem in this kernel: {netem}):")
        lines += [f"    {links.describe(ln)}" for ln in state.links]
    alive = host_alive(state)
    for h in state.hosts:
        if alive[h.name]:
            cnt = read_host_counters(h.enter, h.ifname)
            live = f"up, {h.ifname} rx {cnt.rx_bytes} B tx {cnt.tx_bytes} B"
        else:
            live = "GONE"
        sw = f"  sw{h.switch}" if len(state.switches) > 1 else ""
        lines.append(f"  {h.name:<4} {h.address:<15} netns {h.netns}{sw}  {live}")
    lines.append(f"  run on a host: fabench testbed exec --name {state.name} h1 -- CMD"
                 f"   (or: {shlex.join(state.hosts[0].enter)} CMD)" if state.hosts else "")
    lines.append(f"  ssh stand-in for mpirun/hostfiles: {state.agent}")
    if c.sshd:
        d = state.dir / "ssh"
        lines.append(f"  sshd in every host; from inside one: FABENCH_RSH_AGENT={d / 'ssh'} "
                     f"fabench ... --on hosts {d / 'hostfile'}")
    return lines


def status_json(state: TestbedState) -> dict[str, Any]:
    """The state as recorded, whether each host and link is alive, and every fb-link's
    counters now (None for one that is gone)."""
    out = asdict(state)
    out["alive"] = host_alive(state)
    out["link_status"] = {ln.host: links.link_status(ln) for ln in state.links
                          if ln.impl == "fb-link"}
    out["dead_links"] = links.dead_links(state)
    return out
