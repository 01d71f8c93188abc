"""The kernel settings, declared once: the sizes a kernel sweeps and every first-class kernel
option. The command line (add_kernel_options), the campaign spec's keys (fabench.plan.spec), the
plan's kernel argv (fabench.plan.plan) and the configuration a report groups runs by all derive
from this module, so both the spec and the plan import it and neither imports the other for it.
"""

import argparse
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from ..choices import DATATYPES
from ..errors import FabenchError
from ..kernels import Kernel
from ..util.units import parse_sizes

# Options the launch owns: a pair kernel's role and rendezvous are set by its starter.
STARTER_OPTIONS = ("--role", "--peer", "--port", "--bind", "--tls", "--provider")
LONG_MAX = (1 << 63) - 1  # the kernels read counts with strtol


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


# -- the kernel settings, declared once ----------------------------------------------------
# Each field of KernelSettings below carries its option's declaration; the command-line options
# (add_kernel_options), the spec's keys (spec.RunGroup), the kernel's argv, the options refused
# as raw kernel arguments and the configuration a report groups runs by are all derived from
# it. A new first-class kernel option is one field here (and its parser in
# native/common/fb_opts.c).
@dataclass(frozen=True)
class KernelOption:
    name: str
    kind: str  # "int", "float", "flag", "choice" or "sizes"
    help: str
    lo: float | None = None
    hi: float | None = None
    choices: tuple[str, ...] = ()
    # False for how much is measured (sizes, iteration counts): runs differing only there are
    # one configuration, pooled. True for what is measured: a different series.
    configures: bool = True
    # the kinds of kernel ("collective", ...) and the kernels that take it (empty: every one)
    kinds: tuple[str, ...] = ()
    kernels: tuple[str, ...] = ()
    # the value the kernel uses when the option is absent (what "not given" means)
    kernel_default: Any = None
    # a value written as no option at all, so run keys of earlier versions stay the same
    omitted: Any = None
    metavar: str | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def takes(self, kernel: Kernel) -> bool:
        """Whether this kernel accepts the option at all (--datatype: collectives only;
        --stop-precision: the point-to-point kernels)."""
        return (not self.kinds or kernel.kind in self.kinds) and \
            (not self.kernels or kernel.name in self.kernels)

    @property
    def takers(self) -> str:
        """Who takes it, for a refusal: "collectives", or the kernels' names."""
        return ", ".join([f"{k}s" for k in self.kinds] + list(self.kernels))

    def check(self, v: Any) -> None:
        """The kernels' own ranges (native/common/fb_opts.c), checked before anything starts."""
        if v is None:
            return
        if self.kind == "int" and not (self.lo or 0) <= v <= (self.hi or LONG_MAX):
            top = "" if self.hi is None else f"..{self.hi}"
            raise FabenchError(f"{self.flag} must be {self.lo}{top}"
                               + (" or more" if not top else "") + f", got {v}")
        if self.kind == "float" and not (self.lo or 0.0) <= v <= (self.hi or math.inf):
            raise FabenchError(f"{self.flag} must be {self.lo}..{self.hi}, got {v}")
        if self.kind == "choice" and v not in self.choices:
            raise FabenchError(f"{self.flag} {v!r}: one of {', '.join(self.choices)}")

    def words(self, v: Any) -> list[str]:
        if v is None or v is False or (self.omitted is not None and v == self.omitted):
            return []
        if self.kind == "flag":
            return [self.flag]
        return [self.flag, v.text if self.kind == "sizes" else str(v)]


def _option(kind: str, help: str, **kw: Any) -> Any:
    default = False if kind == "flag" else None
    return field(default=default, metadata={"option": (kind, help, kw)})


# --datatype's one vocabulary (the kernels' and OSU's -T words) is choices.DATATYPES; a
# kernel's records name the MPI type it used (MPI_FLOAT), which is what was measured.


MAX_ITERATIONS = 1_000_000_000
# The kernels whose timed loop can stop at a precision (native/mpi/pt2pt.c, FB_SC_STOP).
STOP_KERNELS = ("mpi.latency", "mpi.bw", "mpi.bibw", "mpi.mbw_mr")


