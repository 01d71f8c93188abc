"""`fabench report RUN...`: one self-contained HTML file, plus CSV and JSON beside it."""

import argparse
from pathlib import Path

from ..model.catalog import load_fabric
from ..report.build import report_for, write_report
from ..store import Store
from . import COMMANDS
from ._common import add_store_argument, output_dir, resolve_store


@COMMANDS.register("report")
def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = sub.add_parser(
        "report", help="HTML report (charts with CI bands, tables, comparisons) + CSV/JSON",
        description="Select runs as `fabench compare` does (run ids, c3, latest, shm, "
                    "kernel=mpi.bw,transport=tcp, ...; default: latest campaign) and write one "
                    "self-contained HTML file, with <name>.csv and <name>.json beside it.")
    p.add_argument("select", nargs="*", metavar="RUN", default=["latest"],
                   help="run id, campaign (c3), latest, transport, or KEY=VALUE filters")
    p.add_argument("-o", "--output", type=Path, help="HTML file (default: "
                   "<results dir>/report.html)")
    p.add_argument("--title", help="report title")
    p.add_argument("--fabric", "-f", metavar="NAME",
                   help="a fabric (saved, file or preset) for the HPL section's model: its "
                        "prediction beside each stored hpcc.hpl run (default: the fabric an "
                        "`hpl scaling` campaign was given, else none)")
    p.add_argument("--samples", action="store_true",
                   help="include every per-iteration time in the JSON export")
    add_store_argument(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    spath = resolve_store(args.store)
    out = args.output or output_dir(spath) / "report.html"
    fabric = load_fabric(args.fabric, output_dir(spath)) if args.fabric else None
    with Store(spath) as store:
        report = report_for(store, args.select, args.title, fabric)
    for path in write_report(report, out, samples=args.samples):
        print(f"# wrote {path}")
    for w in report.warnings:
        print(f"# warning: {w}")
    return 0
