"""Argument groups shared by several subcommands."""

import argparse
from pathlib import Path

from ..errors import FabenchError
from ..schedulers import Scheduler, make_scheduler

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


def add_out_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="DIR",
                   help=f"results directory holding the store (default: ./{DEFAULT_OUT})")


def store_path(out: Path) -> Path:
    return out / STORE_NAME


def add_store_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", "--out", dest="store", type=Path, default=DEFAULT_OUT,
                   metavar="DIR|FILE",
                   help=f"results directory (or its {STORE_NAME}) to read "
                        f"(default: ./{DEFAULT_OUT})")


def resolve_store(path: Path, must_exist: bool = True) -> Path:
    """A results directory or the store file itself."""
    p = path if path.suffix in (".sqlite", ".db") else store_path(path)
    if must_exist and not p.exists():
        raise FabenchError(f"no store at {p} (run `fabench run` or `fabench bench` first, "
                           f"or point --store at a results directory)")
    return p
