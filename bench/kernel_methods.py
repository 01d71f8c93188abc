#!/usr/bin/env python3
"""The kernel methods of the C engine beside OSU and IMB, interleaved, printed as ratios.

Runs the kernel binaries directly under one mpirun command line (Open MPI, shared memory:
`--mca btl self,vader`, `--oversubscribe`: 4 pairs are 8 ranks, more than a small host has
cores), the same for every tool, each case once per tool per round with the tool order
rotated, so host-load drift hits every tool alike. Peers are optional and never part of
fabench: OSU_DIR (osu_latency, osu_mbw_mr) and IMB_DIR (IMB-MPI1) point at builds made outside
the repository. BEFORE_DIR may hold fb-mpi-* binaries of an earlier build (before/after ratios
of a method change).

Cases
  lat 8B     fabench per-sample (median and mean of half round trips), fabench --batch 100
             (median), osu_latency's average, IMB PingPong's t[usec] (both: one timer pair
             around the whole loop, so their average is the comparable statistic)
  mbw        mpi.mbw_mr 1 MiB at each of --pairs (default 2): fabench headline (bytes over the
             median window of the summed rates), its osu_mb_s (bytes over each pair's whole
             timed part, summed), osu_mbw_mr's MB/s; BEFORE_DIR: the earlier method (a barrier
             per window, the slowest pair)
  validate   mpi.bw 4 MiB, --validate over plain (median windows); BEFORE_DIR: the same with
             one receive slot per message of the window
  cold       4 MiB, cache-cold and cache-hot: mpi.latency --cache-cold (mean and median half
             round trip) beside IMB PingPong -off_cache (t[usec], its loop mean), mpi.bw
             --cache-cold (osu_mb_s) beside IMB Uniband -off_cache (MB/s, the same window of
             64; both put each message of a window in its own slot of the region);
             IMB's cache size: this host's last-level cache (its buffers then span twice
             of it, as fabench's region), PingPong also at -off_cache -1 (IMB's built-in 8 MB);
             BEFORE_DIR: its mpi.bw --cache-cold too (e.g. a slot per window)
  coldbw     the cold case's bandwidth part alone (mpi.bw cold and hot, before, IMB Uniband)

Prints per-round (paired) ratios, median and range over rounds, never asserts; every number is
measured in the run that prints it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

ENV = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def mpirun(np: int) -> list[str]:
    exe = shutil.which("mpirun.openmpi") or shutil.which("mpirun") or "mpirun"
    return [exe, "--oversubscribe", "--mca", "btl", "self,vader", "-np", str(np)]


def run(argv: list[str], timeout: float = 300) -> str:
    p = subprocess.run(argv, capture_output=True, text=True, env=ENV, timeout=timeout,
                       check=False)
    if p.returncode != 0:
        raise RuntimeError(f"{argv[-1]}: exit {p.returncode}: {p.stderr.strip()[-300:]}")
    return p.stdout


def results(out: str) -> list[dict]:
    return [r for r in map(json.loads, out.splitlines()) if r.get("type") == "result"]


def fabench(exe: Path, np: int, *args: str) -> list[dict]:
    return results(run([*mpirun(np), "--", str(exe), *args]))


def llc_mb() -> float:
    """The last-level cache in MB as sysfs says (0: unknown), for IMB's -off_cache."""
    best = 0
    for d in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            text = (d / "size").read_text().strip()
        except OSError:
            continue
        m = re.fullmatch(r"(\d+)([KMG]?)", text)
        if m:
            best = max(best, int(m[1]) << {"": 0, "K": 10, "M": 20, "G": 30}[m[2]])
    return best / (1 << 20)


