"""`fabench hpl nodes`: single-node HPL on every node, the node-consistency table."""

import argparse
import json
import sys

from ..errors import FabenchError
from ..hpc.hpccinf import DEFAULT_MEMORY_FRACTION, DEFAULT_NB
from ..hpc.nodes import DEFAULT_THRESHOLD, run_nodes
from ..hpc.options import HpccOptions
from ..schedulers import DirectScheduler
from . import COMMANDS
from ._common import add_on_argument, add_out_argument, scheduler_from, store_path


@COMMANDS.register("hpl")
def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = sub.add_parser("hpl", help="HPL (hpcc) per node: the node-consistency check",
                       description="Run HPL through Debian's hpcc. See docs/hpc.md.")
    hsub = p.add_subparsers(dest="hpl_cmd", required=True)
    n = hsub.add_parser("nodes", help="single-node HPL on every node, min/max/spread/CV, "
                                      "slow nodes flagged")
    add_on_argument(n)
    n.add_argument("--nodes", help="comma-separated node names (default: every node)")
    n.add_argument("--sizes", help="HPL's N (default: --memory-fraction of each node's "
                                    "memory)")
    n.add_argument("--memory-fraction", type=float, default=DEFAULT_MEMORY_FRACTION,
                   help=f"N fills this fraction of the node's memory (default "
                        f"{DEFAULT_MEMORY_FRACTION}, document 000's rule)")
    n.add_argument("--nb", type=int, default=DEFAULT_NB, help=f"HPL's NB (default {DEFAULT_NB})")
    n.add_argument("--ranks-per-node", type=int,
                   help="ranks on each node (default: its physical cores)")
    n.add_argument("--peak", type=float, metavar="GFLOPS",
                   help="the node's Rpeak (default: sockets x cores x GHz x FLOPs/cycle, "
                        "read from the node)")
    n.add_argument("--blas", default="openblas",
                   help="openblas (default), system (the host's alternative), or a directory "
                        "holding libblas.so.3")
    n.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD, metavar="FRACTION",
                   help=f"flag nodes this fraction below the median (default "
                        f"{DEFAULT_THRESHOLD}: ~70x the 0.07 %% spread of document 000's "
                        "consistent nodes)")
    n.add_argument("--sequential", action="store_true",
                   help="one node after the other (default: all at once)")
    n.add_argument("--mpi", default="openmpi", help="MPI flavour (Debian's hpcc: openmpi)")
    n.add_argument("--timeout", type=float, default=1800.0, help="seconds per node")
    n.add_argument("--json", action="store_true",
                   help="the table as JSON (a node table `model hpl --node-table` reads)")
    add_out_argument(n)
    n.set_defaults(func=cmd_nodes)


def cmd_nodes(args: argparse.Namespace) -> int:
    if not 0 < args.threshold < 1:
        raise FabenchError(f"--threshold must be a fraction in (0, 1), got {args.threshold}")
    opts = HpccOptions(memory_fraction=args.memory_fraction, nb=args.nb, peak=args.peak,
                       blas=args.blas)
    scheduler = scheduler_from(args.on, args.out)
    try:
        if not isinstance(scheduler, DirectScheduler):
            raise FabenchError(f"hpl nodes runs under mpirun on each node; --on "
                               f"{scheduler.name} cannot place a run on one node")
        report = run_nodes(scheduler, store_path(args.out), opts, args.sizes,
                           args.ranks_per_node, args.mpi, not args.sequential, args.timeout,
                           args.threshold,
                           [s for s in args.nodes.split(",") if s] if args.nodes else None)
        where = scheduler.describe()
    finally:
        scheduler.close()
    if args.json:
        print(json.dumps(report.to_json()))
    else:
        print(f"# fabench hpl nodes  on={where}  "
              f"{'concurrent' if not args.sequential else 'sequential'}")
        for line in report.lines():
            print(line)
        print(f"# runs stored in {store_path(args.out)}")
    failed = [r for r in report.nodes if r.status != "ok"]
    for r in failed:
        print(f"fabench: hpl on {r.node} {r.status}: {r.reason}", file=sys.stderr)
    return 1 if failed or report.flagged else 0
