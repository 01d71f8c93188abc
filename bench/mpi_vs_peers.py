#!/usr/bin/env python3
"""fabench's MPI kernels side by side with MPI peer tools, interleaved, printed as ratios.

Peers: NetPIPE for Open MPI (Debian `netpipe-openmpi`, `NPopenmpi`) always; OSU
Micro-Benchmarks too when OSU_DIR (or --osu-dir) points at a build of it holding osu_latency
and osu_bw (OSU is never part of fabench: build it yourself, outside the repository).

Cases: 8 B latency over shm and tcp, 4 MiB bandwidth over shm and tcp. Every round runs each
case once per tool, rotating which tool goes first, so host-load drift hits every tool alike.
Each peer is started with exactly the mpirun options fabench used in that round (read back
from the run's `command` in the store), with only the executable and its arguments swapped.

What is compared:
  latency    fabench median of per-iteration half round trips, OSU `-z` P50 (the same
             statistic), NetPIPE's reported time (its best trial's mean half round trip).
             An OSU before 7 (no `-z`, no `-m`: 5.x runs every size) prints only the mean
             over its loop: fabench's mean half round trip is compared with it instead.
  bandwidth  fabench median of per-window bandwidth (window 64 + 1-byte ack), osu_bw's
             aggregate (same window scheme; the best of the rounds is shown too, as the issue's
             target reads), NetPIPE's ping-pong throughput (a different pattern: one message
             in flight, so its ratio is context, not a target).

Prints ratios, never asserts absolute times; exits 0 when fabench measured at least once.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from fabench.store.database import Store

SIZE_LAT = 8
SIZE_BW = 4 * 1024 * 1024
ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


@dataclass(frozen=True)
class Case:
    name: str
    kernel: str  # fabench kernel
    transport: str
    size: int
    lower_is_better: bool
    unit: str


CASES = [
    Case("lat 8B shm", "mpi.latency", "shm", SIZE_LAT, True, "us"),
    Case("lat 8B tcp", "mpi.latency", "tcp", SIZE_LAT, True, "us"),
    Case("bw 4MiB shm", "mpi.bw", "shm", SIZE_BW, False, "MB/s"),
    Case("bw 4MiB tcp", "mpi.bw", "tcp", SIZE_BW, False, "MB/s"),
]


@dataclass(frozen=True)
class Effort:
    rounds: int
    lat_iters: int
    lat_warmup: int
    bw_iters: int
    bw_warmup: int


FULL = Effort(rounds=5, lat_iters=10000, lat_warmup=1000, bw_iters=20, bw_warmup=2)
QUICK = Effort(rounds=2, lat_iters=1000, lat_warmup=100, bw_iters=4, bw_warmup=1)


@dataclass
class Sample:
    value: float | None
    note: str = ""


@dataclass(frozen=True)
class Tool:
    name: str
    # (case, fabench's mpirun prefix, effort) -> the peer's value for that case
    measure: Callable[[Case, list[str], Effort], Sample]


def peer_env() -> dict[str, str]:
    env = dict(os.environ)
    if os.geteuid() == 0:
        env.update(ROOT_ENV)
    return env


def run(argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout,
                          env=peer_env(), check=False)


def tail(text: str, n: int = 3) -> str:
    return " | ".join(ln.strip() for ln in text.strip().splitlines()[-n:])


class Fabench:
    """fabench through its CLI; remembers the mpirun prefix of its latest run per case."""

    def __init__(self, cli: list[str], out: Path) -> None:
        self.cli = cli
        self.out = out
        self.prefix: dict[str, list[str]] = {}
        # latency as the median (OSU 7's P50) or, beside an OSU without percentiles, the mean
        self.latency_stat = "median"

    def measure(self, case: Case, effort: Effort) -> Sample:
        lat = case.kernel == "mpi.latency"
        iters, warm = ((effort.lat_iters, effort.lat_warmup) if lat
                       else (effort.bw_iters, effort.bw_warmup))
        argv = [*self.cli, "bench", case.kernel, "--transport", case.transport,
                "--sizes", str(case.size), "--iterations", str(iters), "--warmup", str(warm),
                "--json", "--out", str(self.out)]
        try:
            cp = run(argv, timeout=600)
        except subprocess.TimeoutExpired:
            return Sample(None, "fabench timed out")
        rows = [json.loads(ln) for ln in cp.stdout.splitlines() if ln.startswith("{")]
        rows = [r for r in rows if r.get("size") == case.size and r.get("status") == "ok"]
        if cp.returncode != 0 or not rows:
            return Sample(None, f"fabench failed: {tail(cp.stderr or cp.stdout)}")
        row = rows[0]
        with Store(self.out / "fabench.sqlite") as store:
            command = store.run(int(row["run_id"])).command or ""
        self.prefix[case.name] = mpirun_prefix(shlex.split(command))
        stat = self.latency_stat if lat else "median"
        return Sample(float(row[stat]), f"{stat}, selected {row.get('selected_transport')}")


def mpirun_prefix(argv: list[str]) -> list[str]:
    """fabench's mpirun command up to (not including) its kernel executable."""
    for i, tok in enumerate(argv):
        if Path(tok).name.startswith("fb-mpi-"):
            return argv[:i]
    raise ValueError(f"no fabench kernel in command: {shlex.join(argv)}")


