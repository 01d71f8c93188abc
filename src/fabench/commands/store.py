"""`fabench store check`: SQLite's integrity check and fabench's own invariants.

Arguments only: fabench.actions.store does the work."""

import argparse
from pathlib import Path

from . import COMMANDS
from ._common import add_store_argument, store_location


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
                    "writes, ok runs hold results, no row written twice). On a PostgreSQL "
                    "store (--store postgresql://...), what SQL checks there, read-only: "
                    "schema version, orphan rows, duplicates, statuses, runs left running. "
                    "Exit status: 0 sound, 3 problems found, 2 unreadable (not a store, "
                    "damaged beyond reading, written by a newer fabench, or a server that "
                    "refuses the connection).")
    add_store_argument(c)
    c.add_argument("--json", action="store_true", help="the findings as one JSON object")
    c.set_defaults(func="fabench.actions.store:check_main")
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
    cp.set_defaults(func="fabench.actions.store:copy_main")
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
    ex.set_defaults(func="fabench.actions.store:export_main")
