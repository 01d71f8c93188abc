"""`fabench congestion`: argument handling; the work is in fabench/congestion/.

Arguments only: fabench.actions.congestion does the work."""

import argparse

from ..choices import CONGESTION_PATTERNS, CONGESTION_VICTIMS
from . import COMMANDS
from ._common import add_on_argument, add_out_argument


@COMMANDS.register("congestion")
def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = sub.add_parser(
        "congestion", help="victims alone and under aggressors: the congestion impact factor",
        description="GPCNeT's method on a testbed: victims (8 B latency, 8 B allreduce, 1 MiB "
                    "bandwidth) measured alone and while aggressors run on other hosts; the "
                    "impact factor per victim metric is congested / isolated at the median "
                    "and at P99, with bootstrap 95% intervals over rounds and samples. See "
                    "docs/congestion.md.")
    add_on_argument(p)
    p.add_argument("--aggressor", action="append", choices=CONGESTION_PATTERNS, metavar="PATTERN",
                   help=f"{' | '.join(CONGESTION_PATTERNS)} (repeatable; default: incast)")
    p.add_argument("--victim", action="append", choices=list(CONGESTION_VICTIMS), metavar="VICTIM",
                   help=f"{' | '.join(CONGESTION_VICTIMS)} (repeatable; default: all)")
    p.add_argument("--victim-hosts", metavar="H1,H2[,...]",
                   help="victim hosts (default: the testbed's first two); latency and "
                        "bandwidth between the first two, the allreduce over all")
    p.add_argument("--aggressor-hosts", metavar="H3,...",
                   help="aggressor hosts (default: every other host)")
    p.add_argument("--target", metavar="HOST",
                   help="where incast and bulk send (default: the second victim host, so "
                        "the victim's link is the shared bottleneck)")
    p.add_argument("--rounds", type=int, default=3,
                   help="rounds of alone + each aggressor, interleaved (default 3)")
    p.add_argument("--settle", type=float, default=1.0, metavar="SECONDS",
                   help="wait after starting an aggressor before the victims run (default 1)")
    p.add_argument("--iterations", type=int, default=1000,
                   help="latency and allreduce iterations per phase (default 1000)")
    p.add_argument("--bw-iterations", type=int, default=10,
                   help="bandwidth samples per phase (default 10)")
    p.add_argument("--bw-window", type=int, default=4,
                   help="1 MiB messages in flight per bandwidth sample (default 4)")
    p.add_argument("--mpi", default="openmpi", help="openmpi | mpich (default: openmpi)")
    p.add_argument("--transport", default="tcp", help="the victims' and MPI aggressors' "
                                                      "transport (default: tcp)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per victim run")
    p.add_argument("--name", default="congestion", help="the campaign's name in the store")
    p.add_argument("--json", action="store_true",
                   help="one JSON record per aggressor and victim metric (impact_factor)")
    add_out_argument(p)
    p.set_defaults(func="fabench.actions.congestion:main")