def netpipe(exe: str) -> Callable[[Case, list[str], Effort], Sample]:
    def measure(case: Case, prefix: list[str], effort: Effort) -> Sample:
        lat = case.kernel == "mpi.latency"
        # Fixed repeats (-n) instead of NetPIPE's calibration, which spends ~9 s per size;
        # -p 0: the exact size only, no +-3 byte perturbations.
        reps = effort.lat_iters if lat else max(effort.bw_iters, 10)
        with tempfile.TemporaryDirectory(prefix="np-") as tmp:
            outfile = Path(tmp) / "np.out"
            argv = [*prefix, exe, "-l", str(case.size), "-u", str(case.size), "-p", "0",
                    "-n", str(reps), "-o", str(outfile)]
            try:
                cp = run(argv, timeout=600)
            except subprocess.TimeoutExpired:
                return Sample(None, "NetPIPE timed out")
            lines = outfile.read_text().split() if outfile.exists() else []
        # one line per size: bytes, throughput (Mbit/s of 2^20 bits), seconds per message
        if cp.returncode != 0 or len(lines) < 3:
            return Sample(None, f"NetPIPE failed: {tail(cp.stderr or cp.stdout)}")
        seconds = float(lines[2])
        if lat:
            return Sample(seconds * 1e6, "best trial mean")
        return Sample(case.size / seconds / 1e6, "ping-pong")
    return measure


def find_osu(root: Path) -> tuple[str, str] | None:
    """osu_latency and osu_bw side by side anywhere under root (build tree or install)."""
    for hit in sorted(root.rglob("osu_latency")):
        bw = hit.with_name("osu_bw")
        if hit.is_file() and os.access(hit, os.X_OK) and bw.is_file():
            return str(hit), str(bw)
    return None


def osu_is_legacy(lat_exe: str) -> bool:
    """An OSU before 7: its usage lists neither -m (size range) nor -z (percentiles)."""
    cp = run([lat_exe, "-h"], timeout=30)
    usage = cp.stdout + cp.stderr
    return " -m" not in usage and " -z" not in usage


