#!/usr/bin/env python3
"""fabench's transport kernels side by side with peer tools, interleaved, printed as ratios.

Cases (loopback, 127.0.0.1), each fabench run against the peer mode that does the same thing:
  tcp.latency 16 B (--nodelay)       vs  sockperf ping-pong --tcp -m 16 (blocking recvfrom;
                                         sockperf turns Nagle off for ping-pong too; 14 B min)
  tcp.latency 16 B --poll            vs  the same with --nonblocked on both sides (recvfrom on
                                         a non-blocking socket in a spin)
  tcp.latency 16 B and 8 B --batch N vs  sockperf ping-pong --tcp -m 16 (and -m 14, its smallest
                                         message: sockperf refuses 8 B); fabench's sample is N
                                         round trips timed together (half of their mean), its
                                         warm-up the default (settled); against sockperf's P50
                                         and, as "/mean", its avg-latency
  tcp.streams N x 128 KiB (time mode) vs iperf3 -P N -l 128K -O OMIT -t DURATION (receiver's
                                         total); N = 1 and --streams (default 4)
  ucx.latency 8 B                    vs  ucx_perftest -t tag_lat -s 8 (50th percentile)
  ucx.bw 1 MiB, window 64            vs  ucx_perftest -t tag_bw -s 1M -O 64: both keep 64 messages
                                         in flight; compared: bytes over the run (perftest's
                                         "overall", MiB/s -> MB/s); fabench's median window beside
  ofi.latency 8 B                    vs  fi_pingpong -e rdm -S 8 (usec/xfer, half a round trip)
The UCX and libfabric cases run once per transport (--ucx-tls, --ofi-provider).

Every round runs each case once per tool, alternating which tool goes first, so drift in host
load hits both alike. Printed per case: each tool's median over the rounds with the min..max of
the rounds, fabench / peer of the medians (the ratio), the min..max of the per-round (paired)
ratios, and issue 13's target where one exists (latency <= 1.05x, bandwidth >= 0.95x).
tcp.streams also prints its aggregate (bytes over the sampled time, iperf3's statistic) beside
the headline (median interval). Absolute times are never asserted; exits 0 when fabench
measured.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from fabench.kernels import get_kernel
from fabench.metrics import BANDWIDTH
from fabench.plan.plan import plan_run, settings_from_words
from fabench.records import ResultRecord
from fabench.starters.pair import run_pair

HOST = "127.0.0.1"


@dataclass(frozen=True)
class Effort:
    rounds: int
    lat_iters: int
    bw_iters: int
    seconds: float  # sockperf's run, tcp.streams' and iperf3's duration
    omit: float     # tcp.streams' --omit and iperf3's -O


FULL = Effort(rounds=5, lat_iters=20000, bw_iters=50, seconds=3.0, omit=1.0)
QUICK = Effort(rounds=2, lat_iters=3000, bw_iters=10, seconds=1.0, omit=1.0)


@dataclass
class Case:
    name: str
    kernel: str
    args: list[str]
    transport: str
    peer: Callable[[Effort], float | None]
    lower_is_better: bool
    unit: str
    peer_cmd: str
    target: float | None = None
    compare_aggregate: bool = False  # compare fabench's bytes over time, not its median
    fab: list[float] = field(default_factory=list)
    ref: list[float] = field(default_factory=list)
    pairs: list[float] = field(default_factory=list)
    extra: list[float] = field(default_factory=list)  # the other of median / aggregate


def fabench_value(case: Case) -> tuple[float, float | None] | None:
    """The headline (median) and, for a bandwidth, the aggregate rate: a time-mode stream's
    received_mb_per_s, else the bytes moved over the timed part."""
    run = plan_run(case.kernel, transport=case.transport, timeout_s=300,
                   settings=settings_from_words(get_kernel(case.kernel), case.args))
    res = run_pair(run, None, hosts=None)
    if res.returncode != 0 or not res.output.results:
        print(f"  fabench {case.name} failed: {res.stderr.strip()[-300:]}", file=sys.stderr)
        return None
    rec: ResultRecord = res.output.results[0]
    if case.lower_is_better:
        return statistics.median(rec.times), None
    agg = rec.extra.get("received_mb_per_s")
    if agg is None and rec.extra.get("timed_s"):
        agg = float(rec.extra["bytes_moved"]) / (float(rec.extra["timed_s"]) * 1e6)
    med = float(statistics.median(BANDWIDTH.values(rec.times, rec.bytes_per_sample)))
    if case.compare_aggregate and agg is not None:
        return float(agg), med
    return med, float(agg) if agg is not None else None


class Server:
    """A peer tool's server side, ended by its own PID."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     env={**os.environ, **(env or {})}, start_new_session=True)
        time.sleep(0.4)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def client(argv: list[str], env: dict[str, str] | None = None, timeout: float = 120) -> str:
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False,
                       env={**os.environ, **(env or {})})
    return p.stdout + p.stderr


