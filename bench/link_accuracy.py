#!/usr/bin/env python3
"""fb-link on this machine: its ceiling (iperf3 throughput and one-way delay through an
unimpaired fb-link against a plain veth link) and its accuracy (configured delay, loss,
duplication and netem-model reorder rate against what a UDP probe measures across it).

Each round makes one 2-host testbed per case and measures h1 -> h2, the link on h2's side;
rounds interleave the cases, so a change of host load hits every case alike. Delay is the
probe's one-way delay (kernel receive stamp minus send stamp, one clock) less that of an
unimpaired fb-link in the same round (itself given against a plain veth link), at the
median, the 10th percentile and the minimum: on a loaded host the median carries the
scheduling delays of the link process and the probe. The reorder rate is the share of
datagrams that overtook a lower-numbered one (netem's "reordered": sent ahead of the delay),
against netem's model P / (1 + P (gap - 1)). Loss leaves out what h2's own UDP socket
dropped (Udp.RcvbufErrors inside h2: a loaded host's receiver falls behind).

    PYTHONPATH=src python bench/link_accuracy.py [--rounds 2] [--count 5000]

Prints a table and one JSON line per measurement; never asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time

from fabench.host.tcpstats import read_tcp_counters
from fabench.testbed import TestbedConfig, create, destroy
from fabench.testbed.impair import parse_impair
from fabench.testbed.linkprobe import measure
from fabench.testbed.state import TestbedState

# (label, --impair spec or None for a plain veth link, probe interval us)
CASES = [
    ("veth", None, 200),
    ("fb-link, no impairment", "h2:delay=0us,dir=in", 200),
    ("delay 200us", "h2:delay=200us,dir=in", 200),
    ("delay 1ms", "h2:delay=1ms,dir=in", 200),
    ("delay 5ms", "h2:delay=5ms,dir=in", 200),
    ("loss 1%", "h2:loss=1%,dir=in", 99),
    ("loss 10%", "h2:loss=10%,dir=in", 99),
    ("dup 5%", "h2:dup=5%,dir=in", 99),
    ("reorder 25% (netem)", "h2:delay=1ms,reorder=25%,dir=in", 100),
    ("reorder 50%:5 (netem)", "h2:delay=1ms,reorder=50%:5,dir=in", 100),
]


def load() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


def iperf(st: TestbedState, seconds: int) -> float:
    h1, h2 = st.hosts
    srv = subprocess.Popen([*h2.enter, "iperf3", "-s", "-1", "-p", "5311"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.4)
        p = subprocess.run([*h1.enter, "iperf3", "-c", h2.address, "-p", "5311", "-t",
                            str(seconds), "-J"], capture_output=True, text=True, timeout=120,
                           check=True)
        srv.wait(timeout=30)
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
    return json.loads(p.stdout)["end"]["sum_received"]["bits_per_second"] / 1e9


def expected(spec: str | None) -> dict[str, float]:
    if spec is None:
        return {}
    imp = parse_impair(spec, ["h1", "h2"])
    out = {}
    if imp.delay_ns:
        out["delay_us"] = imp.delay_ns / 1000
    if imp.loss_ppb:
        out["loss"] = imp.loss_ppb / 1e9
    if imp.dup_ppb:
        out["dup"] = imp.dup_ppb / 1e9
    if imp.reorder_ppb:
        p = imp.reorder_ppb / 1e9
        out["overtook"] = p / (1 + p * (imp.gap - 1))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--count", type=int, default=5000)
    ap.add_argument("--iperf-seconds", type=int, default=3)
    ap.add_argument("--cases", help="only the cases whose label contains one of these "
                                    "comma-separated words (veth and fb-link always run)")
    args = ap.parse_args()
    if args.cases:
        words = args.cases.split(",")
        CASES[:] = [c for c in CASES if c[1] is None or c[1] == "h2:delay=0us,dir=in"
                    or any(w in c[0] for w in words)]
    os.environ.setdefault("FABENCH_TESTBED_PREFIX", f"fbla{os.getpid() % 10000}")
    rows: dict[str, list[dict[str, float]]] = {label: [] for label, _, _ in CASES}

    for rnd in range(args.rounds):
        base_median = None
        fb_median = fb_p10 = fb_min = 0.0
        for label, spec, interval in CASES:
            st = create("acc", TestbedConfig(hosts=2, impairs=[spec] if spec else [],
                                             link_impl="fb-link"))
            try:
                h1, h2 = st.hosts
                # rates need more datagrams than delays: 1 % of 40000 has a 5 % sd
                count = args.count * (8 if interval < 100 else 1)
                # (at 20000 datagrams/s a loaded receiver's socket overflowed: 10000/s)
                udp0 = read_tcp_counters(h2.enter).values
                r = measure(h1.enter, h2.enter, h2.address, count=count, interval_us=interval)
                udp1 = read_tcp_counters(h2.enter).values
                # datagrams h2's own socket dropped (a busy host's receiver falls behind)
                # are not the link's: taken out of the loss
                sock_drops = udp1.get("Udp.RcvbufErrors", 0) - udp0.get("Udp.RcvbufErrors", 0)
                row = {"delay_us_median": r.delay_us_median, "delay_us_min": r.delay_us_min,
                       "delay_us_p10": r.delay_us_p10,
                       "delay_us_p99": r.delay_us_p99,
                       "loss": (r.lost - sock_drops) / r.sent, "socket_drops": sock_drops,
                       "dup": r.duplicates / r.sent, "overtook": r.overtook / (r.unique or 1),
                       "reordered": r.reordered_ratio}
                # the link's own cost against veth; a configured delay against fb-link's own
                if label == "veth":
                    base_median = r.delay_us_median
                elif label == "fb-link, no impairment":
                    row["added_us"] = r.delay_us_median - (base_median or 0.0)
                    fb_median, fb_p10, fb_min = r.delay_us_median, r.delay_us_p10, r.delay_us_min
                else:
                    row["added_us"] = r.delay_us_median - fb_median
                    row["added_us_p10"] = r.delay_us_p10 - fb_p10
                    row["added_us_min"] = r.delay_us_min - fb_min
                if label in ("veth", "fb-link, no impairment"):
                    row["gbit_s"] = iperf(st, args.iperf_seconds)
            finally:
                destroy(st)
            rows[label].append(row)
            print(json.dumps({"round": rnd, "case": label, "spec": spec, "load": load(),
                              **row}), flush=True)
    print()
    print(f"{'case':<24} {'configured':<28} measured (per round)")
    for label, spec, _ in CASES:
        want = expected(spec)
        got = rows[label]
        if label in ("veth", "fb-link, no impairment"):
            txt = "; ".join(f"{g['gbit_s']:.2f} Gbit/s, one-way {g['delay_us_median']:.1f} us "
                            f"median" + (f" (+{g['added_us']:.1f})" if "added_us" in g else "")
                            for g in got)
            print(f"{label:<24} {'-':<28} {txt}")
            continue
        cfg = ", ".join(f"{k} {v:g}" for k, v in want.items())
        parts = []
        for g in got:
            bits = []
            if "delay_us" in want:
                bits.append(f"added: median {g['added_us']:.0f}, p10 {g['added_us_p10']:.0f}, "
                            f"min {g['added_us_min']:.0f} us")
            for key in ("loss", "dup", "overtook"):
                if key in want:
                    bits.append(f"{key} {g[key]:.4f} ({(g[key] / want[key] - 1) * 100:+.1f}%)")
            parts.append(", ".join(bits))
        print(f"{label:<24} {cfg:<28} {' | '.join(parts)}")
    med = statistics.median
    for key in ("veth", "fb-link, no impairment"):
        if rows[key]:
            print(f"{key}: median {med(r['gbit_s'] for r in rows[key]):.2f} Gbit/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
