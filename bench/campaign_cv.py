#!/usr/bin/env python3
"""Run-to-run spread of whole campaigns: N repeats of the default campaign's point-to-point
block (or a spec), each a separate `fabench run`, for one or more variants side by side.

Issue 5's target: three repeats of the default campaign give 8 B latency and 4 MiB bandwidth
medians with CV <= 2 %. A variant overrides keys of every run group whose kernels take them,
e.g. `rounds=5` or `rounds=5,hugepages=true`; `plain` overrides nothing. Repeats are
interleaved over the variants (plain #1, rounds=5 #1, plain #2, ...), so drift in the
neighbours' load hits every variant alike. Per variant, kernel and transport it prints each
repeat's median at the kernel's headline size (8 B for latency, 4 MiB for bandwidth), their
mean, and CV = stdev / mean (n - 1 in the stdev), with the host's load average before and
after and each campaign's core-to-core hand-off (docs/statistics.md, "Host state").

Issue 27's form: the default campaign's wall time against OSU running the same kernels and
sizes. With --osu-dir, every round also runs OSU (osu_latency, osu_bw, osu_bibw, and the
collectives at the campaign's rank counts) with exactly the mpirun options fabench used for
each run of that round's first campaign (read back from the store), each tool with its own
defaults; the round's order rotates over the variants and OSU. A variant `native=DIR` runs the
kernels built in DIR (FABENCH_NATIVE_DIR: e.g. a build of an earlier commit) with nothing else
changed; `src=DIR` runs fabench's Python from DIR (a checkout's src/, e.g. of an earlier
commit: PYTHONPATH) over this installation's kernels, to time a change on the Python side. Per
variant it prints each round's wall time and its ratio to that round's OSU time (paired), the
warm-up iterations the latency records used, and the precision of the headline medians: their
CV over the rounds and the median over campaigns of the 95 % interval of the median (width /
median, docs/statistics.md).

Prints numbers, never asserts them; exits 0 when every campaign finished.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import yaml

from fabench.analysis.analyse import summarize_result
from fabench.host.native import native_root
from fabench.host.probe import run_core_to_core_ns
from fabench.host.provenance import load_snapshot
from fabench.kernels import get_kernel
from fabench.plan.kernel_settings import KERNEL_OPTIONS
from fabench.plan.spec import DEFAULT_SPEC
from fabench.store.database import Store
from fabench.util.stats import median_ci

TARGET_CV = 0.02
HEADLINE = {"latency": 8, "bandwidth": 4 << 20}  # per primary metric, as document 004
# fabench kernel -> (OSU program, its folder under the OSU build, collective)
OSU = {"mpi.latency": ("osu_latency", "pt2pt", False), "mpi.bw": ("osu_bw", "pt2pt", False),
       "mpi.bibw": ("osu_bibw", "pt2pt", False),
       "mpi.allreduce": ("osu_allreduce", "collective", True),
       "mpi.alltoall": ("osu_alltoall", "collective", True),
       "mpi.allgather": ("osu_allgather", "collective", True),
       "mpi.gather": ("osu_gather", "collective", True)}


def uptime() -> str:
    la = load_snapshot().get("loadavg")
    return "load average " + (" ".join(f"{x:.2f}" for x in la) if la else "unknown")


def parse_variant(text: str) -> dict[str, object]:
    if text == "plain" or text.startswith(("native=", "src=")):
        return {}
    out: dict[str, object] = {}
    for item in text.split(","):
        key, _, val = item.partition("=")
        out[key.strip()] = yaml.safe_load(val)
    return out


def _takes(group: dict[str, object], key: str) -> bool:
    """Whether every kernel of a run group takes this kernel option (a variant's
    `stop_precision` goes to the point-to-point group only: collectives refuse it)."""
    opt = next((o for o in KERNEL_OPTIONS if o.name == key), None)
    if opt is None:
        return True
    names = group.get("kernel", [])
    return all(opt.takes(get_kernel(k)) for k in ([names] if isinstance(names, str) else names))


def variant_spec(base: dict[str, object], overrides: dict[str, object]) -> dict[str, object]:
    spec = copy.deepcopy(base)
    spec["repeats"] = 1
    for group in spec["runs"]:  # type: ignore[union-attr]
        group.update({k: v for k, v in overrides.items() if _takes(group, k)})
    return spec


def campaign_hand_off(store: Store, campaign_id: int) -> float | None:
    """The campaign's median core-to-core hand-off over its runs (ns), None if unprobed."""
    vals = [v for r in store.runs(campaign_id) if (v := run_core_to_core_ns(r.provenance))]
    return statistics.median(vals) if vals else None