def sockperf_latency(nonblocked: bool, size: int = 16,
                     mean: bool = False) -> Callable[[Effort], float | None]:
    """sockperf's P50, or with `mean` its avg-latency (what a batched sample estimates)."""
    extra = ["--nonblocked"] if nonblocked else []

    def run(e: Effort) -> float | None:
        srv = Server(["sockperf", "server", "--tcp", "-i", HOST, "-p", "11111", *extra])
        try:
            out = client(["sockperf", "ping-pong", "--tcp", "-i", HOST, "-p", "11111", "-m",
                          str(size), "-t", str(int(max(1, e.seconds))), *extra])
        finally:
            srv.stop()
        m = re.search(r"avg-latency=([\d.]+)" if mean else r"percentile 50\.000 =\s*([\d.]+)",
                      out)
        return float(m.group(1)) if m else None
    return run


def iperf3_streams(n: int) -> Callable[[Effort], float | None]:
    def run(e: Effort) -> float | None:
        srv = Server(["iperf3", "-s", "-1", "-p", "5299", "-B", HOST])
        try:
            out = client(["iperf3", "-c", HOST, "-p", "5299", "-P", str(n), "-l", "128K", "-t",
                          f"{e.seconds:g}", "-O", f"{e.omit:g}", "-J"])
        finally:
            srv.stop()
        try:
            bps = json.loads(out[out.index("{"):])["end"]["sum_received"]["bits_per_second"]
        except (ValueError, KeyError):
            return None
        return float(bps) / 8 / 1e6  # MB/s, MB = 1e6 as fabench
    return run


def ucx_perftest(test: str, size: int, tls: str,
                 outstanding: int = 1) -> Callable[[Effort], float | None]:
    def run(e: Effort) -> float | None:
        n = e.lat_iters if test == "tag_lat" else e.bw_iters * 64
        env = {"UCX_TLS": tls}
        srv = Server(["ucx_perftest", "-p", "13400"], env)
        try:
            # warm-up as fabench's (its default, 10000 iterations, is 10 GB at 1 MiB)
            warm = 1000 if test == "tag_lat" else 2 * 64
            out = client(["ucx_perftest", HOST, "-p", "13400", "-t", test, "-s", str(size),
                          "-n", str(n), "-w", str(warm), "-O", str(outstanding), "-f"], env)
        finally:
            srv.stop()
        # -f prints the final line only: iterations, overhead P50/avg/overall, bandwidth
        # avg/overall, message rate avg/overall
        m = re.search(r"^\s*(?:Final:)?\s+\d+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)"
                      r"\s+([\d.]+)", out, re.M)
        if not m:
            return None
        if test == "tag_lat":
            return float(m.group(1))  # 50th percentile, half round trip
        return float(m.group(5)) * 1.048576  # overall MiB/s (bytes over the run) -> MB/s
    return run


def fi_pingpong(provider: str) -> Callable[[Effort], float | None]:
    def run(e: Effort) -> float | None:
        base = ["fi_pingpong", "-p", provider, "-e", "rdm", "-I", str(e.lat_iters), "-S", "8"]
        srv = Server([*base, "-B", "47650"])
        try:
            out = client([*base, "-P", "47650", HOST])
        finally:
            srv.stop()
        m = re.search(r"^8\s+\S+\s+\S+\s+\S+\s+\S+s\s+[\d.]+\s+([\d.]+)", out, re.M)
        return float(m.group(1)) if m else None
    return run


