"""`fabench hpl nodes|scaling`: single-node HPL on every node (the node-consistency table);
HPL on 1, 2, 4 .. N nodes (efficiency against N, the model beside each)."""

import argparse
import json
import sys

from ..errors import FabenchError
from ..hpc.hpccinf import DEFAULT_MEMORY_FRACTION, DEFAULT_NB
from ..hpc.nodes import DEFAULT_THRESHOLD, run_nodes
from ..hpc.options import HpccOptions
from ..hpc.scaling import run_scaling
from ..model.catalog import load_fabric
from ..report.hpl import hpl_section, text_lines
from ..schedulers import DirectScheduler
from ..store import Store
from . import COMMANDS
from ._common import add_on_argument, add_out_argument, scheduler_from, shown, store_of


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

    s = hsub.add_parser("scaling", help="HPL on 1, 2, 4 .. N hosts as one campaign: "
                                        "efficiency against N, the model beside each")
    add_on_argument(s)
    s.add_argument("--nodes", help="node counts, comma-separated (default: 1, 2, 4 .. up to "
                                   "every host, and every host)")
    s.add_argument("--sizes", help="HPL's N: one for every count, or one per count (default: "
                                   "--memory-fraction of the memory of the machines the ranks "
                                   "are on)")
    s.add_argument("--memory-fraction", type=float, default=DEFAULT_MEMORY_FRACTION,
                   help=f"N fills this fraction of each node's memory (default "
                        f"{DEFAULT_MEMORY_FRACTION})")
    s.add_argument("--nb", type=int, default=DEFAULT_NB, help=f"HPL's NB (default {DEFAULT_NB})")
    s.add_argument("--ranks-per-node", type=int,
                   help="ranks on each node (default: its physical cores; 1 when the hosts "
                        "are one machine, a testbed)")
    s.add_argument("--peak", type=float, metavar="GFLOPS", help="the node's Rpeak (default: "
                                                                "read from the node)")
    s.add_argument("--blas", default="openblas",
                   help="openblas (default), system, or a directory holding libblas.so.3")
    s.add_argument("--fabric", "-f", metavar="NAME",
                   help="a calibrated fabric (saved, file or preset): the model's efficiency "
                        "beside each count, from the 1-node run (stored with the campaign, so "
                        "its report shows it too)")
    s.add_argument("--mpi", default="openmpi", help="MPI flavour (Debian's hpcc: openmpi)")
    s.add_argument("--transport", default="auto",
                   help="at every count (default auto: MPI's own choice, shared memory within "
                        "a node and the network across)")
    s.add_argument("--timeout", type=float, default=1800.0, help="seconds per run")
    s.add_argument("--json", action="store_true", help="the section as JSON (as the "
                                                       "report's 'hpl')")
    add_out_argument(s)
    s.set_defaults(func=cmd_scaling)


def cmd_nodes(args: argparse.Namespace) -> int:
    if not 0 < args.threshold < 1:
        raise FabenchError(f"--threshold must be a fraction in (0, 1), got {args.threshold}")
    opts = HpccOptions(memory_fraction=args.memory_fraction, nb=args.nb, peak=args.peak,
                       blas=args.blas)
    scheduler = scheduler_from(args.on, args.out, args.oversubscribe)
    try:
        if not isinstance(scheduler, DirectScheduler):
            raise FabenchError(f"hpl nodes runs under mpirun on each node; --on "
                               f"{scheduler.name} cannot place a run on one node")
        report = run_nodes(scheduler, store_of(args), opts, args.sizes,
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
        print(f"# runs stored in {shown(store_of(args))}")
    failed = [r for r in report.nodes if r.status != "ok"]
    for r in failed:
        print(f"fabench: hpl on {r.node} {r.status}: {r.reason}", file=sys.stderr)
    return 1 if failed or report.flagged else 0


def cmd_scaling(args: argparse.Namespace) -> int:
    opts = HpccOptions(memory_fraction=args.memory_fraction, nb=args.nb, peak=args.peak,
                       blas=args.blas)
    fabric = load_fabric(args.fabric, args.out) if args.fabric else None
    scheduler = scheduler_from(args.on, args.out, args.oversubscribe)
    try:
        if not isinstance(scheduler, DirectScheduler):
            raise FabenchError(f"hpl scaling places ranks on chosen hosts under mpirun; --on "
                               f"{scheduler.name} cannot")
        sc = run_scaling(scheduler, store_of(args), opts, args.sizes,
                         args.ranks_per_node, args.nodes, args.mpi, args.timeout, fabric,
                         args.transport)
        where = scheduler.describe()
    finally:
        scheduler.close()
    with Store(store_of(args)) as store:
        sec = hpl_section(store, store.runs(sc.campaign_id), fabric)
    if args.json:
        d = sec.to_json() if sec else {}
        print(json.dumps({**d, "campaign_id": sc.campaign_id, "nodes": sc.counts,
                          "ranks_per_node": sc.ranks_per_node,
                          "notes": [*sc.notes, *d.get("notes", [])]}))
    else:
        print(f"# fabench hpl scaling  on={where}  campaign {sc.campaign_id}  nodes "
              f"{','.join(map(str, sc.counts))}  {sc.ranks_per_node} rank(s) per node")
        for note in sc.notes:
            print(f"# {note}")
        for line in text_lines(sec) if sec else []:
            print(line)
        print(f"# runs stored in {shown(store_of(args))}; fabench report c{sc.campaign_id}")
    failed = [o for o in sc.outcomes if o.status != "ok"]
    for o in failed:
        print(f"fabench: hpl on {o.planned.ranks} ranks {o.status}: {o.reason}",
              file=sys.stderr)
    return 1 if failed or len(sc.outcomes) < len(sc.counts) else 0
