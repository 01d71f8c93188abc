#!/usr/bin/env python3
"""How fast and how big `fabench sim` is at scale: wall time and simulator memory (RssAnon).

Cases (issue 7's targets, on this host):
  240 ranks, two-level fat tree (10 leaves x 24), allreduce 8 B..1 MiB, Rabenseifner   < 30 s
  4096 ranks, fat tree (171 leaves x 24), allreduce 8 B..256 KiB, binomial
      (reduce + bcast: 2 (P - 1) messages per call, O(P))                           < 5 min
The 4096-rank sweep stops at 256 KiB: the kernels refuse sizes >= INT_MAX / ranks.

Both use `fabench sim`'s defaults: 1 warm-up and 1 timed call per size (the simulator is
deterministic: further calls give the same time to 0.01 us and cost ~6 s each at 4096 ranks,
where a call is the kernel's recursive-doubling barrier, P log2 P messages, plus the collective;
without the warm-up the first call reads 3 % high at 240 ranks). The warm-up call starts at one
instant of the simulated clock (`--warmup-sync clock`, 2 (P - 1) messages), not after a barrier.

Each case is one `fabench sim` process, timed from outside (start to exit: platform
generation, smpirun, storing); the simulator's own wall time and its peak RssAnon (the smpirun
process group, sampled every 0.1 s by fabench.sim.rss) are read back from the stored run's
provenance. Run it with the Python that has fabench installed (built with SimGrid's smpicc).
Prints a table; asserts nothing (times depend on the host and its load: read them with it).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fabench.store import Store

# (label, ranks, algorithm, sizes, target wall s)
CASES = [
    ("240 fat tree", 240, "rabenseifner", "8:1M", 30.0),
    ("4096 fat tree", 4096, "binomial", "8:256K", 300.0),
]
QUICK = [
    ("240 fat tree", 240, "rabenseifner", "8,1K,64K,1M", 30.0),
    ("4096 fat tree", 4096, "binomial", "8,1K,64K", 300.0),
]


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def run_case(out: Path, fabric: str, ranks: int, algo: str, sizes: str,
             timeout: float) -> dict[str, object]:
    argv = [sys.executable, "-m", "fabench", "sim", "mpi.allreduce", "--fabric", fabric,
            "--nodes", str(ranks), "--topology", "fat-tree", "--hosts-per-leaf", "24",
            "--algorithm", algo, "--sizes", sizes, "--timeout", str(timeout),
            "--out", str(out)]
    before = load()
    t0 = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    wall = time.monotonic() - t0
    row: dict[str, object] = {"wall_s": wall, "rc": proc.returncode, "load": before,
                              "command": "fabench " + " ".join(argv[3:])}
    m = re.search(r"# run (\d+) stored", proc.stdout)
    if proc.returncode != 0 or not m:
        row["error"] = (proc.stderr or proc.stdout).strip().splitlines()[-1:]
        return row
    with Store(out / "fabench.sqlite") as store:
        run = store.run(int(m.group(1)))
        sim = run.provenance.get("simulation") or {}
        results = list(store.results(run.id))
    row.update(run_id=run.id, sim_wall_s=sim.get("wall_s"),
               rss_mb=sim.get("peak_rss_anon_mb"), sizes=len(results))
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fabric", default="roce-100g")
    ap.add_argument("--quick", action="store_true", help="4 sizes at 240, 3 at 4096")
    ap.add_argument("--out", type=Path, help="results directory (default: a temporary one)")
    args = ap.parse_args()
    tmp = None
    if args.out is None:
        tmp = tempfile.TemporaryDirectory(prefix="fabench-sim-scale-")
        args.out = Path(tmp.name)
    rows = []
    try:
        for label, ranks, algo, sizes, target in (QUICK if args.quick else CASES):
            row = run_case(args.out, args.fabric, ranks, algo, sizes, timeout=4 * target)
            row.update(label=label, ranks=ranks, algo=algo, sizes_arg=sizes, target=target)
            rows.append(row)
            print(f"# {row['command']}", flush=True)
    finally:
        if tmp is not None:
            tmp.cleanup()
    print(f"# fabench sim mpi.allreduce, fabric {args.fabric}, {os.cpu_count()} cores; "
          "wall = the whole command; simulator = smpirun's own; memory = peak RssAnon")
    print(f"# {'case':<14} {'algorithm':<13} {'sizes':<12} {'wall s':>8} {'simulator s':>12}"
          f" {'RssAnon MB':>11} {'target s':>9}  verdict   load before")
    for r in rows:
        if "error" in r:
            print(f"  {r['label']:<14} {r['algo']:<13} {r['sizes_arg']:<12} failed (rc "
                  f"{r['rc']}): {r['error']}")
            continue
        ok = "within" if float(r["wall_s"]) < float(r["target"]) else "OVER"
        sim_s = r.get("sim_wall_s")
        rss = r.get("rss_mb")
        print(f"  {r['label']:<14} {r['algo']:<13} {r['sizes_arg']:<12} "
              f"{float(r['wall_s']):>8.1f} {float(sim_s) if sim_s else float('nan'):>12.1f} "
              f"{float(rss) if rss else float('nan'):>11.0f} {float(r['target']):>9.0f}  "
              f"{ok:<8}  {r['load']}")
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
