"""`fabench congestion`: argument handling; the work is in fabench/congestion/."""

import argparse
import json
import sys

from ..congestion import CongestionConfig, VictimSettings, congestion_campaign
from ..congestion.victims import VICTIMS
from ..errors import FabenchError
from ..report.congestion import text_lines
from ..util.units import check_timeout
from ._common import scheduler_from, shown, store_of


def _hosts(text: str | None) -> tuple[str, ...]:
    if not text:
        return ()
    names = tuple(h.strip() for h in text.split(","))
    if any(not h for h in names):
        raise FabenchError(f"host list {text!r}: names separated by commas")
    return names


def main(args: argparse.Namespace) -> int:
    cfg = CongestionConfig(
        victims=tuple(args.victim or VICTIMS), aggressors=tuple(args.aggressor or ["incast"]),
        victim_hosts=_hosts(args.victim_hosts), aggressor_hosts=_hosts(args.aggressor_hosts),
        target=args.target or "", rounds=args.rounds, settle_s=args.settle,
        settings=VictimSettings(iterations=args.iterations, bw_iterations=args.bw_iterations,
                                bw_window=args.bw_window, mpi=args.mpi,
                                transport=args.transport, timeout_s=check_timeout(args.timeout)))
    scheduler = scheduler_from(args.on, args.out, args.oversubscribe)
    try:
        out = congestion_campaign(cfg, scheduler, store_of(args), args.name,
                                  progress=lambda m: print(f"fabench: {m}", file=sys.stderr))
    finally:
        scheduler.close()
    if args.json:
        for row in out.rows:
            print(json.dumps(row.to_json()))
    else:
        print(f"fabench congestion on {scheduler.describe()}: victims "
              f"{','.join(out.layout.victims)}, aggressors {','.join(out.layout.aggressors)}, "
              f"incast/bulk toward {out.layout.target}; TCP "
              + ", ".join(sorted({f"{v['tcp_congestion_control']} ecn={v['tcp_ecn']}"
                                  for v in out.tcp.values()})))
        for w in out.warnings:
            print(f"WARNING {w}")
        for line in text_lines(out.rows):
            print(line)
        print(f"# campaign {out.campaign_id} stored in {shown(store_of(args))}")
    failed = [o for o in out.runs if o.status != "ok"]
    for o in failed:
        print(f"fabench: {o.planned.label_text} {o.status}: {o.reason}", file=sys.stderr)
    return 1 if failed or not out.rows else 0
