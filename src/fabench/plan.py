"""Spec -> plan: the list of runs (kernel x transport x ranks x MPI x repeat) with kernel args."""

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from .kernels import Kernel, get_kernel
from .spec import CampaignSpec, RunGroup

# --quick keeps every size but runs fewer iterations: enough for a median, not for tails.
QUICK_ITERATIONS = {"latency": 1000, "bw": 20, "bibw": 20, "mbw_mr": 20}
QUICK_COLLECTIVE_ITERATIONS = 100


@dataclass
class PlannedRun:
    kernel: str
    transport: str
    ranks: int
    mpi: str
    repeat: int
    kernel_args: list[str]
    env: dict[str, str] = field(default_factory=dict)
    timeout_s: float = 1800.0
    precision: float | None = None  # adaptive repetition (adaptive.py): CI half-width / median
    budget_s: float | None = None  # ... within this many seconds per run

    @property
    def key(self) -> str:
        """Stable identity, so `run --resume` skips exactly the runs already finished."""
        blob = json.dumps([self.kernel, self.transport, self.ranks, self.mpi, self.repeat,
                           self.kernel_args, sorted(self.env.items())])
        return hashlib.sha1(blob.encode()).hexdigest()[:16]

    @property
    def label(self) -> str:
        rep = f" #{self.repeat + 1}" if self.repeat else ""
        return f"{self.kernel} {self.transport} np={self.ranks} {self.mpi}{rep}"

    def settings(self) -> dict[str, Any]:
        return asdict(self)


def kernel_args(kernel: Kernel, *, sizes: str | None = None, iterations: int | None = None,
                warmup: int | None = None, window: int | None = None,
                rounds: int | None = None, validate: bool = False,
                hugepages: bool = False, quick: bool = False) -> list[str]:
    args: list[str] = []
    if sizes and kernel.default_sizes != "0":
        args += ["--sizes", sizes]
    if iterations is None and quick:
        short = kernel.name.split(".", 1)[1]
        iterations = (QUICK_COLLECTIVE_ITERATIONS if kernel.kind == "collective"
                      else QUICK_ITERATIONS.get(short))
        if warmup is None and iterations is not None:
            warmup = max(1, iterations // 10)
    if iterations is not None:
        args += ["--iterations", str(iterations)]
    if warmup is not None:
        args += ["--warmup", str(warmup)]
    if window is not None:
        args += ["--window", str(window)]
    if rounds is not None and rounds > 1:
        args += ["--rounds", str(rounds)]
    if validate:
        args.append("--validate")
    if hugepages:
        args.append("--hugepages")
    return args


def _group_runs(spec: CampaignSpec, group: RunGroup, quick: bool) -> list[PlannedRun]:
    runs = []
    for kname in group.kernel:
        kernel = get_kernel(kname)
        args = kernel_args(kernel, sizes=group.sizes, iterations=group.iterations,
                           warmup=group.warmup, window=group.window, rounds=group.rounds,
                           validate=bool(group.validate_data),
                           hugepages=bool(group.hugepages), quick=quick) + list(group.args)
        for transport in group.transport:
            for ranks in group.ranks:
                if ranks < kernel.min_ranks or (kernel.even_ranks and ranks % 2):
                    continue
                for mpi in group.mpi or [spec.mpi]:
                    for rep in range(spec.repeats):
                        runs.append(PlannedRun(kname, transport, ranks, mpi, rep, list(args),
                                               dict(group.env), spec.timeout_s,
                                               group.precision, group.budget_s))
    return runs


def make_plan(spec: CampaignSpec, quick: bool = False) -> list[PlannedRun]:
    plan: list[PlannedRun] = []
    for group in spec.runs:
        plan.extend(_group_runs(spec, group, quick))
    # Repeats are interleaved (all runs once, then again) so slow drift in host load spreads
    # over every configuration instead of biasing whichever ran last.
    plan.sort(key=lambda r: r.repeat)
    return plan
