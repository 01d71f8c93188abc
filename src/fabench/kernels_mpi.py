"""MPI kernels (native/mpi): point-to-point and collectives, OSU-style.

One kernel per mpi.* line of native/kernels.list (kernel_table), the list the build made the
executables from.
"""

from .kernel_table import rows_of
from .kernels import Kernel, register_kernel

for _row in rows_of({"mpi"}):
    register_kernel(Kernel(
        name=_row.name, family="mpi", kind=_row.kind, executable=_row.executable,
        metrics=_row.metrics, default_sizes=_row.sizes, even_ranks=_row.even_ranks,
        description=_row.description,
    ))
