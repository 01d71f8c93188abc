"""`fabench compare A B`: B against A per message size, with confidence intervals.

Arguments only: fabench.actions.compare does the work."""

import argparse

from ..choices import DEFAULT_TOLERANCE
from . import COMMANDS
from ._common import add_store_argument


@COMMANDS.register("compare")
def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = sub.add_parser(
        "compare", help="B against A per size: difference, ratio, confidence interval, verdict",
        description="A and B select runs in the store: a run id (12), a campaign (c3, latest), "
                    "a transport (shm, tcp, ucx:posix) or KEY=VALUE filters joined by commas "
                    "(kernel, transport, mpi, ranks, campaign, run, repeat, selected, launcher, "
                    "label, source, env.NAME). Runs of one configuration are pooled; see "
                    "docs/statistics.md for the interval and the verdict rules. When A and B "
                    "both name stored matrices (c3 c7), they are compared per link as by "
                    "`fabench matrix compare` (exit 3 when B has a verdict).")
    p.add_argument("a", metavar="A", help="baseline selector; several joined by + are one side "
                                          "(e.g. 1+3+5: those runs, pooled as repeats)")
    p.add_argument("b", metavar="B", help="selector compared against A (+ joins, as for A)")
    p.add_argument("--metric", help="latency, bandwidth or message_rate (default: each "
                                    "kernel's primary metric)")
    p.add_argument("--kernel", help="only this kernel (e.g. mpi.latency)")
    p.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE,
                   help=f"relative band counted as no change (default {DEFAULT_TOLERANCE})")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_store_argument(p)
    p.set_defaults(func="fabench.actions.compare:main")
