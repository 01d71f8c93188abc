"""A site's plugins, kept outside fabench's source (tests/test_plugins.py loads them with
FABENCH_PLUGINS=fbdemo_plugins): one of each kind docs/DEVELOPING.md explains."""

from pathlib import Path
from typing import ClassVar

from fabench.importers import ImportedRun, Importer, aggregate, register_importer
from fabench.kernels import LATENCY, Kernel, register_kernel
from fabench.launched import LaunchResult, RecordCallback
from fabench.placement import Allocation, HostExec, HostSlots
from fabench.plan import PlannedRun
from fabench.schedulers import SCHEDULERS, DirectScheduler
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