def headline_medians(store: Store, campaign_id: int) -> dict[tuple[str, str], float]:
    """(kernel, transport) -> median of the kernel's primary metric at its headline size."""
    out: dict[tuple[str, str], float] = {}
    for run in store.runs(campaign_id, status="ok"):
        kernel = get_kernel(run.kernel)
        size = HEADLINE.get(kernel.primary.name)
        for rec in store.results(run.id):
            if rec.size == size:
                out[(run.kernel, run.transport)] = summarize_result(rec, kernel.primary) \
                    .summary.median
    return out


def headline_widths(store: Store, campaign_id: int) -> dict[tuple[str, str], float]:
    """(kernel, transport) -> the 95 % interval of the headline median, width / median."""
    out: dict[tuple[str, str], float] = {}
    for run in store.runs(campaign_id, status="ok"):
        size = HEADLINE.get(get_kernel(run.kernel).primary.name)
        for rec in store.results(run.id):
            if rec.size == size:
                ci, med = median_ci(rec.times), statistics.median(rec.times)
                out[(run.kernel, run.transport)] = (ci.high - ci.low) / med
    return out


def warmups_used(store: Store, campaign_id: int) -> list[int]:
    """The warm-up iterations every latency record of mpi.latency used (its warmup_used)."""
    return [int(rec.extra.get("warmup_used", rec.warmup))
            for run in store.runs(campaign_id, status="ok") if run.kernel == "mpi.latency"
            for rec in store.results(run.id)]


OsuCommand = tuple[tuple[str, str], list[str]]  # (kernel, transport), argv


def osu_argvs(store: Store, campaign_id: int, osu_dir: Path) -> list[OsuCommand]:
    """OSU's command for every run of the campaign: fabench's mpirun options, OSU's program
    with its own defaults but the spec's iteration count (sizes: the collectives' -m set to
    the campaign's range; OSU 5's point-to-point programs take no -m and sweep their fixed
    0/1 B .. 4 MiB)."""
    out = []
    for run in store.runs(campaign_id, status="ok"):
        if run.kernel not in OSU or not run.command:
            continue
        prog, folder, coll = OSU[run.kernel]
        argv = shlex.split(run.command)
        at = next(i for i, t in enumerate(argv) if Path(t).name.startswith("fb-mpi-"))
        sizes = sorted(r.size for r in store.results(run.id))
        exe = osu_dir / folder / prog
        if not exe.exists():
            exe = osu_dir / prog
        tail = argv[at + 1:]  # the kernel's own arguments: a spec's count is OSU's -i
        iters = tail[tail.index("--iterations") + 1] if "--iterations" in tail else None
        out.append(((run.kernel, run.transport),
                    [*argv[:at], str(exe),
                     *(["-m", f"{max(sizes[0], 1)}:{sizes[-1]}"] if coll else []),
                     *(["-i", str(iters)] if iters else [])]))
    return out


def osu_headline(kernel: str, text: str) -> float | None:
    """OSU's figure at the kernel's headline size (its first column is the size)."""
    size = HEADLINE.get(get_kernel(kernel).primary.name)
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] == str(size):
            return float(words[1])
    return None


