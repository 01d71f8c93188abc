"""The registry of benchmark kernels: what each measures and how it is started.

Adding a kernel = one `register_kernel(...)` call in a module of this package (or of a plugin,
see fabench.util.registry); the runner, store and reports never name kernels.
"""

import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..metrics import BANDWIDTH, GFLOPS, LATENCY, MESSAGE_RATE, Metric
from ..util.registry import Registry


@dataclass(frozen=True)
class Kernel:
    name: str  # "mpi.latency"
    family: str  # "mpi", "tcp", "udp", "ucx", "ofi", "verbs"
    kind: str  # "pt2pt", "collective" or "app" (an application: proxies, hpcc)
    executable: str  # file name under fabench/_native/<dir>/, or an absolute path (plugins)
    metrics: tuple[Metric, ...]
    default_sizes: str
    min_ranks: int = 2
    even_ranks: bool = False
    description: str = ""
    # How its processes start: "mpi" (an MPI job: mpirun, srun, smpirun) or "pair" (a server
    # and a client that meet over a TCP rendezvous, no MPI).
    start: str = "mpi"
    build_needs: str = ""  # what a missing build needs (doctor's reason)
    # The starter this kernel needs whatever the scheduler's default (hpcc's: it runs a
    # program that reads an input file and writes its results to a file); "" for the default.
    starter: str = ""
    # Fields of its result records that its JSON summaries carry (HPL's efficiency).
    summary_fields: tuple[str, ...] = ()
    extra: dict[str, str] = field(default_factory=dict, hash=False, compare=False)

    @property
    def needs_mpi(self) -> bool:
        return self.start == "mpi"

    @property
    def default_transport(self) -> str:
        """MPI kernels default to shared memory, as OSU runs on one host; a transport kernel's
        default is its own family (the library picks what it carries over)."""
        return "shm" if self.needs_mpi else self.family

    @property
    def primary(self) -> Metric:
        return self.metrics[0]

    @property
    def sized(self) -> bool:
        """Whether the kernel sweeps message sizes (a barrier does not)."""
        return self.default_sizes != "0"

    @property
    def plugin_path(self) -> Path | None:
        p = Path(self.executable)
        return p if p.is_absolute() else None


KERNELS: Registry[Kernel] = Registry("kernel", __name__)


def register_kernel(kernel: Kernel) -> Kernel:
    return KERNELS.add(kernel.name, kernel, origin=_caller_module())


def _caller_module() -> str:
    # The module that called register_kernel: the origin `fabench doctor` shows.
    return str(sys._getframe(2).f_globals.get("__name__", "?"))


def get_kernel(name: str) -> Kernel:
    return KERNELS.get(name)


def all_kernels() -> list[Kernel]:
    return [k for _, k in KERNELS.items()]


PT2PT_SIZES = "1:4M"
COLLECTIVE_SIZES = "1:1M"

__all__ = [
    "BANDWIDTH",
    "COLLECTIVE_SIZES",
    "GFLOPS",
    "KERNELS",
    "LATENCY",
    "MESSAGE_RATE",
    "PT2PT_SIZES",
    "Kernel",
    "all_kernels",
    "get_kernel",
    "register_kernel",
]
