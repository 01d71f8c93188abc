"""Where the compiled kernels are installed (the package's `_native` folder, or
$FABENCH_NATIVE_DIR), and which MPI flavours they were built for."""

from __future__ import annotations

import os
from pathlib import Path


def native_root() -> Path:
    override = os.environ.get("FABENCH_NATIVE_DIR")
    return Path(override) if override else Path(__file__).resolve().parent.parent / "_native"


# Kernel builds that are not started by an mpirun: simgrid's run under smpirun only.
NOT_MPIRUN = {"bin", "simgrid"}


def mpi_flavours_built() -> list[str]:
    """MPI flavours whose kernels are built and run under that flavour's mpirun."""
    root = native_root()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and p.name not in NOT_MPIRUN
                  and any(p.glob("fb-mpi-*")))
