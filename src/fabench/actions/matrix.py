"""`fabench matrix`: measure every pair of hosts, flag bad links and slow nodes (exit 3), infer
the switch groups; `fabench matrix advise --nodes K`: where a K-host job should run;
`fabench matrix csv`: a stored matrix as CSV."""

import argparse
import json
import sys
from pathlib import Path

from ..matrix.advise import advise
from ..matrix.diff import diff_lines
from ..matrix.export import matrix_csv, summary_lines
from ..matrix.locality import binding_lines
from ..matrix.measure import MatrixOptions, host_names, measure_matrix, parse_pairs
from ..matrix.stored import load_matrix, matrix_bindings
from ..util.units import check_timeout
from ._common import (
    resolve_store,
    scheduler_from,
    shown,
    store_of,
)


def main(args: argparse.Namespace) -> int:
    scheduler = scheduler_from(args.on, args.out)
    try:
        # `--pairs ''` is an empty list, not "every pair"
        pairs = (parse_pairs(args.pairs, host_names(scheduler))
                 if args.pairs is not None else None)
        opts = MatrixOptions(size=args.size, window=args.window, iterations=args.iterations,
                             lat_iterations=args.lat_iterations,
                             lat_warmup=max(1, args.lat_iterations // 10), mode=args.mode,
                             kernel=args.kernel, pairs=pairs,
                             retest=not args.no_retest, mpi=args.mpi,
                             transport=args.transport, hosts=args.hosts,
                             timeout_s=check_timeout(args.timeout), topology=args.topology,
                             groups=args.groups)
        out = measure_matrix(store_of(args), scheduler, opts, args.resume)
    finally:
        scheduler.close()
    for u in out.unreachable:
        print(f"fabench: {u.line}", file=sys.stderr)
    for p in out.passes:
        if p.status != "ok":
            print(f"fabench: {p.role} pass (run {p.run_id}) {p.status}: {p.reason}",
                  file=sys.stderr)
    if any(p.status != "ok" for p in out.passes):
        print(f"fabench: a pass did not finish; the directions it lacks are marked "
              f"unreachable: `fabench matrix --resume {out.campaign_id}` with the same --on "
              "measures them", file=sys.stderr)
    if args.json:
        print(json.dumps(out.to_json()))
    else:
        for line in summary_lines(out.to_json(), scheduler.describe()):
            print(line)
        print(f"# matrix stored in {shown(store_of(args))} (campaign {out.campaign_id})")
    return out.exit_status


def main_advise(args: argparse.Namespace) -> int:
    path = resolve_store(args.store)
    _, judgement = load_matrix(path, args.campaign)
    for line in advise(judgement, args.nodes).lines():
        print(line)
    for line in binding_lines(args.hwloc, args.nic, args.ppn,
                              *matrix_bindings(path, judgement)):
        print(line)
    return 0


def main_csv(args: argparse.Namespace) -> int:
    _, judgement = load_matrix(resolve_store(args.store), args.campaign)
    sys.stdout.write(matrix_csv(judgement))
    return 0


def main_compare(args: argparse.Namespace) -> int:
    path = resolve_store(args.store)
    return print_matrix_diff(path, args.before, args.after, args.all)


def print_matrix_diff(path: Path, before: int, after: int, show_all: bool) -> int:
    """Exit 3 when the second matrix has a verdict (still bad, or broken), as `matrix`."""
    lines, status = diff_lines(load_matrix(path, before)[1], load_matrix(path, after)[1],
                               show_all)
    for line in lines:
        print(line)
    return status
