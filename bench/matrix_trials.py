#!/usr/bin/env python3
"""Issue 14's trials: `fabench matrix` on an 8-host testbed holding one random fault per trial.

Each trial's fault is drawn from a seed (printed, so any trial can be rerun alone with
--seed S --trials 1): none, one bad link (hA-hB:rate=50mbit, both directions), one slow host
(hA:rate=200mbit) or one one-way link (hA>hB:rate=50mbit). The testbed is made for the trial
and removed after it (also on failure). A trial is right when every expected verdict line is
printed and no other one: a bad link gives `bad link hA -> hB` and `hB -> hA`, a one-way link
`bad link hA -> hB` (an `asymmetric link hA -> hB` beside it is expected too), a slow host
`slow node hA`, no fault nothing. Per trial: the fault, the verdicts, the exit status, the
first-pass suspects and how many the retest cleared, the wall time of the whole matrix.

Issue 28's fault classes (`--classes`, each on every `--sizes` host count, with every
`--kernels` kernel, `--repeats` times; the hosts a fault lands on drawn from the seed):
clean, slow-host (hA:rate=200mbit), slow-host+link (and hB>hC:rate=30mbit), two-slow (hA and
hB at 200mbit), uplink (`--switches 2 --uplink-rate 50mbit`, the switches declared in a
topology file: `bad uplink s1 <-> s2`), clean-2sw (`--switches 2`, no limit: nothing). The
table at the end says per class and kernel: faults found, missed, and false verdicts.

    python bench/matrix_trials.py --classes all --sizes 4,6 --kernels mpi,tcp

`--cells slow-host:4,clean:6,...` names the class and size pairs instead, and runs the repeats
round-robin (every cell once, then again), so a run stopped early still has each cell about as
often as the others. Each trial records the 1-minute load average before it (`load`): the
testbeds share the cores with whatever else runs.

Prints numbers, never asserts them; exits 0 when every trial ran.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KINDS = ("none", "bad link", "slow host", "one-way link")
CLASSES = ("clean", "slow-host", "slow-host+link", "two-slow", "uplink", "clean-2sw")


def fabench(*args: str, timeout: float = 1200) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fabench", *args], capture_output=True,
                          text=True, timeout=timeout, check=False)


def draw(seed: int, hosts: int) -> tuple[str, list[str], set[str], set[str]]:
    """(kind, --impair words, verdict lines expected, verdict lines also allowed)."""
    rng = random.Random(seed)
    kind = rng.choice(KINDS)
    a, b = (f"h{x}" for x in rng.sample(range(1, hosts + 1), 2))
    if kind == "bad link":
        return kind, ["--impair", f"{a}-{b}:rate=50mbit"], \
            {f"bad link {a} -> {b}", f"bad link {b} -> {a}"}, set()
    if kind == "slow host":
        return kind, ["--impair", f"{a}:rate=200mbit"], {f"slow node {a}"}, set()
    if kind == "one-way link":
        return kind, ["--impair", f"{a}>{b}:rate=50mbit"], {f"bad link {a} -> {b}"}, \
            {f"asymmetric link {a} -> {b}"}
    return kind, [], set(), set()


def planted(cls: str, seed: int, hosts: int) -> tuple[list[str], set[str], set[str]]:
    """(testbed up words, verdict lines expected, verdict lines also allowed) of a class."""
    rng = random.Random(seed)
    a, b, c = (f"h{x}" for x in rng.sample(range(1, hosts + 1), 3))
    if cls == "slow-host":
        return ["--impair", f"{a}:rate=200mbit"], {f"slow node {a}"}, set()
    if cls == "slow-host+link":
        return ["--impair", f"{a}:rate=200mbit", "--impair", f"{b}>{c}:rate=30mbit"], \
            {f"slow node {a}", f"bad link {b} -> {c}"}, {f"asymmetric link {b} -> {c}"}
    if cls == "two-slow":
        return ["--impair", f"{a}:rate=200mbit", "--impair", f"{b}:rate=200mbit"], \
            {f"slow node {a}", f"slow node {b}"}, set()
    if cls == "uplink":
        return ["--switches", "2", "--uplink-rate", "50mbit"], \
            {f"bad uplink s1 <-> s2 ({hosts} hosts)"}, set()
    if cls == "clean-2sw":
        return ["--switches", "2"], set(), set()
    if cls == "clean":
        return [], set(), set()
    raise SystemExit(f"unknown class {cls!r}: one of {', '.join(CLASSES)}")


def trial(seed: int, hosts: int, work: Path, extra: list[str],
          cls: str | None = None) -> dict[str, object]:
    if cls is None:
        kind, impair, expected, allowed = draw(seed, hosts)
    else:
        kind = cls
        impair, expected, allowed = planted(cls, seed, hosts)
        if "--switches" in impair:
            # the layout testbed up makes: hosts split evenly, in order
            topo = work / f"topology-{seed}-{hosts}.txt"
            half = hosts // 2
            topo.write_text(f"s1: {' '.join(f'h{i}' for i in range(1, half + 1))}\n"
                            f"s2: {' '.join(f'h{i}' for i in range(half + 1, hosts + 1))}\n")
            extra = [*extra, "--topology", str(topo)]
    name = f"mt{os.getpid() % 10000}s{seed}"
    load = round(os.getloadavg()[0], 1)
    up = fabench("testbed", "up", "--name", name, "--hosts", str(hosts), *impair)
    if up.returncode != 0:
        return {"seed": seed, "kind": kind, "load": load, "error": up.stderr.strip()[-300:]}
    try:
        out = work / f"seed{seed}"
        t0 = time.monotonic()
        proc = fabench("matrix", "--on", "testbed", name, "--out", str(out), "--json", *extra)
        wall = time.monotonic() - t0
    finally:
        fabench("testbed", "down", name)
    if proc.returncode not in (0, 3):
        return {"seed": seed, "kind": kind, "impair": impair, "load": load, "error":
                f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}"}
    j = json.loads(proc.stdout)
    got = {v["line"].split(":")[0] for v in j["verdicts"]}
    sus = j["suspects"]
    return {"seed": seed, "kind": kind, "hosts": hosts, "impair": " ".join(impair),
            "oversubscribed": any(w.startswith("oversubscribed") for w in j["warnings"]),
            "missed": sorted(expected - got),
            "expected": sorted(expected), "verdicts": sorted(got),
            "found": expected <= got, "false": sorted(got - expected - allowed),
            "false_evidence": [v["line"] for v in j["verdicts"]
                               if v["line"].split(":")[0] not in expected | allowed],
            # every verdict's whole line: a found fault's score against its threshold too
            "evidence": [v["line"] for v in j["verdicts"]],
            "exit": proc.returncode,
            "suspects": len(sus["links"]) + len(sus["nodes"]), "cleared": len(j["cleared"]),
            "passes": [(p["mode"], p["directions"], p["wall_s"]) for p in j["passes"]],
            "wall_s": round(wall, 1), "load": load}


def table(rows: list[dict[str, object]]) -> list[str]:
    """Per class and kernel: trials, planted faults found / missed, false verdicts."""
    out = ["| class | hosts | kernel | trials | found | missed | false verdicts | wall s | load |",
           "|---|---|---|---|---|---|---|---|---|"]
    keys = sorted({(str(r["kind"]), int(r.get("hosts", 0)), str(r.get("kernel", "")))
                   for r in rows})
    for kind, hosts, kernel in keys:
        mine = [r for r in rows if (r["kind"], r.get("hosts", 0), r.get("kernel", "")) ==
                (kind, hosts, kernel)]
        ran = [r for r in mine if "error" not in r]
        found = sum(len(r["expected"]) - len(r["missed"]) for r in ran)  # type: ignore[arg-type]
        missed = sum(len(r["missed"]) for r in ran)  # type: ignore[arg-type]
        false = sum(len(r["false"]) for r in ran)  # type: ignore[arg-type]
        walls = [float(r["wall_s"]) for r in ran]  # type: ignore[arg-type]
        wall = f"{min(walls):.0f}-{max(walls):.0f}" if walls else "-"
        loads = [float(r["load"]) for r in mine if "load" in r]  # type: ignore[arg-type]
        load = f"{min(loads):.1f}-{max(loads):.1f}" if loads else "-"
        out.append(f"| {kind} | {hosts} | {kernel} | {len(ran)}/{len(mine)} | {found} | "
                   f"{missed} | {false} | {wall} | {load} |")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=14, help="first seed (default 14)")
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--hosts", type=int, default=8)
    ap.add_argument("--matrix-args", default="", help="more options for fabench matrix")
    ap.add_argument("--classes", help=f"fault classes, comma-separated, or all: "
                    f"{', '.join(CLASSES)} (instead of random faults)")
    ap.add_argument("--sizes", default="4,6,8", help="host counts for --classes")
    ap.add_argument("--kernels", default="mpi,tcp", help="matrix kernels for --classes")
    ap.add_argument("--repeats", type=int, default=1, help="trials per class, size, kernel")
    ap.add_argument("--cells", metavar="CLASS:HOSTS,...",
                    help="these class and size pairs instead of --classes x --sizes, the "
                         "repeats round-robin (all cells once, then again)")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="fb-matrix-trials-") as tmp:
        if args.cells or args.classes:
            # one (class, hosts) per seed, in the order they run: --cells repeats round-robin
            # (a run stopped early has every cell about equally often), --classes each in turn
            if args.cells:
                cells = [(c, int(n)) for c, n in
                         (x.rsplit(":", 1) for x in args.cells.split(","))]
                plan = [cell for _ in range(args.repeats) for cell in cells]
            else:
                classes = CLASSES if args.classes == "all" else args.classes.split(",")
                plan = [(cls, int(n)) for cls in classes for n in args.sizes.split(",")
                        for _ in range(args.repeats)]
            for seed, (cls, hosts) in enumerate(plan, args.seed):
                for kernel in args.kernels.split(","):
                    r = trial(seed, hosts, Path(tmp),
                              [*args.matrix_args.split(), "--kernel", kernel], cls)
                    r["kernel"] = kernel
                    print(json.dumps(r), flush=True)
                    rows.append(r)
            for line in table(rows):
                print(line)
            return 0 if all("error" not in r for r in rows) else 1
        for seed in range(args.seed, args.seed + args.trials):
            r = trial(seed, args.hosts, Path(tmp), args.matrix_args.split())
            print(json.dumps(r), flush=True)
            rows.append(r)
    ran = [r for r in rows if "error" not in r]
    faults = [r for r in ran if r["kind"] != "none"]
    clean = [r for r in ran if r["kind"] == "none"]
    print(f"# trials run: {len(ran)}/{len(rows)}; faults found: "
          f"{sum(bool(r['found']) for r in faults)}/{len(faults)}; trials with a false verdict: "
          f"{sum(bool(r['false']) for r in ran)} (of them no-fault trials: "
          f"{sum(bool(r['false']) for r in clean)}/{len(clean)}); first-pass suspects "
          f"{sum(int(r['suspects']) for r in ran)}, cleared by the retest "
          f"{sum(int(r['cleared']) for r in ran)}; matrix wall time "
          f"{min((r['wall_s'] for r in ran), default=0)}-"
          f"{max((r['wall_s'] for r in ran), default=0)} s")
    return 0 if len(ran) == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
