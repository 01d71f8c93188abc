"""Spec -> plan: the list of runs, each one typed description built and validated once.

Everything below the plan (schedulers, starters, the kernel's command line, the store, the
adaptive batches) takes a :class:`PlannedRun` and never parses a kernel name, transport or
size string again.
"""

import argparse
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .choices import DATATYPES
from .errors import FabenchError
from .kernels import Kernel, get_kernel
from .mpi.base import FLAVOURS
from .spec import CampaignSpec, RunGroup
from .transport import Transport, transport_for
from .units import parse_sizes

# --quick keeps every size but runs fewer iterations: enough for a median, not for tails. One
# count serves every size, and the largest sizes take nearly all the time (4 MiB windows over
# TCP), so the counts are set against the kernels' large-size defaults (1000 ping-pongs,
# 20 windows, 100 collective calls), which the earlier 1000/20/100 merely repeated.
QUICK_ITERATIONS = {"latency": 200, "bw": 5, "bibw": 5, "mbw_mr": 5}
QUICK_COLLECTIVE_ITERATIONS = 50

# Kernel options with a typed field: given as raw kernel arguments they would fight it (and
# adaptive batches rewrite sizes and iterations), so they are refused there.
TYPED_OPTIONS = ("--sizes", "--iterations", "--warmup", "--window", "--rounds", "--validate",
                 "--hugepages", "--datatype")
# Options the launch owns: a pair kernel's role and rendezvous are set by its starter.
STARTER_OPTIONS = ("--role", "--peer", "--port", "--bind", "--tls", "--provider")
LONG_MAX = (1 << 63) - 1  # the kernels read counts with strtol
# What a shell, mpirun -x and a job script's `export` accept as a variable name.
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Sizes:
    """Message sizes as asked (``text``, passed to the kernel as is) and as numbers."""

    text: str
    values: tuple[int, ...]

    @classmethod
    def parse(cls, text: str) -> "Sizes":
        try:
            values = parse_sizes(text)
        except ValueError as exc:
            raise FabenchError(f"--sizes {text!r}: {exc}") from None
        if not values:
            raise FabenchError(f"--sizes {text!r} names no size (examples: 8, 1:4M, 8,64,1K)")
        if any(v < 0 or v > 1 << 31 for v in values):
            raise FabenchError(f"--sizes {text!r}: each size must be 0 .. 2 GiB")
        return cls(text.strip(), tuple(values))

    @classmethod
    def of(cls, values: Sequence[int]) -> "Sizes":
        return cls(",".join(map(str, values)), tuple(values))


@dataclass(frozen=True)
class KernelSettings:
    """The kernel's own options; ``extra`` are options only that kernel knows (--streams 8)."""

    sizes: Sizes | None = None
    iterations: int | None = None
    warmup: int | None = None
    window: int | None = None
    rounds: int | None = None
    validate: bool = False
    hugepages: bool = False
    datatype: str | None = None
    extra: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # The kernels' own ranges (native/common/fb_opts.c), checked before anything starts.
        for name, lo, hi in (("iterations", 1, LONG_MAX), ("warmup", 0, LONG_MAX),
                             ("window", 1, 1_000_000), ("rounds", 1, 1000)):
            v = getattr(self, name)
            if v is not None and not lo <= v <= hi:
                top = "" if hi == LONG_MAX else f"..{hi}"
                raise FabenchError(f"--{name} must be {lo}{top}" + (" or more" if not top else "")
                                   + f", got {v}")
        if self.datatype is not None and self.datatype not in DATATYPES:
            raise FabenchError(f"--datatype {self.datatype!r}: one of {', '.join(DATATYPES)}")
        for a in self.extra:
            opt = a.split("=", 1)[0]
            if opt in TYPED_OPTIONS:
                raise FabenchError(f"kernel argument {a!r}: use fabench's own {opt} option")
            if opt in STARTER_OPTIONS:
                raise FabenchError(f"kernel argument {a!r}: {opt} is set by the launch")

    def argv(self, kernel: Kernel) -> list[str]:
        """The kernel's command line, in the order fabench has always written it (run keys
        hash it, so `run --resume` recognises runs stored by earlier versions)."""
        args: list[str] = []
        if self.sizes is not None and kernel.sized:
            args += ["--sizes", self.sizes.text]
        if self.iterations is not None:
            args += ["--iterations", str(self.iterations)]
        if self.warmup is not None:
            args += ["--warmup", str(self.warmup)]
        if self.window is not None:
            args += ["--window", str(self.window)]
        if self.rounds is not None and self.rounds > 1:
            args += ["--rounds", str(self.rounds)]
        if self.validate:
            args.append("--validate")
        if self.hugepages:
            args.append("--hugepages")
        if self.datatype is not None:
            args += ["--datatype", self.datatype]
        return [*args, *self.extra]


