"""`fabench doctor`: what this host can measure (MPI, UCX, libfabric, RDMA, NICs, tools,
kernels, plugins)."""
