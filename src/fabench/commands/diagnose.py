"""`fabench diagnose transports|...`: the arguments; fabench.actions.diagnose runs and prints,
the work is in fabench/diagnose/.

Each action is one function decorated with ``@action``: it adds its own subparser and names
its ``func``. Adding an action is one more such function (here or in its own module that
imports ``action`` from this one) and its function in fabench.actions.
"""

import argparse
from collections.abc import Callable

from ..choices import REORDER_SIZE, REORDER_WINDOWS
from . import COMMANDS
from ._common import add_on_argument, add_out_argument

Subparsers = "argparse._SubParsersAction[argparse.ArgumentParser]"
ActionFn = Callable[[argparse._SubParsersAction], None]  # type: ignore[type-arg]
ACTIONS: list[ActionFn] = []


def action(fn: ActionFn) -> ActionFn:
    """Register one `fabench diagnose ACTION` (its function adds the subparser)."""
    ACTIONS.append(fn)
    return fn


@COMMANDS.register("diagnose")
def register(sub: Subparsers) -> None:  # type: ignore[valid-type]
    p = sub.add_parser("diagnose", help="diagnoses: transports (is the library choosing its "
                                        "best path, per size?), reorder (how much does a "
                                        "path reorder, what window repairs it?)",
                       description="Run measurements that answer one question each.")
    dsub = p.add_subparsers(dest="diagnose_command", metavar="ACTION")
    dsub.required = True
    for fn in ACTIONS:
        fn(dsub)


def _ranks(text: str) -> tuple[int, ...]:
    try:
        vals = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: rank counts such as 2,4") from None
    if not vals or any(v < 2 for v in vals):
        raise argparse.ArgumentTypeError(f"{text!r}: rank counts of at least 2")
    return vals


