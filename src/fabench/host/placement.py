"""Where ranks go: hosts as a scheduler offers them, and how ranks are dealt over them."""

import os
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class HostExec:
    """One host as a scheduler sees it: how to run a command there, and where peers reach it.

    `prefix` runs a command on that host: () for this host, ("ip", "netns", "exec", NS) or an
    nsenter line for a testbed host, (AGENT, NAME) for a cluster node.
    """

    name: str
    address: str
    prefix: tuple[str, ...] = ()


@dataclass(frozen=True)
class HostSlots:
    """A host and a count: the slots it offers, or the ranks placed on it."""

    name: str
    slots: int = 1


def cpu_count() -> int:
    """Cores this process may run on (the affinity mask, not the machine's total)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def host_slots(hosts: Sequence[str]) -> int:
    """Slots in an mpirun host list: ``a:4`` counts 4, a bare name 1 (mpirun's own rule)."""
    total = 0
    for h in hosts:
        name, _, slots = h.partition(":")
        total += int(slots) if slots.isdigit() else 1
    return total


def place_ranks(hosts: list[HostSlots], ranks: int, on_node: bool) -> list[HostSlots]:
    """Hosts with their rank counts. Cross-host runs deal ranks round-robin over as many
    hosts as there are ranks (2 ranks -> one per host, so a ping-pong always crosses),
    skipping hosts whose slots are full until all are; on-node runs put every rank on the
    first host."""
    if on_node or ranks == 1:
        return [HostSlots(hosts[0].name, ranks)]
    used = hosts[:min(ranks, len(hosts))]
    counts = [0] * len(used)
    i = 0
    for _ in range(ranks):
        all_full = all(c >= h.slots for c, h in zip(counts, used, strict=True))
        while not all_full and counts[i % len(used)] >= used[i % len(used)].slots:
            i += 1
        counts[i % len(used)] += 1
        i += 1
    return [HostSlots(h.name, c) for h, c in zip(used, counts, strict=True) if c]


def placement_note(placed: list[HostSlots], on_node: bool) -> str:
    where = ", ".join(f"{h.name}:{h.slots}" for h in placed)
    why = " (shared memory is on-node)" if on_node else ""
    return f"placement: {where}{why}"


@dataclass
class Allocation:
    """What a scheduler hands a starter for one run: the hosts with the ranks placed on each,
    how to run a command on every host it offers, and how the hosts reach each other."""

    placed: list[HostSlots]
    execs: dict[str, HostExec]
    # Whether the hosts are reached from the starter's own host (mpirun then gets a host
    # list and the remote settings below; a pair kernel its two hosts).
    remote: bool = False
    # Whether this run's traffic crosses between hosts (the counters must show it did).
    crosses: bool = False
    # Where the starter's own process runs: () here, an nsenter line inside a testbed host.
    launch_prefix: tuple[str, ...] = ()
    agent: str | None = None  # an ssh stand-in, called as AGENT HOST COMMAND...
    iface: str | None = None  # keep MPI's traffic on this interface ...
    subnet: str | None = None  # ... or on this subnet (CIDR)
    extra_env: dict[str, str] = field(default_factory=dict)
    oversubscribe: bool | None = None  # None: the MPI flavour judges from slots or cores
    # The simulated platform of a SimGrid run (fabench.sim.smpi.SimSetup); None elsewhere.
    platform: object | None = None

    @property
    def host_list(self) -> list[str]:
        """``name:ranks`` per placed host, as mpirun's host lists write it."""
        return [f"{h.name}:{h.slots}" for h in self.placed]

    def pair(self) -> list[HostExec]:
        """The two hosts of a client/server kernel: the first two placed, else the first two
        offered (a one-host placement still needs a second host to cross)."""
        names = [h.name for h in self.placed][:2]
        if len(names) < 2:
            names = list(self.execs)[:2]
        return [self.execs[n] for n in names]
