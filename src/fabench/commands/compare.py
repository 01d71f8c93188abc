"""`fabench compare A B`: B against A per message size, with confidence intervals."""

import argparse
import json

from ..compare import DEFAULT_TOLERANCE, compare_selections, comparison_table
from ..errors import FabenchError
from ..matrix.stored import matrix_operands
from ..store import Store
from . import COMMANDS
from ._common import add_store_argument, resolve_store
from .matrix import print_matrix_diff


@COMMANDS.register("compare")
def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = sub.add_parser(
        "compare", help="B against A per size: difference, ratio, confidence interval, verdict",
        description="A and B select runs in the store: a run id (12), a campaign (c3, latest), "
                    "a transport (shm, tcp, ucx:posix) or KEY=VALUE filters joined by commas "
                    "(kernel, transport, mpi, ranks, campaign, run, repeat, selected, launcher, "
                    "label, source, env.NAME). Runs of one configuration are pooled; see "
                    "docs/statistics.md for the interval and the verdict rules. When A and B "
                    "both name stored matrices (c3 c7), they are compared per link as by "
                    "`fabench matrix compare` (exit 3 when B has a verdict).")
    p.add_argument("a", metavar="A", help="baseline selector; several joined by + are one side "
                                          "(e.g. 1+3+5: those runs, pooled as repeats)")
    p.add_argument("b", metavar="B", help="selector compared against A (+ joins, as for A)")
    p.add_argument("--metric", help="latency, bandwidth or message_rate (default: each "
                                    "kernel's primary metric)")
    p.add_argument("--kernel", help="only this kernel (e.g. mpi.latency)")
    p.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE,
                   help=f"relative band counted as no change (default {DEFAULT_TOLERANCE})")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_store_argument(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    path = resolve_store(args.store)
    matrices = matrix_operands(path, args.a, args.b)
    if matrices is not None:
        if args.metric or args.kernel or args.json:
            raise FabenchError("two matrices are compared per link (fabench matrix compare): "
                               "--metric, --kernel and --json do not apply")
        return print_matrix_diff(path, *matrices, show_all=False)
    with Store(path) as store:
        comps = compare_selections(store, args.a.split("+"), args.b.split("+"),
                                   metric=args.metric,
                                   kernel=args.kernel, tolerance=args.tolerance)
    if args.json:
        print(json.dumps([c.as_dict() for c in comps], indent=1))
        return 0
    for c in comps:
        for line in comparison_table(c):
            print(line)
        print()
    return 0