def table_value(out: str, size: int, col: int) -> float:
    """The column `col` of the row for `size` in an OSU/IMB text table."""
    for line in out.splitlines():
        f = line.split()
        if len(f) > col and f[0] == str(size) and re.fullmatch(r"[\d.]+", f[col]):
            return float(f[col])
    raise RuntimeError(f"no row for size {size}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--native", type=Path, help="kernels' _native dir (default: installed)")
    ap.add_argument("--osu-dir", type=Path, default=os.environ.get("OSU_DIR"))
    ap.add_argument("--imb-dir", type=Path, default=os.environ.get("IMB_DIR"))
    ap.add_argument("--before-dir", type=Path, default=os.environ.get("BEFORE_DIR"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cases", default="lat,mbw,validate,cold",
                    help="comma list of lat, mbw, validate, cold, coldbw (default: the "
                         "first four)")
    ap.add_argument("--pairs", default="2",
                    help="comma list of pair counts for mbw (2 ranks a pair; default 2)")
    a = ap.parse_args()
    if a.native is None:
        from fabench.host.native import native_root
        a.native = native_root()
    k = a.native / "openmpi"
    # measure -> round -> value, so ratios pair the values of one round
    got: dict[str, dict[int, float]] = defaultdict(dict)
    rnd = 0

    def put(name: str, value: float) -> None:
        got[name][rnd] = value

    def lat() -> dict[str, Callable[[], None]]:
        def fab() -> None:
            r = fabench(k / "fb-mpi-latency", 2, "--sizes", "8", "--iterations", "10000")[0]
            put("lat fabench median", statistics.median(r["times"]))
            put("lat fabench mean", statistics.fmean(r["times"]))

        def batch() -> None:
            r = fabench(k / "fb-mpi-latency", 2, "--sizes", "8", "--iterations", "100",
                        "--warmup", "10", "--batch", "100")[0]
            put("lat fabench --batch 100 median", statistics.median(r["times"]))

        tools = {"fab": fab, "batch": batch}
        if a.osu_dir:
            tools["osu"] = lambda: put("lat osu_latency avg", table_value(
                run([*mpirun(2), "--", str(a.osu_dir / "osu_latency"), "-i", "2000",
                     "-x", "200"]), 8, 1))
        if a.imb_dir:
            tools["imb"] = lambda: put("lat IMB PingPong avg", table_value(
                run([*mpirun(2), "--", str(a.imb_dir / "IMB-MPI1"), "PingPong", "-msglog",
                     "2:3", "-iter", "10000"]), 8, 2))
        return tools

    def mbw() -> dict[str, Callable[[], None]]:
        size = 1 << 20
        tools: dict[str, Callable[[], None]] = {}
        for pairs in (int(x) for x in a.pairs.split(",")):
            np_ = 2 * pairs

            def fab(np_: int = np_, tag: str = f"mbw {pairs}p") -> None:
                r = fabench(k / "fb-mpi-mbw_mr", np_, "--sizes", str(size),
                            "--iterations", "20")[0]
                put(f"{tag} fabench headline MB/s",
                    r["bytes_per_sample"] / statistics.median(r["times"]))
                put(f"{tag} fabench osu_mb_s", r["osu_mb_s"])
            tools[f"fab {pairs}p"] = fab
            if a.before_dir:
                def before(np_: int = np_, tag: str = f"mbw {pairs}p") -> None:
                    r = fabench(a.before_dir / "fb-mpi-mbw_mr", np_, "--sizes", str(size),
                                "--iterations", "20")[0]
                    put(f"{tag} before (barrier/window, max) MB/s",
                        r["bytes_per_sample"] / statistics.median(r["times"]))
                tools[f"before {pairs}p"] = before
            if a.osu_dir:
                def osu(np_: int = np_, tag: str = f"mbw {pairs}p") -> None:
                    put(f"{tag} osu_mbw_mr MB/s", table_value(
                        run([*mpirun(np_), "--", str(a.osu_dir / "osu_mbw_mr")]), size, 1))
                tools[f"osu {pairs}p"] = osu
        return tools

    def validate() -> dict[str, Callable[[], None]]:
        def pair(tag: str, exe: Path) -> Callable[[], None]:
            def go() -> None:
                med = {}
                for v in ((), ("--validate",)):
                    r = fabench(exe, 2, "--sizes", "4M", "--iterations", "20", *v)[0]
                    med[bool(v)] = statistics.median(r["times"])
                put(f"validate/plain time {tag}", med[True] / med[False])
            return go
        tools = {"now": pair("now (one slot)", k / "fb-mpi-bw")}
        if a.before_dir:
            tools["before"] = pair("before (slot per message)", a.before_dir / "fb-mpi-bw")
        return tools

    def cold(bw_only: bool = False) -> dict[str, Callable[[], None]]:
        size = 4 << 20
        # 100 ping-pongs, 20 windows of 64 (mpi.bw's default at this size) for every tool
        iters = {"latency": "100", "bw": "20", "PingPong": "100", "Uniband": "20"}

        def fab(kind: str, cache: tuple[str, ...], tag: str,
                kdir: Path = k) -> Callable[[], None]:
            def go() -> None:
                r = fabench(kdir / f"fb-mpi-{kind}", 2, "--sizes", str(size),
                            "--iterations", iters[kind], *cache)[0]
                if cache and r.get("cache") != "cold":
                    raise RuntimeError(f"fb-mpi-{kind} --cache-cold ran {r.get('cache')}")
                if kind == "latency":
                    put(f"cold lat fabench {tag} mean", statistics.fmean(r["times"]))
                    put(f"cold lat fabench {tag} median", statistics.median(r["times"]))
                else:
                    put(f"cold bw fabench {tag} osu_mb_s", r["osu_mb_s"])
            return go

        tools = {} if bw_only else {"lat cold": fab("latency", ("--cache-cold",), "cold"),
                                    "lat hot": fab("latency", (), "hot")}
        tools.update({"bw cold": fab("bw", ("--cache-cold",), "cold"),
                      "bw hot": fab("bw", (), "hot")})
        if a.before_dir:
            tools["bw cold before"] = fab("bw", ("--cache-cold",), "cold before", a.before_dir)
        if a.imb_dir:
            llc = llc_mb()

            def imb(bench: str, cache: str | None, tag: str) -> Callable[[], None]:
                def go() -> None:
                    off = ("-off_cache", cache) if cache else ()
                    out = run([*mpirun(2), "--", str(a.imb_dir / "IMB-MPI1"), bench,
                               "-msglog", "22:22", "-iter", iters[bench], "-iter_policy", "off",
                               "-zero_size", "off", "-time", "120", *off])
                    what = "lat IMB PingPong" if bench == "PingPong" else "bw IMB Uniband"
                    put(f"cold {what} {tag}", table_value(out, size, 2))
                return go
            if not bw_only:
                tools["imb pp cold"] = imb("PingPong", f"{llc:g}", "cold (LLC)")
                tools["imb pp cold -1"] = imb("PingPong", "-1", "cold (-1)")
                tools["imb pp hot"] = imb("PingPong", None, "hot")
            tools["imb uni cold"] = imb("Uniband", f"{llc:g}", "cold (LLC)")
            tools["imb uni hot"] = imb("Uniband", None, "hot")
        return tools

    makers = {"lat": lat, "mbw": mbw, "validate": validate, "cold": cold,
              "coldbw": lambda: cold(bw_only=True)}
    print(f"# load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} at start",
          flush=True)
    for rnd in range(a.rounds):
        for case in (makers[c]() for c in a.cases.split(",")):
            names = list(case)
            for name in names[rnd % len(names):] + names[:rnd % len(names)]:
                try:
                    t0 = time.monotonic()
                    case[name]()
                    print(f"round {rnd} {name}: {time.monotonic() - t0:.1f} s", flush=True)
                except (RuntimeError, subprocess.TimeoutExpired) as exc:
                    print(f"round {rnd} {name}: {exc}")
        print(f"# load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} after round "
              f"{rnd}", flush=True)
    print(f"{'measure':48} {'median over rounds':>18}  values by round")
    for name, vals in got.items():
        print(f"{name:48} {statistics.median(vals.values()):18.4f}  "
              + " ".join(f"{r}:{v:.4g}" for r, v in sorted(vals.items())))

    def ratio(a_: str, b_: str) -> None:
        # per-round (paired) ratios: a round's tools ran minutes apart at most, so load
        # drift across rounds cancels; rounds where either failed are left out
        both = sorted(set(got.get(a_, {})) & set(got.get(b_, {})))
        if both:
            rs = [got[a_][r] / got[b_][r] for r in both]
            print(f"ratio {a_} / {b_}: {statistics.median(rs):.3f} "
                  f"({min(rs):.3f}-{max(rs):.3f}, {len(rs)} rounds)")
    for peer in ("lat osu_latency avg", "lat IMB PingPong avg"):
        for ours in ("lat fabench median", "lat fabench mean", "lat fabench --batch 100 median"):
            ratio(ours, peer)
    for pairs in a.pairs.split(","):
        for ours in ("fabench headline MB/s", "fabench osu_mb_s",
                     "before (barrier/window, max) MB/s"):
            ratio(f"mbw {pairs}p {ours}", f"mbw {pairs}p osu_mbw_mr MB/s")
    for tag in ("cold", "hot"):
        for imb_tag in ((tag,) if tag == "hot" else ("cold (LLC)", "cold (-1)")):
            for stat in ("mean", "median"):
                ratio(f"cold lat fabench {tag} {stat}", f"cold lat IMB PingPong {imb_tag}")
    ratio("cold bw fabench cold osu_mb_s", "cold bw IMB Uniband cold (LLC)")
    ratio("cold bw fabench cold before osu_mb_s", "cold bw IMB Uniband cold (LLC)")
    ratio("cold bw fabench cold osu_mb_s", "cold bw fabench cold before osu_mb_s")
    ratio("cold bw fabench hot osu_mb_s", "cold bw IMB Uniband hot")
    ratio("cold lat fabench cold mean", "cold lat fabench hot mean")
    ratio("cold lat IMB PingPong cold (LLC)", "cold lat IMB PingPong hot")
    ratio("cold lat IMB PingPong cold (-1)", "cold lat IMB PingPong hot")
    ratio("cold bw fabench cold osu_mb_s", "cold bw fabench hot osu_mb_s")
    ratio("cold bw IMB Uniband cold (LLC)", "cold bw IMB Uniband hot")
    ratio("cold bw fabench cold before osu_mb_s", "cold bw fabench hot osu_mb_s")
    for name, vals in got.items():
        if name.startswith("validate/plain"):
            v = list(vals.values())
            print(f"{name}: {statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f}, "
                  f"{len(v)} rounds)")
    return 0 if got else 1


if __name__ == "__main__":
    raise SystemExit(main())
