"""`fabench bench KERNEL`: one benchmark, an OSU-like table."""

import argparse
import shlex
import sys

from ..errors import FabenchError
from ..kernels import get_kernel
from ..plan.plan import plan_run, settings_from_args
from ..report.table import (
    header_lines,
    kernel_tables,
    own_fields,
    summaries_json,
    transport_details,
)
from ._common import scheduler_from, shown, store_of
from .campaign import run_bench


def _kernel_words(texts: list[str]) -> list[str]:
    words = []
    for text in texts:
        try:
            words += shlex.split(text)
        except ValueError as exc:
            raise FabenchError(f"--kernel-args {text!r}: {exc}") from None
    return words


def main(args: argparse.Namespace) -> int:
    kernel = get_kernel(args.kernel)
    settings = settings_from_args(kernel, args, extra=_kernel_words(args.kernel_args))
    planned = plan_run(kernel.name, transport=args.transport, ranks=args.ranks, mpi=args.mpi,
                       settings=settings, timeout_s=args.timeout, precision=args.precision,
                       budget_s=args.budget)
    scheduler = scheduler_from(args.on, args.out, args.oversubscribe)
    try:
        outcome = run_bench(planned, scheduler, store_of(args))
    finally:
        scheduler.close()
    context = {"kernel": kernel.name, "transport": str(planned.transport),
               "selected_transport": outcome.selected_transport, "mpi": args.mpi,
               "ranks": args.ranks, "run_id": outcome.run_id, "status": outcome.status,
               "on": scheduler.describe(), "flags": outcome.flags}
    if args.json:
        for line in summaries_json(kernel.name, outcome.results, context):
            print(line)
    else:
        mpi = f"  mpi={args.mpi}" if kernel.needs_mpi else ""
        title = (f"fabench {kernel.name}  transport={planned.transport} "
                 f"(selected: {outcome.selected_transport or 'unknown'})  np={args.ranks}"
                 f"{mpi}  on={scheduler.describe()}")
        for line in header_lines(title, [*(f"FLAG {f}" for f in outcome.flags),
                                         *outcome.notes]):
            print(line)
        for line in kernel_tables(kernel.name, outcome.results):
            print(line)
        for line in [*transport_details(kernel.name, outcome.results),
                     *own_fields(kernel.name, outcome.results)]:
            print(line)
        print(f"# run {outcome.run_id} stored in {shown(store_of(args))}")
    if outcome.status != "ok":
        print(f"fabench: {kernel.name} {outcome.status}: {outcome.reason}", file=sys.stderr)
        return 0 if outcome.status == "skipped" else 1
    return 0
