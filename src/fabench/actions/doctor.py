"""`fabench doctor`: what this host can measure."""

import argparse
import json
from dataclasses import asdict

from ..doctor.checks import run_checks


def main(args: argparse.Namespace) -> int:
    checks = run_checks()
    if args.json:
        print(json.dumps([asdict(c) for c in checks], indent=1))
        return 0
    section = None
    for c in checks:
        if c.section != section:
            section = c.section
            print(f"\n{section}")
        mark = "ok " if c.ok else "-- "
        print(f"  {mark} {c.name:<22} {c.detail}")
        if not c.ok and c.fix:
            print(f"  {'':<26} how: {c.fix}")
    return 0
