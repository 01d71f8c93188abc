"""smpirun: SimGrid's SMPI runs the kernels built with smpicc on a simulated platform."""

import os
import shutil
from pathlib import Path

from ..errors import FabenchError
from ..host.launched import LaunchResult, RecordCallback
from ..host.leftovers import own_tempdir
from ..host.placement import Allocation
from ..host.process import run_streaming
from ..kernels.native import kernel_executable
from ..plan.plan import PlannedRun
from ..sim.smpi import FLAVOUR, SimSetup, build_command, parse_memory
from . import STARTERS, Starter

SIMULATED_FLAG = "simulated"


@STARTERS.register("smpirun")
class SmpirunStarter(Starter):
    starts = "mpi"
    description = "SimGrid's smpirun on a generated platform (simulated time)"

    def start(self, run: PlannedRun, alloc: Allocation,
              on_record: RecordCallback | None = None) -> LaunchResult:
        self.check(run)
        setup = alloc.platform
        if not isinstance(setup, SimSetup):
            raise FabenchError("smpirun needs a simulated platform: use "
                               "`fabench sim KERNEL --fabric F --nodes N`")
        if run.settings.validate:
            raise FabenchError("--validate cannot work under SimGrid: large buffers are "
                               "SMPI_SHARED_MALLOC'd, so every rank shares (garbage) contents")
        if run.ranks != setup.ranks:
            raise FabenchError(f"{run.ranks} ranks asked, the platform places "
                               f"{setup.nodes} x {setup.ppn} = {setup.ranks}")
        exe = kernel_executable(run.kernel, FLAVOUR)
        # Named for this process: a SIGKILLed fabench's supervisor (or the next start)
        # removes it; a TemporaryDirectory's cleanup never runs then.
        workdir = Path(own_tempdir("sim"))
        try:
            argv, cfg, notes = build_command(setup, exe, run.kernel.name, run.kernel_argv(),
                                             workdir)
            # SMPI copies the kernel once per rank for dlopen privatization into smpirun's
            # temp dir, $TMPDIR's (its -tmpdir option eats the wrong argument in 3.32): a
            # signal between copy and unlink left the copies in /tmp. Here they are swept.
            env = {**os.environ, **run.env, "TMPDIR": str(workdir)}
            outcome = run_streaming(argv, env, run.timeout_s, on_record, cwd=str(workdir))
            platform_xml = (workdir / "platform.xml").read_text()
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        memory = parse_memory(outcome.stderr)
        if memory:
            notes.append(f"simulator peak RssAnon {memory['peak_rss_anon_mb']:.0f} MB")
        if outcome.timed_out:
            notes.append(f"timed out after {run.timeout_s:.0f} s")
        return LaunchResult(
            output=outcome.output, returncode=outcome.returncode, command=argv,
            stderr=outcome.stderr, selected_transport=f"simgrid:{setup.fabric.name}",
            selected_detail=f"{setup.topology}, {setup.nodes} nodes x {setup.ppn} ppn",
            notes=notes, flags=[SIMULATED_FLAG],
            extra={"elapsed_s": outcome.elapsed_s,
                   "simulation": {"fabric": setup.fabric.to_dict(), "topology": setup.topology,
                                  "nodes": setup.nodes, "ppn": setup.ppn,
                                  "hosts_per_leaf": setup.hosts_per_leaf,
                                  "topology_spec": setup.topology_spec().to_dict(),
                                  "algorithm": setup.algorithm, "cfg": cfg,
                                  "platform_xml": platform_xml, **memory}},
        )
