#!/usr/bin/env python3
"""Run-to-run spread of fabench itself: N repeats of one kernel at one size per transport.

Each repeat is a separate `fabench bench KERNEL --transport T --sizes S:S --json` (a fresh
mpirun, fresh ranks, fresh buffers), as a user would repeat it. Repeats are interleaved over
the transports (shm, tcp, shm, tcp, ...) so drift in host load hits every transport alike.
Prints each repeat's median, the mean of those medians, their sample standard deviation and
the coefficient of variation CV = stdev / mean (n - 1 in the stdev), and the host's load
average before and after.

Issue 2's target: three repeats of `fabench bench mpi.latency` give 8 B medians with a CV
<= 2 %. `--kernel mpi.bw --size 4M` does the same for the 4 MiB bandwidth (no target).

Prints numbers, never asserts them; exits 0 when every repeat measured.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

TARGET_CV = 0.02  # issue 2, 8 B latency
SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text: str) -> int:
    t = text.strip().upper().removesuffix("B")
    unit = t[-1:] if t[-1:] in SUFFIX else ""
    return int(t[: len(t) - len(unit)]) * SUFFIX[unit]


def uptime() -> str:
    try:
        return "load average " + " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "load average unknown"


def tail(text: str, n: int = 3) -> str:
    return " | ".join(ln.strip() for ln in text.strip().splitlines()[-n:])


def measure(cli: list[str], kernel: str, transport: str, size: int, args: argparse.Namespace,
            out: Path) -> tuple[float | None, str]:
    """One `fabench bench` run: (median, note) or (None, why it failed)."""
    argv = [*cli, "bench", kernel, "--transport", transport, "--mpi", args.mpi,
            "--sizes", f"{size}:{size}", "--json", "--out", str(out)]
    if args.iterations:
        argv += ["--iterations", str(args.iterations)]
    if args.warmup is not None:
        argv += ["--warmup", str(args.warmup)]
    try:
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=args.timeout,
                            check=False)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {args.timeout:.0f} s"
    rows = [json.loads(ln) for ln in cp.stdout.splitlines() if ln.startswith("{")]
    rows = [r for r in rows if r.get("size") == size and r.get("status") == "ok"]
    if cp.returncode != 0 or not rows:
        return None, f"fabench failed (exit {cp.returncode}): {tail(cp.stderr or cp.stdout)}"
    r = rows[0]
    return float(r["median"]), (f"run {r.get('run_id')}, n={r.get('n')}, "
                                f"selected {r.get('selected_transport')}")


def fmt(v: float, unit: str) -> str:
    return f"{v:.3f}" if unit == "us" else f"{v:.1f}"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--repeats", "-n", type=int, default=3, help="runs per transport (3)")
    ap.add_argument("--kernel", default="mpi.latency", help="mpi.latency (default) or mpi.bw")
    ap.add_argument("--size", help="message size, e.g. 8, 4M (default: 8 for latency, 4M for "
                                   "bandwidth kernels)")
    ap.add_argument("--transports", default="shm,tcp", help="comma list (default: shm,tcp)")
    ap.add_argument("--mpi", default="openmpi", help="openmpi (default) or mpich")
    ap.add_argument("--iterations", type=int, help="timed iterations (default: fabench's, "
                                                   "i.e. OSU's)")
    ap.add_argument("--warmup", type=int, help="warm-up iterations (default: fabench's)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per run (900)")
    ap.add_argument("--fabench", help="fabench command (default: this Python's -m fabench)")
    ap.add_argument("--out", help="keep fabench's store here (default: a temporary dir)")
    ap.add_argument("--save", help="write every repeat's median as JSON to this file")
    args = ap.parse_args(argv)
    if args.repeats < 2:
        ap.error("--repeats must be at least 2 for a standard deviation")

    latency = args.kernel.endswith("latency")
    size = parse_size(args.size or ("8" if latency else "4M"))
    unit = "us" if latency else "MB/s"
    transports = [t.strip() for t in args.transports.split(",") if t.strip()]
    cli = shlex.split(args.fabench) if args.fabench else [sys.executable, "-m", "fabench"]
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="fabench-cv-"))

    values: dict[str, list[float]] = {t: [] for t in transports}
    failures: list[str] = []
    load_start = uptime()
    t_start = time.monotonic()
    for rep in range(args.repeats):
        for transport in transports:
            v, note = measure(cli, args.kernel, transport, size, args, out)
            if v is None:
                failures.append(f"repeat {rep + 1} {transport}: {note}")
            else:
                values[transport].append(v)
            shown = "failed" if v is None else f"{fmt(v, unit)} {unit}"
            print(f"# repeat {rep + 1}/{args.repeats} {transport}: median {shown} ({note})",
                  file=sys.stderr, flush=True)
    elapsed = time.monotonic() - t_start

    print(f"# fabench {args.kernel} {size} B, {args.mpi}, {args.repeats} repeats per "
          f"transport, interleaved, {elapsed:.0f} s; {load_start} at start, {uptime()} at end")
    print(f"# store: {out / 'fabench.sqlite'}")
    print("# per repeat: that run's median over its iterations; mean, stdev (n-1) and "
          "CV = stdev / mean over the repeats' medians"
          + (f"; issue 2 target CV <= {TARGET_CV:.0%}" if latency and size == 8 else ""))
    head = f"{'transport':<10} {'unit':<5} {'repeat medians':<36} {'mean':>10} {'stdev':>9} " \
           f"{'CV':>7}"
    print(head)
    print("-" * len(head))
    summary: dict[str, dict[str, object]] = {}
    for transport in transports:
        vals = values[transport]
        meds = " ".join(fmt(v, unit) for v in vals) or "n/a"
        if len(vals) >= 2:
            mean = statistics.mean(vals)
            sd = statistics.stdev(vals)
            cv = sd / mean if mean else float("nan")
            verdict = ""
            if latency and size == 8:
                verdict = "  (<= 2 %)" if cv <= TARGET_CV else "  (> 2 %)"
            print(f"{transport:<10} {unit:<5} {meds:<36} {fmt(mean, unit):>10} "
                  f"{fmt(sd, unit):>9} {cv:>6.2%}{verdict}")
            summary[transport] = {"medians": vals, "mean": mean, "stdev": sd, "cv": cv}
        else:
            print(f"{transport:<10} {unit:<5} {meds:<36} {'n/a':>10} {'n/a':>9} {'n/a':>7}")
            summary[transport] = {"medians": vals}
    for f in failures:
        print(f"# failed: {f}")
    if args.save:
        Path(args.save).write_text(json.dumps(
            {"kernel": args.kernel, "size": size, "unit": unit, "mpi": args.mpi,
             "repeats": args.repeats, "load_start": load_start, "load_end": uptime(),
             "transports": summary, "failures": failures}, indent=1) + "\n")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
