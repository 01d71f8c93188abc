"""Schedulers: WHERE a kernel's processes run (this host, an emulated testbed, the hosts of a
hostfile, a Slurm allocation, a simulated platform). How they start is a starter's business
(fabench.starters): a scheduler places the ranks, hands the starter an Allocation, and around
the start does what its place needs (interface counters, a batch job).

A scheduler registers itself with ``@SCHEDULERS.register("name")`` and parses its own words of
``--on NAME [WORDS...]``, so adding one (PBS, Flux) is one module of this package or
of a plugin, and nothing else changes.
"""

import shlex
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from ..errors import FabenchError
from ..host.launched import LaunchResult, RecordCallback
from ..host.netcounters import IfCounters, check_crossing
from ..host.placement import Allocation, HostExec, placement_note
from ..host.tcpstats import TcpCounterWatch
from ..kernels import Kernel
from ..plan.plan import PlannedRun
from ..records import ResultRecord
from ..starters import STARTERS, Starter, get_starter
from ..util.registry import Registry


class Scheduler(ABC):
    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    usage: ClassVar[str] = ""  # its --on words, e.g. "hosts FILE"
    # Whether the ranks run on this machine's CPUs (so a probe of this host describes them).
    ranks_here: ClassVar[bool] = False
    # The starter per kind of kernel start, unless --on NAME:STARTER names one.
    default_starters: ClassVar[dict[str, str]] = {"mpi": "mpirun", "pair": "pair"}

    def __init__(self, starter: str | None = None) -> None:
        self.starter_name = starter
        # The user's consent (--oversubscribe, a spec's `oversubscribe: true`) to start more
        # ranks than the placement has slots.
        self.oversubscribe = False
        # The campaign's results directory (--out), for schedulers that leave files a user
        # keeps with the results (Slurm's job scripts); None when unknown.
        self.results_dir: str | None = None

    @classmethod
    def from_words(cls, words: list[str], starter: str | None = None) -> "Scheduler":
        """The scheduler from the words after its name in ``--on``."""
        if words:
            raise FabenchError(f"--on {cls.name} takes no argument (got {' '.join(words)})")
        return cls(starter=starter)

    def starter_for(self, kernel: Kernel) -> Starter:
        """The starter for this kernel: its own (hpcc's), the one named for MPI kernels, else
        the default."""
        if kernel.starter:
            # A kernel's own starter runs under mpirun from here: not inside a batch job or a
            # simulator.
            if self.default_starters.get(kernel.start) != "mpirun":
                raise FabenchError(f"{kernel.name} runs under mpirun (local, testbed, hosts); "
                                   f"the {self.name} scheduler cannot start it")
            return get_starter(kernel.starter)
        name = self.starter_name if self.starter_name and kernel.start == "mpi" \
            else self.default_starters.get(kernel.start)
        if name is None:
            raise FabenchError(f"{kernel.name}: the {self.name} scheduler cannot start "
                               f"{kernel.start} kernels")
        if name not in STARTERS:
            raise FabenchError(f"unknown starter {name!r}; known: {', '.join(STARTERS.names())}")
        return get_starter(name)

    @abstractmethod
    def run(self, run: PlannedRun, on_record: RecordCallback | None = None) -> LaunchResult:
        """Run it; call on_record for each JSON record as it arrives."""

    def describe(self) -> str:
        return self.name

    def slots(self) -> tuple[int, str] | None:
        """The ranks this place runs without oversubscribing and what they are (cores of this
        host, a hostfile's slots); None where the place decides itself (a batch system, a
        simulation)."""
        return None

    def check_ranks(self, run: PlannedRun) -> None:
        """Refuse more ranks than slots without the user's consent: mpirun's own rule, which
        fabench otherwise waives (`--ranks 100000` once started 100,000 processes on 2 cores)."""
        slots = self.slots()
        if slots is None or self.oversubscribe or run.ranks <= slots[0]:
            return
        raise FabenchError(f"{run.label_text}: {run.ranks} ranks, but {self.describe()} has "
                           f"{slots[0]} slots ({slots[1]}); --oversubscribe (or "
                           "`oversubscribe: true` in a spec) runs them anyway, ranks sharing "
                           "cores")

    def close(self) -> None:  # noqa: B027 - most schedulers make nothing to give back
        """Give back what the scheduler made for this process (an ephemeral testbed)."""

    # -- hosts: what features that spread processes over hosts need (a matrix, congestion's
    # victims and aggressors). A site scheduler that offers them works there too.
    def host_names(self) -> list[str] | None:
        """The hosts this place offers, in its order; None where it cannot say before it
        runs (a batch system allocates at submission, a simulation has no hosts to reach)."""
        return None

    def host_exec(self, name: str) -> HostExec:
        """How to start a process on one of its hosts: the argv prefix that runs a command
        there (ssh, a namespace's nsenter), and the address its peers reach it at."""
        raise FabenchError(f"the {self.name} scheduler cannot start a process on a host of "
                           "fabench's choosing")

    def on_hosts(self, names: Sequence[str]) -> "Scheduler":
        """The same place with ranks on these hosts only, in this order (a view: closing it
        never gives back what its owner made)."""
        raise FabenchError(f"the {self.name} scheduler cannot place ranks on chosen hosts")

    def unreachable_hosts(self) -> list[tuple[str, str]]:
        """Hosts that do not answer now, each with why; [] where every host is made or
        allocated for the run (a testbed, this host, a batch allocation)."""
        return []

    def link_impairments(self) -> tuple[str, ...]:
        """What the place does to its links on purpose (an emulated testbed's impairments)."""
        return ()

    # -- a run over the whole allocation (an acceptance's collectives at full size)
    def allocation_nodes(self) -> int | None:
        """How many nodes a run over the whole allocation spans: the hosts this place offers,
        or what a batch system will allocate; None where it cannot say."""
        names = self.host_names()
        return len(names) if names else None

    def ranks_per_node_asked(self) -> int | None:
        """Ranks per node the user asked the place for (a job's --ntasks-per-node); None."""
        return None

    def spread(self, nodes: int, per_node: int) -> "Scheduler":
        """The same place with a run's ranks `per_node` on each of `nodes` nodes. A place
        that puts ranks on hosts itself places them in order already: itself."""
        return self