@action
def transports_parser(dsub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    t = dsub.add_parser(
        "transports", help="sweep the MPI/UCX paths, compare with the library's choice per "
                           "size, recommend settings and prove them by A/B",
        description="For two ranks on one host (--placement intra) or on two hosts "
                    "(--placement inter), measure latency and bandwidth per size over every "
                    "path that exists (UCX_TLS sets, Open MPI ob1+vader per single-copy "
                    "mechanism, pml ucx, MPICH's ch4:ucx), read what the library chose when "
                    "nothing is forced, give per size the chosen path, the best one and the "
                    "loss with its interval, recommend settings with the sizes they help and "
                    "hurt, and prove the recommendation on allgather, alltoall and gather at "
                    "2 and 4 ranks. Exit 3 when the library's choice loses at some size or "
                    "sends on-node traffic over the NIC. See docs/diagnose.md.")
    add_on_argument(t)
    add_out_argument(t)
    t.add_argument("--placement", choices=("intra", "inter"), default=None,
                   help="intra: both ranks on one host; inter: one rank on each of two hosts "
                        "(default: intra with --on local, else inter)")
    t.add_argument("--hosts", metavar="A[,B]",
                   help="the host (intra) or pair of hosts (inter) to use, by name")
    t.add_argument("--mpi", default="openmpi,mpich",
                   help="MPI flavours to sweep, comma-separated (default: openmpi,mpich)")
    t.add_argument("--path", action="append", metavar="NAME", dest="paths",
                   help="only this path (a name as the table prints it, e.g. ucx:posix,cma); "
                        "repeat for more; the library's own choice is always measured")
    t.add_argument("--sizes", help="point-to-point sizes, e.g. 1:4M or 8,4K,64K,1M "
                                   "(default: 8,1K,16K,256K,4M; every power of two with "
                                   "--exhaustive)")
    t.add_argument("--iterations", type=int, help="timed iterations per size")
    t.add_argument("--rounds", type=int, default=None,
                   help="sweeps over all paths, in rotated order (default: 1; 2 with "
                        "--exhaustive)")
    t.add_argument("--exhaustive", action="store_true",
                   help="the whole sweep: every power-of-two size with the kernels' full "
                        "iteration counts, UCX with rendezvous / zero copy switched off, the "
                        "proof at 2 and 4 ranks over 3 rounds (tens of minutes on 2 cores; "
                        "the default answers in about 5 minutes)")
    t.add_argument("--quick", action="store_true", help="fewer iterations (the default "
                                                        "without --exhaustive)")
    t.add_argument("--no-thresholds", action="store_true",
                   help="do not sweep UCX with rendezvous / zero copy switched off (the "
                        "default without --exhaustive)")
    t.add_argument("--no-prove", action="store_true", help="skip the A/B proof")
    t.add_argument("--ab-ranks", type=_ranks, default=None,
                   help="rank counts of the proof (default: 2; 2,4 with --exhaustive)")
    t.add_argument("--ab-rounds", type=int, default=None,
                   help="interleaved A/B rounds of the proof (default: 2; 3 with "
                        "--exhaustive)")
    t.add_argument("--ab-sizes", help="collective sizes of the proof (default: 8,4K,256K; "
                                      "the kernels' with --exhaustive)")
    t.add_argument("--ab-iterations", type=int, help="collective iterations per size")
    t.add_argument("--prove-settings", nargs="+", metavar="NAME=VALUE",
                   help="no sweep: prove these MPI/UCX settings (for the first --mpi) "
                        "against nothing forced, e.g. an alternative an earlier run listed")
    t.add_argument("--tolerance", type=float, default=0.03,
                   help="'no change' band of every verdict (default: 0.03 = 3 %%)")
    t.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    t.add_argument("--json", action="store_true",
                   help="JSON lines: one per size and path (size, path, chosen, best, loss), "
                        "then recommendations and A/B deltas")
    t.set_defaults(func="fabench.actions.diagnose:transports_main")


def _ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: integers such as 0,16,64") from None


@action
def reorder_parser(dsub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    r = dsub.add_parser(
        "reorder", help="measure a path's reordering (udp.reorder) and recommend document "
                        "001's receive window W, with the evidence",
        description="Send numbered datagrams from one host to another (udp.reorder, through "
                    "the normal runner, every run stored), pool the rounds into the "
                    "distribution of how far each reordered datagram arrived behind "
                    "(offset: numbers below the highest received, what window W must cover; "
                    "RFC 4737's extent: arrivals back) and recommend the smallest W covering "
                    "--percentile %% of them (W=0: none needed). --sweep, on a testbed: TCP "
                    "throughput and reorder events at candidate W, with and without loss, "
                    "on copies of the path. Exit 3 when the path reorders. "
                    "See docs/diagnose.md.")
    add_on_argument(r)
    add_out_argument(r)
    r.add_argument("--hosts", metavar="SENDER,RECEIVER",
                   help="the direction to measure (default: the first two hosts)")
    r.add_argument("--percentile", type=float, default=99.0,
                   help="share of reordered datagrams the window must cover (default 99: "
                        "all but the rare stalls; a window sized for the largest offset "
                        "holds every real loss that much longer)")
    r.add_argument("--size", type=int, default=REORDER_SIZE,
                   help=f"datagram payload in bytes (default {REORDER_SIZE}: full frames at "
                        "MTU 1500, as a bulk TCP stream's)")
    r.add_argument("--iterations", type=int, default=200,
                   help="windows of datagrams per round (default 200)")
    r.add_argument("--window", type=int, help="datagrams per window (the probe's burst; "
                                              "default the kernel's, 64)")
    r.add_argument("--rounds", type=int, default=3, help="probe runs (default 3)")
    r.add_argument("--sweep", action="store_true",
                   help="testbed only: TCP throughput and reorder events/s at candidate W "
                        "(and the recommended one), with and without loss")
    r.add_argument("--sweep-windows", type=_ints, default=REORDER_WINDOWS,
                   help=f"candidate W (default {','.join(map(str, REORDER_WINDOWS))})")
    r.add_argument("--sweep-loss", default="1%",
                   help="loss of the lossy rows (default 1%%; 0%% for none)")
    r.add_argument("--sweep-streams", type=_ints, default=(1, 4),
                   help="TCP streams per point (default 1,4)")
    r.add_argument("--sweep-seconds", type=float, default=2.0,
                   help="seconds per TCP run (default 2)")
    r.add_argument("--sweep-rounds", type=int, default=1,
                   help="rounds over the W values, forward and backward in turn (default 1)")
    r.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    r.add_argument("--json", action="store_true",
                   help="JSON lines: probe rounds, the offset and extent distributions, "
                        "sweep points, the recommendation")
    r.set_defaults(func="fabench.actions.diagnose:reorder_main")
