"""`fabench store check`: SQLite's integrity check and fabench's own invariants."""

import argparse
import json

from ..store_check import check_store
from ._common import resolve_store


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
