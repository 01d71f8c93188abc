"""`fabench run [SPEC.yaml]`: a campaign into the store, then its summary."""

import argparse

from ..campaign import run_campaign
from ..errors import FabenchError
from ..report.campaign_summary import campaign_lines
from ..report.finalize import finalize_campaign
from ..spec import load_spec
from ..store import Store
from . import COMMANDS
from ._common import add_on_argument, add_out_argument, scheduler_from, shown, store_of


@COMMANDS.register("run")
def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = sub.add_parser(
        "run", help="run a campaign (a YAML spec, or the built-in default)",
        description="Expand a campaign spec into runs, execute them, keep every sample in the "
                    "store as it arrives, and summarise. Without SPEC: latency, bw and bibw "
                    "over shm and tcp at 2 ranks; allreduce, alltoall, allgather and gather at "
                    "2 and 4 ranks. See docs/campaign-spec.md and examples/.")
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
    p.set_defaults(func=main)


def _resume_id(args: argparse.Namespace) -> int | None:
    """`--resume ID`; `run --resume spec.yaml` (the form before IDs) still names the spec."""
    value = args.resume
    if not value:
        return None
    if value.isdigit() and int(value) > 0:
        return int(value)
    if args.spec is None and not value.isdigit():
        args.spec = value
        return None
    raise FabenchError(f"--resume takes a campaign id (an integer >= 1), got {value!r}")


def main(args: argparse.Namespace) -> int:
    resume_id = _resume_id(args)
    spec = load_spec(args.spec)
    if args.repeats:
        spec = spec.model_copy(update={"repeats": args.repeats})
    scheduler = scheduler_from(args.on if args.on != ["local"] else [spec.launcher], args.out,
                               args.oversubscribe or spec.oversubscribe)
    spath = store_of(args)
    try:
        result = run_campaign(spec, scheduler, spath, quick=args.quick,
                              resume=args.resume is not None, resume_id=resume_id,
                              show_progress=not args.no_progress)
    finally:
        scheduler.close()
    with Store(spath) as store:
        print(f"# campaign {result.campaign_id} ({spec.name}) on {scheduler.describe()}: "
              f"{result.status}")
        for line in campaign_lines(store, result.campaign_id):
            print(line)
        files = finalize_campaign(store, result.campaign_id, args.out)
    print(f"# results: {shown(spath)}")
    for f in files:
        print(f"# wrote {f}")
    return 0 if result.status == "finished" else 1
