"""Launchers: start a kernel somewhere (this host, a testbed, a hostfile, Slurm, SimGrid)."""

from .base import (
    HostExec,
    Launcher,
    LaunchRequest,
    LaunchResult,
    available_launchers,
    get_launcher,
    register_launcher,
)

__all__ = [
    "HostExec",
    "LaunchRequest",
    "LaunchResult",
    "Launcher",
    "available_launchers",
    "get_launcher",
    "register_launcher",
]
