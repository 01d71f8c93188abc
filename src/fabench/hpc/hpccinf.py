"""hpccinf.txt: the input hpcc reads from its working directory.

The layout is HPL's HPL.dat (lines 1-31) followed by PTRANS's sizes (lines 33-36); hpcc sizes
its other tests (StarDGEMM, FFT, STREAM, RandomAccess) from the largest HPL problem. The
values not chosen here are those of the example Debian ships
(/usr/share/doc/hpcc/examples/_hpccinf.txt), which are HPL's recommended defaults.
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import FabenchError

# NB: HPL's tuning notes put good block sizes in 32..256; OpenBLAS's DGEMM reaches its rate
# from about 128 on current x86 cores (hpcc's TUNING file: NB is the BLAS's best GEMM block).
DEFAULT_NB = 128
# HPL's own residual threshold (HPL.dat line 13): a run passes when its scaled residual is
# below it; 16.0 is the value HPL and hpcc ship.
DEFAULT_THRESHOLD = 16.0
DEFAULT_MEMORY_FRACTION = 0.8  # document 000's rule for a real run: 80 % of a node's memory
BYTES_PER_ELEMENT = 8  # double precision


@dataclass(frozen=True)
class Asked:
    """What an input file asks HPL for, unchecked (a ready-made file may hold values HPL
    itself must be seen to reject)."""

    sizes: tuple[int, ...]
    nb: int
    p: int
    q: int


@dataclass(frozen=True)
class HpccInput:
    sizes: tuple[int, ...]  # HPL's N values
    nb: int
    p: int
    q: int
    threshold: float = DEFAULT_THRESHOLD

    def __post_init__(self) -> None:
        if not self.sizes or any(n < 1 for n in self.sizes):
            raise FabenchError(f"HPL problem sizes must be >= 1, got {list(self.sizes)}")
        if self.nb < 1:
            raise FabenchError(f"HPL block size NB must be >= 1, got {self.nb}")
        if self.p < 1 or self.q < 1:
            raise FabenchError(f"HPL process grid must be >= 1 x 1, got {self.p} x {self.q}")
        if not self.threshold > 0:
            raise FabenchError(f"HPL residual threshold must be > 0, got {self.threshold}")

    @property
    def ranks(self) -> int:
        return self.p * self.q

    @property
    def asked(self) -> Asked:
        return Asked(self.sizes, self.nb, self.p, self.q)

    def text(self) -> str:
        ns = " ".join(str(n) for n in self.sizes)
        lines = [
            "HPLinpack benchmark input file",
            "Innovative Computing Laboratory, University of Tennessee (written by fabench)",
            "HPL.out      output file name (if any)",
            "8            device out (6=stdout,7=stderr,file)",
            f"{len(self.sizes):<12} # of problems sizes (N)",
            f"{ns:<12} Ns",
            "1            # of NBs",
            f"{self.nb:<12} NBs",
            "0            PMAP process mapping (0=Row-,1=Column-major)",
            "1            # of process grids (P x Q)",
            f"{self.p:<12} Ps",
            f"{self.q:<12} Qs",
            f"{self.threshold:<12} threshold",
            "1            # of panel fact",
            "2            PFACTs (0=left, 1=Crout, 2=Right)",
            "1            # of recursive stopping criterium",
            "4            NBMINs (>= 1)",
            "1            # of panels in recursion",
            "2            NDIVs",
            "1            # of recursive panel fact.",
            "1            RFACTs (0=left, 1=Crout, 2=Right)",
            "1            # of broadcast",
            "1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)",
            "1            # of lookahead depth",
            "1            DEPTHs (>=0)",
            "2            SWAP (0=bin-exch,1=long,2=mix)",
            "64           swapping threshold",
            "0            L1 in (0=transposed,1=no-transposed) form",
            "0            U  in (0=transposed,1=no-transposed) form",
            "1            Equilibration (0=no,1=yes)",
            "8            memory alignment in double (> 0)",
            "##### This line (no. 32) is ignored (it serves as a separator). ######",
            "0                      \t\tNumber of additional problem sizes for PTRANS",
            "1200 10000 30000        \tvalues of N",
            "0                       \tnumber of additional blocking sizes for PTRANS",
            "40 9 8 13 13 20 16 32 64       \tvalues of NB",
        ]
        return "\n".join(lines) + "\n"


def process_grid(ranks: int) -> tuple[int, int]:
    """HPL's near-square P x Q with P <= Q (HPL's tuning notes: "P and Q approximately equal,
    with Q slightly larger than P")."""
    if ranks < 1:
        raise FabenchError(f"--ranks must be >= 1, got {ranks}")
    p = math.isqrt(ranks)
    while ranks % p:
        p -= 1
    return p, ranks // p


