"""`fabench compare A B`: B against A per message size, with confidence intervals."""

import argparse
import json

from ..analysis.compare import compare_selections, comparison_table
from ..errors import FabenchError
from ..matrix.stored import matrix_operands
from ..store.database import Store
from ._common import resolve_store
from .matrix import print_matrix_diff


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
