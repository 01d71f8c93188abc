"""`fabench history NAME`: one campaign name's series over time, and its changes.

Arguments only: fabench.actions.history does the work."""

import argparse
from pathlib import Path

from ..choices import HISTORY_ALPHA as ALPHA
from ..choices import HISTORY_MIN_NIGHTS as MIN_NIGHTS
from ..choices import HISTORY_PERMUTATIONS as PERMUTATIONS
from ..choices import HISTORY_TOLERANCE as TOLERANCE
from . import COMMANDS
from ._common import add_store_argument


@COMMANDS.register("history")
def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = sub.add_parser(
        "history", help="a campaign name's series over time; regressions and improvements",
        description="The campaigns named NAME (or whose spec digest starts with NAME) form a "
                    "series. Per metric (kernel, transport, MPI, ranks, settings, size): the "
                    "median of each campaign with its 95 %% interval, and the changes called "
                    "by binary segmentation with a permutation test, each with its date, size "
                    "and interval and what changed in provenance with it (docs/history.md). "
                    "Exit status: 0 no regression stands, 3 a regression stands (the newest "
                    "nights are worse than those before them), 2 an error.")
    p.add_argument("name", metavar="NAME", help="campaign name, or a spec digest prefix")
    p.add_argument("--until", type=int, metavar="CAMPAIGN",
                   help="the series as it stood after this campaign id")
    p.add_argument("--last", type=int, metavar="N",
                   help="only the newest N campaigns of the series (default: all)")
    p.add_argument("--tolerance", type=float, default=TOLERANCE,
                   help=f"smallest relative change called (default {TOLERANCE}: a policy, "
                        "set it to what your centre wants to hear about)")
    p.add_argument("--alpha", type=float, default=ALPHA,
                   help=f"significance level of the permutation test (default {ALPHA})")
    p.add_argument("--min-nights", type=int, default=MIN_NIGHTS,
                   help=f"campaigns needed on each side of a change (default {MIN_NIGHTS})")
    p.add_argument("--permutations", type=int, default=PERMUTATIONS,
                   help=f"random orders in the permutation test (default {PERMUTATIONS})")
    p.add_argument("--json", action="store_true", help="the series and changes as JSON")
    p.add_argument("--html", type=Path, metavar="FILE",
                   help="also write the trend charts (each metric over time with its "
                        "intervals, the changes marked) as one HTML page")
    add_store_argument(p)
    p.set_defaults(func="fabench.actions.history:main")


