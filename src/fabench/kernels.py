"""The registry of benchmark kernels: what each measures and how it is launched.

Adding a kernel = one `register_kernel(...)` call in the module of its family; the runner,
store and reports never name kernels.
"""

from dataclasses import dataclass, field

from .errors import FabenchError
from .metrics import BANDWIDTH, LATENCY, MESSAGE_RATE, Metric


@dataclass(frozen=True)
class Kernel:
    name: str  # "mpi.latency"
    family: str  # "mpi", "tcp", "udp", "ucx", "ofi", "verbs"
    kind: str  # "pt2pt" or "collective"
    executable: str  # file name under fabench/_native/<dir>/
    metrics: tuple[Metric, ...]
    default_sizes: str
    min_ranks: int = 2
    even_ranks: bool = False
    description: str = ""
    extra: dict[str, str] = field(default_factory=dict, hash=False, compare=False)

    @property
    def needs_mpi(self) -> bool:
        return self.family == "mpi"

    @property
    def default_transport(self) -> str:
        """MPI kernels default to shared memory, as OSU runs on one host; a transport kernel's
        default is its own family (the library picks what it carries over)."""
        return "shm" if self.needs_mpi else self.family

    @property
    def primary(self) -> Metric:
        return self.metrics[0]


_KERNELS: dict[str, Kernel] = {}


def register_kernel(kernel: Kernel) -> Kernel:
    if kernel.name in _KERNELS:
        raise ValueError(f"kernel {kernel.name} registered twice")
    _KERNELS[kernel.name] = kernel
    return kernel


def get_kernel(name: str) -> Kernel:
    _load_families()
    try:
        return _KERNELS[name]
    except KeyError:
        raise FabenchError(
            f"unknown kernel {name!r}; known kernels: {', '.join(sorted(_KERNELS))}"
        ) from None


def all_kernels() -> list[Kernel]:
    _load_families()
    return sorted(_KERNELS.values(), key=lambda k: k.name)


def _load_families() -> None:
    # Families register on import; importing here keeps the registry complete wherever used.
    from . import kernels_mpi  # noqa: F401

    try:
        from . import kernels_transport  # noqa: F401
    except ImportError:
        pass


PT2PT_SIZES = "1:4M"
COLLECTIVE_SIZES = "1:1M"

__all__ = [
    "BANDWIDTH",
    "COLLECTIVE_SIZES",
    "LATENCY",
    "MESSAGE_RATE",
    "PT2PT_SIZES",
    "Kernel",
    "all_kernels",
    "get_kernel",
    "register_kernel",
]
