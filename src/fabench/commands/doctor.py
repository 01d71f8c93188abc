"""`fabench doctor`: what this host can measure."""

import argparse
import json
from dataclasses import asdict

from ..doctor import run_checks
from . import COMMANDS


@COMMANDS.register("doctor")
def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = sub.add_parser("doctor", help="what this host can measure, and what is missing",
                       description="Probe MPIs, UCX, libfabric, RDMA devices, NICs, CPU "
                                   "topology, namespaces and tools; each missing item says "
                                   "why and how to get it.")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=main)


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
