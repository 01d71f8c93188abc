"""Spec -> plan: the list of runs, each one typed description built and validated once.

Everything below the plan (schedulers, starters, the kernel's command line, the store, the
adaptive batches) takes a :class:`PlannedRun` and never parses a kernel name, transport or
size string again.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..errors import FabenchError
from ..hpc.options import check_kernel_args as check_hpcc_args
from ..kernels import Kernel, get_kernel
from ..kernels.transport_request import Transport, transport_for
from ..mpi.base import FLAVOURS, Mpi
from ..util.units import check_timeout
from .kernel_settings import (
    KERNEL_OPTIONS,
    KernelSettings,
    Sizes,
    _dest,
    add_kernel_options,
)

if TYPE_CHECKING:  # annotations only: the spec's pydantic models are a fifth of a bench's start
    from .spec import CampaignSpec, RunGroup

# --quick keeps every size but runs fewer iterations: enough for a median, not for tails. One
# count serves every size, and the largest sizes take nearly all the time (4 MiB windows over
# TCP), so the counts are set against the kernels' large-size defaults (1000 ping-pongs,
# 20 windows, 100 collective calls), which the earlier 1000/20/100 merely repeated.
QUICK_ITERATIONS = {"latency": 200, "bw": 5, "bibw": 5, "mbw_mr": 5}
QUICK_COLLECTIVE_ITERATIONS = 50

# What a shell, mpirun -x and a job script's `export` accept as a variable name.
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")


def settings_for(kernel: Kernel, *, extra: Sequence[str] = (), quick: bool = False,
                 **values: Any) -> KernelSettings:
    """Kernel settings from what a user wrote (the options by name, None: not given); --quick
    picks the iteration counts here."""
    names = {o.name for o in KERNEL_OPTIONS}
    unknown = sorted(set(values) - names)
    if unknown:
        raise TypeError(f"settings_for: no kernel option {', '.join(unknown)}")
    if values.get("iterations") is None and quick:
        short = kernel.name.split(".", 1)[1]
        iterations = (QUICK_COLLECTIVE_ITERATIONS if kernel.kind == "collective"
                      else QUICK_ITERATIONS.get(short))
        values["iterations"] = iterations
        if values.get("warmup") is None and iterations is not None:
            values["warmup"] = max(1, iterations // 10)
    for opt in KERNEL_OPTIONS:
        v = values.get(opt.name)
        if opt.kind == "flag":
            values[opt.name] = bool(v)
        elif opt.kind == "sizes" and v is not None:
            # An empty --sizes is an error (Sizes.parse says so), not the kernel's default.
            values[opt.name] = Sizes.parse(v)
        if v not in (None, False) and not opt.takes(kernel):
            raise FabenchError(f"{kernel.name}: {opt.flag} applies to {opt.takers} only")
    return KernelSettings(**values, extra=tuple(extra))


def settings_from_args(kernel: Kernel, args: argparse.Namespace, *,
                       extra: Sequence[str] = (), quick: bool = False) -> KernelSettings:
    """Kernel settings from a command line that add_kernel_options built."""
    return settings_for(kernel, extra=extra, quick=quick,
                        **{o.name: getattr(args, _dest(o)) for o in KERNEL_OPTIONS})


@functools.lru_cache(maxsize=2)
def _parser(strict: bool) -> argparse.ArgumentParser:
    # built once: a report's history keys every stored run by its configuration (618 runs of
    # a store of four default campaigns: 1.1 s of parser construction, a third of the report)
    ap = argparse.ArgumentParser(add_help=False, exit_on_error=False, allow_abbrev=False)
    add_kernel_options(ap, strict=strict)
    return ap


def _words(words: Sequence[str], strict: bool) -> tuple[dict[str, Any], list[str]]:
    try:
        known, extra = _parser(strict).parse_known_args(list(words))
    except argparse.ArgumentError as exc:
        raise FabenchError(f"kernel options {' '.join(words)!r}: {exc}") from None
    return {o.name: getattr(known, _dest(o)) for o in KERNEL_OPTIONS}, extra


def settings_from_words(kernel: Kernel, words: Sequence[str]) -> KernelSettings:
    """Kernel settings from options written as on the kernel's own command line (scripts in
    bench/ and tests write them that way): fabench's typed options are picked out, the rest
    stay the kernel's own. Like every parse, only at the top of the pipeline."""
    values, extra = _words(words, strict=True)
    return settings_for(kernel, extra=extra, **values)


