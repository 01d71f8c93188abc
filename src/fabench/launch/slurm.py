"""The Slurm launcher: each run becomes an sbatch job whose ranks `srun` starts directly
(Slurm's PMIx for Open MPI, PMI-2 for MPICH; or, with the `mpirun` starter, mpirun inside the
allocation, which takes its nodes from Slurm), fabench waits for it and reads the JSON lines it
wrote.

Every job script is kept, and so is `campaign.sbatch`: all the runs of this campaign as the
steps of ONE job, the way document 002 compares two libfabric providers in a single sbatch
script. A user can submit either by hand (`sbatch campaign.sbatch`) and get the same JSON
lines. Scripts go to `<results dir>/slurm/` (the `--out` of `fabench run`), else to
`$FABENCH_SLURM_DIR` or `./fabench-slurm`. The directory must be visible from the compute
nodes (it is the job's working directory), as the results directory usually is.
"""

import math
import os
import re
import shlex
import subprocess
import time
from pathlib import Path

from ..errors import FabenchError
from ..mpi import get_flavour, parse_transport
from ..native import kernel_executable
from ..records import KernelOutput, parse_line
from .base import Launcher, LaunchRequest, LaunchResult, RecordCallback, register_launcher
from .process import STDERR_KEEP, dispatch
from .slurm_netdev import NETDEV_FUNCTION, check_slurm_crossing, snapshot_line

_STATE_RE = re.compile(r"JobState=(\S+)")
_EXIT_RE = re.compile(r"ExitCode=(\d+):(\d+)")
_NODES_RE = re.compile(r"NumNodes=(\d+)")
_ACTIVE = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED",
           "RESIZING", "SIGNALING", "STAGE_OUT"}


def sbatch_lines(args: list[str]) -> list[str]:
    """User sbatch options as `#SBATCH` lines, so the kept script carries them too."""
    lines, i = [], 0
    while i < len(args):
        a = args[i]
        if a.startswith("-") and "=" not in a and i + 1 < len(args) \
                and not args[i + 1].startswith("-"):
            lines.append(f"#SBATCH {a} {args[i + 1]}")
            i += 2
        else:
            lines.append(f"#SBATCH {a}")
            i += 1
    return lines


def _header(job_name: str, ranks: int, minutes: int, sbatch_args: list[str]) -> list[str]:
    return [
        "#!/bin/bash",
        f"#SBATCH --job-name={job_name}",
        f"#SBATCH --ntasks={ranks}",
        f"#SBATCH --time={minutes}",
        *sbatch_lines(sbatch_args),
        "# Written by fabench. stdout: one JSON record per line (docs/kernel-protocol.md);",
        "# stderr: the MPI library's own report of the transport it selected.",
        "",
        *NETDEV_FUNCTION,
    ]


STARTERS = ("srun", "mpirun")


