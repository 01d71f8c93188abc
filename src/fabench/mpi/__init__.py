"""MPI flavours: how to launch each MPI over a requested transport, and what it selected."""

from fabench.mpi import mpich as _mpich  # noqa: F401  (registers the flavour)
from fabench.mpi import openmpi as _openmpi  # noqa: F401  (registers the flavour)
from fabench.mpi.base import (
    MpiFlavour,
    MpiLaunch,
    SelectedTransport,
    UnsupportedTransport,
    available_flavours,
    flavour_names,
    get_flavour,
    register_flavour,
)
from fabench.mpi.mpich import Mpich
from fabench.mpi.openmpi import OpenMpi
from fabench.mpi.transport import Transport, parse_transport

__all__ = [
    "Mpich",
    "MpiFlavour",
    "MpiLaunch",
    "OpenMpi",
    "SelectedTransport",
    "Transport",
    "UnsupportedTransport",
    "available_flavours",
    "flavour_names",
    "get_flavour",
    "parse_transport",
    "register_flavour",
]
