"""`fabench bench KERNEL`: one benchmark, an OSU-like table.

Arguments only: fabench.actions.bench does the work."""

import argparse

from ..kernels import KERNELS
from ..plan.kernel_settings import add_kernel_options
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
    add_kernel_options(p)
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
