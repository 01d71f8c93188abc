"""`fabench store check|copy|export`: look after the result store, move it, export it."""

import argparse
import json
from pathlib import Path

from ..errors import FabenchError
from ..store import Store
from ..store_check import check_store
from ..store_copy import copy_store
from ..store_export import export_openmetrics, export_parquet
from . import COMMANDS
from ._common import add_store_argument, resolve_store, store_location


@COMMANDS.register("store")
def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = sub.add_parser("store", help="look after the result store (check, copy, export)",
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
    cp = ssub.add_parser(
        "copy", help="copy a whole store between SQLite and PostgreSQL",
        description="Copy every campaign, run, result and sample of SRC into DST, ids and "
                    "values unchanged, in one transaction; then compare the two row by row. "
                    "DST must be empty: a new SQLite file or results directory, or an empty "
                    "PostgreSQL database. SRC and DST: a results directory, an SQLite file, or "
                    "a postgresql://user@host/db URL. Exit status 0 copied and identical, 2 "
                    "refused or failed (DST unchanged).")
    cp.add_argument("src", type=store_location, metavar="SRC")
    cp.add_argument("dst", type=store_location, metavar="DST")
    cp.set_defaults(func=copy_main)
    ex = ssub.add_parser(
        "export", help="export for analysis: Parquet, or OpenMetrics of the latest medians",
        description="parquet DIR: samples.parquet (one row per sample), runs.parquet, "
                    "campaigns.parquet and provenance.parquet, readable by pandas, polars and "
                    "DuckDB. openmetrics FILE: the median of each metric's latest run in the "
                    "OpenMetrics text format, for a Prometheus node-exporter textfile "
                    "collector (written to a temporary file, then renamed into place).")
    ex.add_argument("format", choices=("parquet", "openmetrics"))
    ex.add_argument("target", type=Path, metavar="DIR|FILE")
    add_store_argument(ex)
    ex.set_defaults(func=export_main)


def check_main(args: argparse.Namespace) -> int:
    if isinstance(args.store, str):  # a postgresql:// URL
        raise FabenchError("`store check` reads SQLite stores; a PostgreSQL server checks its "
                           "own pages and enforces the store's foreign keys on every write "
                           "(`fabench store copy URL FILE` and a check of FILE reads every "
                           "sample's CRC)")
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


def copy_main(args: argparse.Namespace) -> int:
    src_loc = resolve_store(args.src)
    dst_loc = resolve_store(args.dst, must_exist=False)
    if src_loc == dst_loc:
        raise FabenchError("SRC and DST are the same store")
    with Store(src_loc) as src, Store(dst_loc) as dst:
        rep = copy_store(src, dst)
    rows = ", ".join(f"{n} {t}" for t, n in rep.rows.items())
    print(f"# copied {rep.source} -> {rep.target}: {rows}; {rep.sample_values} sample values; "
          "compared row by row: identical")
    return 0


def export_main(args: argparse.Namespace) -> int:
    with Store(resolve_store(args.store)) as store:
        if args.format == "parquet":
            files = export_parquet(store, args.target)
        else:
            files = [export_openmetrics(store, args.target)]
    for f in files:
        print(f"# wrote {f}")
    return 0
