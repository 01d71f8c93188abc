"""local: every rank on this host."""

from collections.abc import Sequence
from typing import ClassVar

from ..errors import FabenchError
from ..host.placement import Allocation, HostExec, HostSlots, cpu_count
from ..plan.plan import PlannedRun
from . import SCHEDULERS, DirectScheduler, Scheduler

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

    def host_names(self) -> list[str] | None:
        return [LOCALHOST.name]

    def host_exec(self, name: str) -> HostExec:
        if name != LOCALHOST.name:
            raise FabenchError(f"host {name!r}: the local scheduler has only {LOCALHOST.name}")
        return LOCALHOST

    def on_hosts(self, names: Sequence[str]) -> Scheduler:
        if list(names) != [LOCALHOST.name]:
            raise FabenchError(f"hosts {','.join(names)}: the local scheduler has only "
                               f"{LOCALHOST.name}")
        return self
