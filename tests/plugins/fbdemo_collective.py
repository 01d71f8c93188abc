"""A site's own collective (site_scan.c, built by the test) registered as a kernel: its
program's absolute path comes from FBDEMO_SCAN_EXE."""

import os

from fabench.kernels import LATENCY, Kernel, register_kernel

register_kernel(Kernel(
    name="site.scan", family="mpi", kind="collective", start="mpi",
    executable=os.environ["FBDEMO_SCAN_EXE"], metrics=(LATENCY,), default_sizes="4:1K",
    description="MPI_Scan (MPI_SUM), a site's own collective"))