@dataclass(frozen=True)
class KernelSettings:
    """The kernel's own options; ``extra`` are options only that kernel knows (--streams 8)."""

    sizes: Sizes | None = _option(
        "sizes", "MIN:MAX power-of-two sweep or a,b,c list (4K, 1M ok)", configures=False)
    # 1e9: a sample per iteration is 8 GB of them per size; 1e12 ran to "out of memory" in
    # every kernel, and a warm-up of 1e12 until the run's timeout
    iterations: int | None = _option(
        "int", "timed iterations per size (default: OSU's)", lo=1, hi=MAX_ITERATIONS,
        configures=False)
    warmup: int | None = _option("int", "untimed iterations per size", lo=0,
                                 hi=MAX_ITERATIONS, configures=False)
    window: int | None = _option(
        "int", "messages in flight (bandwidth kernels, 64)", lo=1, hi=1_000_000)
    rounds: int | None = _option(
        "int", "sweep the sizes R times, 1/R of the iterations each time, so a burst of host "
        "load hits a slice of every size, not all of one (default 1)", lo=1, hi=1000,
        kernel_default=1, omitted=1, metavar="R")
    validate: bool = _option("flag", "check every received byte", kernel_default=False)
    hugepages: bool = _option(
        "flag", "buffers of 2 MiB and more on transparent huge pages (default: plain pages, "
        "as OSU; large shared-memory transfers differ a lot)", kernel_default=False)
    # how much is measured, not what: runs with and without it are one configuration
    stop_precision: float | None = _option(
        "float", "stop timing a size once the 95-percent interval of its median is within P "
        "of the median (0.01: +-1 per cent), after at least a tenth of the iterations and at "
        "most all of them (point-to-point MPI kernels; default: every iteration, as OSU; "
        "docs/statistics.md)", lo=1e-6, hi=0.5,
        configures=False, kernels=STOP_KERNELS, metavar="P")
    datatype: str | None = _option(
        "choice", "collectives: the MPI datatype reduced and moved, as OSU's -T "
        "(default: float)", choices=DATATYPES, kinds=("collective",), kernel_default="float")
    extra: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for opt in KERNEL_OPTIONS:
            opt.check(getattr(self, opt.name))
        for a in self.extra:
            opt_name = a.split("=", 1)[0]
            if opt_name in TYPED_OPTIONS:
                raise FabenchError(f"kernel argument {a!r}: use fabench's own {opt_name} "
                                   "option")
            if opt_name in STARTER_OPTIONS:
                raise FabenchError(f"kernel argument {a!r}: {opt_name} is set by the launch")

    def argv(self, kernel: Kernel) -> list[str]:
        """The kernel's command line, in the order fabench has always written it (run keys
        hash it, so `run --resume` recognises runs stored by earlier versions)."""
        args: list[str] = []
        for opt in KERNEL_OPTIONS:
            if opt.kind != "sizes" or kernel.sized:
                args += opt.words(getattr(self, opt.name))
        return [*args, *self.extra]

    def record(self) -> dict[str, Any]:
        return {**{o.name: (v.text if isinstance(v := getattr(self, o.name), Sizes) else v)
                   for o in KERNEL_OPTIONS}, "extra": list(self.extra)}


KERNEL_OPTIONS: tuple[KernelOption, ...] = tuple(
    KernelOption(f.name, f.metadata["option"][0], f.metadata["option"][1],
                 **f.metadata["option"][2])
    for f in fields(KernelSettings) if "option" in f.metadata)
# Kernel options with a typed field: given as raw kernel arguments they would fight it (and
# adaptive batches rewrite sizes and iterations), so they are refused there.
TYPED_OPTIONS = tuple(o.flag for o in KERNEL_OPTIONS)


def _dest(opt: KernelOption) -> str:
    return f"kernel_{opt.name}"


def add_kernel_options(p: argparse.ArgumentParser, *, rename: Mapping[str, str] | None = None,
                       help: Mapping[str, str] | None = None,
                       defaults: Mapping[str, Any] | None = None, strict: bool = True) -> None:
    """Every kernel option on a command line. `rename`: a command whose own option already
    has an option's name spells the kernel's differently (tune ab's --rounds are A/B rounds);
    `help`/`defaults`: a command's own default (sim runs one iteration)."""
    for opt in KERNEL_OPTIONS:
        flag = (rename or {}).get(opt.name, opt.flag)
        text = (help or {}).get(opt.name, opt.help)
        default = (defaults or {}).get(opt.name, False if opt.kind == "flag" else None)
        metavar = opt.metavar or ("N" if opt.kind == "int" else opt.name.upper())
        if opt.kind == "flag":
            p.add_argument(flag, dest=_dest(opt), action="store_true", default=default,
                           help=text)
        elif opt.kind in ("int", "float"):
            kind = int if opt.kind == "int" else float
            p.add_argument(flag, dest=_dest(opt), type=kind if strict else str,
                           default=default, metavar=metavar, help=text)
        else:
            choices = opt.choices if strict and opt.choices else None
            p.add_argument(flag, dest=_dest(opt), default=default, choices=choices,
                           metavar=None if choices else metavar, help=text)