class DirectScheduler(Scheduler):
    """A scheduler whose starter runs from here: it places the ranks on the hosts it offers
    and, when a run crosses hosts, checks each host's interface counters around it."""

    @abstractmethod
    def allocation(self, run: PlannedRun) -> Allocation:
        """Where this run's ranks go and how to reach those hosts."""

    def counters(self, hosts: list[str]) -> dict[str, IfCounters]:
        """Each host's link counters now; {} when the scheduler cannot read them."""
        return {}

    def counters_where(self) -> str:
        """The link the counters read, for the record."""
        return "all but lo"

    def tcp_watched(self, alloc: Allocation, names: list[str]) -> list[str]:
        """The hosts whose TCP counters a run records: the run's own by default."""
        return names

    def run(self, run: PlannedRun, on_record: RecordCallback | None = None) -> LaunchResult:
        starter = self.starter_for(run.kernel)
        alloc = self.allocation(run)
        names = [h.name for h in (alloc.pair() if run.kernel.start == "pair"
                                  else alloc.placed)] if alloc.crosses else []
        results: list[ResultRecord] = []

        def collect(obj: dict[str, object]) -> None:
            # A program run by its own starter (hpcc) counts work, not the bytes it sends:
            # its records cannot say what the links should have carried.
            if obj.get("type") == "result" and not run.kernel.starter:
                results.append(ResultRecord.from_json(obj))
            if on_record is not None:
                on_record(obj)  # type: ignore[arg-type]

        before = self.counters(names) if names else {}
        # The kernel's own TCP counters of each host (reordering, out-of-order queueing,
        # retransmits, ECN): the evidence behind a TCP number on an impaired path.
        watched = self.tcp_watched(alloc, names) if names else []
        tcp = TcpCounterWatch({n: alloc.execs[n].prefix for n in watched})
        tcp.start()
        res = starter.start(run, alloc, collect)
        if watched:
            res.extra["tcp_counters"] = {h: d.to_json() for h, d in tcp.finish().items()}
        if len(alloc.execs) > 1:
            res.notes.append(placement_note(alloc.placed, not alloc.crosses))
        if before:
            check_crossing(res, results, before, self.counters(names), self.counters_where())
        return res


SCHEDULERS: Registry[type[Scheduler]] = Registry("scheduler", __name__)


@dataclass(frozen=True)
class OnWords:
    """``--on NAME[:WORD] [WORDS...]`` split, before any scheduler is made (``NAME:WORD`` is
    ``NAME WORD``: `testbed:tb`, `slurm:mpirun`)."""

    name: str
    words: list[str]


def split_on(values: list[str]) -> OnWords:
    # argparse refuses a following word that looks like an option (`--on slurm -N 2`), so
    # scheduler options may come as one quoted word, `--on "slurm -N 2 --ntasks-per-node=1"`;
    # a spec file's `launcher:` line is one word too.
    if not values or not values[0].strip():
        raise FabenchError("--on needs a place: local, auto, testbed [NAME], hosts FILE, "
                           "slurm [SBATCH ARGS]")
    if any(c.isspace() for c in values[0]):
        try:
            values = [*shlex.split(values[0]), *values[1:]]
        except ValueError as exc:
            raise FabenchError(f"--on {values[0]!r}: {exc}") from None
    name, rest = values[0], list(values[1:])
    if ":" in name:
        name, first = name.split(":", 1)
        rest = [first, *rest]
    return OnWords(name, rest)


def make_scheduler(values: list[str]) -> Scheduler:
    on = split_on(values)
    return SCHEDULERS.get(on.name).from_words(on.words)


__all__ = ["SCHEDULERS", "DirectScheduler", "OnWords", "Scheduler", "make_scheduler",
           "split_on"]