def problem_size(mem_bytes: float, fraction: float, nb: int) -> int:
    """The largest N, a multiple of NB, whose N x N doubles fill `fraction` of `mem_bytes`."""
    if not 0 < fraction <= 1:
        raise FabenchError(f"--memory-fraction must be in (0, 1], got {fraction}")
    n = int(math.sqrt(fraction * mem_bytes / BYTES_PER_ELEMENT))
    n -= n % nb
    if n < nb:
        raise FabenchError(f"{fraction:g} of {mem_bytes / 2**20:.0f} MiB holds no HPL problem "
                           f"of block size {nb}")
    return n


def make_input(ranks: int, sizes: Sequence[int], nb: int = DEFAULT_NB,
               threshold: float = DEFAULT_THRESHOLD) -> HpccInput:
    p, q = process_grid(ranks)
    return HpccInput(tuple(sizes), nb, p, q, threshold)


# Lines (1-based) of HPL.dat that hold what fabench checks HPL used.
_LINES = {"N": 6, "NB": 8, "P": 11, "Q": 12}


def read_input(text: str, source: str = "hpccinf.txt") -> Asked:
    """What a ready-made hpccinf.txt asks for (first value of each line, as HPL reads it), so
    that the run can be checked against what HPL says it used. A value that is not a number
    is refused here: hpcc crashes on it (a segmentation fault in Debian's 1.5.0)."""
    lines = text.splitlines()
    vals: dict[str, int] = {}
    for key, no in _LINES.items():
        word = lines[no - 1].split()[0] if len(lines) >= no and lines[no - 1].split() else ""
        try:
            vals[key] = int(word)
        except ValueError:
            # The word itself is not quoted: the file is the user's, its words are not ours
            # to copy into a stored reason or a report.
            raise FabenchError(f"{source}, line {no} ({key}): not a number") from None
    try:
        count = int(lines[4].split()[0])
        ns = tuple(int(w) for w in lines[5].split()[:count])
    except (IndexError, ValueError):
        raise FabenchError(f"{source}, lines 5-6: the number of problem sizes and the sizes "
                           "are not numbers") from None
    return Asked(ns, vals["NB"], vals["P"], vals["Q"])


HEADER = "HPLinpack benchmark input file"  # HPL.dat's first line, hpcc's hpccinf.txt's too
MAX_INPUT_BYTES = 64 * 1024  # an hpccinf.txt is ~1.5 KB


def read_input_file(path: Path) -> str:
    """A ready hpccinf.txt named by a user (`--hpccinf`), checked before anything of it is
    kept: a regular file, at most 64 KiB, UTF-8, that starts as every HPL input does. Any
    other file (`/etc/shadow`) is refused without a word of its content in the message."""
    what = f"--hpccinf {path}"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise FabenchError(f"{what}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise FabenchError(f"{what}: not a regular file")
        if st.st_size > MAX_INPUT_BYTES:
            raise FabenchError(f"{what}: {st.st_size} bytes; an HPL input file is a few KB")
        data = fh.read(MAX_INPUT_BYTES + 1)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise FabenchError(f"{what}: not UTF-8 text, so not an HPL input file") from None
    if not text.startswith(HEADER):
        raise FabenchError(f"{what}: not an HPL input file (its first line is not "
                           f"{HEADER!r})")
    return text
