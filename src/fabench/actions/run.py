"""`fabench run [SPEC.yaml]`: a campaign into the store, then its summary."""

import argparse

from ..errors import FabenchError
from ..plan.spec import MAX_REPEATS, load_spec
from ..report.campaign_summary import campaign_lines
from ..report.finalize import finalize_campaign
from ..store.database import Store
from ._common import scheduler_from, shown, store_of
from .campaign import run_campaign


def _resume_id(args: argparse.Namespace) -> int | None:
    """`--resume ID`; `run --resume spec.yaml` (the form before IDs) still names the spec."""
    value = args.resume
    if not value:
        return None
    if value.isascii() and value.isdigit() and int(value) > 0:  # not '²'
        return int(value)
    if args.spec is None and not (value.isascii() and value.isdigit()):
        args.spec = value
        return None
    raise FabenchError(f"--resume takes a campaign id (an integer >= 1), got {value!r}")


def main(args: argparse.Namespace) -> int:
    resume_id = _resume_id(args)
    spec = load_spec(args.spec)
    if args.repeats is not None:
        # model_copy does not validate: --repeats 0 was ignored, -5 planned nothing (exit 0)
        # and 1e12 filled memory
        if not 1 <= args.repeats <= MAX_REPEATS:
            raise FabenchError(f"--repeats must be 1..{MAX_REPEATS:,}, got {args.repeats}")
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
