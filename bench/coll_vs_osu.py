#!/usr/bin/env python3
"""fabench's collectives against OSU's, like with like, interleaved, printed as ratios.

For each case (collective x datatype x size x ranks) every round runs fabench's kernel and the
OSU benchmark once each, alternating which goes first, OSU started with exactly the mpirun
options fabench used in that round (read back from the stored run's command). Compared:

  osu_avg      fabench's OSU-style loop (per call timed alone, a barrier after it outside the
               timing, mean over calls, averaged over ranks)  vs  OSU's "Avg Latency(us)"
  headline     fabench's median of the slowest rank per call (context: not what OSU prints)

at OSU's datatype (-T mpi_char / mpi_int / mpi_float against --datatype char / int / float).
An OSU before 7 has no -T: its allreduce and reduce run MPI_FLOAT, the others MPI_CHAR, and
each case takes that datatype only.
The table shows the ratio of medians over rounds and the min..max of the per-round (paired)
ratios. OSU is never part of fabench: build OSU Micro-Benchmarks yourself, outside the
repository, and point --osu-dir (or OSU_DIR) at it. Prints ratios, never asserts times.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from fabench.store.database import Store

ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
OSU_TYPE = {"char": "mpi_char", "int": "mpi_int", "float": "mpi_float"}


@dataclass
class Case:
    coll: str  # allreduce, alltoall, ...
    datatype: str
    size: int
    ranks: int
    fab_osu: list[float] = field(default_factory=list)
    fab_head: list[float] = field(default_factory=list)
    osu: list[float] = field(default_factory=list)
    pairs: list[float] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.coll} {self.datatype} {self.size} B np={self.ranks}"


def env() -> dict[str, str]:
    e = dict(os.environ)
    if os.geteuid() == 0:
        e.update(ROOT_ENV)
    return e


def mpirun_prefix(argv: list[str]) -> list[str]:
    for i, tok in enumerate(argv):
        if Path(tok).name.startswith("fb-mpi-"):
            return argv[:i]
    raise ValueError(f"no fabench kernel in {shlex.join(argv)}")


def fabench(case: Case, iters: int, warmup: int, out: Path) -> tuple[float, float, list[str]]:
    argv = [sys.executable, "-m", "fabench", "bench", f"mpi.{case.coll}", "--ranks",
            str(case.ranks), "--sizes", str(case.size), "--datatype", case.datatype,
            "--iterations", str(iters), "--warmup", str(warmup), "--json", "--out", str(out),
            "--kernel-args", f"--osu-iterations {iters}"]
    cp = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False)
    rows = [json.loads(x) for x in cp.stdout.splitlines() if x.startswith("{")]
    if cp.returncode or not rows or rows[0].get("osu_avg") is None:
        raise RuntimeError(f"fabench {case.name}: {cp.stderr.strip()[-300:]}")
    with Store(out / "fabench.sqlite") as st:
        command = st.run(int(rows[0]["run_id"])).command or ""
    return float(rows[0]["osu_avg"]), float(rows[0]["median"]), mpirun_prefix(
        shlex.split(command))


def has_datatype_option(exe: Path) -> bool:
    """OSU 7 takes -T DATATYPE; 5.x lists no such option in its usage."""
    cp = subprocess.run([str(exe), "-h"], capture_output=True, text=True, timeout=30,
                        env=env(), check=False)
    return " -T" in cp.stdout + cp.stderr


# what an OSU before 7 runs, having no -T
LEGACY_TYPE = {"allreduce": "float", "reduce": "float"}


def osu(case: Case, exe: Path, prefix: list[str], iters: int, warmup: int,
        typed: bool = True) -> float:
    argv = [*prefix, str(exe), "-m", f"{case.size}:{case.size}", "-i", str(iters), "-x",
            str(warmup), *(["-T", OSU_TYPE[case.datatype]] if typed else [])]
    cp = subprocess.run(argv, capture_output=True, text=True, timeout=900, env=env(),
                        check=False)
    for line in cp.stdout.splitlines():
        f = line.split()
        if len(f) >= 2 and f[0] == str(case.size):
            return float(f[1])
    raise RuntimeError(f"OSU {case.name}: {cp.stderr.strip()[-300:] or cp.stdout[-300:]}")


def find(root: Path, name: str) -> Path:
    for hit in sorted(root.rglob(name)):
        if hit.is_file() and os.access(hit, os.X_OK):
            return hit
    raise SystemExit(f"no {name} under {root}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--osu-dir", default=os.environ.get("OSU_DIR"), required=False)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--sizes", default="8,65536")
    ap.add_argument("--colls", default="allreduce,alltoall",
                    help="collectives (allreduce varies the datatype; others use char)")
    ap.add_argument("--save", type=Path, help="write the raw values as JSON")
    args = ap.parse_args()
    if not args.osu_dir:
        raise SystemExit("point --osu-dir (or OSU_DIR) at an OSU Micro-Benchmarks build")
    colls = args.colls.split(",")
    exes = {c: find(Path(args.osu_dir), f"osu_{c}") for c in colls}
    typed = all(has_datatype_option(e) for e in exes.values())
    if not typed:
        print("# OSU before 7 (no -T): allreduce/reduce as MPI_FLOAT, the others MPI_CHAR",
              file=sys.stderr)
    cases = [Case(c, dt, s, r) for c in colls
             for dt in ((OSU_TYPE if c in ("allreduce", "reduce") else ["char"]) if typed
                        else [LEGACY_TYPE.get(c, "char")])
             for s in map(int, args.sizes.split(",")) for r in map(int, args.ranks.split(","))]
    with tempfile.TemporaryDirectory(prefix="coll-osu-") as tmp:
        for rnd in range(args.rounds):
            for i, case in enumerate(cases):
                fab_first = (rnd + i) % 2 == 0
                try:
                    if fab_first:
                        fo, fh, prefix = fabench(case, args.iterations, args.warmup, Path(tmp))
                        o = osu(case, exes[case.coll], prefix, args.iterations, args.warmup, typed)
                    else:
                        # OSU first, with the options fabench used for this case last round
                        # (or a fabench run to learn them on the very first)
                        if not case.fab_osu:
                            fo, fh, prefix = fabench(case, args.iterations, args.warmup,
                                                     Path(tmp))
                        o = osu(case, exes[case.coll], prefix, args.iterations, args.warmup, typed)
                        fo, fh, prefix = fabench(case, args.iterations, args.warmup, Path(tmp))
                except RuntimeError as exc:
                    print(f"  round {rnd + 1}: {exc}", file=sys.stderr)
                    continue
                case.fab_osu.append(fo)
                case.fab_head.append(fh)
                case.osu.append(o)
                case.pairs.append(fo / o)
            print(f"# round {rnd + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    load = os.getloadavg()[0]
    print(f"# fabench osu_avg vs OSU Avg Latency, {args.rounds} interleaved rounds, "
          f"{args.iterations} iterations; load average {load:.1f} on {os.cpu_count()} cores")
    print(f"# {'case':<30} {'fab osu_avg':>11} {'OSU avg':>9} {'ratio':>7} "
          f"{'paired min..max':>17} {'fab median':>11}")
    for c in cases:
        if not c.pairs:
            print(f"  {c.name:<30} (no data)")
            continue
        fo, o = statistics.median(c.fab_osu), statistics.median(c.osu)
        print(f"  {c.name:<30} {fo:>11.3f} {o:>9.3f} {fo / o:>7.3f} "
              f"{min(c.pairs):>8.3f}..{max(c.pairs):<8.3f} {statistics.median(c.fab_head):>11.3f}")
    if args.save:
        args.save.write_text(json.dumps([vars(c) for c in cases], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
