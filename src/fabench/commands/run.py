"""`fabench run [SPEC.yaml]`: a campaign into the store, then its summary.

Arguments only: fabench.actions.run does the work."""

import argparse

from . import COMMANDS
from ._common import add_on_argument, add_out_argument


@COMMANDS.register("run")
def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = sub.add_parser(
        "run", help="run a campaign (a YAML spec, or the built-in default)",
        description="Expand a campaign spec into runs, execute them, keep every sample in the "
                    "store as it arrives, and summarise. Without SPEC: latency, bw and bibw "
                    "over shm and tcp at 2 ranks, each size timed until its median is known to "
                    "+-1 % (stop_precision, at most OSU's count); allreduce, alltoall, "
                    "allgather and gather at 2 and 4 ranks. See docs/campaign-spec.md and "
                    "examples/.")
    p.add_argument("spec", nargs="?", help="campaign spec (YAML); default: built-in")
    add_on_argument(p)
    p.add_argument("--quick", action="store_true",
                   help="fewer iterations per size, every size kept: about a quarter of the "
                        "time (the built-in campaign took 43 s instead of 188 s on a loaded "
                        "2-core host; docs/campaign-spec.md)")
    p.add_argument("--resume", nargs="?", const="", metavar="ID",
                   help="finish an unfinished campaign of this spec in the store: campaign ID, "
                        "or without ID the newest one")
    p.add_argument("--repeats", type=int, help="override the spec's repeats")
    p.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    add_out_argument(p)
    p.set_defaults(func="fabench.actions.run:main")
