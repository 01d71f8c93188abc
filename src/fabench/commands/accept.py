"""`fabench accept SPEC.yaml --on ...`: argument handling; the work is in fabench/accept/.

Arguments only: fabench.actions.accept does the work."""

import argparse
from pathlib import Path

from . import COMMANDS
from ._common import add_on_argument, add_out_argument


@COMMANDS.register("accept")
def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = sub.add_parser(
        "accept", help="cluster acceptance: a spec of checks with thresholds, one verdict each",
        description="Run an acceptance spec's checks in order (doctor, node consistency, "
                    "matrix, point to point, collectives, the rest), each judged by its 95%% "
                    "interval against its threshold: pass, fail or inconclusive (then "
                    "measured more within --budget). Exit 0 when every check passed, 3 on a "
                    "fail, 4 when a check is still inconclusive after the budget, 2 on a bad "
                    "spec. See docs/accept.md and examples/accept-*.yaml.")
    p.add_argument("spec", help="acceptance spec (YAML)")
    add_on_argument(p)
    p.add_argument("--budget", type=float, metavar="SECONDS",
                   help="time for more measurements of inconclusive checks (default: the "
                        "spec's budget_s, else 0)")
    p.add_argument("--baseline", metavar="CAMPAIGN",
                   help="an earlier acceptance (campaign id, or cN): every metric compared "
                        "with it")
    p.add_argument("--junit", type=Path, metavar="FILE", help="also write JUnit XML here")
    p.add_argument("--html", type=Path, metavar="FILE",
                   help="the report (default: OUT/accept-cN.html)")
    p.add_argument("--json", action="store_true", help="the verdicts as one JSON object")
    add_out_argument(p)
    p.set_defaults(func="fabench.actions.accept:main")


