"""Where the compiled kernels are."""

from __future__ import annotations

from pathlib import Path

from ..errors import FabenchError
from ..host.native import mpi_flavours_built, native_root
from . import Kernel


def kernel_executable(kernel: Kernel, mpi: str | None = None) -> Path:
    """The kernel's program: a plugin's own absolute path, else the build's, per MPI flavour
    for MPI kernels."""
    if kernel.plugin_path is not None:
        if not kernel.plugin_path.is_file():
            raise FabenchError(f"kernel {kernel.name}: its program {kernel.plugin_path} is "
                               "missing (the plugin that registers it must build it)")
        return kernel.plugin_path
    root = native_root()
    path = root / (mpi or "") / kernel.executable if kernel.needs_mpi else \
        root / "bin" / kernel.executable
    if not path.is_file():
        where = f"for MPI flavour {mpi!r} " if kernel.needs_mpi else ""
        built = mpi_flavours_built()
        hint = (f" (MPI flavours built: {', '.join(built)})" if kernel.needs_mpi and built
                else " - was fabench installed with `pip install .` on a host with the "
                     "compilers/libraries it needs? `fabench doctor` tells what is missing")
        raise FabenchError(f"kernel {kernel.name} is not built {where}at {path}{hint}")
    return path


def kernel_status(kernel: Kernel) -> tuple[bool, str]:
    """Whether a kernel is built here, and what it needs when it is not."""
    if kernel.plugin_path is not None:
        ok = kernel.plugin_path.is_file()
        if kernel.starter:  # another program, run by the kernel's own starter (hpcc)
            return ok, f"program {kernel.plugin_path}" + (
                "" if ok else f" missing: needs {kernel.build_needs or 'its package'}")
        return ok, f"plugin program {kernel.plugin_path}" + ("" if ok else " missing")
    if kernel.needs_mpi:
        built = [m for m in mpi_flavours_built()
                 if (native_root() / m / kernel.executable).is_file()]
        if built:
            return True, f"built for {', '.join(built)}"
        return False, f"not built: needs {kernel.build_needs or 'an MPI compiler'}"
    if not (native_root() / "bin" / kernel.executable).is_file():
        return False, f"not built: needs {kernel.build_needs or 'its library'}"
    return True, "built"
