"""`fabench import osu|imb|iperf3|sockperf FILE...`: peer tools' output into the store.

Arguments only: fabench.actions.import_ does the work."""

import argparse
from pathlib import Path

from ..util.labels import label_arg
from ..util.registry import package_module_names
from ..util.units import parse_size
from . import COMMANDS
from ._common import add_store_argument


@COMMANDS.register("import")
def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = sub.add_parser(
        "import", help="import OSU, IMB, iperf3 or sockperf output into the store",
        description="Read a peer tool's output and store it as a campaign of runs (launcher "
                    "import:TOOL), so `fabench compare` and `fabench report` treat it like "
                    "fabench's own. Aggregates (OSU/IMB means) have no per-iteration samples: "
                    "see docs/statistics.md for how they are compared.")
    # the importers' module names, not their registry: loading it for a --help text cost 30
    # ms of every start-up (each importer imports the store and the records)
    tools = [n for n in package_module_names("fabench.importers") if n != "base"]
    p.add_argument("tool", help="one of: " + ", ".join(tools) + " (or a site plugin's)")
    p.add_argument("files", nargs="+", type=Path, metavar="FILE")
    p.add_argument("--transport", type=label_arg,
                   help="what the results ran over (e.g. ib, roce, tcp); "
                        "default: the tool's name or protocol")
    p.add_argument("--label", type=label_arg,
                   help="a name for these results in reports (e.g. 'cluster A')")
    p.add_argument("--mpi", default="unknown", type=label_arg,
                   help="MPI library of OSU/IMB results")
    p.add_argument("--ranks", type=int, help="ranks of results whose file does not say (OSU "
                                             "collectives and mbw_mr); required for them")
    p.add_argument("--strict", action="store_true",
                   help="reject the whole import when any row fails the value checks "
                        "(default: reject that row, naming its line)")
    p.add_argument("--size", type=parse_size, help="message size, for output that does not "
                                                 "print it (sockperf's summary)")
    add_store_argument(p)
    p.set_defaults(func="fabench.actions.import_:main")
