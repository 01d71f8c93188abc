"""A testbed described for people: settings, hosts, and whether each host is alive."""

import shlex

from ..netcounters import read_host_counters
from .plumbing import proc_start
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
    alive = host_alive(state)
    for h in state.hosts:
        if alive[h.name]:
            cnt = read_host_counters(h.enter, h.ifname)
            live = f"up, {h.ifname} rx {cnt.rx_bytes} B tx {cnt.tx_bytes} B"
        else:
            live = "GONE"
        lines.append(f"  {h.name:<4} {h.address:<15} netns {h.netns}  {live}")
    lines.append(f"  run on a host: fabench testbed exec --name {state.name} h1 -- CMD"
                 f"   (or: {shlex.join(state.hosts[0].enter)} CMD)" if state.hosts else "")
    lines.append(f"  ssh stand-in for mpirun/hostfiles: {state.agent}")
    return lines
