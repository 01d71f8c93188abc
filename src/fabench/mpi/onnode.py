"""Intra-node traffic over the network (document 003's failure class), read from the library's
own report and the run's placement.

UCX chooses transports per peer; an endpoint to a peer on the same host should carry shared
memory only (posix, sysv, cma, knem, xpmem). Two ways it goes wrong, both visible in the
``ep_cfg[N]`` lines UCX prints at info level:

- network lanes *beside* shared-memory ones in one endpoint configuration: only an on-node
  peer is reachable through shared memory, so the NIC lanes in that line carry intra-node
  traffic (UCX kept the HCA for on-node peers after a shared-memory transport was chosen);
- network lanes *instead of* shared memory when the placement puts ranks on one host (e.g.
  ``UCX_TLS=tcp``): every endpoint between them goes through a NIC or the kernel's loopback.

Open MPI's ob1 says per peer which BTL it uses and on which node the peer is
(``mca: bml: Using tcp btl for send to [[j,1],1] on node vm``), so there the check is per peer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..host.placement import HostSlots
from ..kernels.transport_request import ON_NODE_TLS
from .base import strip_rank_prefix, ucx_ep_configs

FLAG = "intra-node-over-nic"
# BTLs that stay inside a host; every other one (tcp, openib, uct, usnic, ...) is a network.
ON_NODE_BTLS = frozenset({"self", "vader", "sm", "smcuda"})

_BML_RE = re.compile(r"^\[([^:\]\s]+):\d+\]\s+mca: bml: Using (\S+) btl for send to (\S+) "
                     r"on node (\S+)")


def _ep(line: str) -> str:
    return line[line.find("ep_cfg"):].strip()


def _network(entries: Sequence[str]) -> list[str]:
    return [e for e in entries if e.split("/", 1)[0] not in ON_NODE_TLS]


def _shm(entries: Sequence[str]) -> list[str]:
    return [e for e in entries if e.split("/", 1)[0] in ON_NODE_TLS]


def _shared(placed: Sequence[HostSlots] | None) -> list[HostSlots]:
    """Hosts with two or more ranks: where on-node peers exist."""
    return [h for h in placed or () if h.slots >= 2]


def _where(hosts: Sequence[HostSlots]) -> str:
    return ", ".join(f"{h.slots} ranks on {h.name}" for h in hosts)


def ucx_on_node_network(stderr: str, placed: Sequence[HostSlots] | None) -> str | None:
    """A flag text when UCX's endpoints show intra-node traffic on network lanes, else None.
    ``placed`` is the run's placement; None when unknown (only the mixed-lanes case is then
    decidable)."""
    cfgs = [c for c in ucx_ep_configs(stderr) if not c.is_self]
    if not cfgs:
        return None
    mixed = [c for c in cfgs if _shm(c.entries) and _network(c.entries)]
    if mixed:
        nets = list(dict.fromkeys(e for c in mixed for e in _network(c.entries)))
        return (f"{FLAG}: UCX put network lanes {' '.join(nets)} beside shared memory in an "
                f"endpoint to an on-node peer, so intra-node messages can go over the NIC "
                f"(UCX: {_ep(mixed[0].line)})")
    shared = _shared(placed)
    if not shared:
        return None
    nets = list(dict.fromkeys(e for c in cfgs for e in _network(c.entries)))
    any_shm = any(_shm(c.entries) for c in cfgs)
    if placed is not None and len(placed) == 1 and nets:
        return (f"{FLAG}: {_where(shared)} reached each other over network lanes "
                f"{' '.join(nets)}, not shared memory (UCX: {_ep(cfgs[0].line)})")
    if not any_shm and nets:
        return (f"{FLAG}: {_where(shared)}, yet no UCX endpoint has a shared-memory lane: "
                f"on-node peers went over {' '.join(nets)} "
                f"(UCX: {_ep(cfgs[0].line)})")
    return None


def ob1_on_node_network(stderr: str, placed: Sequence[HostSlots] | None) -> str | None:
    """A flag text when ob1 reaches an on-node peer through a network BTL, else None."""
    hits = [(m.group(1), m.group(2), m.group(4), ln) for ln in stderr.splitlines()
            if (m := _BML_RE.match(ln.strip()))]
    if not hits:
        return None
    shared = _shared(placed)
    one_host = placed is not None and len(placed) == 1 and bool(shared)
    # Host names decide only when they tell hosts apart: namespaces without their own UTS
    # namespace would all print the machine's name.
    names_tell = len({h for h, _, _, _ in hits} | {n for _, _, n, _ in hits}) >= 2
    bad = [(btl, node, ln) for host, btl, node, ln in hits if btl not in ON_NODE_BTLS
           and (one_host or (names_tell and host == node))]
    if not bad:
        return None
    btls = sorted({b for b, _, _ in bad})
    nodes = sorted({n for _, n, _ in bad})
    return (f"{FLAG}: ob1 sends to on-node peers through the {'+'.join(btls)} BTL (node "
            f"{', '.join(nodes)}), not shared memory (Open MPI: "
            f"{strip_rank_prefix(bad[0][2])})")
