"""A site's plugins, kept outside fabench's source (tests/test_plugins.py loads them with
FABENCH_PLUGINS=fbdemo_plugins): one of each kind docs/DEVELOPING.md explains."""

import copy
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from fabench.errors import FabenchError
from fabench.host.launched import LaunchResult, RecordCallback
from fabench.host.placement import Allocation, HostExec, HostSlots
from fabench.importers import ImportedRun, Importer, aggregate, register_importer
from fabench.kernels import LATENCY, Kernel, register_kernel
from fabench.plan.plan import PlannedRun
from fabench.schedulers import SCHEDULERS, DirectScheduler, Scheduler
from fabench.starters import STARTERS
from fabench.starters.mpirun import MpirunStarter

HERE = Path(__file__).resolve().parent


@STARTERS.register("nice-mpirun")
class NiceMpirun(MpirunStarter):
    """mpirun at a lower CPU priority: a starter is HOW ranks start."""

    description = "mpirun under nice -n 5"

    def start(self, run: PlannedRun, alloc: Allocation,
              on_record: RecordCallback | None = None) -> LaunchResult:
        alloc.launch_prefix = ("nice", "-n", "5", *alloc.launch_prefix)
        res = super().start(run, alloc, on_record)
        res.notes.append("started by the nice-mpirun demo starter")
        return res


@SCHEDULERS.register("onehost")
class OneHost(DirectScheduler):
    """Every rank here, started by the demo starter: a scheduler is WHERE ranks run."""

    description = "this host, ranks started at a lower priority"
    usage = "onehost"
    ranks_here: ClassVar[bool] = True
    default_starters: ClassVar[dict[str, str]] = {"mpi": "nice-mpirun", "pair": "pair"}

    def allocation(self, run: PlannedRun) -> Allocation:
        here = HostExec("here", "127.0.0.1")
        return Allocation(placed=[HostSlots("here", run.ranks)], execs={"here": here})


@SCHEDULERS.register("loopbacks")
class Loopbacks(DirectScheduler):
    """This machine as N hosts, each one loopback address (127.0.0.2, .3, ...): a site's own
    scheduler that offers its hosts (host_names, host_exec, on_hosts), so the features that
    spread processes over hosts (a pair-kernel matrix, congestion's placement) run on it.
    Pair kernels go between its hosts; MPI ranks all stay on the first."""

    description = "this host as N loopback addresses, one per host"
    usage = "loopbacks [N]"

    def __init__(self, n: int = 3, starter: str | None = None) -> None:
        super().__init__(starter)
        if not 2 <= n <= 200:
            raise FabenchError(f"--on loopbacks {n}: 2 to 200 hosts")
        self.names = [f"lo{i}" for i in range(2, n + 2)]

    @classmethod
    def from_words(cls, words: list[str], starter: str | None = None) -> Scheduler:
        if len(words) > 1 or (words and not words[0].isdigit()):
            raise FabenchError("--on loopbacks [N]")
        return cls(int(words[0]) if words else 3, starter=starter)

    def host_names(self) -> list[str] | None:
        return list(self.names)

    def host_exec(self, name: str) -> HostExec:
        if name not in self.names:
            raise FabenchError(f"no host {name!r} here")
        return HostExec(name, f"127.0.0.{name[2:]}")

    def on_hosts(self, names: Sequence[str]) -> Scheduler:
        view = copy.copy(self)
        view.names = [self.host_exec(n).name for n in names]
        return view

    def allocation(self, run: PlannedRun) -> Allocation:
        if run.kernel.needs_mpi:
            return Allocation(placed=[HostSlots(self.names[0], run.ranks)],
                              execs={self.names[0]: self.host_exec(self.names[0])})
        return Allocation(placed=[HostSlots(n) for n in self.names],
                          execs={n: self.host_exec(n) for n in self.names}, remote=True,
                          crosses=True)


@register_importer("csvlat")
class CsvLatency(Importer):
    """`size,latency_us` lines, as a home-grown script might write them."""

    default_transport = "unknown"

    def parse(self, text: str, source: str) -> list[ImportedRun]:
        results = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.startswith("#"):
                continue
            size, us = line.split(",")
            results.append(aggregate("mpi.latency", int(size), float(us), "mean",
                                     extra={"line": n}))
        return [ImportedRun("mpi.latency", 2, results, ["latency"])]


register_kernel(Kernel(
    name="py.echo", family="py", kind="pt2pt", start="pair",
    executable=str(HERE / "py_echo_kernel.py"), metrics=(LATENCY,), default_sizes="1:64",
    description="a ping-pong written in Python: the pair protocol, by example"))