def settings_for(kernel: Kernel, *, sizes: str | None = None, iterations: int | None = None,
                 warmup: int | None = None, window: int | None = None,
                 rounds: int | None = None, validate: bool = False, hugepages: bool = False,
                 datatype: str | None = None, extra: Sequence[str] = (),
                 quick: bool = False) -> KernelSettings:
    """Kernel settings from what a user wrote; --quick picks the iteration counts here."""
    if iterations is None and quick:
        short = kernel.name.split(".", 1)[1]
        iterations = (QUICK_COLLECTIVE_ITERATIONS if kernel.kind == "collective"
                      else QUICK_ITERATIONS.get(short))
        if warmup is None and iterations is not None:
            warmup = max(1, iterations // 10)
    if datatype is not None and kernel.kind != "collective":
        raise FabenchError(f"{kernel.name}: --datatype applies to collectives only")
    # An empty --sizes is an error (Sizes.parse says so), not the kernel's default sizes.
    return KernelSettings(sizes=Sizes.parse(sizes) if sizes is not None else None,
                          iterations=iterations,
                          warmup=warmup, window=window, rounds=rounds, validate=validate,
                          hugepages=hugepages, datatype=datatype, extra=tuple(extra))


@dataclass(frozen=True)
class PlannedRun:
    """One run, typed: what the scheduler places, the starter starts and the store keeps."""

    kernel: Kernel
    transport: Transport
    ranks: int
    mpi: str
    repeat: int = 0
    settings: KernelSettings = field(default_factory=KernelSettings)
    env: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 1800.0
    precision: float | None = None  # adaptive repetition (adaptive.py): CI half-width / median
    budget_s: float | None = None  # ... within this many seconds per run
    label: str = ""  # a side of an A/B (tune ab); part of the configuration

    def __post_init__(self) -> None:
        k = self.kernel
        if self.ranks < 1:
            raise FabenchError(f"--ranks must be >= 1, got {self.ranks}")
        if not k.needs_mpi and self.ranks != 2:
            raise FabenchError(f"{k.name} runs between two processes (a client and a server); "
                               f"--ranks {self.ranks} does not apply")
        if self.ranks < k.min_ranks:
            raise FabenchError(f"{k.name} needs at least {k.min_ranks} ranks, got {self.ranks}")
        if k.even_ranks and self.ranks % 2:
            raise FabenchError(f"{k.name} pairs ranks: an even number is needed, got "
                               f"{self.ranks}")
        if not (self.timeout_s > 0 and self.timeout_s < float("inf")):
            raise FabenchError(f"--timeout must be a positive number of seconds, got "
                               f"{self.timeout_s}")
        if self.precision is not None and not 0 < self.precision < 1:
            raise FabenchError(f"--precision must be between 0 and 1 (a fraction of the "
                               f"median), got {self.precision}")
        for name in self.env:
            if not ENV_NAME.match(name):
                raise FabenchError(f"environment variable name {name!r}: letters, digits and "
                                   "_ only, not starting with a digit")
        if self.budget_s is not None and not 0 < self.budget_s < float("inf"):
            raise FabenchError(f"--budget must be a positive number of seconds, got "
                               f"{self.budget_s}")

    def kernel_argv(self) -> list[str]:
        # An MPI kernel's transport is the flavour's business (MCA, UCX_TLS), not an option.
        own = [] if self.kernel.needs_mpi else self.transport.kernel_args()
        return [*self.settings.argv(self.kernel), *own]

    def batch(self, sizes: Sequence[int], iterations: int) -> "PlannedRun":
        """The same run for some sizes only, at a given iteration count (adaptive batches)."""
        return replace(self, settings=replace(self.settings, sizes=Sizes.of(sizes),
                                              iterations=iterations))

    @property
    def key(self) -> str:
        """Stable identity, so `run --resume` skips exactly the runs already finished."""
        blob = json.dumps([self.kernel.name, str(self.transport), self.ranks, self.mpi,
                           self.repeat, self.settings.argv(self.kernel),
                           sorted(self.env.items())])
        return hashlib.sha1(blob.encode()).hexdigest()[:16]

    @property
    def label_text(self) -> str:
        rep = f" #{self.repeat + 1}" if self.repeat else ""
        side = f" [{self.label}]" if self.label else ""
        return f"{self.kernel.name} {self.transport} np={self.ranks} {self.mpi}{rep}{side}"

    def record(self) -> dict[str, Any]:
        """What the store keeps as the run's settings (the shape earlier versions wrote, plus
        the typed kernel settings)."""
        s = self.settings
        return {
            "kernel": self.kernel.name, "transport": str(self.transport), "ranks": self.ranks,
            "mpi": self.mpi, "repeat": self.repeat, "kernel_args": self.settings.argv(self.kernel),
            "env": dict(self.env), "timeout_s": self.timeout_s, "precision": self.precision,
            "budget_s": self.budget_s, "label": self.label,
            "kernel_settings": {
                "sizes": s.sizes.text if s.sizes else None, "iterations": s.iterations,
                "warmup": s.warmup, "window": s.window, "rounds": s.rounds,
                "validate": s.validate, "hugepages": s.hugepages, "datatype": s.datatype,
                "extra": list(s.extra)},
        }


def check_mpi(kernel: Kernel, mpi: str) -> str:
    """An MPI flavour's name, known to fabench (transport kernels ignore it)."""
    if kernel.needs_mpi and mpi not in FLAVOURS:
        raise FabenchError(f"--mpi {mpi!r}: unknown MPI flavour; known: "
                           f"{', '.join(FLAVOURS.names())}")
    return mpi


def plan_run(kernel_name: str, *, transport: str | None = None, ranks: int = 2,
             mpi: str = "openmpi", repeat: int = 0, settings: KernelSettings | None = None,
             env: Mapping[str, str] | None = None, timeout_s: float = 1800.0,
             precision: float | None = None, budget_s: float | None = None,
             label: str = "") -> PlannedRun:
    """One run from names a user typed: the single place they become typed objects."""
    kernel = get_kernel(kernel_name)
    return PlannedRun(kernel, transport_for(kernel, transport), ranks, check_mpi(kernel, mpi),
                      repeat,
                      settings or KernelSettings(), dict(env or {}), timeout_s, precision,
                      budget_s, label)


def settings_from_words(kernel: Kernel, words: Sequence[str]) -> KernelSettings:
    """Kernel settings from options written as on the kernel's own command line (scripts in
    bench/ and tests write them that way): fabench's typed options are picked out, the rest
    stay the kernel's own. Like every parse, only at the top of the pipeline."""
    ap = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    for opt in ("--sizes", "--datatype"):
        ap.add_argument(opt)
    for opt in ("--iterations", "--warmup", "--window", "--rounds"):
        ap.add_argument(opt, type=int)
    ap.add_argument("--validate", action="store_true")
    ap.add_argument("--hugepages", action="store_true")
    try:
        known, extra = ap.parse_known_args(list(words))
    except argparse.ArgumentError as exc:
        raise FabenchError(f"kernel options {' '.join(words)!r}: {exc}") from None
    return settings_for(kernel, extra=extra, **vars(known))


def _group_runs(spec: CampaignSpec, group: RunGroup, quick: bool) -> list[PlannedRun]:
    runs = []
    for kname in group.kernel:
        kernel = get_kernel(kname)
        settings = settings_for(kernel, sizes=group.sizes, iterations=group.iterations,
                                warmup=group.warmup, window=group.window, rounds=group.rounds,
                                validate=bool(group.validate_data),
                                hugepages=bool(group.hugepages), datatype=group.datatype,
                                extra=group.args, quick=quick)
        for tname in group.transport:
            transport = transport_for(kernel, tname)
            for ranks in group.ranks:
                if ranks < kernel.min_ranks or (kernel.even_ranks and ranks % 2):
                    continue
                if not kernel.needs_mpi and ranks != 2:
                    continue
                for mpi in group.mpi or [spec.mpi]:
                    check_mpi(kernel, mpi)
                    for rep in range(spec.repeats):
                        runs.append(PlannedRun(kernel, transport, ranks, mpi, rep, settings,
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
