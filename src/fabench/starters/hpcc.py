"""hpcc: the HPC Challenge program under the MPI flavour's mpirun, its output file turned into
records.

hpcc reads `hpccinf.txt` from its working directory and writes `hpccoutf.txt` there, nothing
on stdout. Per run: a fresh directory on the host of the first rank (made, written, read and
removed through that host's own command prefix, so a testbed namespace or a cluster node
works as this host does), the input written from the plan (or a ready file, `--hpccinf`),
mpirun with `--wdir` there, the BLAS chosen by LD_LIBRARY_PATH and read back from the loader
(fabench.hpc.blas), and the output parsed and checked (fabench.hpc.output): parameters HPL
did not use, or a failed residual, make a failed run with HPL's own words and store nothing.
"""

from __future__ import annotations

import math
import os
import shlex
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import FabenchError
from ..host.launched import LaunchResult, RecordCallback
from ..host.placement import Allocation
from ..host.process import owner_tag, run_capture, run_streaming
from ..hpc import blas as blas_mod
from ..hpc.convert import records_for, summary_meta
from ..hpc.hpccinf import Asked, make_input, problem_size, read_input, read_input_file
from ..hpc.options import HpccOptions, parse_options
from ..hpc.output import HpccRunError, check_parameters, parse_output
from ..hpc.peak import Peak, given_peak, read_peak
from ..mpi.base import UnsupportedTransport
from ..plan.plan import PlannedRun
from ..records import KernelOutput
from . import STARTERS
from .mpirun import MpirunStarter, selected, usable_flavour

OUTPUT = "hpccoutf.txt"
INPUT = "hpccinf.txt"


class HostFiles:
    """Files in a directory of one host, through its command prefix (argv only)."""

    def __init__(self, prefix: Sequence[str]) -> None:
        self.prefix = tuple(prefix)

    def _run(self, argv: list[str], what: str, input_text: str | None = None) -> str:
        c = run_capture([*self.prefix, *argv], timeout=60, input_text=input_text)
        if not c.ok:
            raise FabenchError(f"{what}: {c.text.strip()[:300] or f'exit {c.returncode}'}")
        return c.stdout

    def mkdtemp(self) -> str:
        # Named for this process (process.own_tempdir's pattern): removed after it however
        # it ends, where the host's /tmp is this one's.
        owner = owner_tag().replace(":", ".")
        return self._run(["mktemp", "-d", f"/tmp/fabench-hpcc-o{owner}-XXXXXX"],
                         "cannot make a run directory for hpcc").strip()

    def write(self, path: str, text: str) -> None:
        self._run(["tee", "--", path], f"cannot write {path}", input_text=text)

    def read(self, path: str) -> str | None:
        c = run_capture([*self.prefix, "cat", "--", path], timeout=60)
        return c.stdout if c.ok else None

    def remove(self, path: str) -> None:
        run_capture([*self.prefix, "rm", "-rf", "--", path], timeout=60)

    def text(self, path: str) -> str:
        return self._run(["cat", "--", path], f"cannot read {path}")


def machine_id(prefix: Sequence[str]) -> str:
    """The kernel's boot id of the machine a host prefix reaches: namespaces of one machine
    (a testbed) share it, and so share its memory and cores."""
    c = run_capture([*prefix, "cat", "/proc/sys/kernel/random/boot_id"], timeout=30)
    return c.stdout.strip() if c.ok and c.stdout.strip() else " ".join(prefix)