def run_osu(cmds: list[OsuCommand]) -> tuple[float, dict[tuple[str, str], float]]:
    """Run every OSU command in turn: their wall time (s) and their headline figures."""
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    t0 = time.monotonic()
    got: dict[tuple[str, str], float] = {}
    for key, argv in cmds:
        p = subprocess.run(argv, capture_output=True, text=True, env=env, check=False,
                           timeout=900)
        if p.returncode != 0:
            raise RuntimeError(f"{shlex.join(argv)}: exit {p.returncode}: "
                               f"{p.stderr.strip()[-300:]}")
        if (v := osu_headline(key[0], p.stdout)) is not None:
            got[key] = v
    return time.monotonic() - t0, got


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--repeats", "-n", type=int, default=3, help="campaigns per variant (3)")
    ap.add_argument("--variants", default="plain",
                    help="semicolon list of variants, e.g. 'plain;rounds=5;rounds=5,"
                         "hugepages=true' (default: plain)")
    ap.add_argument("--spec", help="campaign spec (default: the built-in campaign's "
                                   "point-to-point block: latency, bw, bibw over shm and tcp)")
    ap.add_argument("--kernels", default="mpi.latency,mpi.bw",
                    help="kernels kept from the spec's groups (default: mpi.latency,mpi.bw; "
                         "'all' keeps every kernel)")
    ap.add_argument("--fabench", default=f"{sys.executable} -m fabench",
                    help="fabench command (default: this Python's -m fabench)")
    ap.add_argument("--out", help="keep the stores here (default: a temporary dir)")
    ap.add_argument("--save", help="write every repeat's medians as JSON to this file")
    ap.add_argument("--osu-dir", type=Path, default=os.environ.get("OSU_DIR"),
                    help="an OSU Micro-Benchmarks build (its mpi/ folder): every round also "
                         "runs OSU over the same kernels and sizes, timed")
    args = ap.parse_args(argv)
    if args.repeats < 2:
        ap.error("--repeats must be at least 2 for a standard deviation")

    base: dict[str, object] = (yaml.safe_load(Path(args.spec).read_text()) if args.spec
                               else {**DEFAULT_SPEC, "runs": DEFAULT_SPEC["runs"][:1]})
    if args.kernels != "all":
        keep = set(args.kernels.split(","))
        groups = []
        for g in base["runs"]:  # type: ignore[union-attr]
            ks = [k for k in (g["kernel"] if isinstance(g["kernel"], list) else [g["kernel"]])
                  if k in keep]
            if ks:
                groups.append({**g, "kernel": ks})
        base = {**base, "runs": groups}
    variants = [v.strip() for v in args.variants.split(";") if v.strip()]
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="fabench-ccv-"))
    medians: dict[str, dict[tuple[str, str], list[float]]] = {v: {} for v in
                                                               [*variants, "osu"]}
    hand_offs: dict[str, list[float | None]] = {v: [] for v in variants}
    walls: dict[str, list[float | None]] = {v: [] for v in [*variants, "osu"]}
    widths: dict[str, dict[tuple[str, str], list[float]]] = {v: {} for v in variants}
    used: dict[str, list[int]] = {v: [] for v in variants}
    failures: list[str] = []
    load_start, t_start = uptime(), time.monotonic()
    osu_cmds: list[OsuCommand] = []
    for rep in range(args.repeats):
        order = [*variants, "osu"] if args.osu_dir else list(variants)
        shift = rep % len(order)
        for v in order[shift:] + order[:shift]:
            if v == "osu":
                if not osu_cmds:  # the first campaign of the invocation has not run yet
                    walls["osu"].append(None)
                    continue
                try:
                    wall, heads = run_osu(osu_cmds)
                except (RuntimeError, subprocess.TimeoutExpired) as exc:
                    failures.append(f"osu #{rep + 1}: {exc}")
                    walls["osu"].append(None)
                    continue
                walls["osu"].append(wall)
                for key, m in heads.items():
                    medians["osu"].setdefault(key, []).append(m)
                print(f"# osu #{rep + 1}: {wall:.1f} s ({len(osu_cmds)} programs); {uptime()}",
                      file=sys.stderr, flush=True)
                continue
            env = dict(os.environ)
            if v.startswith("native="):
                env["FABENCH_NATIVE_DIR"] = v.split("=", 1)[1]
            if v.startswith("src="):
                env["FABENCH_NATIVE_DIR"] = str(native_root())
                env["PYTHONPATH"] = v.split("=", 1)[1]
            vdir = out / v.replace("=", "-").replace(",", "_")
            spec_path = vdir / "spec.yaml"
            vdir.mkdir(parents=True, exist_ok=True)
            spec_path.write_text(yaml.safe_dump(variant_spec(base, parse_variant(v))))
            t0 = time.monotonic()
            p = subprocess.run([*args.fabench.split(), "run", str(spec_path), "--out", str(vdir),
                                "--no-progress"], capture_output=True, text=True, check=False,
                               env=env)
            wall = time.monotonic() - t0
            if p.returncode != 0:
                failures.append(f"{v} #{rep + 1}: exit {p.returncode}: {p.stderr.strip()[-300:]}")
                walls[v].append(None)
                continue
            walls[v].append(wall)
            with Store(vdir / "fabench.sqlite") as st:
                cid = st.latest_campaign()
                got = headline_medians(st, cid) if cid is not None else {}
                c2c = campaign_hand_off(st, cid) if cid is not None else None
                if cid is not None:
                    for key, w in headline_widths(st, cid).items():
                        widths[v].setdefault(key, []).append(w)
                    used[v].extend(warmups_used(st, cid))
                    if args.osu_dir and not osu_cmds:
                        osu_cmds = osu_argvs(st, cid, args.osu_dir)
            for key, m in got.items():
                medians[v].setdefault(key, []).append(m)
            hand_offs[v].append(c2c)
            shown = ", ".join(f"{k} {t} {m:.4g}" for (k, t), m in sorted(got.items()))
            print(f"# {v} #{rep + 1}: {time.monotonic() - t0:.0f} s; core-to-core "
                  f"{'-' if c2c is None else f'{c2c:.0f} ns'}; {shown}", file=sys.stderr,
                  flush=True)

    print(f"# {args.repeats} campaigns per variant, interleaved, "
          f"{time.monotonic() - t_start:.0f} s; {load_start} at start, {uptime()} at end")
    print(f"# stores under {out}; CV = stdev (n-1) / mean of the campaigns' medians; "
          f"target <= {TARGET_CV:.0%}")
    head = f"{'variant':<24} {'kernel':<12} {'transport':<9} {'medians':<30} {'CV':>7}"
    print(head)
    print("-" * len(head))
    for v in [*variants, "osu"]:
        if v != "osu":
            ns = " ".join("-" if x is None else f"{x:.0f}" for x in hand_offs[v])
            print(f"{v:<24} core-to-core hand-off per campaign (ns, host/probe.py): {ns}")
        for (k, t), vals in sorted(medians[v].items()):
            meds = " ".join(f"{x:.4g}" for x in vals)
            cv = (statistics.stdev(vals) / statistics.mean(vals)) if len(vals) >= 2 else None
            shown = f"{cv:.2%}" if cv is not None else "n/a"
            mark = "" if cv is None else ("  ok" if cv <= TARGET_CV else "  > target")
            print(f"{v:<24} {k:<12} {t:<9} {meds:<30} {shown:>7}{mark}")
    print("\n# wall time per round (s), and per round / OSU's in the same round (paired)")
    for v in walls:
        if v == "osu" and not args.osu_dir:
            continue
        ws = " ".join("-" if w is None else f"{w:.1f}" for w in walls[v])
        line = f"{v:<24} wall {ws}"
        if args.osu_dir and v != "osu":
            rs = [w / o for w, o in zip(walls[v], walls["osu"], strict=True) if w and o]
            if rs:
                line += (f"; / osu {' '.join(f'{r:.2f}' for r in rs)} "
                         f"(median {statistics.median(rs):.2f})")
        if v != "osu" and used.get(v):
            line += (f"; mpi.latency warmup_used median {statistics.median(used[v]):.0f}, "
                     f"range {min(used[v])}-{max(used[v])} over {len(used[v])} records")
        print(line)
    print("\n# precision: the headline median's 95 % interval, width / median, median over "
          "campaigns")
    for v in variants:
        for (k, t), ws_ in sorted(widths[v].items()):
            print(f"{v:<24} {k:<12} {t:<9} {statistics.median(ws_):.2%} "
                  f"({' '.join(f'{w:.2%}' for w in ws_)})")
    for f in failures:
        print(f"# failed: {f}")
    if args.save:
        Path(args.save).write_text(json.dumps(
            {v: {**{f"{k} {t}": vals for (k, t), vals in d.items()},
                 "core_to_core_ns": hand_offs.get(v, [])} for v, d in medians.items()},
            indent=1))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