def make_cases(e: Effort, streams: int, tls: list[str], providers: list[str],
               batch: int = 100) -> list[Case]:
    lat = ["--sizes", "8", "--iterations", str(e.lat_iters), "--warmup", "1000"]
    # as long as sockperf's run, so a burst of load elsewhere weighs on both alike
    tlat = ["--sizes", "16", "--duration", f"{max(1.0, e.seconds):g}", "--warmup", "1000",
            "--nodelay"]
    cases = []
    if shutil.which("sockperf"):
        cases.append(Case("tcp.latency 16B block", "tcp.latency", tlat, "tcp",
                          sockperf_latency(False), True, "us",
                          "sockperf ping-pong --tcp -m 16 (P50)", 1.05))
        cases.append(Case("tcp.latency 16B poll", "tcp.latency", [*tlat, "--poll"], "tcp",
                          sockperf_latency(True), True, "us",
                          "sockperf ping-pong --tcp -m 16 --nonblocked (P50)", 1.05))
        for size, peer_size in ((16, 16), (8, 14)):
            blat = ["--sizes", str(size), "--duration", f"{max(1.0, e.seconds):g}",
                    "--nodelay", "--batch", str(batch)]
            # a batched sample is the mean of its round trips: sockperf's mean beside its P50
            for mean in (False, True):
                cases.append(Case(
                    f"tcp.latency {size}B --batch {batch}" + (" /mean" if mean else ""),
                    "tcp.latency", blat, "tcp", sockperf_latency(False, peer_size, mean), True,
                    "us", f"sockperf ping-pong --tcp -m {peer_size} "
                          f"({'avg-latency' if mean else 'P50'})"))
    if shutil.which("iperf3"):
        for n in sorted({1, streams}):
            cases.append(Case(f"tcp.streams {n}x128K", "tcp.streams",
                              ["--sizes", "128K", "--streams", str(n), "--duration",
                               str(e.seconds), "--omit", str(e.omit)], "tcp",
                              iperf3_streams(n), False, "MB/s",
                              f"iperf3 -P {n} -l 128K -O {e.omit:g} -t {e.seconds:g} "
                              "(receiver total)", 0.95))
    if shutil.which("ucx_perftest"):
        for t in tls:
            cases.append(Case(f"ucx.latency 8B {t}", "ucx.latency", lat, f"ucx:{t}",
                              ucx_perftest("tag_lat", 8, t), True, "us",
                              f"UCX_TLS={t} ucx_perftest -t tag_lat -s 8 (P50)", 1.05))
            # like with like: 64 messages in flight on both sides, bytes over the run
            cases.append(Case(f"ucx.bw 1MiB {t}", "ucx.bw",
                              ["--sizes", "1M", "--iterations", str(e.bw_iters), "--warmup",
                               "2", "--window", "64"], f"ucx:{t}",
                              ucx_perftest("tag_bw", 1 << 20, t, 64), False, "MB/s",
                              f"UCX_TLS={t} ucx_perftest -t tag_bw -s 1M -O 64 (overall)",
                              0.95, compare_aggregate=True))
    if shutil.which("fi_pingpong"):
        for p in providers:
            cases.append(Case(f"ofi.latency 8B {p}", "ofi.latency", lat, f"ofi:{p}",
                              fi_pingpong(p), True, "us",
                              f"fi_pingpong -p '{p}' -e rdm -S 8 (usec/xfer)"))
    return cases


