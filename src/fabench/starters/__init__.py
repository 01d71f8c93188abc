"""Starters: HOW a kernel's processes start (mpirun, srun, the transport kernels' own pair
start, smpirun). Where they run is the scheduler's business (fabench.schedulers); a scheduler
gives a starter an Allocation and the starter gives back a LaunchResult.

A starter registers itself with ``@STARTERS.register("name")``; the modules of this package
are loaded on first use, and a site can add its own (fabench.util.registry).
"""

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar

from ..errors import FabenchError
from ..host.launched import LaunchResult, RecordCallback
from ..host.placement import Allocation
from ..plan.plan import PlannedRun
from ..util.registry import Registry


@dataclass
class StartCommand:
    """One command line that starts every process of a run, for a batch script: run
    ``argv`` with ``env`` exported; ``notes`` say how it was started."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


class Starter(ABC):
    name: ClassVar[str] = ""
    # Which kernels it starts: "mpi" (an MPI job) or "pair" (client and server).
    starts: ClassVar[str] = "mpi"
    description: ClassVar[str] = ""

    def check(self, run: PlannedRun) -> None:
        if run.kernel.start != self.starts:
            raise FabenchError(f"{run.kernel.name}: the {self.name} starter starts "
                               f"{self.starts} kernels, not {run.kernel.start} kernels")

    @abstractmethod
    def start(self, run: PlannedRun, alloc: Allocation,
              on_record: RecordCallback | None = None) -> LaunchResult:
        """Start the run's processes on the allocation, wait for them, return what they gave."""

    def batch_command(self, run: PlannedRun, alloc: Allocation) -> StartCommand:
        """The command line for a batch job's script (resource managers that run scripts)."""
        raise FabenchError(f"the {self.name} starter cannot run inside a batch job")

    def selected(self, run: PlannedRun, stderr: str) -> tuple[str | None, str | None]:
        """(summary, detail) of the transport the library reported selecting, from the
        stderr of a batch_command run."""
        return None, None


STARTERS: Registry[type[Starter]] = Registry("starter", __name__)


def get_starter(name: str) -> Starter:
    return STARTERS.get(name)()


__all__ = ["STARTERS", "StartCommand", "Starter", "get_starter"]
