"""The HPC Challenge suite (Debian's hpcc) as kernels: one hpcc run, stored as the kernel
asked for. Each starts through the hpcc starter (fabench.starters.hpcc), which writes the
input, runs hpcc under the MPI flavour's mpirun and turns its output file into records."""

from ..hpc.options import HPCC_PROGRAM
from ..metrics import BANDWIDTH, GFLOPS, LATENCY
from . import Kernel, register_kernel

NEEDS = "Debian packages hpcc and libopenblas0-pthread (scripts/install-deps.sh)"
# Sizes: HPL's N (--sizes N; default: --memory-fraction of the node's memory); the other
# kernels' sizes are hpcc's own, derived from HPL's largest N.
_KERNELS = (
    ("hpcc.hpl", (GFLOPS,), 1, "HPL (LU solve of a dense N x N system), Gflops",
     ("efficiency", "efficiency_stardgemm", "peak_gflops", "residual", "nb", "p", "q",
      "nodes", "blas")),
    ("hpcc.ptrans", (BANDWIDTH,), 1, "PTRANS parallel matrix transpose, bandwidth",
     ("passed",)),
    ("hpcc.mpifft", (GFLOPS,), 1, "MPI FFT of a distributed complex vector, Gflops",
     ("max_err",)),
    ("hpcc.stardgemm", (GFLOPS,), 1, "StarDGEMM: DGEMM on every rank at once, Gflops per rank",
     ("min_gflops", "max_gflops", "efficiency")),
    ("hpcc.ring", (LATENCY, BANDWIDTH), 2,
     "b_eff natural- and random-ring latency (8 B) and bandwidth (2 MB)", ("order",)),
)

for _name, _metrics, _min, _desc, _fields in _KERNELS:
    register_kernel(Kernel(
        name=_name, family="hpcc", kind="app", executable=HPCC_PROGRAM,
        metrics=_metrics, default_sizes="auto", min_ranks=_min, description=_desc,
        build_needs=NEEDS, starter="hpcc", summary_fields=_fields))
