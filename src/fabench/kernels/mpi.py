"""MPI kernels (native/mpi): point-to-point and collectives, OSU-style."""

from . import (
    BANDWIDTH,
    COLLECTIVE_SIZES,
    LATENCY,
    MESSAGE_RATE,
    PT2PT_SIZES,
    Kernel,
    register_kernel,
)

_PT2PT = {
    "latency": ((LATENCY,), "blocking ping-pong, half round trip", False),
    "bw": ((BANDWIDTH,), "window of non-blocking sends + 1-byte ack", False),
    "bibw": ((BANDWIDTH,), "bidirectional windowed bandwidth", False),
    "mbw_mr": ((BANDWIDTH, MESSAGE_RATE), "multi-pair bandwidth and message rate", True),
}
_COLLECTIVES = {
    "allreduce": "MPI_Allreduce (MPI_FLOAT, MPI_SUM)",
    "alltoall": "MPI_Alltoall, size = bytes per peer",
    "allgather": "MPI_Allgather, size = bytes per rank",
    "gather": "MPI_Gather to rank 0, size = bytes per rank",
    "bcast": "MPI_Bcast from rank 0",
    "reduce": "MPI_Reduce to rank 0 (MPI_FLOAT, MPI_SUM)",
    "barrier": "MPI_Barrier",
}

for _name, (_metrics, _desc, _even) in _PT2PT.items():
    register_kernel(Kernel(
        name=f"mpi.{_name}", family="mpi", kind="pt2pt", executable=f"fb-mpi-{_name}",
        metrics=_metrics, default_sizes=PT2PT_SIZES, even_ranks=_even, description=_desc,
        build_needs="an MPI compiler wrapper (mpicc) at build time",
    ))

for _name, _desc in _COLLECTIVES.items():
    register_kernel(Kernel(
        name=f"mpi.{_name}", family="mpi", kind="collective", executable=f"fb-mpi-{_name}",
        metrics=(LATENCY,), default_sizes="0" if _name == "barrier" else COLLECTIVE_SIZES,
        description=_desc, build_needs="an MPI compiler wrapper (mpicc) at build time",
    ))
