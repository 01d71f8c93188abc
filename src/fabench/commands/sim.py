"""`fabench sim KERNEL`: the C kernel under SimGrid SMPI on a generated platform.

Arguments only: fabench.actions.sim does the work."""

from __future__ import annotations

import argparse

from ..plan.kernel_settings import add_kernel_options
from . import COMMANDS
from ._common import add_out_argument
from .model import add_topology_arguments


@COMMANDS.register("sim")
def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "sim", help="simulate a kernel with SimGrid on a fat tree or torus",
        description="Run the same C kernel, built with smpicc, under smpirun on a platform "
                    "generated from a fabric (preset or calibration). The collective's "
                    "algorithm is always pinned. Results go to the store like measured runs, "
                    "flagged 'simulated'.")
    p.add_argument("kernel", help="e.g. mpi.allreduce, mpi.latency")
    p.add_argument("--fabric", "-f", required=True, help="preset or calibration")
    p.add_argument("--nodes", "-N", type=int, required=True)
    p.add_argument("--ppn", type=int, default=1)
    add_topology_arguments(p)
    p.add_argument("--algorithm", "-a",
                   help="model name: ring, recursive_doubling, rabenseifner, binomial, "
                        "pairwise, bruck, linear, scatter_allgather (default: an O(P) one)")
    p.add_argument("--cores", type=int, default=None,
                   help="cores the nodes shared when the measurement to compare with ran on "
                        "emulated nodes of one machine: endpoint overheads stretch as the "
                        "fabric's contention calibration says (default: a core per rank)")
    add_kernel_options(p, defaults={"iterations": 1, "warmup": 1}, help={
        "sizes": "sizes (default: the kernel's)",
        "iterations": "simulated iterations per size (default 1: the simulator is "
                      "deterministic, after the warm-up call repeats give the same time and "
                      "only cost wall time, ~6 s per call at 4096 ranks)",
        "warmup": "untimed iterations per size (default 1)"})
    p.add_argument("--warmup-sync", choices=("clock", "barrier"), default="clock",
                   help="collectives: how a warm-up call starts. clock (default): every rank "
                        "at one instant of the simulated clock, 2 (P - 1) messages; barrier: "
                        "after MPI_Barrier as the timed call (P log2 P messages, most of the "
                        "wall time at thousands of ranks). Same results to 0.01 us at 240 ranks "
                        "(docs/model.md)")
    p.add_argument("--timeout", type=float, default=1800.0)
    p.add_argument("--json", action="store_true")
    add_out_argument(p)
    p.set_defaults(func="fabench.actions.sim:main")