def configuration_of(kernel_args: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """What a stored run's kernel arguments say about *what* was measured: each configuring
    option whose value differs from the kernel's own default, then the kernel's own options.
    Runs that differ here are different configurations, never repeats of one."""
    try:
        values, extra = _words(kernel_args, strict=False)
    except FabenchError:
        return (("args", " ".join(kernel_args)),)
    out = []
    for opt in KERNEL_OPTIONS:
        v = values[opt.name]
        if opt.configures and v not in (None, False) and str(v) != str(opt.kernel_default):
            out.append((opt.name, "" if v is True else str(v)))
    if extra:
        out.append(("args", " ".join(extra)))
    return tuple(out)


def configuration_text(items: Sequence[tuple[str, str]]) -> str:
    """'hugepages window=16 --streams 8': a configuration's settings as a label shows them."""
    return " ".join(v if k == "args" else (f"{k}={v}" if v else k) for k, v in items)


@dataclass(frozen=True)
class PlannedRun:
    """One run, typed: what the scheduler places, the starter starts and the store keeps."""

    kernel: Kernel
    transport: Transport
    ranks: int
    mpi: Mpi
    repeat: int = 0
    settings: KernelSettings = field(default_factory=KernelSettings)
    env: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 1800.0
    precision: float | None = None  # adaptive repetition (run/adaptive.py): CI half-width / median
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
        check_timeout(self.timeout_s)
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
        if k.family == "hpcc":
            check_hpcc_args(self.settings.extra)

    def kernel_argv(self) -> list[str]:
        # An MPI kernel's transport is the flavour's business (MCA, UCX_TLS), not an option.
        own = [] if self.kernel.needs_mpi else self.transport.kernel_args()
        return [*self.settings.argv(self.kernel), *own]

    def batch(self, sizes: Sequence[int], iterations: int) -> PlannedRun:
        """The same run for some sizes only, at a given iteration count (adaptive batches)."""
        return replace(self, settings=replace(self.settings, sizes=Sizes.of(sizes),
                                              iterations=iterations))

    @property
    def key(self) -> str:
        """Stable identity, so `run --resume` skips exactly the runs already finished."""
        blob = json.dumps([self.kernel.name, str(self.transport), self.ranks, str(self.mpi),
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
            "mpi": str(self.mpi), "repeat": self.repeat,
            "kernel_args": self.settings.argv(self.kernel),
            "env": dict(self.env), "timeout_s": self.timeout_s, "precision": self.precision,
            "budget_s": self.budget_s, "label": self.label,
            "kernel_settings": s.record(),
        }


def check_mpi(kernel: Kernel, mpi: str) -> Mpi:
    """An MPI flavour, known to fabench (transport kernels ignore it)."""
    if kernel.needs_mpi and mpi not in FLAVOURS:
        raise FabenchError(f"--mpi {mpi!r}: unknown MPI flavour; known: "
                           f"{', '.join(FLAVOURS.names())}")
    return Mpi(mpi)


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


def _group_runs(spec: CampaignSpec, group: RunGroup, quick: bool) -> list[PlannedRun]:
    runs = []
    for kname in group.kernel:
        kernel = get_kernel(kname)
        settings = settings_for(kernel, extra=group.args, quick=quick,
                                **group.kernel_options())
        for tname in group.transport:
            transport = transport_for(kernel, tname)
            for ranks in group.ranks:
                if ranks < kernel.min_ranks or (kernel.even_ranks and ranks % 2):
                    continue
                if not kernel.needs_mpi and ranks != 2:
                    continue
                for name in group.mpi or [spec.mpi]:
                    mpi = check_mpi(kernel, name)
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
