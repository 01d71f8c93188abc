"""simgrid: the same C kernels, built with smpicc, run under smpirun on a platform generated
from a fabric (calibration or preset). Results are stored like measured runs, with the flag
"simulated"."""

from typing import ClassVar

from ..errors import FabenchError
from ..host.placement import Allocation, HostSlots
from ..plan.plan import PlannedRun
from ..sim.smpi import SimSetup
from . import SCHEDULERS, DirectScheduler, Scheduler


@SCHEDULERS.register("simgrid")
class SimGridScheduler(DirectScheduler):
    description = "a simulated platform (fabench sim), ranks started by smpirun"
    usage = "simgrid (through `fabench sim`)"
    default_starters: ClassVar[dict[str, str]] = {"mpi": "smpirun"}

    def __init__(self, setup: SimSetup | None = None, starter: str | None = None) -> None:
        super().__init__(starter)
        self.setup = setup

    @classmethod
    def from_words(cls, words: list[str], starter: str | None = None) -> Scheduler:
        raise FabenchError("the simgrid scheduler needs a fabric and a platform: use "
                           "`fabench sim KERNEL --fabric F --nodes N`")

    def describe(self) -> str:
        if self.setup is None:
            return "simgrid"
        s = self.setup
        return f"simgrid ({s.fabric.name}, {s.topology}, {s.nodes} nodes x {s.ppn} ppn)"

    def allocation(self, run: PlannedRun) -> Allocation:
        if self.setup is None:
            raise FabenchError("the simgrid scheduler needs a fabric and a platform: use "
                               "`fabench sim KERNEL --fabric F --nodes N`")
        if not run.kernel.needs_mpi:
            raise FabenchError(f"{run.kernel.name}: only MPI kernels run under SimGrid")
        return Allocation(placed=[HostSlots("simulated", run.ranks)], execs={},
                          platform=self.setup)
