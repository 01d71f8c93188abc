"""`fabench congestion`: argument handling; the work is in fabench/congestion/."""

import argparse
import json
import sys

from ..congestion import CongestionConfig, VictimSettings, congestion_campaign
from ..congestion.aggressors import PATTERNS
from ..congestion.victims import VICTIMS
from ..errors import FabenchError
from ..report.congestion import text_lines
from . import COMMANDS
from ._common import add_on_argument, add_out_argument, scheduler_from, shown, store_of


def _hosts(text: str | None) -> tuple[str, ...]:
    if not text:
        return ()
    names = tuple(h.strip() for h in text.split(","))
    if any(not h for h in names):
        raise FabenchError(f"host list {text!r}: names separated by commas")
    return names


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
    p.add_argument("--aggressor", action="append", choices=PATTERNS, metavar="PATTERN",
                   help=f"{' | '.join(PATTERNS)} (repeatable; default: incast)")
    p.add_argument("--victim", action="append", choices=list(VICTIMS), metavar="VICTIM",
                   help=f"{' | '.join(VICTIMS)} (repeatable; default: all)")
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
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    cfg = CongestionConfig(
        victims=tuple(args.victim or VICTIMS), aggressors=tuple(args.aggressor or ["incast"]),
        victim_hosts=_hosts(args.victim_hosts), aggressor_hosts=_hosts(args.aggressor_hosts),
        target=args.target or "", rounds=args.rounds, settle_s=args.settle,
        settings=VictimSettings(iterations=args.iterations, bw_iterations=args.bw_iterations,
                                bw_window=args.bw_window, mpi=args.mpi,
                                transport=args.transport, timeout_s=args.timeout))
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