def run_rounds(cases: list[Case], e: Effort) -> None:
    for r in range(e.rounds):
        for i, c in enumerate(cases):
            order = ("fab", "ref") if (r + i) % 2 == 0 else ("ref", "fab")
            got: dict[str, float] = {}
            for who in order:
                if who == "fab":
                    v = fabench_value(c)
                    if v is not None:
                        got["fab"] = v[0]
                        if v[1] is not None:
                            c.extra.append(v[1])
                else:
                    p = c.peer(e)
                    if p is not None:
                        got["ref"] = p
            if "fab" in got:
                c.fab.append(got["fab"])
            if "ref" in got:
                c.ref.append(got["ref"])
            if "fab" in got and "ref" in got and got["ref"] > 0:
                c.pairs.append(got["fab"] / got["ref"])
        print(f"# round {r + 1}/{e.rounds} done", file=sys.stderr)


def report(cases: list[Case], e: Effort, load0: float, load1: float) -> bool:
    print(f"# fabench transport kernels vs peers: {e.rounds} rounds, loopback, "
          f"{os.cpu_count()} CPUs, load average {load0:.1f} at start, {load1:.1f} at end")
    print(f"# {'case':<24} {'fabench':>9} {'range':>17} {'peer':>9} {'range':>17} "
          f"{'ratio':>6} {'paired':>13} {'target':>12}  peer tool")

    def span(v: list[float]) -> str:
        return f"{min(v):.2f}..{max(v):.2f}" if v else "-"

    measured = False
    for c in cases:
        f = statistics.median(c.fab) if c.fab else float("nan")
        p = statistics.median(c.ref) if c.ref else float("nan")
        measured |= bool(c.fab)
        ratio = f / p if c.fab and c.ref else float("nan")
        verdict = ""
        if c.target is not None and ratio == ratio:
            ok = ratio <= c.target if c.lower_is_better else ratio >= c.target
            verdict = f"{'<=' if c.lower_is_better else '>='}{c.target} {'met' if ok else 'MISSED'}"
        paired = f"{min(c.pairs):.3f}..{max(c.pairs):.3f}" if c.pairs else "-"
        print(f"  {c.name:<24} {f:>9.2f} {span(c.fab):>17} {p:>9.2f} {span(c.ref):>17} "
              f"{ratio:>6.3f} {paired:>13} {verdict:>12}  {c.peer_cmd} [{c.unit}]")
        if c.extra and c.ref:
            a = statistics.median(c.extra)
            what = ("median window (fabench's headline)" if c.compare_aggregate else
                    "aggregate: bytes over the sampled time, the peer's statistic")
            print(f"  {'  other statistic':<24} {a:>9.2f} {span(c.extra):>17} {p:>9.2f} "
                  f"{'':>17} {a / p:>6.3f}   ({what})")
    return measured


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="2 rounds, short loops")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--streams", type=int, default=4)
    ap.add_argument("--ucx-tls", default="posix,tcp", help="comma list (default posix,tcp)")
    ap.add_argument("--ofi-provider", action="append",
                    help="repeatable (default: shm and 'tcp;ofi_rxm')")
    ap.add_argument("--only", help="run only cases whose name contains this")
    ap.add_argument("--batch", type=int, default=100,
                    help="round trips per sample of the tcp.latency --batch cases (100)")
    ap.add_argument("--save", help="write the raw per-round values as JSON")
    a = ap.parse_args()
    e = QUICK if a.quick else FULL
    if a.rounds:
        e = Effort(a.rounds, e.lat_iters, e.bw_iters, e.seconds, e.omit)
    cases = make_cases(e, a.streams, a.ucx_tls.split(","), a.ofi_provider or
                       ["shm", "tcp;ofi_rxm"], a.batch)
    if a.only:
        cases = [c for c in cases if a.only in c.name]
    load0 = os.getloadavg()[0]
    run_rounds(cases, e)
    measured = report(cases, e, load0, os.getloadavg()[0])
    if a.save:
        with open(a.save, "w") as fh:
            json.dump([{"case": c.name, "unit": c.unit, "fabench": c.fab, "peer": c.ref,
                        "paired_ratios": c.pairs, "fabench_aggregate": c.extra,
                        "peer_tool": c.peer_cmd} for c in cases], fh, indent=1)
    return 0 if measured else 1


if __name__ == "__main__":
    sys.exit(main())
