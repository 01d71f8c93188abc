"""srun: Slurm starts the ranks itself and they wire up through its PMI plugin (no mpirun).

The transport request and the verbosity that reports the selection travel as environment
variables, which srun exports to its tasks.
"""

from ..errors import FabenchError
from ..host.launched import LaunchResult, RecordCallback
from ..host.placement import Allocation
from ..kernels.native import kernel_executable
from ..mpi.base import UnsupportedTransport
from ..plan.plan import PlannedRun
from . import STARTERS, StartCommand, Starter
from .mpirun import selected, usable_flavour


@STARTERS.register("srun")
class SrunStarter(Starter):
    starts = "mpi"
    description = "Slurm's srun, ranks wired up through its PMI plugin (inside a Slurm job)"

    def start(self, run: PlannedRun, alloc: Allocation,
              on_record: RecordCallback | None = None) -> LaunchResult:
        raise FabenchError("srun starts ranks inside a Slurm job: use --on slurm")

    def batch_command(self, run: PlannedRun, alloc: Allocation) -> StartCommand:
        self.check(run)
        flavour = usable_flavour(run)
        if flavour.pmi is None:
            raise FabenchError(f"{flavour.name}: ranks cannot be started without mpirun; "
                               "use the mpirun starter (--on slurm:mpirun)")
        try:
            env = flavour.direct_launch_env(run.transport)
        except UnsupportedTransport as exc:
            raise FabenchError(f"{flavour.name}: {exc}") from exc
        exe = kernel_executable(run.kernel, flavour.name)
        # a run shaped over nodes (one placed entry per node) says so to srun as well: in a
        # job of several steps (campaign.sbatch) the job's own shape may be another step's
        shape = [f"--nodes={len(alloc.placed)}", f"--ntasks-per-node={alloc.placed[0].slots}"] \
            if len(alloc.placed) > 1 else []
        argv = ["srun", f"--mpi={flavour.pmi}", f"--ntasks={run.ranks}", *shape, str(exe),
                *run.kernel_argv()]
        return StartCommand(argv, {**env, **alloc.extra_env},
                            [f"started by srun --mpi={flavour.pmi}"])

    def selected(self, run: PlannedRun, stderr: str) -> tuple[str | None, str | None]:
        return selected(run.mpi.flavour(), run, stderr)
