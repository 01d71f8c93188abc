"""hosts: a real cluster by hostfile (one host per line, optional `slots=N`); mpirun starts
ranks over ssh, transport kernels start over ssh on two of the hosts.

`FABENCH_RSH_AGENT` replaces ssh (any program called as `AGENT HOST COMMAND...`);
`FABENCH_IFACE` (a name such as ib0, or a CIDR subnet) keeps MPI's traffic and the counter
check on one network.
"""

import copy
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from ..errors import FabenchError
from ..host.fanout import on_each
from ..host.netcounters import IfCounters, read_host_counters
from ..host.placement import Allocation, HostExec, HostSlots, place_ranks
from ..host.process import run_once
from ..plan.plan import PlannedRun
from ..util.hostnames import check_host
from ..util.textfile import read_text
from . import SCHEDULERS, DirectScheduler, Scheduler

PROBE_TIMEOUT_S = 20.0  # an ssh that has not run `true` by then will not carry a run either
# A bound, not a figure of any machine: far above any node's hardware threads today, far below
# what would make rank lists and slot sums unbounded work (slots=1e12 was taken as given)
MAX_SLOTS = 65_536


def parse_hostfile(path: str | Path) -> list[HostSlots]:
    """`name [slots=N]` per line, `#` comments; the format mpirun's own hostfiles use."""
    try:
        text = read_text(path, "hostfile")
    except FileNotFoundError:
        raise FabenchError(f"cannot read hostfile {path}: no such file") from None
    hosts = []
    seen: dict[str, tuple[str, int]] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, *opts = line.split()
        slots = 1
        for opt in opts:
            key, _, val = opt.partition("=")
            if key in ("slots", "max_slots", "max-slots") and val.isascii() and val.isdigit() \
                    and 0 < int(val) <= MAX_SLOTS:  # '²' is a digit to isdigit(), not to int()
                if key == "slots":
                    slots = int(val)
            else:
                raise FabenchError(f"{path} line {n}: unknown option {opt!r} "
                                   f"(a line is: HOST [slots=N], N 1..{MAX_SLOTS:,})")
        host = check_host(name, f"{path} line {n}")
        if host.lower() in seen:
            # mpirun would add the slots up; per-node work (hpl nodes, the matrix) would
            # measure one node twice and call it two
            first, line = seen[host.lower()]
            raise FabenchError(f"{path} line {n}: host {host} is listed more than once (as "
                               f"{first} on line {line}): give it one line with slots=N")
        seen[host.lower()] = (host, n)
        hosts.append(HostSlots(host, slots))
    if not hosts:
        raise FabenchError(f"hostfile {path} names no host")
    return hosts


@SCHEDULERS.register("hosts")
class HostsScheduler(DirectScheduler):
    description = "the hosts of a hostfile, reached over ssh (or FABENCH_RSH_AGENT)"
    usage = "hosts FILE"

    def __init__(self, hostfile: str, agent: str | None = None, iface: str | None = None,
                 starter: str | None = None) -> None:
        super().__init__(starter)
        self.hostfile = hostfile
        self.hosts = parse_hostfile(hostfile)
        self.agent = agent or os.environ.get("FABENCH_RSH_AGENT") or "ssh"
        self.iface = iface or os.environ.get("FABENCH_IFACE") or None

    @classmethod
    def from_words(cls, words: list[str], starter: str | None = None) -> Scheduler:
        if len(words) != 1:
            raise FabenchError("--on hosts needs a hostfile: --on hosts FILE")
        return cls(words[0], starter=starter)

    def describe(self) -> str:
        return (f"hosts {self.hostfile} ({', '.join(h.name for h in self.hosts)}; "
                f"agent {self.agent})")

    def slots(self) -> tuple[int, str] | None:
        return sum(h.slots for h in self.hosts), f"slots of {self.hostfile}"

    def _exec(self, name: str) -> HostExec:
        # ssh takes `--` before its operands: a name can never become an option there. An
        # agent's contract is `AGENT HOST COMMAND...`; the name was checked (RFC 1123 or an IP).
        ssh = os.path.basename(self.agent) == "ssh"
        return HostExec(name=name, address=name,
                        prefix=(self.agent, "--", name) if ssh else (self.agent, name))

    @property
    def _ifname(self) -> str | None:
        return self.iface if self.iface and "/" not in self.iface else None

    def allocation(self, run: PlannedRun) -> Allocation:
        on_node = run.kernel.needs_mpi and run.transport.on_node
        placed = place_ranks(self.hosts, run.ranks, on_node)
        return Allocation(
            placed=placed, execs={h.name: self._exec(h.name) for h in self.hosts},
            remote=True, crosses=len(placed) > 1 or not run.kernel.needs_mpi,
            agent=None if self.agent == "ssh" else self.agent, iface=self._ifname,
            subnet=self.iface if self.iface and "/" in self.iface else None)

    def host_names(self) -> list[str] | None:
        return [h.name for h in self.hosts]

    def host_exec(self, name: str) -> HostExec:
        if name not in {h.name for h in self.hosts}:
            raise FabenchError(f"host {name!r} is not in {self.hostfile}")
        return self._exec(name)

    def on_hosts(self, names: Sequence[str]) -> Scheduler:
        by_name = {h.name: h for h in self.hosts}
        bad = [n for n in names if n not in by_name]
        if bad or not names or len(set(names)) != len(names):
            raise FabenchError(f"hosts {','.join(names)}: each once, among those of "
                               f"{self.hostfile}")
        view = copy.copy(self)
        view.hosts = [by_name[n] for n in names]
        return view

    def unreachable_hosts(self) -> list[tuple[str, str]]:
        """Hosts that do not run `true` through the agent (ssh), each with its last words."""
        bad = []
        for h in self.hosts:
            if h.name.startswith("-"):  # would be read as an option of ssh or the agent
                bad.append((h.name, "a host name may not start with '-'"))
                continue
            try:
                p = run_once([*self._exec(h.name).prefix, "true"], capture_output=True,
                             text=True, timeout=PROBE_TIMEOUT_S, check=False,
                             stdin=subprocess.DEVNULL)
                if p.returncode != 0:
                    tail = (p.stderr.strip().splitlines() or
                            [f"exit status {p.returncode}"])[-1]
                    bad.append((h.name, f"{self.agent}: {tail[:200]}"))
            except subprocess.TimeoutExpired:
                bad.append((h.name, f"{self.agent} did not answer in {PROBE_TIMEOUT_S:.0f} s"))
            except OSError as exc:
                raise FabenchError(f"cannot run {self.agent}: {exc.strerror}") from None
        return bad

    def counters(self, hosts: list[str]) -> dict[str, IfCounters]:
        return on_each(lambda n: read_host_counters(self._exec(n).prefix, self._ifname), hosts)

    def counters_where(self) -> str:
        return self._ifname or "all but lo"
