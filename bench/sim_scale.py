#!/usr/bin/env python3
"""How fast and how big `fabench sim` is at scale on three-level fat trees, and how far the
analytic model is from the simulation there.

Cases (roce-100g without a local reduction cost: SMPI does not charge it, so the model is
compared with gamma = 0; every tree three levels, non-blocking):
  240 ranks    8 hosts/leaf x 6 leaves/pod x 5 pods     allreduce Rabenseifner  8 B..1 MiB
  1024 ranks   16 x 16 x 4                             allreduce Rabenseifner  8 B..1 MiB
  4096 ranks   16 x 16 x 16                            allreduce binomial      8 B..256 KiB
The 4096-rank sweep stops at 256 KiB: the kernels refuse sizes >= INT_MAX / ranks. Binomial
(reduce + bcast, 2 (P - 1) messages a call) keeps the 4096-rank case to minutes; Rabenseifner
there moves P log2 P messages.

Each case is one `fabench sim` process (1 warm-up and 1 timed call per size, its defaults),
timed from outside (start to exit: platform generation, smpirun, storing); the simulator's own
wall time and its peak RssAnon (the smpirun process group, fabench.sim.rss) are read back from
the stored run's provenance, and the model's prediction for the same platform (the topology
recorded in the run) is compared size by size. Run it with the Python that has fabench
installed (built with SimGrid's smpicc). Prints a table; asserts nothing (times depend on the
host and its load: read them with the load).
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

import numpy as np

from fabench.model.catalog import load_fabric, save_fabric
from fabench.model.collectives import predict
from fabench.model.cost import Cluster
from fabench.model.topology import TopologySpec
from fabench.store.database import Store

# (label, ranks, hosts per leaf, leaves per pod, algorithm, sizes)
CASES = [
    ("240, 3 levels", 240, 8, 6, "rabenseifner", "8:1M"),
    ("1024, 3 levels", 1024, 16, 16, "rabenseifner", "8:1M"),
    ("4096, 3 levels", 4096, 16, 16, "binomial", "8:256K"),
]
QUICK = [
    ("240, 3 levels", 240, 8, 6, "rabenseifner", "8,1K,64K,1M"),
    ("1024, 3 levels", 1024, 16, 16, "rabenseifner", "8,1K,64K"),
]


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def run_case(out: Path, fabric: str, ranks: int, hpl: int, lpp: int, algo: str, sizes: str,
             timeout: float) -> dict[str, object]:
    argv = [sys.executable, "-m", "fabench", "sim", "mpi.allreduce", "--fabric", fabric,
            "--nodes", str(ranks), "--topology", "fat-tree", "--levels", "3",
            "--hosts-per-leaf", str(hpl), "--leaves-per-pod", str(lpp), "--algorithm", algo,
            "--sizes", sizes, "--timeout", str(timeout), "--out", str(out)]
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
        results = {r.size: float(np.median(r.times)) for r in store.results(run.id)}
    spec = TopologySpec.from_dict(sim["topology_spec"])
    f = load_fabric(fabric, out)
    sizes_sim = sorted(results)
    pred = predict(f, Cluster(ranks, 1, spec.build(ranks)), "allreduce", algo, sizes_sim)
    errs = [(p - results[s]) / results[s] for s, p in zip(sizes_sim, pred, strict=True)]
    row.update(run_id=run.id, sim_wall_s=sim.get("wall_s"), rss_mb=sim.get("peak_rss_anon_mb"),
               sizes=len(results), model_med=float(np.median(np.abs(errs))),
               model_min=min(errs), model_max=max(errs),
               platform=re.search(r'topo_parameters="([^"]+)"', str(sim.get("platform_xml", "")))
               .group(1) if sim.get("platform_xml") else "")
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fabric", default="roce-100g")
    ap.add_argument("--quick", action="store_true", help="240 and 1024 ranks, few sizes")
    ap.add_argument("--only", help="comma-separated rank counts to run (e.g. 4096)")
    ap.add_argument("--out", type=Path, help="results directory (default: a temporary one)")
    args = ap.parse_args()
    tmp = None
    if args.out is None:
        tmp = tempfile.TemporaryDirectory(prefix="fabench-sim-scale-")
        args.out = Path(tmp.name)
    f = load_fabric(args.fabric, args.out)
    f.name, f.reduce_us_per_byte = f"{args.fabric}-g0", 0.0
    save_fabric(f, args.out)
    cases = QUICK if args.quick else CASES
    if args.only:
        keep = {int(x) for x in args.only.split(",")}
        cases = [c for c in cases if c[1] in keep]
    rows = []
    try:
        for label, ranks, hpl, lpp, algo, sizes in cases:
            row = run_case(args.out, f.name, ranks, hpl, lpp, algo, sizes, timeout=3600)
            row.update(label=label, ranks=ranks, algo=algo, sizes_arg=sizes)
            rows.append(row)
            print(f"# {row['command']}", flush=True)
    finally:
        if tmp is not None:
            tmp.cleanup()
    print(f"# fabench sim mpi.allreduce, fabric {f.name}, {os.cpu_count()} cores; wall = the "
          "whole command; simulator = smpirun's own; memory = peak RssAnon; model = "
          "(predicted - simulated) / simulated over the sizes")
    print(f"# {'case':<15} {'platform':<22} {'algorithm':<13} {'sizes':<8} {'wall s':>8} "
          f"{'simulator s':>12} {'RssAnon MB':>11} {'model med|err|':>15} {'min..max':>15}"
          "  load before")
    for r in rows:
        if "error" in r:
            print(f"  {r['label']:<15} failed (rc {r['rc']}): {r['error']}")
            continue
        sim_s, rss = r.get("sim_wall_s"), r.get("rss_mb")
        print(f"  {r['label']:<15} {str(r['platform']):<22} {r['algo']:<13} "
              f"{r['sizes_arg']:<8} {float(r['wall_s']):>8.1f} "
              f"{float(sim_s) if sim_s else float('nan'):>12.1f} "
              f"{float(rss) if rss else float('nan'):>11.0f} "
              f"{float(r['model_med']) * 100:>14.1f}% "
              f"{float(r['model_min']) * 100:>+6.1f}..{float(r['model_max']) * 100:>+5.1f}%"
              f"  {r['load']}")
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
