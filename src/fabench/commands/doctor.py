"""`fabench doctor`: what this host can measure.

Arguments only: fabench.actions.doctor does the work."""

import argparse

from . import COMMANDS


@COMMANDS.register("doctor")
def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = sub.add_parser("doctor", help="what this host can measure, and what is missing",
                       description="Probe MPIs, UCX, libfabric, RDMA devices, NICs, CPU "
                                   "topology, namespaces and tools; each missing item says "
                                   "why and how to get it.")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func="fabench.actions.doctor:main")
