"""What a result depends on besides the code: host, libraries, settings, and load."""

import os
import platform
import re
import shutil
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import __version__
from .process import output_of

# Environment prefixes that steer transports; anything else in the environment is not recorded.
STEERING_PREFIXES = ("OMPI_", "OPAL_", "PMIX_MCA_", "PRTE_MCA_", "UCX_", "FI_", "MPIR_CVAR_",
                     "MPICH_", "HYDRA_", "I_MPI_", "SLURM_JOB", "FABENCH_")
_SYSCTLS = (
    "net/core/rmem_max", "net/core/wmem_max", "net/ipv4/tcp_rmem", "net/ipv4/tcp_wmem",
    "net/ipv4/tcp_congestion_control", "net/ipv4/tcp_low_latency", "kernel/numa_balancing",
)


def _read(path: str | Path) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def cpu_model() -> str:
    text = _read("/proc/cpuinfo") or ""
    m = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    return m.group(1).strip() if m else platform.processor() or "unknown"


def load_snapshot() -> dict[str, Any]:
    """Load at one instant: a busy host explains a noisy run, so every run records two."""
    snap: dict[str, Any] = {"time": time.time()}
    try:
        snap["loadavg"] = list(os.getloadavg())
    except OSError:
        pass
    psi = _read("/proc/pressure/cpu")
    if psi:
        for line in psi.splitlines():
            kind, *fields = line.split()
            snap[f"cpu_pressure_{kind}"] = dict(f.split("=", 1) for f in fields)
    return snap


def interfaces() -> list[dict[str, Any]]:
    nics = []
    for dev in sorted(Path("/sys/class/net").glob("*")):
        nics.append({
            "name": dev.name, "mtu": _read(dev / "mtu"), "operstate": _read(dev / "operstate"),
            "speed_mbps": _read(dev / "speed"), "driver": _driver(dev),
            "numa_node": _read(dev / "device" / "numa_node"),
        })
    return nics


def _driver(dev: Path) -> str | None:
    link = dev / "device" / "driver"
    return link.resolve().name if link.exists() else None


@dataclass(frozen=True)
class VersionProbe:
    """How one library tells its version: the commands to try (the first that answers counts)
    and the pattern whose first group is the version; without a pattern, or when it does not
    match, the answer's first line (a build's own wording is better than nothing)."""

    name: str
    commands: tuple[tuple[str, ...], ...]
    pattern: str | None = None
    first_line_fallback: bool = True

    def version(self) -> str | None:
        # Once per process for the same programs and search paths: `fi_info --version` takes
        # 0.2 s of wall time here (a provider library calibrates a clock when it loads), in
        # every campaign's provenance, and a process that runs campaigns one after another
        # (a test, a long acceptance) asked again each time.
        key = (self, os.environ.get("PATH"), os.environ.get("LD_LIBRARY_PATH"),
               tuple(_program_stamp(cmd[0]) for cmd in self.commands))
        if key not in _VERSIONS:
            _VERSIONS[key] = self._ask()
        return _VERSIONS[key]

    def _ask(self) -> str | None:
        text = next((out for cmd in self.commands if (out := output_of(list(cmd)))), None)
        if not text:
            return None
        m = re.search(self.pattern, text) if self.pattern else None
        if m:
            return m.group(1)
        return text.splitlines()[0] if self.first_line_fallback else None


def _program_stamp(program: str) -> tuple[str, int, int] | None:
    """Which file a program name runs, and its change time and size: a reinstalled library
    package changes its programs' stamps too."""
    path = shutil.which(program)
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return os.path.realpath(path), st.st_ctime_ns, st.st_size


_VERSIONS: dict[tuple[object, ...], str | None] = {}

LIBRARIES = (
    VersionProbe("openmpi", (("mpirun.openmpi", "--version"), ("mpirun", "--version"))),
    VersionProbe("mpich", (("mpichversion",),), r"MPICH Version:\s*(\S+)"),
    VersionProbe("ucx", (("ucx_info", "-v"),), r"Version\s+(\S+)", first_line_fallback=False),
    VersionProbe("libfabric", (("fi_info", "--version"),), r"libfabric:\s*(\S+)",
                 first_line_fallback=False),
)


def library_versions() -> dict[str, str | None]:
    return {probe.name: probe.version() for probe in LIBRARIES}


def git_revision(start: str | Path | None = None) -> str | None:
    """``git describe`` of the checkout holding ``start`` (default: this package), or None when
    it is not in one, git is missing, or there is no commit yet."""
    here = Path(start or Path(__file__).parent).resolve()
    for parent in (here, *here.parents):
        if (parent / ".git").exists():
            return output_of(["git", "-C", str(parent), "describe", "--always", "--dirty"])
    return None


def steering_environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if env is None else env)
    return {k: v for k, v in sorted(env.items()) if k.startswith(STEERING_PREFIXES)}


def run_environment(set_by_fabench: Mapping[str, str],
                    inherited: Mapping[str, str] | None = None) -> dict[str, dict[str, str]]:
    """The steering variables a run's processes saw, and where each came from.

    ``environment``: what the ranks saw (fabench's value wins over an exported one, as in the
    launchers); ``environment_set``: what fabench set; ``environment_inherited``: what came
    from the caller's environment (``os.environ`` by default), including values fabench then
    overrode.
    """
    mine = steering_environment(set_by_fabench)
    theirs = steering_environment(inherited)
    return {"environment": dict(sorted({**theirs, **mine}.items())), "environment_set": mine,
            "environment_inherited": theirs}


def host_provenance() -> dict[str, Any]:
    """Facts about the host that do not change between the runs of one campaign."""
    uname = platform.uname()
    return {
        "host": socket.gethostname(),
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "kernel": f"{uname.system} {uname.release}",
        "machine": uname.machine,
        "python": platform.python_version(),
        "fabench_version": __version__,
        "git_revision": git_revision(),
        "libraries": library_versions(),
        "interfaces": interfaces(),
        "sysctls": {s.replace("/", "."): _read(f"/proc/sys/{s}") for s in _SYSCTLS},
        "smt_active": _read("/sys/devices/system/cpu/smt/active"),
        "governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
    }
