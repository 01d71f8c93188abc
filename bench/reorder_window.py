#!/usr/bin/env python3
"""Issue 16's sweep of document 001's reorder window: TCP throughput and reorder events per
second against W, with and without loss, on a 2-host testbed whose link reorders.

The link is fb-link on h2's side, toward h2 (dir=in): frames spread round-robin over K paths
of different delay (multipath, as IPoIB over several queue pairs), optionally lost after the
link's sending half numbered them (so a loss leaves a hole in the msg_ids, as on the fabric
of 001), then Algorithm 1 with window W in the receiving half, before h2's TCP. iperf3 sends
h1 -> h2 with 1 and 4 streams, congestion control reno (loss-based, as the CUBIC of 001's
time; this kernel offers only reno and bbr in a namespace). Reorder events are what the
sender's TCP detected (h1's TCPSACKReorder + TCPTSReorder + TCPRenoReorder, read inside h1
before and after), per second of the run; h2's TCPOFOQueue and fb-link's own count of frames
delivered below their flow's highest msg_id (before and after the window) come with them.

Rounds interleave everything and reverse the W order every other round, so a change of host
load hits every W alike.

    PYTHONPATH=src python bench/reorder_window.py [--rounds 2] [--seconds 3] [--loss 1%]

Prints one JSON line per run, then the table (medians over rounds); never asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

from fabench.host.tcpstats import TcpCounterWatch
from fabench.testbed import TestbedConfig, create, destroy
from fabench.testbed.links import counter_delta, link_status
from fabench.testbed.state import TestbedState

WINDOWS = [0, 8, 16, 32, 64, 80, 128]


def load() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


def iperf(st: TestbedState, seconds: int, streams: int) -> dict[str, Any]:
    h1, h2 = st.hosts
    srv = subprocess.Popen([*h2.enter, "iperf3", "-s", "-1", "-p", "5321"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.4)
        p = subprocess.run([*h1.enter, "iperf3", "-c", h2.address, "-p", "5321", "-t",
                            str(seconds), "-P", str(streams), "-J"], capture_output=True,
                           text=True, timeout=300, check=True)
        try:  # the client's report is what counts; a server left waiting is killed below
            srv.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
    end = json.loads(p.stdout)["end"]
    return {"gbit_s": end["sum_received"]["bits_per_second"] / 1e9,
            "retransmits": end["sum_sent"].get("retransmits", 0)}


def one(spec: str, seconds: int, streams_list: list[int]) -> list[dict[str, Any]]:
    st = create("rw", TestbedConfig(hosts=2, impairs=[spec], link_impl="fb-link",
                                    sysctls={"net.ipv4.tcp_congestion_control": "reno"}))
    out = []
    try:
        h1, h2 = st.hosts
        for streams in streams_list:
            watch = TcpCounterWatch({"h1": h1.enter, "h2": h2.enter})
            link_before = link_status(st.links[0])
            watch.start()
            res = iperf(st, seconds, streams)
            tcp = watch.finish()
            link_after = link_status(st.links[0])
            d = counter_delta(link_before or {}, link_after or {})["in"] if link_after else {}
            secs = tcp["h1"].seconds
            out.append({
                "streams": streams, **res,
                "reorder_events_per_s": tcp["h1"].reorder_events / secs,
                "sack_reorder": tcp["h1"].sack_reorder, "ts_reorder": tcp["h1"].ts_reorder,
                "reno_reorder": tcp["h1"].reno_reorder,
                "ofo_queue_per_s": tcp["h2"].ofo_queue / secs,
                "dsack_recv": tcp["h1"].dsack_recv,
                "link_reordered_in_per_s": d.get("reordered_in", 0) / secs,
                "link_reordered_out_per_s": d.get("reordered_out", 0) / secs,
                "window": d.get("window", {}), "lost": sum(r["lost"] for r in d.get("rules", [])),
                "seconds": secs})
    finally:
        destroy(st)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--loss", default="1%", help="the lossy variant's loss (default 1%%)")
    ap.add_argument("--paths", type=int, default=4)
    ap.add_argument("--step", default="20us", help="delay between paths (default 20us)")
    ap.add_argument("--delay", default="50us", help="delay of the fastest path")
    ap.add_argument("--windows", default=",".join(map(str, WINDOWS)))
    ap.add_argument("--hold", help="reorder-hold for every W > 0 (default: the link's own, "
                                   "twice its paths' spread)")
    ap.add_argument("--losses", help="comma-separated losses to run (default: 0%%,LOSS)")
    ap.add_argument("--table-from", metavar="FILE",
                    help="print the table of an earlier run's JSON lines, measure nothing")
    args = ap.parse_args()
    os.environ.setdefault("FABENCH_TESTBED_PREFIX", f"fbrw{os.getpid() % 10000}")
    windows = [int(w) for w in args.windows.split(",")]
    losses = args.losses.split(",") if args.losses else ["0%", args.loss]
    rows: dict[tuple[str, int, int], list[dict[str, Any]]] = {}
    if args.table_from:
        for line in Path(args.table_from).read_text().splitlines():
            if line.startswith("{"):
                r = json.loads(line)
                rows.setdefault((r["loss"], r["streams"], r["W"]), []).append(r)
        losses = sorted({k[0] for k in rows}, key=lambda x: float(x.rstrip("%")))
        args.rounds = 0
    for rnd in range(args.rounds):
        order = windows if rnd % 2 == 0 else windows[::-1]
        for loss in losses:
            for w in order:
                spec = (f"h2:delay={args.delay},reorder=multipath:{args.paths}:{args.step},"
                        f"reorder-window={w},dir=in" + (f",loss={loss}" if loss != "0%" else "")
                        + (f",reorder-hold={args.hold}" if args.hold and w else ""))
                for r in one(spec, args.seconds, [1, 4]):
                    rows.setdefault((loss, r["streams"], w), []).append(r)
                    print(json.dumps({"round": rnd, "loss": loss, "W": w, "spec": spec,
                                      "load": load(), **r}), flush=True)
    med = statistics.median
    print(f"\nlink: multipath {args.paths} paths, {args.step} apart, fastest {args.delay}; "
          f"hold {args.hold or 'default'}; reno; {args.seconds} s per run; medians over "
          f"rounds")
    for loss in losses:
        for streams in (1, 4):
            base = rows.get((loss, streams, 0))
            print(f"\nloss {loss}, {streams} stream(s)")
            print(f"{'W':>4} {'Gbit/s':>7} {'reorder ev/s':>12} {'vs W=0':>7} {'OFO/s':>8} "
                  f"{'link reord out/s':>16} {'retrans':>8} {'slides':>7} {'flushes':>7}")
            for w in windows:
                rs = rows.get((loss, streams, w), [])
                if not rs:
                    continue
                ev = med(r["reorder_events_per_s"] for r in rs)
                ev0 = med(r["reorder_events_per_s"] for r in base) if base else 0
                cut = f"{(ev / ev0 - 1) * 100:+.0f}%" if ev0 else "-"
                print(f"{w:>4} {med(r['gbit_s'] for r in rs):>7.3f} {ev:>12.0f} {cut:>7} "
                      f"{med(r['ofo_queue_per_s'] for r in rs):>8.0f} "
                      f"{med(r['link_reordered_out_per_s'] for r in rs):>16.0f} "
                      f"{med(r['retransmits'] for r in rs):>8.0f} "
                      f"{med(r['window'].get('slides', 0) for r in rs):>7.0f} "
                      f"{med(r['window'].get('flushes', 0) for r in rs):>7.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
