#!/usr/bin/env python3
"""Validated over plain for the transport bandwidth kernels, this build beside an earlier one,
interleaved, printed as ratios.

    python bench/validate_footprint.py --before-dir /old/_native --rounds 5

For each kernel (tcp.bw over loopback, ofi.bw over --ofi-provider) at --size with --window
messages per window, each round runs plain and --validate on each build (this one: the
installed kernels or --native; the earlier one: --before-dir, a `_native` folder), the order
rotated every round so host-load drift hits every run alike. The figures: the median window
time (the headline), and the receiver's peak resident set (server_max_rss_mib), which shows
the receive footprint. Printed: per build and kernel, validated / plain of the median window
time, paired within a round, median and min-max over the rounds; the peak RSS of each mode;
the load average (1 min) after every round. Absolute times are never asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from fabench.host.native import native_root
from fabench.kernels import get_kernel
from fabench.plan.plan import plan_run, settings_from_words
from fabench.starters.pair import run_pair

MODES = ("plain", "validated")


def one_run(native: Path, kernel: str, transport: str, words: list[str]) -> tuple[float, float]:
    """(median window time in us, the server's peak RSS in MiB) of one launch from `native`."""
    os.environ["FABENCH_NATIVE_DIR"] = str(native)
    run = plan_run(kernel, transport=transport, timeout_s=600,
                   settings=settings_from_words(get_kernel(kernel), words))
    res = run_pair(run, None, hosts=None)
    if res.returncode != 0 or not res.output.results:
        raise RuntimeError(f"{kernel} from {native}: exit {res.returncode}: "
                           f"{res.stderr.strip()[-300:]}")
    rec = res.output.results[0]
    return float(statistics.median(rec.times)), float(rec.extra["server_max_rss_mib"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--native", type=Path, help="this build's _native (default: installed)")
    ap.add_argument("--before-dir", type=Path, help="an earlier build's _native")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--size", default="4M")
    ap.add_argument("--window", type=int, default=64)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--ofi-provider", default="shm")
    a = ap.parse_args()
    builds = {"new": a.native or native_root()}
    if a.before_dir:
        builds["old"] = a.before_dir
    kernels = {"tcp.bw": "tcp", "ofi.bw": f"ofi:{a.ofi_provider}"}
    runs = [(b, k, m) for b in builds for k in kernels for m in MODES]
    times: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    rss: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    loads = []
    print(f"# load average at start {os.getloadavg()[0]:.1f}", file=sys.stderr)
    for r in range(a.rounds):
        shift = r % len(runs)
        for b, k, m in runs[shift:] + runs[:shift]:
            words = ["--sizes", a.size, "--window", str(a.window), "--iterations",
                     str(a.iterations), *(["--validate"] if m == "validated" else [])]
            t, mib = one_run(builds[b], k, kernels[k], words)
            times[b, k, m].append(t)
            rss[b, k, m].append(mib)
        loads.append(os.getloadavg()[0])
        print(f"# round {r + 1}/{a.rounds} done, load {loads[-1]:.1f}", file=sys.stderr)
    print(f"# {a.size} x {a.window}, {a.iterations} windows, {a.rounds} rounds, "
          f"{os.cpu_count()} CPUs, load after each round: "
          + " ".join(f"{x:.1f}" for x in loads))
    print(f"# {'build':<5} {'kernel':<8} {'validated/plain':>15} {'min-max':>13} "
          f"{'plain us':>10} {'valid. us':>10} {'RSS plain':>9} {'RSS valid.':>10}")
    for b in builds:
        for k in kernels:
            p, v = times[b, k, "plain"], times[b, k, "validated"]
            pairs = [y / x for x, y in zip(p, v, strict=True)]
            print(f"  {b:<5} {k:<8} {statistics.median(pairs):>15.3f} "
                  f"{min(pairs):>6.3f}-{max(pairs):<6.3f} {statistics.median(p):>10.0f} "
                  f"{statistics.median(v):>10.0f} {max(rss[b, k, 'plain']):>9.1f} "
                  f"{max(rss[b, k, 'validated']):>10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
