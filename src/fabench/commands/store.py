"""`fabench store check`: SQLite's integrity check and fabench's own invariants."""

import argparse
import json

from ..store_check import check_store
from . import COMMANDS
from ._common import add_store_argument, resolve_store


@COMMANDS.register("store")
def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = sub.add_parser("store", help="look after the result store (check)",
                       description="Look after the result store. See docs/store.md.")
    ssub = p.add_subparsers(dest="store_command", metavar="ACTION")
    ssub.required = True
    c = ssub.add_parser(
        "check", help="check a store: SQLite's integrity and fabench's invariants",
        description="Read the store without changing it: SQLite's integrity check, then "
                    "fabench's invariants (results refer to runs, runs to campaigns, sample "
                    "counts match their data, statuses and JSON columns are ones fabench "
                    "writes, ok runs hold results). Exit status: 0 sound, 3 problems found, "
                    "2 unreadable (not a store, damaged beyond reading, or written by a newer "
                    "fabench).")
    add_store_argument(c)
    c.add_argument("--json", action="store_true", help="the findings as one JSON object")
    c.set_defaults(func=check_main)


def check_main(args: argparse.Namespace) -> int:
    rep = check_store(resolve_store(args.store))
    if args.json:
        print(json.dumps(rep.to_json(), indent=1))
        return rep.exit_code
    print(f"# fabench store check: {rep.path}")
    if rep.version is not None:
        names = {"campaigns": "campaigns", "runs": "runs", "results": "results",
                 "samples": "sample series"}
        counts = ", ".join(f"{rep.counts[k]} {n}" for k, n in names.items() if k in rep.counts)
        print(f"# schema version {rep.version}; {counts}; {rep.counts.get('bytes', 0)} bytes")
    for check in rep.checks:
        found = [f for f in rep.findings if f.check == check and f.level == "problem"]
        print(f"{'PROBLEM' if found else 'ok':<8} {check}")
        for f in found:
            print(f"         {f.text}")
    for f in rep.findings:
        if f.check not in rep.checks and f.level == "problem":
            print(f"PROBLEM  {f.check}: {f.text}")
    for f in rep.findings:
        if f.level == "note":
            print(f"note     {f.text}")
    verdict = {0: "sound", 3: f"{len(rep.problems)} problem(s) found",
               2: "unreadable"}[rep.exit_code]
    print(f"# {verdict} (exit status {rep.exit_code})")
    return rep.exit_code
