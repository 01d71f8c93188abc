"""The hpcc kernels' own options (given as `--kernel-args`, or by `fabench hpl`), parsed once
where the run starts, as a native kernel parses its argv."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import FabenchError
from .hpccinf import (
    DEFAULT_MEMORY_FRACTION,
    DEFAULT_NB,
    DEFAULT_THRESHOLD,
    read_input,
    read_input_file,
)

HPCC_PROGRAM = "/usr/bin/hpcc"  # Debian's package


@dataclass(frozen=True)
class HpccOptions:
    memory_fraction: float = DEFAULT_MEMORY_FRACTION
    nb: int = DEFAULT_NB
    peak: float | None = None  # per-node Rpeak, GFLOPS
    blas: str = "openblas"
    threshold: float = DEFAULT_THRESHOLD
    hpccinf: Path | None = None  # a ready input file, used as it is
    program: str = HPCC_PROGRAM
    openblas_coretype: str | None = None  # OPENBLAS_CORETYPE for the ranks

    def __post_init__(self) -> None:
        # `fabench hpl` builds these from its own options: refused here, before a campaign
        # is stored, as the kernel's arguments are refused by parse_options
        if not 0 < self.memory_fraction <= 1:
            raise FabenchError(f"--memory-fraction must be in (0, 1], got {self.memory_fraction}")
        if not 1 <= self.nb <= 1 << 20:
            raise FabenchError(f"--nb must be 1..{1 << 20}, got {self.nb}")
        if self.peak is not None and not 0 < self.peak < math.inf:
            raise FabenchError(f"--peak must be a finite positive GFLOPS figure, got "
                               f"{self.peak}")
        if not 0 < self.threshold < math.inf:
            raise FabenchError(f"--threshold must be a finite number > 0, got "
                               f"{self.threshold}")

    def argv(self) -> list[str]:
        """The options as --kernel-args words (what `fabench hpl` hands the plan)."""
        out = ["--memory-fraction", str(self.memory_fraction), "--nb", str(self.nb),
               "--blas", self.blas, "--threshold", str(self.threshold)]
        if self.peak is not None:
            out += ["--peak", str(self.peak)]
        if self.hpccinf is not None:
            out += ["--hpccinf", str(self.hpccinf)]
        if self.program != HPCC_PROGRAM:
            out += ["--program", self.program]
        if self.openblas_coretype:
            out += ["--openblas-coretype", self.openblas_coretype]
        return out


def parse_options(words: Sequence[str]) -> HpccOptions:
    ap = argparse.ArgumentParser(prog="hpcc kernel", add_help=False, exit_on_error=False)
    ap.add_argument("--memory-fraction", type=float, default=DEFAULT_MEMORY_FRACTION)
    ap.add_argument("--nb", type=int, default=DEFAULT_NB)
    ap.add_argument("--peak", type=float)
    ap.add_argument("--blas", default="openblas")
    ap.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD)
    ap.add_argument("--hpccinf", type=Path)
    ap.add_argument("--program", default=HPCC_PROGRAM)
    ap.add_argument("--openblas-coretype")
    try:
        ns, rest = ap.parse_known_args(list(words))
    except argparse.ArgumentError as exc:
        raise FabenchError(f"hpcc options {' '.join(words)!r}: {exc}") from None
    if rest:
        raise FabenchError(f"hpcc kernels do not know {' '.join(rest)!r} (they take "
                           "--memory-fraction, --nb, --peak, --blas, --threshold, --hpccinf, "
                           "--program, --openblas-coretype)")
    if not 0 < ns.memory_fraction <= 1:
        raise FabenchError(f"--memory-fraction must be in (0, 1], got {ns.memory_fraction}")
    if ns.nb < 1:
        raise FabenchError(f"--nb must be >= 1, got {ns.nb}")
    if ns.peak is not None and not ns.peak > 0:
        raise FabenchError(f"--peak must be a positive GFLOPS figure, got {ns.peak}")
    if not ns.threshold > 0:
        raise FabenchError(f"--threshold must be > 0, got {ns.threshold}")
    if not (ns.program.startswith("/") and os.path.basename(ns.program).startswith("hpcc")):
        # a kernel argument (a spec's `args:` too) must not start any program it names as
        # root: only an hpcc build, by its absolute path
        raise FabenchError(f"--program {ns.program!r}: the absolute path of an hpcc build "
                           "(a file named hpcc...)")
    if ns.blas not in ("openblas", "system") and not ns.blas.startswith("/"):
        raise FabenchError(f"--blas {ns.blas!r}: openblas, system, or the absolute path of a "
                           "directory holding libblas.so.3")
    if ns.openblas_coretype is not None and not ns.openblas_coretype.isalnum():
        raise FabenchError(f"--openblas-coretype {ns.openblas_coretype!r}: an OpenBLAS core "
                           "name (SkylakeX, Haswell, Zen, ...)")
    return HpccOptions(ns.memory_fraction, ns.nb, ns.peak, ns.blas, ns.threshold, ns.hpccinf,
                       ns.program, ns.openblas_coretype)


def check_kernel_args(words: Sequence[str]) -> None:
    """The hpcc kernels' arguments checked where the run is planned, before a campaign is
    stored or a rank starts: a file named by `--hpccinf` is read here (checked as an HPL input,
    never quoted) so that a file that is none is refused as any other bad option is."""
    opts = parse_options(words)
    if opts.hpccinf is not None:
        read_input(read_input_file(opts.hpccinf), str(opts.hpccinf))
