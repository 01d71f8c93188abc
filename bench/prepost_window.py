#!/usr/bin/env python3
"""Windows with the next window's receives posted before the ack, against the same kernel
without (an earlier build) and osu_bw, interleaved, printed as ratios.

    BEFORE_DIR=/old/_native/openmpi OSU_DIR=$HOME/osu/mpi/pt2pt \\
      python bench/prepost_window.py --native build/_native --rounds 5

One mpirun command line for every tool (Open MPI, shared memory), each size once per tool per
round with the tool order rotated, so host-load drift hits every tool alike. The figure is the
bytes over the whole timed part (`osu_mb_s`, osu_bw's own statistic) and the median window
(fabench's headline). Ratios are per round (paired), median and range over rounds. The peers
are optional and never part of fabench: build them outside the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
from collections import defaultdict
from pathlib import Path

ENV = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
SIZES = (8, 1024, 65536, 4 << 20)


def mpirun() -> list[str]:
    exe = shutil.which("mpirun.openmpi") or shutil.which("mpirun") or "mpirun"
    return [exe, "--oversubscribe", "--mca", "pml", "ob1", "--mca", "btl", "self,vader",
            "-np", "2", "--"]


def run(argv: list[str]) -> str:
    p = subprocess.run([*mpirun(), *argv], capture_output=True, text=True, env=ENV,
                       timeout=600, check=False)
    if p.returncode != 0:
        raise RuntimeError(f"{argv[0]}: exit {p.returncode}: {p.stderr.strip()[-300:]}")
    return p.stdout


def fabench(exe: Path, iters: int, sizes: tuple[int, ...]) -> dict[int, tuple[float, float]]:
    """size -> (osu_mb_s, median-window MB/s)."""
    out = run([str(exe), "--sizes", ",".join(map(str, sizes)), "--iterations", str(iters)])
    got = {}
    for r in map(json.loads, out.splitlines()):
        if r.get("type") == "result":
            got[r["size"]] = (r["osu_mb_s"], r["bytes_per_sample"] / statistics.median(r["times"]))
    return got


def osu_bw(exe: Path, iters: int, sizes: tuple[int, ...]) -> dict[int, tuple[float, float]]:
    # osu_bw 5.x: -i loops at every size (its own large-size count otherwise), -x skip
    out = run([str(exe), "-i", str(iters), "-x", str(max(1, iters // 10))])
    got = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 2 and f[0].isdigit() and int(f[0]) in sizes:
            got[int(f[0])] = (float(f[1]), float("nan"))
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--native", type=Path, help="kernels' _native dir (default: installed)")
    ap.add_argument("--before-dir", type=Path, default=os.environ.get("BEFORE_DIR"),
                    help="a dir with fb-mpi-bw of a build without pre-posted windows")
    ap.add_argument("--osu-dir", type=Path, default=os.environ.get("OSU_DIR"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)),
                    help=f"comma list of bytes (default {','.join(map(str, SIZES))})")
    a = ap.parse_args()
    sizes = tuple(int(x) for x in a.sizes.split(","))
    if a.native is None:
        from fabench.host.native import native_root
        a.native = native_root()
    tools = {"after": lambda: fabench(a.native / "openmpi" / "fb-mpi-bw", a.iterations, sizes)}
    if a.before_dir:
        tools["before"] = lambda: fabench(a.before_dir / "fb-mpi-bw", a.iterations, sizes)
    if a.osu_dir:
        tools["osu_bw"] = lambda: osu_bw(a.osu_dir / "osu_bw", a.iterations, sizes)
    rounds: list[dict[str, dict[int, tuple[float, float]]]] = []
    names = list(tools)
    load0 = os.getloadavg()
    for rnd in range(a.rounds):
        got = {}
        for name in names[rnd % len(names):] + names[:rnd % len(names)]:
            got[name] = tools[name]()
        rounds.append(got)
        print(f"round {rnd} done", flush=True)
    ratios: dict[str, list[float]] = defaultdict(list)
    for got in rounds:
        for s in sizes:
            for peer in ("before", "osu_bw"):
                if peer in got and s in got[peer]:
                    ratios[f"{s:>8} B  after/{peer} osu_mb_s"].append(
                        got["after"][s][0] / got[peer][s][0])
            if "before" in got:
                ratios[f"{s:>8} B  after/before median window"].append(
                    got["after"][s][1] / got["before"][s][1])
    print(f"# load average {' '.join(f'{x:.1f}' for x in load0)} at start, "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} at end")
    print(f"{'ratio (per round, paired)':44} {'median':>7}  min..max  (rounds)")
    for k, v in ratios.items():
        print(f"{k:44} {statistics.median(v):7.3f}  {min(v):.3f}..{max(v):.3f}  ({len(v)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
