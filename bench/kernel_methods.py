#!/usr/bin/env python3
"""The kernel methods of the C engine beside OSU and IMB, interleaved, printed as ratios.

Runs the kernel binaries directly under one mpirun command line (Open MPI, shared memory:
`--mca btl self,vader`), the same for every tool, each case once per tool per round with the
tool order rotated, so host-load drift hits every tool alike. Peers are optional and never part
of fabench: OSU_DIR (osu_latency, osu_mbw_mr) and IMB_DIR (IMB-MPI1) point at builds made
outside the repository. BEFORE_DIR may hold fb-mpi-* binaries of an earlier build (before/after
ratios of a method change).

Cases
  lat 8B     fabench per-sample (median and mean of half round trips), fabench --batch 100
             (median), osu_latency's average, IMB PingPong's t[usec] (both: one timer pair
             around the whole loop, so their average is the comparable statistic)
  mbw_mr     2 pairs: fabench headline (bytes over the median window of the summed rates),
             its osu_mb_s (bytes over each pair's whole timed part, summed), osu_mbw_mr's MB/s;
             BEFORE_DIR: the earlier method (a barrier per window, the slowest pair)
  validate   mpi.bw 4 MiB, --validate over plain (median windows); BEFORE_DIR: the same with
             one receive slot per message of the window

Prints ratios, never asserts; every number is measured in the run that prints it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

ENV = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def mpirun(np: int) -> list[str]:
    exe = shutil.which("mpirun.openmpi") or shutil.which("mpirun") or "mpirun"
    return [exe, "--oversubscribe", "--mca", "btl", "self,vader", "-np", str(np)]


def run(argv: list[str], timeout: float = 300) -> str:
    p = subprocess.run(argv, capture_output=True, text=True, env=ENV, timeout=timeout,
                       check=False)
    if p.returncode != 0:
        raise RuntimeError(f"{argv[-1]}: exit {p.returncode}: {p.stderr.strip()[-300:]}")
    return p.stdout


def results(out: str) -> list[dict]:
    return [r for r in map(json.loads, out.splitlines()) if r.get("type") == "result"]


def fabench(exe: Path, np: int, *args: str) -> list[dict]:
    return results(run([*mpirun(np), "--", str(exe), *args]))


def table_value(out: str, size: int, col: int) -> float:
    """The column `col` of the row for `size` in an OSU/IMB text table."""
    for line in out.splitlines():
        f = line.split()
        if len(f) > col and f[0] == str(size) and re.fullmatch(r"[\d.]+", f[col]):
            return float(f[col])
    raise RuntimeError(f"no row for size {size}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--native", type=Path, help="kernels' _native dir (default: installed)")
    ap.add_argument("--osu-dir", type=Path, default=os.environ.get("OSU_DIR"))
    ap.add_argument("--imb-dir", type=Path, default=os.environ.get("IMB_DIR"))
    ap.add_argument("--before-dir", type=Path, default=os.environ.get("BEFORE_DIR"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cases", default="lat,mbw,validate",
                    help="comma list of lat, mbw, validate (default: all)")
    a = ap.parse_args()
    if a.native is None:
        from fabench.host.native import native_root
        a.native = native_root()
    k = a.native / "openmpi"
    got: dict[str, list[float]] = defaultdict(list)

    def lat() -> dict[str, Callable[[], None]]:
        def fab() -> None:
            r = fabench(k / "fb-mpi-latency", 2, "--sizes", "8", "--iterations", "10000")[0]
            got["lat fabench median"].append(statistics.median(r["times"]))
            got["lat fabench mean"].append(statistics.fmean(r["times"]))

        def batch() -> None:
            r = fabench(k / "fb-mpi-latency", 2, "--sizes", "8", "--iterations", "100",
                        "--warmup", "10", "--batch", "100")[0]
            got["lat fabench --batch 100 median"].append(statistics.median(r["times"]))

        tools = {"fab": fab, "batch": batch}
        if a.osu_dir:
            tools["osu"] = lambda: got["lat osu_latency avg"].append(table_value(
                run([*mpirun(2), "--", str(a.osu_dir / "osu_latency"), "-i", "2000",
                     "-x", "200"]), 8, 1))
        if a.imb_dir:
            tools["imb"] = lambda: got["lat IMB PingPong avg"].append(table_value(
                run([*mpirun(2), "--", str(a.imb_dir / "IMB-MPI1"), "PingPong", "-msglog",
                     "2:3", "-iter", "10000"]), 8, 2))
        return tools

    def mbw() -> dict[str, Callable[[], None]]:
        size = 1 << 20

        def fab() -> None:
            r = fabench(k / "fb-mpi-mbw_mr", 4, "--sizes", str(size), "--iterations", "20")[0]
            got["mbw fabench headline MB/s"].append(
                r["bytes_per_sample"] / statistics.median(r["times"]))
            got["mbw fabench osu_mb_s"].append(r["osu_mb_s"])

        tools = {"fab": fab}
        if a.before_dir:
            def before() -> None:
                r = fabench(a.before_dir / "fb-mpi-mbw_mr", 4, "--sizes", str(size),
                            "--iterations", "20")[0]
                got["mbw before (barrier/window, max) MB/s"].append(
                    r["bytes_per_sample"] / statistics.median(r["times"]))
            tools["before"] = before
        if a.osu_dir:
            tools["osu"] = lambda: got["mbw osu_mbw_mr MB/s"].append(table_value(
                run([*mpirun(4), "--", str(a.osu_dir / "osu_mbw_mr")]), size, 1))
        return tools

    def validate() -> dict[str, Callable[[], None]]:
        def pair(tag: str, exe: Path) -> Callable[[], None]:
            def go() -> None:
                med = {}
                for v in ((), ("--validate",)):
                    r = fabench(exe, 2, "--sizes", "4M", "--iterations", "20", *v)[0]
                    med[bool(v)] = statistics.median(r["times"])
                got[f"validate/plain time {tag}"].append(med[True] / med[False])
            return go
        tools = {"now": pair("now (one slot)", k / "fb-mpi-bw")}
        if a.before_dir:
            tools["before"] = pair("before (slot per message)", a.before_dir / "fb-mpi-bw")
        return tools

    for rnd in range(a.rounds):
        makers = {"lat": lat, "mbw": mbw, "validate": validate}
        for case in (makers[c]() for c in a.cases.split(",")):
            names = list(case)
            for name in names[rnd % len(names):] + names[:rnd % len(names)]:
                try:
                    t0 = time.monotonic()
                    case[name]()
                    print(f"round {rnd} {name}: {time.monotonic() - t0:.1f} s", flush=True)
                except (RuntimeError, subprocess.TimeoutExpired) as exc:
                    print(f"round {rnd} {name}: {exc}")
    print(f"# load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} at end")
    print(f"{'measure':44} {'median over rounds':>18}  values")
    for name, vals in got.items():
        print(f"{name:44} {statistics.median(vals):18.4f}  "
              + " ".join(f"{v:.4g}" for v in vals))

    def ratio(a_: str, b_: str) -> None:
        if got.get(a_) and got.get(b_):
            print(f"ratio {a_} / {b_}: "
                  f"{statistics.median(got[a_]) / statistics.median(got[b_]):.3f}")
    for peer in ("lat osu_latency avg", "lat IMB PingPong avg"):
        for ours in ("lat fabench median", "lat fabench mean", "lat fabench --batch 100 median"):
            ratio(ours, peer)
    for ours in ("mbw fabench headline MB/s", "mbw fabench osu_mb_s",
                 "mbw before (barrier/window, max) MB/s"):
        ratio(ours, "mbw osu_mbw_mr MB/s")
    return 0 if got else 1


if __name__ == "__main__":
    raise SystemExit(main())