class SlurmLauncher(Launcher):
    def __init__(self, sbatch_args: list[str] | None = None, workdir: str | None = None,
                 poll_s: float = 0.5, starter: str = "srun") -> None:
        if starter not in STARTERS:
            raise FabenchError(f"--on slurm: starter {starter!r} unknown; use one of "
                               f"{', '.join(STARTERS)}")
        self.starter = starter
        self.sbatch_args = list(sbatch_args or [])
        self._workdir = Path(workdir) if workdir else None
        self.poll_s = poll_s
        self._steps: list[tuple[int, list[str]]] = []
        for tool in ("sbatch", "scontrol", "scancel"):
            if subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True,
                              check=False).returncode:
                raise FabenchError(f"--on slurm: {tool} not found (install slurm-client, or "
                                   "run where Slurm's commands are)")

    @property
    def workdir(self) -> Path:
        if self._workdir is not None:
            return self._workdir
        if self.results_dir:
            return Path(self.results_dir) / "slurm"
        return Path(os.environ.get("FABENCH_SLURM_DIR", "fabench-slurm"))

    def describe(self) -> str:
        extra = f" {shlex.join(self.sbatch_args)}" if self.sbatch_args else ""
        return f"slurm (sbatch{extra}, {self.starter} inside; scripts in {self.workdir})"

    def _step(self, req: LaunchRequest,
              stem: str) -> tuple[list[str], dict[str, str], list[str]]:
        if not req.kernel.needs_mpi:
            raise FabenchError(f"{req.kernel.name}: the slurm launcher starts MPI kernels; "
                               "transport kernels need two hosts of an allocation "
                               "(use --on hosts with the job's nodes)")
        flavour = get_flavour(req.mpi)
        try:
            transport = parse_transport(req.transport)
        except ValueError as exc:
            raise FabenchError(str(exc)) from exc
        exe = kernel_executable(req.kernel, flavour.name)
        if self.starter == "srun":
            launch = flavour.srun_launch(str(exe), req.kernel_args, req.ranks, transport)
        else:
            # Inside an allocation mpirun takes ranks and nodes from Slurm; the submit host's
            # core count says nothing about the compute nodes, so no oversubscription guess.
            launch = flavour.launch(str(exe), req.kernel_args, req.ranks, transport,
                                    oversubscribe=False)
        env = {**launch.env, **req.env}
        lines = [f"# {req.kernel.name} transport={req.transport} np={req.ranks} mpi={req.mpi}",
                 snapshot_line(stem, "before")]
        lines += [f"export {k}={shlex.quote(v)}" for k, v in env.items()]
        # The ranks' exit status, kept past the snapshot so the job still reports it.
        lines += [shlex.join(launch.argv), "fabench_rc=$?"]
        lines += [f"unset {' '.join(env)}"] if env else []
        lines.append(snapshot_line(stem, "after"))
        return lines, env, launch.notes

    def _write_campaign_script(self) -> Path:
        ranks = max(r for r, _ in self._steps)
        body = _header("fabench-campaign", ranks, 60 * len(self._steps), self.sbatch_args)
        body.append("# Every run of the campaign, one after the other, in one allocation.")
        for _, lines in self._steps:
            body += ["", *lines, '[ "$fabench_rc" = 0 ] || fabench_failed=$fabench_rc']
        body += ["", "exit ${fabench_failed:-0}"]
        path = self.workdir / "campaign.sbatch"
        path.write_text("\n".join(body) + "\n")
        return path

    def run(self, req: LaunchRequest, on_record: RecordCallback | None = None) -> LaunchResult:
        stem = f"run-{len(self._steps) + 1:03d}-{req.kernel.name}"
        step, env, notes = self._step(req, stem)
        wd = self.workdir.resolve()
        wd.mkdir(parents=True, exist_ok=True)
        self._steps.append((req.ranks, step))
        campaign = self._write_campaign_script()
        minutes = max(1, math.ceil(req.timeout_s / 60))
        script = "\n".join([*_header(f"fabench-{req.kernel.name}", req.ranks, minutes,
                                     self.sbatch_args), *step, "exit $fabench_rc"]) + "\n"
        path = wd / f"{stem}.sbatch"
        path.write_text(script)
        out, err = path.with_suffix(".out"), path.with_suffix(".err")
        for f in (out, err):
            f.unlink(missing_ok=True)
        argv = ["sbatch", "--parsable", f"--chdir={wd}", f"--output={out}", f"--error={err}",
                *self.sbatch_args, str(path)]
        sub = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
        if sub.returncode != 0:
            raise FabenchError(f"sbatch failed: {(sub.stderr or sub.stdout).strip()}")
        job = sub.stdout.strip().split(";", 1)[0]
        start = time.monotonic()
        output = KernelOutput()
        state, code, offset, nodes = "PENDING", 1, 0, 0
        try:
            while True:
                offset = self._consume(out, offset, output, on_record)
                state, code, seen = self._job_state(job)
                # A pending job shows the nodes it asked for; only a started one its own.
                nodes = seen if state != "PENDING" and seen else nodes
                if state not in _ACTIVE:
                    break
                if time.monotonic() - start > req.timeout_s:
                    subprocess.run(["scancel", job], capture_output=True, check=False)
                    notes.append(f"timed out after {req.timeout_s:.0f} s; job {job} cancelled")
                    break
                time.sleep(self.poll_s)
            offset = self._consume(out, offset, output, on_record, final=True)
        except BaseException:
            subprocess.run(["scancel", job], capture_output=True, check=False)
            raise
        stderr = err.read_text(errors="replace") if err.exists() else ""
        flavour = get_flavour(req.mpi)
        selected = flavour.selected_transport(stderr, parse_transport(req.transport))
        if state != "COMPLETED" and code == 0:
            code = 1
        notes.append(f"slurm job {job}: {state}")
        res = LaunchResult(
            output=output, returncode=code, command=["sbatch", str(path)],
            stderr=stderr[-STDERR_KEEP:], selected_transport=selected.summary,
            selected_detail=selected.detail, notes=notes,
            extra={"env": env, "elapsed_s": time.monotonic() - start,
                   "slurm": {"job_id": job, "state": state, "script_path": str(path),
                             "script": script, "campaign_script": str(campaign),
                             "stdout": str(out), "stderr": str(err)}})
        iface = os.environ.get("FABENCH_IFACE") or None
        check_slurm_crossing(res, wd=wd, stem=stem, job=job, alloc_nodes=nodes,
                             ranks=req.ranks, transport=req.transport,
                             # a subnet steers MPI elsewhere; the counters then read all links
                             ifname=iface if iface and "/" not in iface else None)
        return res

    @staticmethod
    def _consume(path: Path, offset: int, output: KernelOutput,
                 on_record: RecordCallback | None, final: bool = False) -> int:
        """Records written since the last look; a partial last line waits for the next."""
        try:
            with path.open("rb") as f:
                f.seek(offset)
                data = f.read()
        except FileNotFoundError:
            return offset
        text = data.decode(errors="replace")
        complete = text if final else text[:text.rfind("\n") + 1]
        for line in complete.splitlines():
            obj = parse_line(line)
            if obj is None:
                continue
            dispatch(obj, output)
            if on_record is not None:
                on_record(obj)
        return offset + len(complete.encode())

    @staticmethod
    def _job_state(job: str) -> tuple[str, int, int]:
        """(state, exit code, nodes) of the job; 0 nodes when scontrol does not say."""
        p = subprocess.run(["scontrol", "show", "job", "-o", job], capture_output=True,
                           text=True, timeout=60, check=False)
        m = _STATE_RE.search(p.stdout)
        if not m:
            # Gone from the controller's memory (MinJobAge): it ended; the files tell how.
            return "UNKNOWN", 0, 0
        e = _EXIT_RE.search(p.stdout)
        code = int(e.group(1)) if e else 0
        if e and int(e.group(2)):
            code = 128 + int(e.group(2))
        n = _NODES_RE.search(p.stdout)
        return m.group(1), code, int(n.group(1)) if n else 0


register_launcher("slurm")(SlurmLauncher)
