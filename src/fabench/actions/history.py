"""`fabench history NAME`: one campaign name's series over time, and its changes."""

import argparse
import json
import sys

from ..analysis.history import history, history_lines, to_json
from ..report.trend import write_history_html
from ..store.database import Store
from ._common import resolve_store


def main(args: argparse.Namespace) -> int:
    with Store(resolve_store(args.store)) as store:
        h = history(store, args.name, until=args.until, last=args.last, alpha=args.alpha,
                    tolerance=args.tolerance, min_nights=args.min_nights,
                    permutations=args.permutations)
    if args.html is not None:
        print(f"# wrote {write_history_html(h, args.html)}", file=sys.stderr)
    if args.json:
        print(json.dumps(to_json(h), indent=1))
    else:
        for line in history_lines(h):
            print(line)
    return h.exit_code
