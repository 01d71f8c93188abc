#!/usr/bin/env python3
"""The analytic model and SimGrid against measured 4-host collectives (issue 7's validation).

On a testbed (4 hosts behind one rate-limited bridge, docs/testbed.md):
  1. measure the 2-host point-to-point curves over tcp: mpi.latency, mpi.bw, mpi.bibw, and
     mpi.mbw_mr --window 1 with one rank on each of the 4 hosts (both pairs at once, a
     message and its reply): small messages under the CPU contention the collectives see;
  2. measure 4-host allreduce / alltoall / allgather, one rank per host, each with its Open MPI
     coll/tuned algorithm pinned (OPENMPI_TUNED), so measurement and prediction run the same
     algorithm;
  3. `fabench model calibrate` the point-to-point runs (nothing else),
  4. `fabench sim` each collective with that calibration (same algorithm, SimGrid),
  5. `fabench model validate` the measured runs against the model and the simulation: per
     size measured, predicted, simulated and their errors, and the median |error| across sizes.

Run it as root with the Python that has fabench installed; the testbed is made here and
removed at the end (also on failure) unless --keep-testbed. Prints tables, asserts nothing.

Why these settings (measured on a 2-core host, docs/model.md "Validation"):
  --rate 400mbit --burst 16kb  the link, not the shared CPU, sets the bytes term; a bucket
                               much smaller than the large messages makes tbf act like a wire
                               (a large bucket lets a ping-pong refill it on the way back)
  --queue 5ms                  the testbed's tbf queue (`testbed up --queue`): with 50 ms,
                               ACKs of one direction waited behind 50 ms of the other's data,
                               which slowed 1 MiB exchanges by 1.5x; 5 ms is a switch-sized
                               buffer (1 ms lost packets)
  OMPI_MCA_mpi_yield_when_idle=1  4 ranks on 2 cores: busy-polling ranks starved each other
                               (8 B allreduce 36 ms instead of ~0.2 ms)
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from fabench.errors import FabenchError
from fabench.model.decisions import OPENMPI_TUNED
from fabench.model.validate import run_algorithm
from fabench.store.database import Store

CASES = [("allreduce", "recursive_doubling"), ("allreduce", "ring"),
         ("alltoall", "pairwise"), ("allgather", "recursive_doubling"), ("allgather", "ring")]
P2P = ("mpi.latency", "mpi.bw", "mpi.bibw")
CONTENDED = "mpi.mbw_mr"  # all pairs at once, window 1: the calibration's contention curve
CAMPAIGN = "model-validate"
ENV = {"OMPI_MCA_mpi_yield_when_idle": "1"}


def fabench(*args: str, capture: bool = False) -> str:
    argv = [sys.executable, "-m", "fabench", *args]
    print("$ fabench " + " ".join(args), flush=True)
    proc = subprocess.run(argv, text=True, capture_output=capture, check=False)
    if proc.returncode != 0:
        if capture:
            sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"fabench {' '.join(args)} exited {proc.returncode}")
    return proc.stdout if capture else ""


def yaml_env(env: dict[str, str]) -> str:
    return "{" + ", ".join(f'{k}: "{v}"' for k, v in env.items()) + "}"


def campaign_spec(args: argparse.Namespace) -> str:
    lines = [f"name: {CAMPAIGN}", f"repeats: {args.repeats}", "mpi: openmpi", "runs:",
             f"  - kernel: [{', '.join(P2P)}]", "    transport: [tcp]", "    ranks: [2]",
             f'    sizes: "{args.p2p_sizes}"', f"    env: {yaml_env(ENV)}",
             # every pair at once, a message and its reply: a step's cost when `hosts` ranks
             # all communicate while sharing this machine's cores, for the calibration
             f"  - kernel: [{CONTENDED}]", "    transport: [tcp]", f"    ranks: [{args.hosts}]",
             '    sizes: "1:2K"', "    window: 1", "    iterations: 500",
             f"    env: {yaml_env(ENV)}"]
    for coll, algo in CASES:
        env = {**ENV, "OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
               f"OMPI_MCA_coll_tuned_{coll}_algorithm": str(OPENMPI_TUNED[coll][algo])}
        lines += [f"  - kernel: [mpi.{coll}]", "    transport: [tcp]",
                  f"    ranks: [{args.hosts}]", f'    sizes: "{args.sizes}"',
                  f"    env: {yaml_env(env)}"]
    return "\n".join(lines) + "\n"


def check_queue(name: str, queue: str) -> None:
    """A testbed made earlier keeps the queue it was made with: say when that is not --queue."""
    from fabench.testbed import load_state

    have = load_state(name).config.queue
    if have != queue:
        print(f"# testbed {name} has a {have} tbf queue, not --queue {queue}: numbers differ "
              f"from docs/model.md; `fabench testbed down {name}` to remake it", flush=True)


def measure(args: argparse.Namespace) -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as fh:
        fh.write(campaign_spec(args))
        spec = fh.name
    print(Path(spec).read_text(), flush=True)
    fabench("run", spec, "--on", "testbed", args.testbed, "--out", str(args.out),
            "--no-progress")


def analyse(args: argparse.Namespace) -> None:
    with Store(args.out / "fabench.sqlite") as store:
        camp = [c for c in store.campaigns() if c["name"] == CAMPAIGN]
        if not camp:
            raise SystemExit(f"no campaign {CAMPAIGN!r} in {args.out}")
        runs = [r for r in store.runs(camp[-1]["id"]) if r.status == "ok"]
        p2p = [r.id for r in runs if r.kernel in (*P2P, CONTENDED)]
        coll: dict[tuple[str, str], list[int]] = defaultdict(list)
        for r in runs:
            c = r.kernel.partition(".")[2]
            if r.kernel not in (*P2P, CONTENDED) and (algo := run_algorithm(r, c)):
                coll[(c, algo)].append(r.id)
    fabench("model", "calibrate", *map(str, p2p), "--name", args.fabric, "--hops", "1",
            "--out", str(args.out))
    sims = []
    for c, algo in CASES:
        if not coll.get((c, algo)):
            continue
        out = fabench("sim", f"mpi.{c}", "--fabric", args.fabric, "--nodes", str(args.hosts),
                      "--topology", "single", "--algorithm", algo, "--sizes", args.sizes,
                      "--cores", str(args.cores), "--out", str(args.out), capture=True)
        m = re.search(r"# run (\d+) stored", out)
        if m:
            sims.append(m.group(1))
    measured = [str(i) for c, a in CASES for i in coll.get((c, a), [])]
    fabench("model", "validate", *measured, "--fabric", args.fabric, "--topology", "single",
            "--cores", str(args.cores), *(["--simulated", *sims] if sims else []),
            "--out", str(args.out))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("fabench-validate"))
    ap.add_argument("--testbed", default="val", help="testbed name (made if missing)")
    ap.add_argument("--keep-testbed", action="store_true")
    ap.add_argument("--hosts", type=int, default=4)
    ap.add_argument("--rate", default="400mbit")
    ap.add_argument("--burst", default="16kb")
    ap.add_argument("--queue", default="5ms", help="tbf queue of the testbed's links")
    ap.add_argument("--p2p-sizes", default="1:1M")
    ap.add_argument("--sizes", default="8,32,128,512,2K,8K,32K,128K,512K")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--fabric", default="testbed-tcp", help="name of the calibration")
    ap.add_argument("--cores", type=int, default=os.cpu_count() or 1,
                    help="cores the testbed's hosts share (default: this machine's)")
    ap.add_argument("--analyse-only", action="store_true",
                    help="no measurement: calibrate, simulate and validate the last campaign")
    args = ap.parse_args()
    made = False
    try:
        if not args.analyse_only:
            from fabench.testbed import load_state

            try:
                load_state(args.testbed)
            except FabenchError:
                fabench("testbed", "up", "--name", args.testbed, "--hosts", str(args.hosts),
                        "--rate", args.rate, "--burst", args.burst, "--queue", args.queue)
                made = True
            else:
                check_queue(args.testbed, args.queue)
            measure(args)
        analyse(args)
    finally:
        if made and not args.keep_testbed:
            fabench("testbed", "down", args.testbed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
