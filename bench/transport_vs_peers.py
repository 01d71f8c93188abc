#!/usr/bin/env python3
"""fabench's transport kernels side by side with peer tools, interleaved, printed as ratios.

Cases (loopback, 127.0.0.1):
  tcp.latency 16 B (--nodelay)    vs  sockperf ping-pong --tcp -m 16 (median; sockperf turns
                                      Nagle off for ping-pong too; its minimum size is 14 B)
  tcp.streams N x 128 KiB         vs  iperf3 -P N -l 128K (receiver's total)
  ucx.latency 8 B                 vs  ucx_perftest -t tag_lat -s 8 (50th percentile)
  ucx.bw 1 MiB, window 64         vs  ucx_perftest -t tag_bw -s 1M (average; MiB/s -> MB/s)
  ofi.latency 8 B                 vs  fi_pingpong -e rdm -S 8 (usec/xfer, half a round trip)
The UCX and libfabric cases run once per transport (--ucx-tls, --ofi-provider).

Every round runs each case once per tool, alternating which tool goes first, so drift in host
load hits both alike. Printed: each tool's median over rounds, the min..max of the rounds and
fabench / peer of the medians, with the target of issue 3 where one exists (latency <= 1.05x,
bandwidth >= 0.95x). Absolute times are never asserted; exits 0 when fabench measured.
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
from fabench.plan import plan_run, settings_from_words
from fabench.starters.pair import run_pair

HOST = "127.0.0.1"


@dataclass
class Case:
    name: str
    kernel: str
    args: list[str]
    transport: str
    peer: Callable[[Effort], float | None]
    lower_is_better: bool
    unit: str
    size: int
    peer_cmd: str = ""
    fab: list[float] = field(default_factory=list)
    ref: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class Effort:
    rounds: int
    lat_iters: int
    bw_iters: int
    seconds: float


FULL = Effort(rounds=5, lat_iters=20000, bw_iters=50, seconds=3.0)
QUICK = Effort(rounds=2, lat_iters=3000, bw_iters=10, seconds=1.0)


def fabench_value(case: Case) -> float | None:
    run = plan_run(case.kernel, transport=case.transport, timeout_s=300,
                   settings=settings_from_words(get_kernel(case.kernel), case.args))
    res = run_pair(run, None, hosts=None)
    if res.returncode != 0 or not res.output.results:
        print(f"  fabench {case.name} failed: {res.stderr.strip()[-300:]}", file=sys.stderr)
        return None
    rec = res.output.results[0]
    if case.lower_is_better:
        return statistics.median(rec.times)
    return float(statistics.median(BANDWIDTH.values(rec.times, rec.bytes_per_sample)))


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


def sockperf_latency(e: Effort) -> float | None:
    srv = Server(["sockperf", "server", "--tcp", "-i", HOST, "-p", "11111"])
    try:
        out = client(["sockperf", "ping-pong", "--tcp", "-i", HOST, "-p", "11111", "-m", "16",
                      "-t", str(int(max(1, e.seconds)))])
    finally:
        srv.stop()
    m = re.search(r"percentile 50\.000 =\s*([\d.]+)", out)
    return float(m.group(1)) if m else None


def iperf3_streams(n: int) -> Callable[[Effort], float | None]:
    def run(e: Effort) -> float | None:
        srv = Server(["iperf3", "-s", "-1", "-p", "5299", "-B", HOST])
        try:
            out = client(["iperf3", "-c", HOST, "-p", "5299", "-P", str(n), "-l", "128K", "-t",
                          str(max(1, e.seconds)), "-J"])
        finally:
            srv.stop()
        try:
            bps = json.loads(out[out.index("{"):])["end"]["sum_received"]["bits_per_second"]
        except (ValueError, KeyError):
            return None
        return float(bps) / 8 / 1e6  # MB/s, MB = 1e6 as fabench
    return run


def ucx_perftest(test: str, size: int, tls: str) -> Callable[[Effort], float | None]:
    def run(e: Effort) -> float | None:
        n = e.lat_iters if test == "tag_lat" else e.bw_iters * 64
        env = {"UCX_TLS": tls}
        srv = Server(["ucx_perftest", "-p", "13400"], env)
        try:
            out = client(["ucx_perftest", HOST, "-p", "13400", "-t", test, "-s", str(size),
                          "-n", str(n), "-f"], env)
        finally:
            srv.stop()
        # -f prints the final line only: iterations, latency P50/avg/overall, bandwidth avg/...
        m = re.search(r"^\s*(?:Final:)?\s+\d+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)",
                      out, re.M)
        if not m:
            return None
        if test == "tag_lat":
            return float(m.group(1))  # 50th percentile, half round trip
        return float(m.group(4)) * 1.048576  # average MiB/s -> MB/s
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


def make_cases(e: Effort, streams: int, tls: list[str], providers: list[str]) -> list[Case]:
    lat = ["--sizes", "8", "--iterations", str(e.lat_iters), "--warmup", "1000"]
    cases = []
    if shutil.which("sockperf"):
        tlat = ["--sizes", "16", *lat[2:], "--nodelay"]
        cases.append(Case("tcp.latency 16B", "tcp.latency", tlat, "tcp", sockperf_latency,
                          True, "us", 16, "sockperf ping-pong --tcp -m 16 (P50)"))
    if shutil.which("iperf3"):
        cases.append(Case(f"tcp.streams {streams}x128K", "tcp.streams",
                          ["--sizes", "128K", "--iterations", str(e.bw_iters), "--warmup", "2",
                           "--window", "64", "--streams", str(streams)], "tcp",
                          iperf3_streams(streams), False, "MB/s", 131072,
                          f"iperf3 -P {streams} -l 128K (receiver total)"))
    if shutil.which("ucx_perftest"):
        for t in tls:
            cases.append(Case(f"ucx.latency 8B {t}", "ucx.latency", lat, f"ucx:{t}",
                              ucx_perftest("tag_lat", 8, t), True, "us", 8,
                              f"UCX_TLS={t} ucx_perftest -t tag_lat -s 8 (P50)"))
            cases.append(Case(f"ucx.bw 1MiB {t}", "ucx.bw",
                              ["--sizes", "1M", "--iterations", str(e.bw_iters), "--warmup",
                               "2"], f"ucx:{t}", ucx_perftest("tag_bw", 1 << 20, t), False,
                              "MB/s", 1 << 20, f"UCX_TLS={t} ucx_perftest -t tag_bw -s 1M"))
    if shutil.which("fi_pingpong"):
        for p in providers:
            cases.append(Case(f"ofi.latency 8B {p}", "ofi.latency", lat, f"ofi:{p}",
                              fi_pingpong(p), True, "us", 8,
                              f"fi_pingpong -p '{p}' -e rdm -S 8 (usec/xfer)"))
    return cases


TARGET = {"tcp.latency": 1.05, "tcp.streams": 0.95, "ucx.latency": 1.05, "ucx.bw": 0.95}


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
    ap.add_argument("--save", help="write the raw per-round values as JSON")
    a = ap.parse_args()
    e = QUICK if a.quick else FULL
    if a.rounds:
        e = Effort(a.rounds, e.lat_iters, e.bw_iters, e.seconds)
    cases = make_cases(e, a.streams, a.ucx_tls.split(","), a.ofi_provider or
                       ["shm", "tcp;ofi_rxm"])
    if a.only:
        cases = [c for c in cases if a.only in c.name]
    load0 = os.getloadavg()[0]
    for r in range(e.rounds):
        for i, c in enumerate(cases):
            order = ("fab", "ref") if (r + i) % 2 == 0 else ("ref", "fab")
            for who in order:
                v = fabench_value(c) if who == "fab" else c.peer(e)
                if v is not None:
                    (c.fab if who == "fab" else c.ref).append(v)
        print(f"# round {r + 1}/{e.rounds} done", file=sys.stderr)
    load1 = os.getloadavg()[0]

    print(f"# fabench transport kernels vs peers: {e.rounds} rounds, loopback, "
          f"{os.cpu_count()} CPUs, load average {load0:.1f} at start, {load1:.1f} at end")
    print(f"# {'case':<24} {'fabench':>10} {'range':>19} {'peer':>10} {'range':>19} "
          f"{'ratio':>6} {'target':>8}  peer tool")
    measured = False
    for c in cases:
        f = statistics.median(c.fab) if c.fab else float("nan")
        p = statistics.median(c.ref) if c.ref else float("nan")
        measured |= bool(c.fab)
        ratio = f / p if c.fab and c.ref else float("nan")
        tgt = TARGET.get(c.kernel)
        verdict = ""
        if tgt is not None and ratio == ratio:
            ok = ratio <= tgt if c.lower_is_better else ratio >= tgt
            verdict = f"{'<=' if c.lower_is_better else '>='}{tgt} {'met' if ok else 'MISSED'}"
        fr = f"{min(c.fab):.2f}..{max(c.fab):.2f}" if c.fab else "-"
        pr = f"{min(c.ref):.2f}..{max(c.ref):.2f}" if c.ref else "-"
        print(f"  {c.name:<24} {f:>10.2f} {fr:>19} {p:>10.2f} {pr:>19} {ratio:>6.3f} "
              f"{verdict:>8}  {c.peer_cmd} [{c.unit}]")
    if a.save:
        with open(a.save, "w") as fh:
            json.dump([{"case": c.name, "unit": c.unit, "fabench": c.fab, "peer": c.ref,
                        "peer_tool": c.peer_cmd} for c in cases], fh, indent=1)
    return 0 if measured else 1


if __name__ == "__main__":
    sys.exit(main())
