"""slurm: each run becomes an sbatch job whose ranks the starter starts inside the allocation
(`srun`, directly through Slurm's PMI plugin, by default; or `--on slurm:mpirun`, mpirun
taking its nodes from Slurm); fabench waits for the job and reads the JSON lines it wrote.

Every job script is kept, and so is `campaign.sbatch`: all the runs of this campaign as the
steps of ONE job, the way document 002 compares two libfabric providers in a single sbatch
script. A user can submit either by hand (`sbatch campaign.sbatch`) and get the same JSON
lines. Scripts go to `<results dir>/slurm/` (the `--out` of `fabench run`), else to
`$FABENCH_SLURM_DIR` or `./fabench-slurm`. The directory must be visible from the compute
nodes (it is the job's working directory), as the results directory usually is.
"""

import copy
import math
import os
import re
import shlex
import shutil
import time
from pathlib import Path
from typing import ClassVar

from ..errors import FabenchError
from ..host.launched import LaunchResult, RecordCallback
from ..host.placement import Allocation, HostSlots
from ..host.process import STDERR_KEEP, run_capture
from ..plan.plan import PlannedRun
from ..records import KernelOutput
from ..starters import STARTERS, Starter
from . import SCHEDULERS, Scheduler
from .slurm_netdev import NETDEV_FUNCTION, check_slurm_crossing, snapshot_line

_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
_STATE_RE = re.compile(r"JobState=(\S+)")
_EXIT_RE = re.compile(r"ExitCode=(\d+):(\d+)")
_NODES_RE = re.compile(r"NumNodes=(\d+)")
_ACTIVE = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED",
           "RESIZING", "SIGNALING", "STAGE_OUT"}


def sbatch_lines(args: list[str]) -> list[str]:
    """User sbatch options as `#SBATCH` lines, so the kept script carries them too. A line
    break or other control character would end the comment and run the rest as a command of
    the job script: refused."""
    for a in args:
        if any(ord(c) < 32 or ord(c) == 127 for c in a):
            raise FabenchError(f"sbatch option {a!r}: control characters are not allowed")
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


_NODE_OPTS = ("-N", "--nodes")
_PER_NODE_OPTS = ("--ntasks-per-node",)
_PARTITION_OPTS = ("-p", "--partition")
# sinfo's short states of a node that takes jobs ("idle*": not responding, left out)
_USABLE = {"idle", "mix", "mixed", "alloc", "allocated", "comp", "completing", "plnd",
           "planned"}


def sbatch_option(args: list[str], names: tuple[str, ...]) -> str | None:
    """The value of an sbatch option among `args` (`-N 3`, `--nodes=3`, `-N3`); the last
    one given, as sbatch reads them."""
    found = None
    for i, a in enumerate(args):
        for n in names:
            if a == n and i + 1 < len(args):
                found = args[i + 1]
            elif a.startswith(n + "=") and n.startswith("--"):
                found = a[len(n) + 1:]
            elif len(n) == 2 and a.startswith(n) and len(a) > 2 and not a.startswith("--"):
                found = a[2:]
    return found


def without_options(args: list[str], names: tuple[str, ...]) -> list[str]:
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in names:
            skip = True
            continue
        if any(a.startswith(n + "=") or (len(n) == 2 and a.startswith(n) and
                                         not a.startswith("--")) for n in names):
            continue
        out.append(a)
    return out


def nodes_asked(args: list[str]) -> int | None:
    """The nodes `-N`/`--nodes` asks for; of a range (`2-4`) the least, which Slurm
    guarantees."""
    v = sbatch_option(args, _NODE_OPTS)
    if v is None:
        return None
    try:
        return int(v.split("-", 1)[0])
    except ValueError:
        raise FabenchError(f"sbatch -N {v!r}: a number of nodes (or a range MIN-MAX)") from None


def usable_nodes(sinfo_out: str, partition: str | None) -> int:
    """Nodes that take jobs in a partition (None: the default one, marked `*`), from
    `sinfo -h -N -o "%N %t %P"`: one line per node and partition."""
    names = set()
    for line in sinfo_out.splitlines():
        parts = line.split()
        if len(parts) != 3:
            continue
        node, state, part = parts
        here = part.rstrip("*") == partition if partition else part.endswith("*")
        if here and state in _USABLE:
            names.add(node)
    return len(names)


