"""`fabench report RUN...`: one self-contained HTML file, plus CSV and JSON beside it."""

import argparse

from ..model.catalog import load_fabric
from ..report.build import report_for, write_report
from ..store.database import Store
from ._common import output_dir, resolve_store


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