def osu(lat_exe: str, bw_exe: str, legacy: bool) -> Callable[[Case, list[str], Effort], Sample]:
    def measure(case: Case, prefix: list[str], effort: Effort) -> Sample:
        lat = case.kernel == "mpi.latency"
        rng = f"{case.size}:{case.size}"
        size_args = [] if legacy else ["-m", rng]
        if lat:
            argv = [*prefix, lat_exe, *([] if legacy else ["-z"]), *size_args,
                    "-i", str(effort.lat_iters), "-x", str(effort.lat_warmup)]
        else:
            argv = [*prefix, bw_exe, *size_args, "-i", str(effort.bw_iters),
                    "-x", str(effort.bw_warmup)]
        try:
            cp = run(argv, timeout=600)
        except subprocess.TimeoutExpired:
            return Sample(None, "OSU timed out")
        # data lines: size, then avg [P50 P90 P99] for osu_latency -z, bandwidth for osu_bw
        for ln in cp.stdout.splitlines():
            cols = ln.split()
            if cols and not ln.startswith("#") and cols[0] == str(case.size):
                if lat and legacy and len(cols) >= 2:
                    return Sample(float(cols[1]), "mean")
                if lat and len(cols) >= 3:
                    return Sample(float(cols[2]), "P50")
                if not lat and len(cols) >= 2:
                    return Sample(float(cols[1]), "aggregate")
        return Sample(None, f"OSU failed: {tail(cp.stderr or cp.stdout)}")
    return measure


def uptime() -> str:
    try:
        return "load average " + " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "load average unknown"


