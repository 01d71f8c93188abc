"""native/kernels.list: one list for the build, the kernels' defaults and the registry."""

import re
import subprocess
from pathlib import Path

import pytest

from fabench.host.native import mpi_flavours_built, native_root
from fabench.kernels import all_kernels
from fabench.kernels.table import (
    KernelTableError,
    parse_kernel_table,
    read_kernel_table,
    table_path,
)

ROOT = Path(__file__).resolve().parent.parent
GOOD = "mpi.scatter  collective  1:1M  any  latency  MPI_Scatter from rank 0\n"


def test_the_installed_list_is_the_source_list() -> None:
    assert table_path().read_text() == (ROOT / "native" / "kernels.list").read_text()


def test_the_registry_holds_exactly_the_listed_kernels() -> None:
    rows = {r.name: r for r in read_kernel_table()}
    built_in = {k.name: k for k in all_kernels() if not Path(k.executable).is_absolute()}
    assert set(built_in) == set(rows)
    for name, row in rows.items():
        k = built_in[name]
        assert (k.kind, k.default_sizes, k.even_ranks, k.metrics, k.description,
                k.executable) == (row.kind, row.sizes, row.ranks == "even", row.metrics,
                                  row.description, row.executable), name


def _built(row_family: str, exe: str) -> list[Path]:
    root = native_root()
    dirs = [root / f for f in mpi_flavours_built()] if row_family == "mpi" else [root / "bin"]
    return [d / exe for d in dirs if (d / exe).is_file()]


def test_every_built_kernel_takes_its_default_sizes_from_the_list() -> None:
    """The C side reads the same line: --help shows the line's sizes as the default."""
    checked = 0
    for row in read_kernel_table():
        for exe in _built(row.family, row.executable):
            p = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=30,
                               check=False)
            assert p.returncode == 0, (exe, p.stderr)
            # "(default 1:4M)" beside the option, or the MPI kernels' "Defaults here: --sizes"
            assert re.search(rf"(\(default|Defaults here: --sizes) {re.escape(row.sizes)}[);]",
                             p.stdout), (exe, p.stdout[-400:])
            checked += 1
    assert checked >= len([r for r in read_kernel_table() if r.family in ("tcp", "udp")])


@pytest.mark.parametrize("line,why", [
    ("mpi.scatter collective 1:1M any latency\n", "expected name, kind, sizes"),
    ("mpi.scatter broadcast 1:1M any latency x\n", "kind 'broadcast'"),
    ("mpi.scatter collective 1:xM any latency x\n", "sizes '1:xM'"),
    ("mpi.scatter collective 1:1M odd latency x\n", "ranks 'odd'"),
    ("mpi.scatter collective 1:1M any speed x\n", "unknown metric 'speed'"),
    ("mpi.scatter collective 1:1M any latency a;b\n", "may not hold ';'"),
    ("gpu.scatter collective 1:1M any latency x\n", "family of 'gpu.scatter'"),
    ("MPI.Scatter collective 1:1M any latency x\n", "bad kernel name"),
])
def test_a_malformed_line_is_an_error_naming_file_and_line(line: str, why: str) -> None:
    with pytest.raises(KernelTableError) as e:
        parse_kernel_table("# header\n" + GOOD + line, "k.list")
    assert "k.list, line 3" in str(e.value) and why in str(e.value)


def test_a_kernel_listed_twice_is_an_error() -> None:
    with pytest.raises(KernelTableError, match="line 2: kernel mpi.scatter listed twice"):
        parse_kernel_table(GOOD + GOOD)


def test_rows_parse() -> None:
    (row,) = parse_kernel_table("\n# c\n" + GOOD)
    assert (row.name, row.family, row.kind, row.sizes, row.ranks, row.executable) == (
        "mpi.scatter", "mpi", "collective", "1:1M", "any", "fb-mpi-scatter")
    assert [m.name for m in row.metrics] == ["latency"]
    assert row.description == "MPI_Scatter from rank 0"


def test_a_missing_list_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(KernelTableError, match=str(tmp_path / "kernels.list") + " is missing"):
        read_kernel_table(tmp_path / "kernels.list")
    (tmp_path / "empty.list").write_text("# nothing\n")
    with pytest.raises(KernelTableError, match="no kernels listed"):
        read_kernel_table(tmp_path / "empty.list")
