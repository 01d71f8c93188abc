"""`fabench sim KERNEL`: the C kernel under SimGrid SMPI on a generated platform."""

from __future__ import annotations

import argparse
import sys

from ..kernels import get_kernel
from ..kernels.transport_request import Transport
from ..model.catalog import load_fabric
from ..model.collectives import ALGORITHMS
from ..mpi.base import Mpi
from ..plan.plan import PlannedRun, settings_from_args
from ..report.table import header_lines, kernel_tables, summaries_json
from ..schedulers.simgrid import SimGridScheduler
from ..sim.smpi import SimSetup, smpi_algorithm
from ..util.units import check_timeout
from ._common import shown, store_of
from .campaign import run_bench
from .model import topology_spec


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
                         timeout_s=check_timeout(args.timeout))
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
