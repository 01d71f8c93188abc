"""mpirun: an MPI library's own launcher starts the ranks, on this host or over a host list."""

import os

from ..errors import FabenchError
from ..host.launched import LaunchResult, RecordCallback
from ..host.placement import Allocation
from ..host.process import run_streaming
from ..kernels.native import kernel_executable
from ..mpi.base import MpiFlavour, MpiLaunch, UnsupportedTransport
from ..plan.plan import PlannedRun
from . import STARTERS, StartCommand, Starter


def usable_flavour(run: PlannedRun) -> MpiFlavour:
    flavour = run.mpi.flavour()
    if not flavour.available():
        raise FabenchError(f"MPI flavour '{run.mpi}' is not usable here: "
                           f"{flavour.why_unavailable()}")
    return flavour


def selected(flavour: MpiFlavour, run: PlannedRun, stderr: str) -> tuple[str, str]:
    sel = flavour.selected_transport(stderr, run.transport)
    return sel.summary, sel.detail


@STARTERS.register("mpirun")
class MpirunStarter(Starter):
    starts = "mpi"
    description = "the MPI library's mpirun (Open MPI's, MPICH's hydra), here or over hosts"

    def _launch(self, flavour: MpiFlavour, run: PlannedRun, alloc: Allocation,
                oversubscribe: bool | None) -> MpiLaunch:
        exe = kernel_executable(run.kernel, flavour.name)
        extra = flavour.remote_args(rsh_agent=alloc.agent, iface=alloc.iface,
                                    subnet=alloc.subnet) if alloc.remote else []
        try:
            return flavour.launch(str(exe), run.kernel_argv(), run.ranks, run.transport,
                                  hosts=alloc.host_list if alloc.remote else None,
                                  extra_mpirun_args=extra, oversubscribe=oversubscribe,
                                  forward_env=list(run.env))
        except UnsupportedTransport as exc:  # this MPI cannot carry that transport
            raise FabenchError(f"{flavour.name}: {exc}") from exc

    def start(self, run: PlannedRun, alloc: Allocation,
              on_record: RecordCallback | None = None) -> LaunchResult:
        self.check(run)
        flavour = usable_flavour(run)
        launch = self._launch(flavour, run, alloc, alloc.oversubscribe)
        env = {**os.environ, **launch.env, **alloc.extra_env, **run.env}
        argv = [*alloc.launch_prefix, *launch.argv]
        outcome = run_streaming(argv, env, run.timeout_s, on_record)
        summary, detail = selected(flavour, run, outcome.stderr)
        notes = list(launch.notes)
        # Where the selection is read and the placement known: every run is checked for
        # ranks on one host talking over a network transport (document 003's failure class).
        on_nic = flavour.on_node_network(outcome.stderr, alloc.placed)
        if outcome.timed_out:
            notes.append(f"timed out after {run.timeout_s:.0f} s")
        return LaunchResult(
            output=outcome.output, returncode=outcome.returncode, command=argv,
            stderr=outcome.stderr, selected_transport=summary, selected_detail=detail,
            notes=notes, oversubscribed=any(n.startswith("oversubscribed") for n in launch.notes),
            flags=[on_nic] if on_nic else [],
            # What fabench set for the ranks, the scheduler's own variables (e.g. the testbed's
            # UCX_NET_DEVICES) included, so provenance records every steering value it chose.
            extra={"env": {**launch.env, **alloc.extra_env}, "elapsed_s": outcome.elapsed_s},
        )

    def command(self, run: PlannedRun, alloc: Allocation) -> StartCommand:
        """The full command line start() runs (launch prefix included), for a caller that
        runs it in the background and stops it itself (congestion aggressors)."""
        self.check(run)
        launch = self._launch(usable_flavour(run), run, alloc, alloc.oversubscribe)
        return StartCommand([*alloc.launch_prefix, *launch.argv],
                            {**launch.env, **alloc.extra_env, **run.env}, launch.notes)

    def batch_command(self, run: PlannedRun, alloc: Allocation) -> StartCommand:
        self.check(run)
        # Inside an allocation mpirun takes ranks and nodes from the resource manager; the
        # submit host's core count says nothing about the compute nodes.
        launch = self._launch(usable_flavour(run), run, alloc, oversubscribe=False)
        return StartCommand(launch.argv, {**launch.env, **alloc.extra_env}, launch.notes)

    def selected(self, run: PlannedRun, stderr: str) -> tuple[str | None, str | None]:
        return selected(run.mpi.flavour(), run, stderr)
