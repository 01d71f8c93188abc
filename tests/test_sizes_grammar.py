"""One sizes grammar and one option grammar, held against every parser that reads them.

The tables live in native/tests/ (sizes_grammar.tsv, options_grammar.tsv); the C unit test
t_opts reads the same files. Here they go to fabench.util.units / plan.Sizes and to the kernel
binaries themselves (`--print-options`: the kernel parses and prints what it understood, and
nothing runs, so no MPI launcher or peer is needed). Every kernel binary gets a sample of the
rows (its own scope of options, its own start-up path); one MPI kernel per flavour and one
transport kernel get all of them (the grammar itself is one function, fb_opts_parse_own).
"""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import missing
from fabench.errors import FabenchError
from fabench.host.native import native_root
from fabench.plan.kernel_settings import Sizes
from fabench.util.units import parse_sizes

TABLES = Path(__file__).resolve().parents[1] / "native" / "tests"
# Each entry into the option layer: fb_mpi_start per kernel class, the proxies, the matrix,
# and fb_tp_main per transport family.
FULL = {"fb-mpi-latency", "fb-tcp-latency"}
SAMPLE_SIZES = ("8,,16", "4 K", "8,", "4KiB", "0:4", "3G")
SAMPLE_OPTIONS = ("--iter 5", "--iterations=5", "--validate=1", "stray")


def rows(name: str) -> list[tuple[str, str]]:
    out = []
    for line in (TABLES / name).read_text().splitlines():
        if line.startswith("#") or "\t" not in line:
            continue
        text, expect = line.split("\t", 1)
        out.append((text, expect))
    return out


SIZES = rows("sizes_grammar.tsv")
OPTIONS = rows("options_grammar.tsv")


def kernels() -> list[Path]:
    root = native_root()
    exes = sorted(p for p in root.glob("*/fb-*") if p.parent.name != "simgrid"
                  and not p.name.startswith(("fb-link", "fb-probe")))
    return exes


def run(exe: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(exe), "--print-options", *args], capture_output=True, text=True,
                          timeout=30, check=False)


def expected_sizes(expect: str) -> list[int] | None:
    return None if expect == "error" else [int(x) for x in expect.split(",")]


@pytest.mark.parametrize("text,expect", SIZES)
def test_python_reads_the_table(text: str, expect: str) -> None:
    want = expected_sizes(expect)
    if want is None:
        with pytest.raises(ValueError):
            parse_sizes(text)
        if text.strip() == text:  # plan drops a command line's outer spaces first
            with pytest.raises(FabenchError):
                Sizes.parse(text)
    else:
        assert parse_sizes(text) == want
        # what plan hands the kernel is the text itself, which the kernel reads the same way
        assert Sizes.parse(text).text == text and list(Sizes.parse(text).values) == want


def check_kernel(exe: Path, sizes_rows: list[tuple[str, str]],
                 option_rows: list[tuple[str, str]]) -> list[str]:
    bad = []
    for text, expect in sizes_rows:
        p = run(exe, ["--sizes", text])
        want = expected_sizes(expect)
        if want is None:
            if p.returncode != 2 or "--sizes" not in p.stderr:
                bad.append(f"--sizes {text!r}: rc {p.returncode}, wanted an error")
        elif p.returncode != 0:
            bad.append(f"--sizes {text!r}: rc {p.returncode} {p.stderr.strip()}")
        elif json.loads(p.stdout)["sizes"] != want:
            bad.append(f"--sizes {text!r}: {p.stdout.strip()}")
    for args, expect in option_rows:
        p = run(exe, [w for w in args.split(" ") if w])
        if expect.startswith("error: "):
            if p.returncode != 2 or expect[7:] not in p.stderr or p.stdout:
                bad.append(f"{args!r}: rc {p.returncode} {p.stderr.strip()!r}, wanted "
                           f"{expect!r}")
            continue
        if p.returncode != 0:
            bad.append(f"{args!r}: rc {p.returncode} {p.stderr.strip()}")
            continue
        rec = json.loads(p.stdout)
        for kv in expect.split()[1:]:
            k, v = kv.split("=", 1)
            if rec[k] != json.loads(v):
                bad.append(f"{args!r}: {k}={rec[k]!r}, the table says {v}")
    return bad


def test_every_kernel_binary_reads_the_tables() -> None:
    exes = kernels()
    if not any(e.name.startswith("fb-mpi-") for e in exes) or not exes:
        missing("native kernels not built")
    full = {e for e in exes if e.name in FULL}

    def one(exe: Path) -> list[str]:
        if exe in full:
            found = check_kernel(exe, SIZES, OPTIONS)
        else:
            found = check_kernel(exe, [r for r in SIZES if r[0] in SAMPLE_SIZES],
                                 [r for r in OPTIONS if r[0] in SAMPLE_OPTIONS])
        return [f"{exe.parent.name}/{exe.name}: {b}" for b in found]

    with ThreadPoolExecutor(4) as pool:
        bad = [b for found in pool.map(one, exes) for b in found]
    assert not bad, "\n".join(bad[:40])
    assert {e.name for e in full} == FULL


@pytest.mark.parametrize("name,args,why", [
    ("fb-mpi-halo3d", ["--compute-us=5"], None),
    ("fb-mpi-halo3d", ["--compute-us", "-1"], "--compute-us wants"),
    ("fb-mpi-fft", ["--dims", "2x"], "--dims wants 2..3"),
    ("fb-mpi-fft", ["--dims=2", "--local-fft"], None),
    ("fb-mpi-fft", ["--compute-us", "5"], "does not apply"),
    ("fb-mpi-matrix", ["--mode", "isolated", "--lat-warmup=0"], None),
    ("fb-mpi-matrix", ["--mode", "both"], "--mode wants concurrent or isolated"),
    ("fb-mpi-latency", ["--datatype", "int"], "apply to collective kernels only"),
    ("fb-tcp-latency", ["--streams", "4"], "does not apply"),
    ("fb-tcp-streams", ["--streams", "4", "--sndbuf", "64K"], None),
])
def test_kernel_own_options_use_the_table(name: str, args: list[str], why: str | None) -> None:
    exe = next((e for e in kernels() if e.name == name), None)
    if exe is None:
        missing(f"{name} not built")
    p = run(exe, args)
    if why is None:
        assert p.returncode == 0 and json.loads(p.stdout)["type"] == "options", p.stderr
    else:
        assert p.returncode == 2 and why in p.stderr and not p.stdout, p.stderr
