"""local: every rank on this host."""

from typing import ClassVar

from ..placement import Allocation, HostExec, HostSlots, cpu_count
from ..plan import PlannedRun
from . import SCHEDULERS, DirectScheduler

LOCALHOST = HostExec(name="localhost", address="127.0.0.1")


@SCHEDULERS.register("local")
class LocalScheduler(DirectScheduler):
    description = "this host (the default)"
    usage = "local"
    ranks_here: ClassVar[bool] = True

    def slots(self) -> tuple[int, str] | None:
        return cpu_count(), "cores this process may run on"

    def allocation(self, run: PlannedRun) -> Allocation:
        return Allocation(placed=[HostSlots(LOCALHOST.name, run.ranks)],
                          execs={LOCALHOST.name: LOCALHOST})
