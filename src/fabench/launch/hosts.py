"""The hosts launcher: a hostfile (one host per line, optional `slots=N`), ranks started over
ssh by mpirun, transport kernels started over ssh on two of the hosts.

Also the pieces every multi-host launcher shares: rank placement, which transports are
on-node by nature, and the before/after interface-counter check that a run crossed the
network.
"""

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import FabenchError
from ..mpi import get_flavour, parse_transport
from ..records import ResultRecord
from ..testbed.counters import IfCounters, crossing_flag, delta, read_host_counters
from .base import (
    HostExec,
    Launcher,
    LaunchRequest,
    LaunchResult,
    RecordCallback,
    register_launcher,
)
from .mpi_run import run_mpi_kernel

# UCX transports that only reach processes of the same host.
_ON_NODE_TLS = {"sm", "posix", "sysv", "cma", "knem", "xpmem", "self", "shm"}


@dataclass(frozen=True)
class HostSlots:
    name: str
    slots: int = 1


def parse_hostfile(path: str | Path) -> list[HostSlots]:
    """`name [slots=N]` per line, `#` comments; the format mpirun's own hostfiles use."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise FabenchError(f"cannot read hostfile {path}: {exc.strerror}") from exc
    hosts = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, *opts = line.split()
        slots = 1
        for opt in opts:
            key, _, val = opt.partition("=")
            if key in ("slots", "max_slots", "max-slots") and val.isdigit() and int(val) > 0:
                if key == "slots":
                    slots = int(val)
            else:
                raise FabenchError(f"{path} line {n}: unknown option {opt!r} "
                                   "(a line is: HOST [slots=N])")
        hosts.append(HostSlots(name, slots))
    if not hosts:
        raise FabenchError(f"hostfile {path} names no host")
    return hosts


def on_node_transport(transport: str) -> bool:
    """Shared-memory transports cannot cross hosts: their ranks all go on the first host."""
    t = parse_transport(transport)
    if t.kind == "shm":
        return True
    if t.kind == "ucx" and t.ucx_tls and not t.ucx_tls.startswith("^"):
        return set(t.ucx_tls.split(",")) <= _ON_NODE_TLS
    if t.kind == "ofi" and t.ofi_provider:
        return t.ofi_provider.split(";", 1)[0] == "shm"
    return False


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


def pair_run():  # type: ignore[no-untyped-def]
    try:
        from .pair_run import run_pair_kernel
    except ImportError as exc:
        raise FabenchError(f"transport kernels are not available in this build ({exc})") from exc
    return run_pair_kernel


def check_crossing(res: LaunchResult, results: list[ResultRecord],
                   before: dict[str, IfCounters], after: dict[str, IfCounters],
                   where: str) -> None:
    """Record what each host's link carried; flag the run if it carried less than it moved."""
    carried = delta(before, after)
    res.extra["interface_bytes"] = {"where": where, "per_host": carried}
    flag = crossing_flag(carried, results, list(carried))
    if flag:
        res.flags.append(flag)


def run_across(req: LaunchRequest, on_record: RecordCallback | None, *,
               placed: list[HostSlots], execs: dict[str, HostExec], crosses: bool,
               counters: Callable[[list[str]], dict[str, IfCounters]],
               mpirun_prefix: tuple[str, ...], remote: dict[str, str | None],
               extra_env: dict[str, str], where: str,
               oversubscribe: bool | None = None) -> LaunchResult:
    """One run over several hosts (testbed or hostfile), with the counter check around it."""
    names = [h.name for h in placed]
    results: list[ResultRecord] = []

    def collect(obj: dict[str, object]) -> None:
        if obj.get("type") == "result":
            results.append(ResultRecord.from_json(obj))
        if on_record is not None:
            on_record(obj)  # type: ignore[arg-type]

    before = counters(names) if crosses else {}
    if req.kernel.needs_mpi:
        extra = get_flavour(req.mpi).remote_args(
            rsh_agent=remote.get("agent"), iface=remote.get("iface"),
            subnet=remote.get("subnet"))
        res = run_mpi_kernel(req, collect, hosts=[f"{h.name}:{h.slots}" for h in placed],
                             extra_mpirun_args=extra, extra_env=extra_env,
                             prefix=mpirun_prefix, oversubscribe=oversubscribe)
    else:
        pair = [execs[n] for n in names[:2]]
        if len(pair) < 2:
            pair = [execs[n] for n in list(execs)[:2]]
            names = [h.name for h in pair]
        if len(pair) < 2:
            raise FabenchError(f"{req.kernel.name} needs two hosts")
        res = pair_run()(req, collect, hosts=pair)
    res.notes.append(placement_note(placed, not crosses))
    if crosses:
        check_crossing(res, results, before, counters(names), where)
    return res


@register_launcher("hosts")
class HostsLauncher(Launcher):
    """A real cluster by hostfile. `FABENCH_RSH_AGENT` replaces ssh (any program called as
    `AGENT HOST COMMAND...`); `FABENCH_IFACE` (a name such as ib0, or a CIDR subnet) keeps
    MPI's traffic and the counter check on one network."""

    def __init__(self, hostfile: str, agent: str | None = None, iface: str | None = None):
        self.hostfile = hostfile
        self.hosts = parse_hostfile(hostfile)
        self.agent = agent or os.environ.get("FABENCH_RSH_AGENT") or "ssh"
        self.iface = iface or os.environ.get("FABENCH_IFACE") or None

    def describe(self) -> str:
        return (f"hosts {self.hostfile} ({', '.join(h.name for h in self.hosts)}; "
                f"agent {self.agent})")

    def _exec(self, name: str) -> HostExec:
        return HostExec(name=name, address=name, prefix=(self.agent, name))

    def run(self, req: LaunchRequest, on_record: RecordCallback | None = None) -> LaunchResult:
        on_node = on_node_transport(req.transport) if req.kernel.needs_mpi else False
        placed = place_ranks(self.hosts, req.ranks, on_node)
        crosses = len(placed) > 1 or not req.kernel.needs_mpi
        ifname = self.iface if self.iface and "/" not in self.iface else None

        def counters(names: list[str]) -> dict[str, IfCounters]:
            return {n: read_host_counters(self._exec(n).prefix, ifname) for n in names}

        remote: dict[str, str | None] = {
            "agent": None if self.agent == "ssh" else self.agent,
            "iface": ifname, "subnet": self.iface if self.iface and "/" in self.iface else None}
        return run_across(req, on_record, placed=placed,
                          execs={h.name: self._exec(h.name) for h in self.hosts},
                          crosses=crosses, counters=counters, mpirun_prefix=(),
                          remote=remote, extra_env={}, where=ifname or "all but lo")
