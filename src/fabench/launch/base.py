"""The launcher interface and registry (backends register themselves by name)."""

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import FabenchError
from ..kernels import Kernel
from ..records import KernelOutput

RecordCallback = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class HostExec:
    """One host as a launcher sees it: how to run a command there, and where peers reach it.

    `prefix` runs a command on that host: () for this host, ("ip", "netns", "exec", NS) or an
    nsenter line for a testbed host, ("ssh", NAME) for a cluster node.
    """

    name: str
    address: str
    prefix: tuple[str, ...] = ()


@dataclass
class LaunchRequest:
    kernel: Kernel
    kernel_args: list[str]
    ranks: int = 2
    transport: str = "shm"
    mpi: str = "openmpi"
    env: dict[str, str] = field(default_factory=dict)
    timeout_s: float = 1800.0
    options: dict[str, Any] = field(default_factory=dict)  # launcher-specific (hosts, ...)


@dataclass
class LaunchResult:
    output: KernelOutput
    returncode: int
    command: list[str]
    stderr: str
    selected_transport: str | None = None
    selected_detail: str | None = None
    notes: list[str] = field(default_factory=list)
    oversubscribed: bool = False
    flags: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


class Launcher(ABC):
    name: str = ""
    # The campaign's results directory (--out), for launchers that leave files a user keeps
    # with the results (the slurm launcher's job scripts); None when unknown.
    results_dir: str | None = None
    # Whether the ranks run on this machine's CPUs (so a probe of this host describes them).
    ranks_here: bool = False

    @abstractmethod
    def run(self, req: LaunchRequest, on_record: RecordCallback | None = None) -> LaunchResult:
        """Run the kernel; call on_record for each JSON record as it arrives."""

    def describe(self) -> str:
        return self.name


_LAUNCHERS: dict[str, type[Launcher]] = {}
# Modules that register launchers; a module missing here (not yet written, or its optional
# dependency absent) simply does not offer its launcher.
_LAUNCHER_MODULES = ("local", "testbed", "hosts", "slurm", "simgrid")


def register_launcher(name: str) -> Callable[[type[Launcher]], type[Launcher]]:
    def deco(cls: type[Launcher]) -> type[Launcher]:
        cls.name = name
        _LAUNCHERS[name] = cls
        return cls
    return deco


def _load_all() -> None:
    for mod in _LAUNCHER_MODULES:
        try:
            importlib.import_module(f"{__package__}.{mod}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__package__}.{mod}":
                raise


def available_launchers() -> list[str]:
    _load_all()
    return sorted(_LAUNCHERS)


def get_launcher(name: str, **kwargs: Any) -> Launcher:
    _load_all()
    try:
        cls = _LAUNCHERS[name]
    except KeyError:
        raise FabenchError(
            f"unknown launcher {name!r}; available: {', '.join(sorted(_LAUNCHERS))}") from None
    return cls(**kwargs)