def mem_total_bytes(files: HostFiles) -> float:
    for line in files.text("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            return float(line.split()[1]) * 1024
    raise FabenchError("/proc/meminfo has no MemTotal")


def mem_available_bytes(files: HostFiles) -> float:
    """What the host can give a new program now (the kernel's own estimate, MemAvailable;
    MemFree where a kernel older than 3.14 has no such line)."""
    lines = files.text("/proc/meminfo").splitlines()
    for key in ("MemAvailable:", "MemFree:"):
        for line in lines:
            if line.startswith(key):
                return float(line.split()[1]) * 1024
    raise FabenchError("/proc/meminfo has no MemAvailable")


def check_memory(ns: Sequence[int], files: HostFiles, machines: int) -> None:
    """Refuse an N whose matrix (8 N^2 bytes of doubles, spread over the ranks) does not fit
    in what the machines have available now, read on the first of them: HPL would start,
    be killed for memory and leave no result."""
    if not ns:
        return
    n = max(ns)
    need = 8.0 * n * n
    have = mem_available_bytes(files) * machines
    if need > have:
        raise FabenchError(
            f"HPL N={n} needs {need / 2**30:.1f} GiB for its matrix; the {machines} "
            f"machine(s) it runs on have {have / 2**30:.1f} GiB available (MemAvailable); "
            f"give a smaller --sizes (at most about {int(math.sqrt(have / 8.0))}), or leave "
            "it out to size N from --memory-fraction")


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
        peak = self._peak(opts, prefix, files)
        machines = len({machine_id(alloc.execs[h.name].prefix if h.name in alloc.execs else ())
                        for h in alloc.placed})
        asked, text = self._input(run, opts, files, machines)
        rundir = files.mkdtemp()
        try:
            files.write(f"{rundir}/{INPUT}", text)
            return self._run(run, alloc, opts, rundir, files, asked, peak, seen, choice,
                             text, on_record)
        finally:
            files.remove(rundir)

    @staticmethod
    def _peak(opts: HpccOptions, prefix: Sequence[str], files: HostFiles) -> Peak:
        if opts.peak is None:
            return read_peak(prefix)
        cores = read_peak_cores(prefix)
        return given_peak(opts.peak, cores)

    @staticmethod
    def _input(run: PlannedRun, opts: HpccOptions, files: HostFiles,
               hosts: int) -> tuple[Asked, str]:
        if opts.hpccinf is not None:
            text = read_input_file(Path(opts.hpccinf))
            asked = read_input(text, str(opts.hpccinf))
            check_memory(asked.sizes, files, hosts)
            return asked, text
        sizes = run.settings.sizes
        if sizes is not None:
            ns = tuple(sizes.values)
            check_memory(ns, files, hosts)
        else:
            # N fills --memory-fraction of the memory of every machine the ranks are on (each
            # taken as the first one: a cluster's nodes are alike, `hpl nodes` checks); a
            # testbed's hosts are one machine and share its memory.
            ns = (problem_size(mem_total_bytes(files) * hosts, opts.memory_fraction, opts.nb),)
        inp = make_input(run.ranks, ns, opts.nb, opts.threshold)
        return inp.asked, inp.text()

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
        outcome = run_streaming(argv, env, run.timeout_s, None,
                                cwd=rundir if not alloc.launch_prefix else None)
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
        meta: dict[str, Any] = {
            "type": "meta", "program": opts.program, "blas": seen.to_json(),
            "peak": peak.to_json(), "input": input_text,
            "asked": {"sizes": list(asked.sizes), "nb": asked.nb, "p": asked.p, "q": asked.q}}
        text = files.read(f"{rundir}/{OUTPUT}")
        returncode = outcome.returncode
        records: list[dict[str, Any]] = []
        if outcome.timed_out:
            notes.append(f"timed out after {run.timeout_s:.0f} s")
        elif text is None:
            if returncode == 0:
                out.errors.append({"type": "error", "reason": f"hpcc wrote no {OUTPUT}"})
                returncode = 1
        else:
            meta["hpccoutf"] = text
            try:
                res = parse_output(text, OUTPUT)
                check_parameters(res, asked, outcome.stderr)
                meta["summary"] = summary_meta(res)
                records = records_for(run.kernel.name, res, run.ranks, peak, seen,
                                      len(alloc.placed))
            except HpccRunError as exc:
                out.errors.append({"type": "error", "reason": str(exc)})
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


def read_peak_cores(prefix: Sequence[str]) -> int:
    """Physical cores of the host (for a --peak given per node)."""
    try:
        return read_peak(prefix).cores
    except FabenchError:
        return os.cpu_count() or 1
