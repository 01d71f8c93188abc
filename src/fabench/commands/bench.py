"""`fabench bench KERNEL`: one benchmark, an OSU-like table."""

import argparse
import shlex
import sys

from ..campaign import run_bench
from ..kernels import all_kernels, get_kernel
from ..launch import get_launcher
from ..report.table import header_lines, kernel_tables, summaries_json, transport_details
from ._common import add_on_argument, add_out_argument, parse_on, store_path


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    names = ", ".join(k.name for k in all_kernels())
    p = sub.add_parser(
        "bench", help="run one benchmark and print an OSU-like table",
        description=f"Run one kernel and print median, P5/P95, mean, min and max per size. "
                    f"Kernels: {names}.")
    p.add_argument("kernel", help="kernel name, e.g. mpi.latency, mpi.allreduce")
    add_on_argument(p)
    p.add_argument("--transport",
                   help="shm | tcp | ucx[:TLS] | ofi:PROVIDER (default: shm for MPI kernels, "
                        "the kernel's own family for transport kernels)")
    p.add_argument("--mpi", default="openmpi",
                   help="openmpi | mpich, for MPI kernels (default: openmpi)")
    p.add_argument("--ranks", "-n", type=int, default=2, help="MPI ranks (default: 2)")
    p.add_argument("--sizes", help="MIN:MAX power-of-two sweep or a,b,c list (4K, 1M ok)")
    p.add_argument("--iterations", type=int, help="timed iterations per size (default: OSU's)")
    p.add_argument("--warmup", type=int, help="untimed iterations per size")
    p.add_argument("--window", type=int, help="messages in flight (bandwidth kernels, 64)")
    p.add_argument("--rounds", type=int, metavar="R",
                   help="sweep the sizes R times, 1/R of the iterations each time, so a burst "
                        "of host load hits a slice of every size, not all of one (default 1)")
    p.add_argument("--validate", action="store_true", help="check every received byte")
    p.add_argument("--hugepages", action="store_true",
                   help="buffers of 2 MiB and more on transparent huge pages (default: plain "
                        "pages, as OSU; large shared-memory transfers differ a lot)")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds (default: 1800)")
    p.add_argument("--precision", type=float, metavar="P",
                   help="adaptive: repeat batches until each size's 95%% CI half-width is "
                        "<= P x median (e.g. 0.01), within --budget")
    p.add_argument("--budget", type=float, metavar="SECONDS",
                   help="adaptive: time budget of the run (default: none)")
    p.add_argument("--json", action="store_true", help="one JSON summary per size and metric")
    p.add_argument("--kernel-args", action="append", default=[], metavar="'OPTIONS'",
                   help="options for the kernel itself, e.g. --kernel-args='--streams 8 "
                        "--nodelay' (see the kernel's --help; repeatable)")
    add_out_argument(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    kernel = get_kernel(args.kernel)
    name, opts = parse_on(args.on)
    launcher = get_launcher(name, **opts)
    launcher.results_dir = str(args.out)
    transport = args.transport or kernel.default_transport
    outcome = run_bench(kernel.name, launcher, store_path(args.out), transport=transport,
                        mpi=args.mpi, ranks=args.ranks, sizes=args.sizes,
                        iterations=args.iterations, warmup=args.warmup, window=args.window,
                        rounds=args.rounds, hugepages=args.hugepages,
                        validate=args.validate, timeout_s=args.timeout,
                        extra_args=[a for text in args.kernel_args for a in shlex.split(text)],
                        precision=args.precision, budget_s=args.budget)
    context = {"kernel": kernel.name, "transport": transport,
               "selected_transport": outcome.selected_transport, "mpi": args.mpi,
               "ranks": args.ranks, "run_id": outcome.run_id, "status": outcome.status}
    if args.json:
        for line in summaries_json(kernel.name, outcome.results, context):
            print(line)
    else:
        mpi = f"  mpi={args.mpi}" if kernel.needs_mpi else ""
        title = (f"fabench {kernel.name}  transport={transport} "
                 f"(selected: {outcome.selected_transport or 'unknown'})  np={args.ranks}"
                 f"{mpi}  on={name}")
        for line in header_lines(title, outcome.notes):
            print(line)
        for line in kernel_tables(kernel.name, outcome.results):
            print(line)
        for line in transport_details(kernel.name, outcome.results):
            print(line)
        print(f"# run {outcome.run_id} stored in {store_path(args.out)}")
    if outcome.status != "ok":
        print(f"fabench: {kernel.name} {outcome.status}: {outcome.reason}", file=sys.stderr)
        return 0 if outcome.status == "skipped" else 1
    return 0
