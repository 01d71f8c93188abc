"""`fabench sim KERNEL`: the C kernel under SimGrid SMPI on a generated platform."""

from __future__ import annotations

import argparse
import sys

from ..campaign import run_bench
from ..kernels import get_kernel
from ..model.catalog import load_fabric
from ..model.collectives import ALGORITHMS
from ..mpi.base import Mpi
from ..plan import PlannedRun, add_kernel_options, settings_from_args
from ..report.table import header_lines, kernel_tables, summaries_json
from ..schedulers.simgrid import SimGridScheduler
from ..sim.smpi import SimSetup, smpi_algorithm
from ..transport import Transport
from . import COMMANDS
from ._common import add_out_argument, shown, store_of
from .model import add_topology_arguments, topology_spec


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
    p.set_defaults(func=main)


def warmup_sync_args(kind: str, mode: str) -> list[str]:
    """The kernel option, kept in the stored run's kernel_args. Only collectives synchronise
    before a call; the simulated clock is what every rank shares, so the clock start is valid
    here and nowhere else."""
    return ["--warmup-sync", mode] if kind == "collective" else []


def main(args: argparse.Namespace) -> int:
    kernel = get_kernel(args.kernel)
    fabric = load_fabric(args.fabric, args.out)
    setup = SimSetup(fabric=fabric, spec=topology_spec(args), nodes=args.nodes, ppn=args.ppn,
                     algorithm=args.algorithm, cores=args.cores)
    launcher = SimGridScheduler(setup)
    # the transport names the whole simulated setup, so reports keep setups apart
    coll = kernel.name.partition(".")[2]
    algo = smpi_algorithm(coll, args.algorithm)[0] if coll in ALGORITHMS else None
    transport = Transport("sim", ":".join(x for x in (fabric.name, args.topology, algo) if x))
    settings = settings_from_args(kernel, args,
                                  extra=warmup_sync_args(kernel.kind, args.warmup_sync))
    planned = PlannedRun(kernel, transport, setup.ranks, Mpi("simgrid"), settings=settings,
                         timeout_s=args.timeout)
    outcome = run_bench(planned, launcher, store_of(args))
    if args.json:
        ctx = {"kernel": kernel.name, "fabric": fabric.name, "topology": args.topology,
               "nodes": args.nodes, "ppn": args.ppn, "simulated": True,
               "run_id": outcome.run_id, "status": outcome.status}
        for line in summaries_json(kernel.name, outcome.results, ctx):
            print(line)
    else:
        for line in header_lines(f"fabench sim {kernel.name} {launcher.describe()}",
                                 outcome.notes):
            print(line)
        for line in kernel_tables(kernel.name, outcome.results):
            print(line)
        print(f"# run {outcome.run_id} stored in {shown(store_of(args))} (simulated)")
    if outcome.status != "ok":
        print(f"fabench: {kernel.name} {outcome.status}: {outcome.reason}", file=sys.stderr)
        return 1
    return 0
