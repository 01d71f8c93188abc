"""The simgrid launcher: the same C kernels, built with smpicc, run under smpirun on a platform
generated from a fabric (calibration or preset). Results are stored like measured runs, with
launcher "simgrid" and the flag "simulated"."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..errors import FabenchError
from ..native import kernel_executable
from ..sim.smpi import FLAVOUR, SimSetup, build_command, parse_memory
from .base import Launcher, LaunchRequest, LaunchResult, RecordCallback, register_launcher
from .process import run_streaming

SIMULATED_FLAG = "simulated"


@register_launcher("simgrid")
class SimGridLauncher(Launcher):
    def __init__(self, setup: SimSetup | None = None, workdir: str | Path | None = None) -> None:
        self.setup = setup
        self.workdir = Path(workdir) if workdir else None

    def describe(self) -> str:
        if self.setup is None:
            return "simgrid"
        s = self.setup
        return (f"simgrid ({s.fabric.name}, {s.topology}, {s.nodes} nodes x {s.ppn} ppn)")

    def run(self, req: LaunchRequest, on_record: RecordCallback | None = None) -> LaunchResult:
        if self.setup is None:
            raise FabenchError("the simgrid launcher needs a fabric and a platform: use "
                               "`fabench sim KERNEL --fabric F --nodes N`")
        if not req.kernel.needs_mpi:
            raise FabenchError(f"{req.kernel.name}: only MPI kernels run under SimGrid")
        if "--validate" in req.kernel_args:
            raise FabenchError("--validate cannot work under SimGrid: large buffers are "
                               "SMPI_SHARED_MALLOC'd, so every rank shares (garbage) contents")
        setup = self.setup
        if req.ranks != setup.ranks:
            raise FabenchError(f"{req.ranks} ranks asked, the platform places "
                               f"{setup.nodes} x {setup.ppn} = {setup.ranks}")
        exe = kernel_executable(req.kernel, FLAVOUR)
        tmp = None
        if self.workdir is None:
            tmp = tempfile.TemporaryDirectory(prefix="fabench-sim-")
            workdir = Path(tmp.name)
        else:
            workdir = self.workdir
        try:
            argv, cfg, notes = build_command(setup, exe, req.kernel.name, req.kernel_args,
                                             workdir)
            env = dict(os.environ)
            env.update(req.env)
            outcome = run_streaming(argv, env, req.timeout_s, on_record, cwd=str(workdir))
            platform_xml = (workdir / "platform.xml").read_text()
        finally:
            if tmp is not None:
                tmp.cleanup()
        memory = parse_memory(outcome.stderr)
        if memory:
            notes.append(f"simulator peak RssAnon {memory['peak_rss_anon_mb']:.0f} MB")
        if outcome.timed_out:
            notes.append(f"timed out after {req.timeout_s:.0f} s")
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