def parse_job_state(scontrol_out: str) -> tuple[str, int, int]:
    """(state, exit code, nodes) from `scontrol show job -o`; ("UNKNOWN", 0, 0) when the job
    is gone from the controller's memory (MinJobAge): it ended, and its files tell how. A
    signal-killed job's code is 128 + the signal, as a shell reports it."""
    m = _STATE_RE.search(scontrol_out)
    if not m:
        return "UNKNOWN", 0, 0
    e = _EXIT_RE.search(scontrol_out)
    code = int(e.group(1)) if e else 0
    if e and int(e.group(2)):
        code = 128 + int(e.group(2))
    n = _NODES_RE.search(scontrol_out)
    return m.group(1), code, int(n.group(1)) if n else 0


def is_active(state: str) -> bool:
    return state in _ACTIVE


@SCHEDULERS.register("slurm")
class SlurmScheduler(Scheduler):
    description = "a Slurm job per run (sbatch), ranks started inside it by srun or mpirun"
    usage = "slurm[:mpirun] [SBATCH ARGS]"
    default_starters: ClassVar[dict[str, str]] = {"mpi": "srun"}

    def __init__(self, sbatch_args: list[str] | None = None, workdir: str | None = None,
                 poll_s: float = 0.5, starter: str | None = None) -> None:
        super().__init__(starter)
        self.sbatch_args = list(sbatch_args or [])
        # the job-wide shape of a run over the whole allocation (spread()): (nodes, per node)
        self.shape: tuple[int, int] | None = None
        self._workdir = Path(workdir) if workdir else None
        self.poll_s = poll_s
        # every run of the campaign: (ranks, its shape's sbatch options, its step's lines);
        # shared with spread() views, so campaign.sbatch holds them all
        self._steps: list[tuple[int, list[str], list[str]]] = []
        for tool in ("sbatch", "scontrol", "scancel"):
            if shutil.which(tool) is None:
                raise FabenchError(f"--on slurm: {tool} not found (install slurm-client, or "
                                   "run where Slurm's commands are)")

    @classmethod
    def from_words(cls, words: list[str], starter: str | None = None) -> Scheduler:
        # `--on slurm[:STARTER] [SBATCH ARGS]`: a first word that names a starter is one.
        if words and words[0] in STARTERS and starter is None:
            starter, words = words[0], words[1:]
        return cls(sbatch_args=words, starter=starter)

    @property
    def starter(self) -> str:
        return self.starter_name or self.default_starters["mpi"]

    @property
    def workdir(self) -> Path:
        if self._workdir is not None:
            return self._workdir
        if self.results_dir:
            return Path(self.results_dir) / "slurm"
        return Path(os.environ.get("FABENCH_SLURM_DIR", "fabench-slurm"))

    def allocation_nodes(self) -> int | None:
        """`-N` where the job asks for nodes; else every node of the partition that takes
        jobs now (sinfo): an acceptance's collectives run over the whole of it."""
        asked = nodes_asked(self.sbatch_args)
        if asked is not None:
            return asked
        out = run_capture(["sinfo", "-h", "-N", "-o", "%N %t %P"], timeout=60)
        if out.returncode != 0:
            raise FabenchError(f"sinfo failed: {(out.stderr or out.stdout).strip()[:300]}")
        n = usable_nodes(out.stdout, sbatch_option(self.sbatch_args, _PARTITION_OPTS))
        return n or None

    def ranks_per_node_asked(self) -> int | None:
        v = sbatch_option(self.sbatch_args, _PER_NODE_OPTS)
        return int(v) if v and v.isascii() and v.isdigit() else None

    def spread(self, nodes: int, per_node: int) -> "SlurmScheduler":
        """A view whose jobs ask for `nodes` nodes and `per_node` tasks on each (the user's
        own -N and --ntasks-per-node give way), so Slurm cannot pack the ranks onto fewer
        nodes; its runs join this scheduler's campaign script."""
        view = copy.copy(self)
        view.shape = (nodes, per_node)
        view.sbatch_args = [*without_options(self.sbatch_args, _NODE_OPTS + _PER_NODE_OPTS),
                            f"--nodes={nodes}", f"--ntasks-per-node={per_node}"]
        return view

    def describe(self) -> str:
        extra = f" {shlex.join(self.sbatch_args)}" if self.sbatch_args else ""
        return f"slurm (sbatch{extra}, {self.starter} inside; scripts in {self.workdir})"

    def _step(self, run: PlannedRun, starter: Starter,
              stem: str) -> tuple[list[str], dict[str, str], list[str]]:
        if not run.kernel.needs_mpi:
            raise FabenchError(f"{run.kernel.name}: the slurm scheduler starts MPI kernels; "
                               "transport kernels need two hosts of an allocation "
                               "(use --on hosts with the job's nodes)")
        # The job's own allocation: the starter takes its nodes from Slurm; a shaped run
        # says how many ranks go on each (one entry per node).
        placed = [HostSlots("slurm", self.shape[1])] * self.shape[0] if self.shape else \
            [HostSlots("slurm", run.ranks)]
        launch = starter.batch_command(run, Allocation(placed=placed, execs={}))
        env = {**launch.env, **run.env}
        lines = [f"# {run.kernel.name} transport={run.transport} np={run.ranks} mpi={run.mpi}",
                 snapshot_line(stem, "before")]
        for k in env:
            if not _ENV_NAME_RE.match(k):  # the name is not quoted in `export NAME=...`
                raise FabenchError(f"environment name {k[:60]!r} cannot go into a job script")
        lines += [f"export {k}={shlex.quote(v)}" for k, v in env.items()]
        # The ranks' exit status, kept past the snapshot so the job still reports it.
        lines += [shlex.join(launch.argv), "fabench_rc=$?"]
        lines += [f"unset {' '.join(env)}"] if env else []
        lines.append(snapshot_line(stem, "after"))
        return lines, env, launch.notes

    def _write_campaign_script(self) -> Path:
        ranks = max(r for r, _, _ in self._steps)
        # the job as large as its largest shaped run (its srun asks for the same shape)
        shaped = [a for _, a, _ in self._steps if a]
        args = max(shaped, key=lambda a: nodes_asked(a) or 0) if shaped else self.sbatch_args
        body = _header("fabench-campaign", ranks, 60 * len(self._steps), args)
        body.append("# Every run of the campaign, one after the other, in one allocation.")
        for _, _, lines in self._steps:
            body += ["", *lines, '[ "$fabench_rc" = 0 ] || fabench_failed=$fabench_rc']
        body += ["", "exit ${fabench_failed:-0}"]
        path = self.workdir / "campaign.sbatch"
        path.write_text("\n".join(body) + "\n")
        return path

    def run(self, run: PlannedRun, on_record: RecordCallback | None = None) -> LaunchResult:
        stem = f"run-{len(self._steps) + 1:03d}-{run.kernel.name}"
        starter = self.starter_for(run.kernel)
        step, env, notes = self._step(run, starter, stem)
        wd = self.workdir.resolve()
        wd.mkdir(parents=True, exist_ok=True)
        self._steps.append((run.ranks, self.sbatch_args if self.shape else [], step))
        campaign = self._write_campaign_script()
        minutes = max(1, math.ceil(run.timeout_s / 60))
        script = "\n".join([*_header(f"fabench-{run.kernel.name}", run.ranks, minutes,
                                     self.sbatch_args), *step, "exit $fabench_rc"]) + "\n"
        path = wd / f"{stem}.sbatch"
        path.write_text(script)
        out, err = path.with_suffix(".out"), path.with_suffix(".err")
        for f in (out, err):
            f.unlink(missing_ok=True)
        argv = ["sbatch", "--parsable", f"--chdir={wd}", f"--output={out}", f"--error={err}",
                *self.sbatch_args, str(path)]
        sub = run_capture(argv, timeout=120)
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
                if not is_active(state):
                    break
                if time.monotonic() - start > run.timeout_s:
                    run_capture(["scancel", job], timeout=60)
                    notes.append(f"timed out after {run.timeout_s:.0f} s; job {job} cancelled")
                    break
                time.sleep(self.poll_s)
            offset = self._consume(out, offset, output, on_record, final=True)
        except BaseException:
            run_capture(["scancel", job], timeout=60)
            raise
        stderr = err.read_text(errors="replace") if err.exists() else ""
        summary, detail = starter.selected(run, stderr)
        if state != "COMPLETED" and code == 0:
            code = 1
        notes.append(f"slurm job {job}: {state}")
        res = LaunchResult(
            output=output, returncode=code, command=["sbatch", str(path)],
            stderr=stderr[-STDERR_KEEP:], selected_transport=summary,
            selected_detail=detail, notes=notes,
            extra={"env": env, "elapsed_s": time.monotonic() - start,
                   "slurm": {"job_id": job, "state": state, "script_path": str(path),
                             "script": script, "campaign_script": str(campaign),
                             "stdout": str(out), "stderr": str(err)}})
        iface = os.environ.get("FABENCH_IFACE") or None
        check_slurm_crossing(res, wd=wd, stem=stem, job=job, alloc_nodes=nodes,
                             ranks=run.ranks, on_node=run.transport.on_node,
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
        output.add_lines(complete.splitlines(), on_record)
        return offset + len(complete.encode())

    @staticmethod
    def _job_state(job: str) -> tuple[str, int, int]:
        """(state, exit code, nodes) of the job; 0 nodes when scontrol does not say."""
        return parse_job_state(run_capture(["scontrol", "show", "job", "-o", job],
                                           timeout=60).stdout)
