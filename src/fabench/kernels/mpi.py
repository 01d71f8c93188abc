"""MPI kernels (native/mpi): point-to-point and collectives, OSU-style.

One kernel per mpi.* line of native/kernels.list (kernels.table), the list the build made the
executables from.
"""

from . import Kernel, register_kernel
from .table import rows_of

# The application proxies' own record fields (native/mpi/app.c), carried by JSON summaries.
APP_FIELDS = ("comm_fraction", "compute_us", "transposes", "faces", "grid")

for _row in rows_of({"mpi"}):
    register_kernel(Kernel(
        name=_row.name, family="mpi", kind=_row.kind, executable=_row.executable,
        metrics=_row.metrics, default_sizes=_row.sizes, even_ranks=_row.even_ranks,
        description=_row.description,
        build_needs="an MPI compiler wrapper (mpicc) at build time",
        summary_fields=APP_FIELDS if _row.kind == "app" else (),
    ))
