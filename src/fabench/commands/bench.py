"""`fabench bench KERNEL`: one benchmark, an OSU-like table.

Arguments only: fabench.actions.bench does the work."""

import argparse

from ..choices import DATATYPES
from ..kernels import KERNELS
from . import COMMANDS
from ._common import add_on_argument, add_out_argument


@COMMANDS.register("bench")
def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    names = ", ".join(KERNELS.names_for_help())
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
    p.add_argument("--datatype", choices=DATATYPES,
                   help="collectives: the MPI datatype reduced and moved, as OSU's -T "
                        "(default: float)")
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
    p.set_defaults(func="fabench.actions.bench:main")
