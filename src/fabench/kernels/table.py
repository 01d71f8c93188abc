"""The kernel list the native build installs beside its executables (`_native/kernels.list`).

`native/kernels.list` is the one list of kernels: CMake builds an executable per line and
compiles the line's default sizes and rank rule into it; the registry registers a kernel per
line from the installed copy, read here. A missing or malformed list is an error that names
the file and the line, never a silently shorter registry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..errors import FabenchError
from ..host.native import native_root
from ..metrics import Metric, get_metric

TABLE_NAME = "kernels.list"
# Each family has its build section in native/ and its registering module here.
FAMILIES = ("mpi", "tcp", "udp", "ucx", "ofi", "verbs")
KINDS = ("pt2pt", "collective", "app")
RANKS = ("any", "even", "pair")

_NAME = re.compile(r"[a-z]+\.[a-z0-9_]+")
_SIZES = re.compile(r"[0-9]+[KMG]?(:[0-9]+[KMG]?)?")


class KernelTableError(FabenchError):
    """The installed kernel list is missing or malformed."""


@dataclass(frozen=True)
class KernelRow:
    """One line of the list."""

    name: str  # "mpi.allreduce"
    kind: str  # "pt2pt" or "collective"
    sizes: str  # default --sizes, e.g. "1:1M"; "0" for a kernel without a message
    ranks: str  # "any", "even" or "pair"
    metrics: tuple[Metric, ...]  # headline first
    description: str

    @property
    def family(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def executable(self) -> str:
        """The file CMake builds for this line: fb-<family>-<name>."""
        return "fb-" + self.name.replace(".", "-")

    @property
    def even_ranks(self) -> bool:
        return self.ranks == "even"


# The list in a source checkout, for a tree run without a native build (PYTHONPATH=src): the
# registry still knows every kernel, and each says it is not built.
SOURCE_TABLE = Path(__file__).resolve().parents[3] / "native" / TABLE_NAME


def table_path(root: Path | None = None) -> Path:
    path = (root if root is not None else native_root()) / TABLE_NAME
    if root is None and not path.is_file() and SOURCE_TABLE.is_file():
        return SOURCE_TABLE
    return path


def parse_kernel_table(text: str, source: str = TABLE_NAME) -> list[KernelRow]:
    """Rows of a list's text; `source` names it in errors."""
    rows: list[KernelRow] = []
    seen: set[str] = set()
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            row = _parse_row(line)
        except ValueError as exc:
            raise KernelTableError(f"{source}, line {lineno}: {exc}: {line.strip()!r}") from None
        if row.name in seen:
            raise KernelTableError(f"{source}, line {lineno}: kernel {row.name} listed twice")
        seen.add(row.name)
        rows.append(row)
    if not rows:
        raise KernelTableError(f"{source}: no kernels listed")
    return rows


def _parse_row(line: str) -> KernelRow:
    fields = line.split(None, 5)
    if len(fields) < 6:
        raise ValueError("expected name, kind, sizes, ranks, metrics and a description")
    name, kind, sizes, ranks, metrics, desc = (f.strip() for f in fields)
    if not _NAME.fullmatch(name):
        raise ValueError(f"bad kernel name {name!r} (family.name, lower case)")
    if name.split(".", 1)[0] not in FAMILIES:
        raise ValueError(f"family of {name!r} is not one of {', '.join(FAMILIES)}")
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r} is not one of {', '.join(KINDS)}")
    if not _SIZES.fullmatch(sizes):
        raise ValueError(f"sizes {sizes!r} is not MIN:MAX or one size")
    if ranks not in RANKS:
        raise ValueError(f"ranks {ranks!r} is not one of {', '.join(RANKS)}")
    if any(c in desc for c in ";[]"):
        raise ValueError("the description may not hold ';', '[' or ']' (CMake reads the list)")
    return KernelRow(name, kind, sizes, ranks, tuple(get_metric(m) for m in metrics.split(",")),
                     desc)


@lru_cache(maxsize=4)
def _read(path: Path) -> tuple[KernelRow, ...]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise KernelTableError(
            f"the kernel list {path} is missing: the native build installs it beside the "
            "kernels (pip install . builds both; a CMake build tree has it in _native/, "
            "point FABENCH_NATIVE_DIR there)") from None
    except OSError as exc:
        raise KernelTableError(f"cannot read the kernel list {path}: {exc}") from None
    return tuple(parse_kernel_table(text, str(path)))


def read_kernel_table(path: Path | None = None) -> list[KernelRow]:
    """Every row of the installed list (or of `path`)."""
    return list(_read(path if path is not None else table_path()))


def rows_of(families: set[str] | frozenset[str], path: Path | None = None) -> list[KernelRow]:
    """The rows of these families, in the list's order."""
    return [r for r in read_kernel_table(path) if r.family in families]
