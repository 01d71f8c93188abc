"""MPI flavours: how to launch each MPI over a requested transport, and what it selected.
Every module of this package that defines a flavour registers it (fabench.util.registry)."""
