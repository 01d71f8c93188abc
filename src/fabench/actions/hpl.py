"""`fabench hpl nodes|scaling`: single-node HPL on every node (the node-consistency table);
HPL on 1, 2, 4 .. N nodes (efficiency against N, the model beside each)."""

import argparse
import json
import sys

from ..errors import FabenchError
from ..hpc.options import HpccOptions
from ..hpl.nodes import run_nodes
from ..hpl.scaling import run_scaling
from ..model.catalog import load_fabric
from ..report.hpl import hpl_section, text_lines
from ..schedulers import DirectScheduler
from ..store.database import Store
from ..util.units import check_timeout
from ._common import scheduler_from, shown, store_of


def cmd_nodes(args: argparse.Namespace) -> int:
    timeout = check_timeout(args.timeout)
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
                           args.ranks_per_node, args.mpi, not args.sequential, timeout,
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
    timeout = check_timeout(args.timeout)
    opts = HpccOptions(memory_fraction=args.memory_fraction, nb=args.nb, peak=args.peak,
                       blas=args.blas)
    fabric = load_fabric(args.fabric, args.out) if args.fabric else None
    scheduler = scheduler_from(args.on, args.out, args.oversubscribe)
    try:
        if not isinstance(scheduler, DirectScheduler):
            raise FabenchError(f"hpl scaling places ranks on chosen hosts under mpirun; --on "
                               f"{scheduler.name} cannot")
        sc = run_scaling(scheduler, store_of(args), opts, args.sizes,
                         args.ranks_per_node, args.nodes, args.mpi, timeout, fabric,
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
