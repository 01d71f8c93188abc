"""Argument groups shared by several subcommands."""

import argparse
import shlex
from pathlib import Path
from typing import Any

from ..errors import FabenchError

DEFAULT_OUT = Path("fabench-results")
STORE_NAME = "fabench.sqlite"


def add_on_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--on", nargs="+", metavar="WHERE", default=["local"],
        help="where to run: local (default), auto, testbed [NAME], hosts FILE, "
             "slurm[:mpirun] [SBATCH ARGS] (ranks started by srun, or by mpirun; sbatch "
             "options as one quoted word: --on \"slurm -N 2 --ntasks-per-node=1\")")


def parse_on(values: list[str]) -> tuple[str, dict[str, Any]]:
    # argparse refuses a following word that looks like an option (`--on slurm -N 2`), so
    # launcher options may come as one quoted word, `--on "slurm -N 2 --ntasks-per-node=1"`;
    # a spec file's `launcher:` line is one word too.
    if any(c.isspace() for c in values[0]):
        values = [*shlex.split(values[0]), *values[1:]]
    name, rest = values[0], values[1:]
    if ":" in name:
        name, arg = name.split(":", 1)
        rest = [arg, *rest]
    if name == "hosts":
        if not rest:
            raise FabenchError("--on hosts needs a hostfile: --on hosts FILE")
        return name, {"hostfile": rest[0]}
    if name == "testbed":
        return name, ({"testbed": rest[0]} if rest else {})
    if name == "slurm":
        # `--on slurm[:mpirun|:srun] [SBATCH ARGS...]`: the first word may name the starter.
        opts: dict[str, Any] = {}
        if rest and rest[0] in ("srun", "mpirun"):
            opts["starter"], rest = rest[0], rest[1:]
        return name, ({**opts, "sbatch_args": rest} if rest else opts)
    if rest:
        raise FabenchError(f"--on {name} takes no argument (got {' '.join(rest)})")
    return name, {}


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
