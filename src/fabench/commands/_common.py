"""Argument groups shared by several subcommands (what is done with them: fabench.actions._common).
Imports nothing heavy: every `fabench --help` builds these."""

import argparse
from pathlib import Path

DEFAULT_OUT = Path("fabench-results")
STORE_NAME = "fabench.sqlite"


def add_on_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--on", nargs="+", metavar="WHERE", default=["local"],
        help="where to run: local (default), auto, testbed [NAME], hosts FILE, "
             "slurm[:mpirun] [SBATCH ARGS] (ranks started by srun, or by mpirun; sbatch "
             "options as one quoted word: --on \"slurm -N 2 --ntasks-per-node=1\"); "
             "`fabench doctor` lists every scheduler")
    p.add_argument("--oversubscribe", action="store_true",
                   help="start more ranks than the place has slots (cores here or on a "
                        "testbed, a hostfile's slots); refused without it")


def add_out_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="DIR",
                   help=f"results directory holding the store (default: ./{DEFAULT_OUT})")


def add_store_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", "--out", dest="store", type=Path, default=DEFAULT_OUT,
                   metavar="DIR|FILE",
                   help=f"results directory (or its {STORE_NAME}) to read "
                        f"(default: ./{DEFAULT_OUT})")
