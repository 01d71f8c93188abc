"""Argument groups shared by several subcommands (what is done with them: fabench.actions._common).
Imports nothing heavy: every `fabench --help` builds these."""

import argparse
from pathlib import Path

from ..store.postgres import is_url

DEFAULT_OUT = Path("fabench-results")
STORE_NAME = "fabench.sqlite"

StoreLocation = Path | str  # a file (SQLite) or a postgresql:// URL


def store_location(value: str) -> StoreLocation:
    """--store's value: a postgresql:// URL stays a string (a Path would fold its `//`)."""
    return value if is_url(value) else Path(value)


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
                   help=f"results directory holding the store (default: ./{DEFAULT_OUT}) "
                        "and the reports")
    p.add_argument("--store", dest="store", type=store_location, default=None,
                   metavar="URL|FILE",
                   help="write the runs to this store instead of DIR's: a postgresql://"
                        "user@host/db URL (the password from PGPASSWORD or ~/.pgpass) or an "
                        f"SQLite file (default: DIR/{STORE_NAME})")


def add_store_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", "--out", dest="store", type=store_location, default=DEFAULT_OUT,
                   metavar="DIR|FILE|URL",
                   help=f"results directory (or its {STORE_NAME}, or a postgresql://"
                        f"user@host/db URL) to read (default: ./{DEFAULT_OUT})")