def fmt(v: float | None, unit: str) -> str:
    if v is None:
        return "n/a"
    return f"{v:.3f}" if unit == "us" else f"{v:.0f}"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--quick", action="store_true",
                    help=f"{QUICK.rounds} rounds, short loops (seconds); default: "
                         f"{FULL.rounds} rounds with OSU's default iteration counts")
    ap.add_argument("--rounds", type=int, help="interleaved rounds (overrides the mode's)")
    ap.add_argument("--cases", default=",".join(c.name.replace(" ", "-") for c in CASES),
                    help="comma list of cases (default: all)")
    ap.add_argument("--osu-dir", default=os.environ.get("OSU_DIR"),
                    help="an OSU Micro-Benchmarks build or install (default: $OSU_DIR)")
    ap.add_argument("--netpipe", default="NPopenmpi", help="NetPIPE for Open MPI executable")
    ap.add_argument("--fabench", help="fabench command (default: this Python's -m fabench)")
    ap.add_argument("--out", help="keep fabench's store here (default: a temporary dir)")
    ap.add_argument("--save", help="write every round's values as JSON to this file")
    args = ap.parse_args(argv)

    effort = QUICK if args.quick else FULL
    if args.rounds:
        effort = Effort(args.rounds, effort.lat_iters, effort.lat_warmup, effort.bw_iters,
                        effort.bw_warmup)
    wanted = set(args.cases.replace("-", " ").split(","))
    cases = [c for c in CASES if c.name in wanted]
    if not cases:
        ap.error(f"no known case in {args.cases!r}")

    notes: list[str] = []
    tools: list[Tool] = []
    fab_latency_stat = "median"
    np_exe = shutil.which(args.netpipe)
    if np_exe:
        tools.append(Tool("NetPIPE", netpipe(np_exe)))
    else:
        notes.append(f"NetPIPE: {args.netpipe} not found (Debian package netpipe-openmpi)")
    if args.osu_dir:
        found = find_osu(Path(args.osu_dir))
        if found:
            legacy = osu_is_legacy(found[0])
            tools.append(Tool("OSU", osu(*found, legacy)))
            if legacy:
                fab_latency_stat = "mean"
            notes.append(f"OSU: {found[0]}, {found[1]}" + (
                " (before 7: every size run, latency compared as fabench's mean with OSU's "
                "mean)" if legacy else ""))
        else:
            notes.append(f"OSU: no osu_latency + osu_bw under {args.osu_dir}")
    else:
        notes.append("OSU: not compared (set OSU_DIR to a build of OSU Micro-Benchmarks)")

    cli = shlex.split(args.fabench) if args.fabench else [sys.executable, "-m", "fabench"]
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="fabench-peers-"))
    fab = Fabench(cli, out)
    fab.latency_stat = fab_latency_stat
    names = ["fabench", *(t.name for t in tools)]
    # values[case][tool] -> one value per round (None when that run failed)
    values: dict[str, dict[str, list[float | None]]] = {
        c.name: {n: [] for n in names} for c in cases}
    failures: list[str] = []
    load_start = uptime()
    t_start = time.monotonic()

    for rnd in range(effort.rounds):
        for case in cases:
            # rotate the order each round: no tool always runs first (or right after another)
            shift = rnd % len(names)
            for name in names[shift:] + names[:shift]:
                if name == "fabench":
                    s = fab.measure(case, effort)
                else:
                    prefix = fab.prefix.get(case.name)
                    if prefix is None:  # fabench never ran this case: no options to share
                        s = Sample(None, "no fabench command to copy mpirun options from")
                    else:
                        tool = next(t for t in tools if t.name == name)
                        s = tool.measure(case, prefix, effort)
                values[case.name][name].append(s.value)
                if s.value is None:
                    failures.append(f"round {rnd + 1} {case.name} {name}: {s.note}")
            print(f"# round {rnd + 1}/{effort.rounds} {case.name}: " + "  ".join(
                f"{n}={fmt(values[case.name][n][-1], case.unit)}" for n in names),
                file=sys.stderr, flush=True)

    elapsed = time.monotonic() - t_start
    print(f"# fabench vs MPI peers (Open MPI), {effort.rounds} interleaved rounds, "
          f"{elapsed:.0f} s; {load_start} at start, {uptime()} at end")
    for case in cases:
        prefix = fab.prefix.get(case.name)
        if prefix:
            print(f"# {case.name}: {shlex.join(prefix)} <tool>")
    for n in notes:
        print(f"# {n}")
    print("# value per tool = median over rounds [min..max of rounds]; ratio = fabench / peer "
          "(latency: < 1 is fabench lower; bandwidth: > 1 is fabench higher)")
    head = f"{'case':<12} {'tool':<8} {'unit':<5} {'median':>10} {'rounds min..max':>21} " \
           f"{'ratio':>7} {'paired ratios min..max':>23}"
    print(head)
    print("-" * len(head))
    for case in cases:
        fv = values[case.name]["fabench"]
        for name in names:
            vals = values[case.name][name]
            ok = [v for v in vals if v is not None]
            med = statistics.median(ok) if ok else None
            span = f"{fmt(min(ok), case.unit)}..{fmt(max(ok), case.unit)}" if ok else "n/a"
            ratio = paired = ""
            fok = [v for v in fv if v is not None]
            if name != "fabench" and ok and fok and med:
                ratio = f"{statistics.median(fok) / med:.3f}"
                pr = [f / p for f, p in zip(fv, vals, strict=True) if f is not None and p]
                if pr:
                    paired = f"{min(pr):.3f}..{max(pr):.3f}"
            print(f"{case.name:<12} {name:<8} {case.unit:<5} {fmt(med, case.unit):>10} "
                  f"{span:>21} {ratio:>7} {paired:>23}")
            if name == "OSU" and not case.lower_is_better and ok and fok:
                best = max(ok)
                print(f"{'':<12} {'OSU best':<8} {case.unit:<5} {fmt(best, case.unit):>10} "
                      f"{'':>21} {statistics.median(fok) / best:>7.3f}")
    for f in failures:
        print(f"# failed: {f}")
    if args.save:
        Path(args.save).write_text(json.dumps(
            {"rounds": effort.rounds, "effort": effort.__dict__, "load_start": load_start,
             "load_end": uptime(), "values": values,
             "commands": {k: shlex.join(v) for k, v in fab.prefix.items()}}, indent=1))
    if not args.out:
        shutil.rmtree(out, ignore_errors=True)
    fabench_ok = any(v is not None for c in cases for v in values[c.name]["fabench"])
    return 0 if fabench_ok else 1


if __name__ == "__main__":
    sys.exit(main())
