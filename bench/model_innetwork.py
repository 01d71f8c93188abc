#!/usr/bin/env python3
"""In-network reduction against host-based allreduce on document 000's 100G fabrics.

For each fabric preset (default ib-100g, roce-100g: the two with switch reduction; tcp-100g
has none) and node count (8, 240, 4096, 7861: doc 000's single-switch test, its HPL cluster, a
large tree, Frontera's size) it runs `fabench model predict --json` on a non-blocking fat tree
(24 hosts per leaf; three levels beyond 1152 nodes), one rank per node, and prints per size:
the in-network time (the host-based fallback above the switches' limit), the fastest
host-based algorithm and its time, what Open MPI runs by default and its time, and the ratio
of that default to in-network (> 1: in-network wins). The assumptions of both models are in
docs/model.md ("In-network reduction"); `fabench model show FABRIC` prints a preset's sources.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys


def predict(fabric: str, nodes: int, sizes: str, extra: list[str]) -> list[dict[str, object]]:
    argv = [sys.executable, "-m", "fabench", "model", "predict", "--fabric", fabric,
            "--nodes", str(nodes), "--collective", "allreduce", "--sizes", sizes, "--json",
            "--mpi", "openmpi", "--band-samples", "0", *extra]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def size_label(n: int) -> str:
    for unit, k in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= k and n % k == 0:
            return f"{n // k}{unit}"
    return str(n)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fabrics", default="ib-100g,roce-100g")
    ap.add_argument("--nodes", default="8,240,4096,7861")
    ap.add_argument("--sizes", default="8,1K,16K,64K,256K,1M")
    ap.add_argument("--switch-reduce-us", help="per switch level and direction (overrides the "
                                               "fabric's in_network.level_us)")
    args = ap.parse_args()
    extra = ["--switch-reduce-us", args.switch_reduce_us] if args.switch_reduce_us else []
    print("# allreduce, us per call, fat tree (24 hosts/leaf, non-blocking), 1 rank/node; "
          "ratio = Open MPI's default / in-network")
    print(f"# {'fabric':<10} {'nodes':>5} {'size':>5} {'in-network':>11} "
          f"{'fastest host-based':<20} {'us':>9} {'Open MPI default':<20} {'us':>9} "
          f"{'ratio':>7}  winner")
    for fabric in args.fabrics.split(","):
        for nodes in (int(n) for n in args.nodes.split(",")):
            for row in predict(fabric, nodes, args.sizes, extra):
                times = row["times_us"]
                assert isinstance(times, dict)
                inn = float(times["in_network"])
                host = str(row["best_host_based"])
                t = float(times[host])
                chosen = row["chosen"]
                assert isinstance(chosen, dict)
                ompi = float(times["openmpi"])
                print(f"  {fabric:<10} {nodes:>5} {size_label(int(row['size'])):>5} "
                      f"{inn:>11.2f} {host:<20} {t:>9.2f} {chosen['openmpi']:<20} "
                      f"{ompi:>9.2f} {ompi / inn:>6.1f}x  {row['best']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
