"""Argument groups shared by several subcommands."""

import argparse
from pathlib import Path

from ..errors import FabenchError
from ..schedulers import Scheduler, make_scheduler
from ..store_pg import display_url, is_url

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


def scheduler_from(values: list[str], out: Path | None = None,
                   oversubscribe: bool = False) -> Scheduler:
    scheduler = make_scheduler(values)
    scheduler.results_dir = str(out) if out is not None else None
    scheduler.oversubscribe = oversubscribe
    return scheduler


StoreLocation = Path | str  # a file (SQLite) or a postgresql:// URL


def store_location(value: str) -> StoreLocation:
    """--store's value: a postgresql:// URL stays a string (a Path would fold its `//`)."""
    return value if is_url(value) else Path(value)


def add_out_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="DIR",
                   help=f"results directory holding the store (default: ./{DEFAULT_OUT}) "
                        "and the reports")
    p.add_argument("--store", dest="store", type=store_location, default=None,
                   metavar="URL|FILE",
                   help="write the runs to this store instead of DIR's: a postgresql://"
                        "user@host/db URL (the password from PGPASSWORD or ~/.pgpass) or an "
                        f"SQLite file (default: DIR/{STORE_NAME})")


def store_path(out: Path) -> Path:
    return out / STORE_NAME


def store_of(args: argparse.Namespace) -> StoreLocation:
    """The store a measuring command writes: --store, else the results directory's."""
    store = getattr(args, "store", None)
    return store if store is not None else store_path(args.out)


def shown(store: StoreLocation) -> str:
    """A store as messages name it: a URL without its password."""
    return display_url(store) if isinstance(store, str) else str(store)


def output_dir(store: StoreLocation) -> Path:
    """Where files derived from a store go by default: beside an SQLite file; the default
    results directory for a server's store."""
    return store.parent if isinstance(store, Path) else DEFAULT_OUT


def add_store_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", "--out", dest="store", type=store_location, default=DEFAULT_OUT,
                   metavar="DIR|FILE|URL",
                   help=f"results directory (or its {STORE_NAME}, or a postgresql://"
                        f"user@host/db URL) to read (default: ./{DEFAULT_OUT})")


def resolve_store(path: StoreLocation, must_exist: bool = True) -> StoreLocation:
    """A results directory, the store file itself, or a PostgreSQL URL."""
    if isinstance(path, str):
        if is_url(path):
            return path
        path = Path(path)
    p = path if path.suffix in (".sqlite", ".db") else store_path(path)
    if must_exist and not p.exists():
        raise FabenchError(f"no store at {p} (run `fabench run` or `fabench bench` first, "
                           f"or point --store at a results directory)")
    return p
