"""hpcc: the HPC Challenge program started under the MPI flavour's mpirun.

hpcc reads `hpccinf.txt` from its working directory and writes `hpccoutf.txt` there, nothing
on stdout. Per run: a fresh directory on the host of the first rank (made, written, read and
removed through that host's own command prefix, fabench.host.files, so a testbed namespace or
a cluster node works as this host does), mpirun with `--wdir` there and the BLAS chosen by
LD_LIBRARY_PATH (fabench.hpc.blas). What goes into the input and what the output means
(parameters HPL did not use, or a failed residual, make a failed run with HPL's own words and
store nothing) is fabench.hpc.job's: this module starts ranks and moves files.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import replace
from typing import Any

from ..errors import FabenchError
from ..host.files import HostFiles, machine_id
from ..host.launched import LaunchResult, RecordCallback
from ..host.placement import Allocation
from ..host.process import run_capture, run_streaming
from ..hpc import blas as blas_mod
from ..hpc.hpccinf import Asked
from ..hpc.job import INPUT, OUTPUT, FallbackWatch, hpcc_input, meta_record, read_results
from ..hpc.options import HpccOptions, parse_options
from ..hpc.peak import Peak, node_peak
from ..mpi.base import UnsupportedTransport
from ..plan.plan import PlannedRun
from ..records import KernelOutput
from . import STARTERS
from .mpirun import MpirunStarter, selected, usable_flavour


@STARTERS.register("hpcc")
class HpccStarter(MpirunStarter):
    starts = "mpi"
    description = "hpcc (HPC Challenge) under the MPI flavour's mpirun, output file to records"

    def start(self, run: PlannedRun, alloc: Allocation,
              on_record: RecordCallback | None = None) -> LaunchResult:
        self.check(run)
        opts = parse_options(run.settings.extra)
        flavour = usable_flavour(run)
        if flavour.name != "openmpi":
            # Debian's hpcc links libmpi.so.40: under another MPI's launcher every rank
            # would be a singleton of its own.
            raise FabenchError(f"{run.kernel.name}: Debian's hpcc is built against Open MPI; "
                               f"--mpi {run.mpi} cannot start it (use --mpi openmpi)")
        first = alloc.placed[0].name
        prefix = alloc.execs[first].prefix if first in alloc.execs else ()
        files = HostFiles(prefix)
        if not run_capture([*prefix, "test", "-x", opts.program], timeout=30).ok:
            raise FabenchError(f"{opts.program} is not on {first} (Debian: apt-get install "
                               "hpcc; scripts/install-deps.sh installs it)")
        choice = blas_mod.choose(opts.blas, prefix, opts.openblas_coretype)
        seen = blas_mod.seen(opts.program, choice, prefix)
        peak = node_peak(opts.peak, prefix)
        machines = len({machine_id(alloc.execs[h.name].prefix if h.name in alloc.execs else ())
                        for h in alloc.placed})
        sizes = run.settings.sizes
        asked, text = hpcc_input(opts, run.ranks, None if sizes is None else sizes.values,
                                 files, machines)
        rundir = files.mkdtemp("hpcc")
        try:
            files.write(f"{rundir}/{INPUT}", text)
            return self._run(run, alloc, opts, rundir, files, asked, peak, seen, choice,
                             text, on_record)
        finally:
            files.remove(rundir)

    def _run(self, run: PlannedRun, alloc: Allocation, opts: HpccOptions, rundir: str,
             files: HostFiles, asked: Asked, peak: Peak, seen: blas_mod.BlasSeen,
             choice: blas_mod.BlasChoice, input_text: str,
             on_record: RecordCallback | None) -> LaunchResult:
        flavour = usable_flavour(run)
        env_run = replace(run, env={**choice.env, **run.env})
        extra = flavour.remote_args(rsh_agent=alloc.agent, iface=alloc.iface,
                                    subnet=alloc.subnet) if alloc.remote else []
        try:
            launch = flavour.launch(opts.program, [], run.ranks, run.transport,
                                    hosts=alloc.host_list if alloc.remote else None,
                                    extra_mpirun_args=[*extra, "--wdir", rundir],
                                    oversubscribe=alloc.oversubscribe,
                                    forward_env=list(env_run.env))
        except UnsupportedTransport as exc:
            raise FabenchError(f"{flavour.name}: {exc}") from exc
        env = {**os.environ, **launch.env, **alloc.extra_env, **env_run.env}
        argv = [*alloc.launch_prefix, *launch.argv]
        watch = FallbackWatch(files, f"{rundir}/{OUTPUT}", asked)
        outcome = run_streaming(argv, env, run.timeout_s, None,
                                cwd=rundir if not alloc.launch_prefix else None, watch=watch)
        notes = list(launch.notes)
        flags: list[str] = []
        seen = replace(seen, core=blas_mod.openblas_core(outcome.stderr))
        core = f", {seen.core} kernels" if seen.core else ""
        notes.append(f"BLAS: {seen.name} ({seen.path}{core}; chosen by {seen.how})")
        if fallback := blas_mod.fallback_warning(seen.core, peak.isa):
            flags.append(fallback)
        notes.append(peak.text())
        if seen.reference:
            flags.append(blas_mod.reference_warning(seen))
        out = KernelOutput()
        meta = meta_record(opts.program, seen, peak, input_text, asked)
        text = files.read(f"{rundir}/{OUTPUT}")
        returncode = outcome.returncode
        records: list[dict[str, Any]] = []
        if outcome.timed_out:
            notes.append(f"timed out after {run.timeout_s:.0f} s")
        elif outcome.stopped is not None:
            meta["hpccoutf"] = text or watch.text
            out.errors.append({"type": "error", "reason": watch.error(outcome.stderr)})
            returncode = returncode or 1
        elif text is None:
            if returncode == 0:
                out.errors.append({"type": "error", "reason": f"hpcc wrote no {OUTPUT}"})
                returncode = 1
        else:
            got = read_results(text, run.kernel.name, asked, outcome.stderr, run.ranks, peak,
                               seen, len(alloc.placed))
            meta.update(got.meta)
            records = got.records
            if got.error is not None:
                out.errors.append({"type": "error", "reason": got.error})
                returncode = returncode or 1
        for obj in [meta, *records]:
            out.add(obj, on_record)
        summary, detail = selected(flavour, run, outcome.stderr)
        return LaunchResult(
            output=out, returncode=returncode, command=argv, stderr=outcome.stderr,
            selected_transport=summary, selected_detail=detail, notes=notes,
            oversubscribed=any(n.startswith("oversubscribed") for n in launch.notes),
            flags=flags,
            extra={"env": {**launch.env, **alloc.extra_env, **choice.env},
                   "elapsed_s": outcome.elapsed_s, "blas": seen.to_json(),
                   "peak": peak.to_json(), "run_dir": rundir,
                   "hpcc_command": shlex.join(argv)})

