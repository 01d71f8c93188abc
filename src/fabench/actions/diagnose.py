"""`fabench diagnose transports|reorder`: what each action runs and prints; the work is in
fabench/diagnose/, the arguments in fabench.commands.diagnose."""

import argparse
import json
import sys
from typing import Any, Protocol

from ..diagnose.reorder import ReorderOptions, run_reorder
from ..diagnose.reorder_sweep import SweepSettings
from ..diagnose.session import run_transports, transports_options
from ..errors import FabenchError
from ..util.hostnames import check_host
from ..util.units import check_timeout
from ._common import scheduler_from, store_of


def transports_main(args: argparse.Namespace) -> int:
    if args.rounds is not None and args.rounds < 1:
        raise FabenchError("--rounds must be >= 1")
    placement = args.placement or ("intra" if args.on == ["local"] else "inter")
    hosts = [check_host(h.strip(), "--hosts") for h in args.hosts.split(",")] \
        if args.hosts else None
    if hosts and len(hosts) > (1 if placement == "intra" else 2):
        raise FabenchError(f"--hosts: {placement} takes "
                           f"{'one host' if placement == 'intra' else 'two hosts'}")
    settings = None
    if args.prove_settings:
        settings = {}
        for item in args.prove_settings:
            name, sep, value = item.partition("=")
            if not sep or not name:
                raise FabenchError(f"--prove-settings {item!r}: NAME=VALUE")
            settings[name] = value
    opts = transports_options(
        args.exhaustive, placement=placement, hosts=hosts,
        mpis=[m.strip() for m in args.mpi.split(",") if m.strip()],
        only=[p.strip() for p in args.paths] if args.paths else None,
        sizes=args.sizes, iterations=args.iterations, rounds=args.rounds,
        quick=args.quick or None, thresholds=False if args.no_thresholds else None,
        prove=False if args.no_prove else None, ab_ranks=args.ab_ranks,
        ab_rounds=args.ab_rounds, ab_sizes=args.ab_sizes, ab_iterations=args.ab_iterations,
        tolerance=args.tolerance, timeout_s=check_timeout(args.timeout), prove_settings=settings)
    scheduler = scheduler_from(args.on, args.out, args.oversubscribe)
    try:
        outcome = run_transports(opts, scheduler, store_of(args),
                                 lambda m: print(f"fabench: {m}", file=sys.stderr))
    finally:
        scheduler.close()
    return _print(outcome, args.json)


def reorder_main(args: argparse.Namespace) -> int:
    hosts = [h.strip() for h in args.hosts.split(",")] if args.hosts else None
    if args.sweep_rounds < 1 or args.sweep_seconds <= 0:
        raise FabenchError("--sweep-rounds must be >= 1 and --sweep-seconds above 0")
    if any(n < 1 for n in args.sweep_streams) or not args.sweep_streams:
        raise FabenchError("--sweep-streams: one or more stream counts >= 1")
    loss = args.sweep_loss.strip()
    sweep = SweepSettings(windows=args.sweep_windows,
                          losses=("0%",) if loss in ("0", "0%") else ("0%", loss),
                          streams=args.sweep_streams, seconds=args.sweep_seconds,
                          rounds=args.sweep_rounds)
    opts = ReorderOptions(hosts=hosts, percentile=args.percentile, size=args.size,
                          iterations=args.iterations, window=args.window, rounds=args.rounds,
                          timeout_s=check_timeout(args.timeout), sweep=args.sweep,
                          sweep_settings=sweep)
    scheduler = scheduler_from(args.on, args.out)
    try:
        diag = run_reorder(opts, scheduler, store_of(args),
                           lambda m: print(f"fabench: {m}", file=sys.stderr))
    finally:
        scheduler.close()
    return _print(diag, args.json)


class _Diagnosis(Protocol):
    @property
    def exit_code(self) -> int: ...

    def records(self) -> list[dict[str, Any]]: ...

    def lines(self) -> list[str]: ...


def _print(diag: _Diagnosis, as_json: bool) -> int:
    """A diagnosis on stdout, as JSON lines or as its text; its exit status."""
    for out in (json.dumps(r) for r in diag.records()) if as_json else diag.lines():
        print(out)
    return diag.exit_code
