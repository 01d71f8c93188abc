"""`fabench report RUN...`: one self-contained HTML file, plus CSV and JSON beside it.

Arguments only: fabench.actions.report does the work."""

import argparse
from pathlib import Path

from . import COMMANDS
from ._common import add_store_argument


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
    p.set_defaults(func="fabench.actions.report:main")
