"""Run a command and report the simulator's peak anonymous memory on stderr.

`python -m fabench.sim.rss -- CMD...` runs CMD in this process group and samples RssAnon of
every process of the group (smpirun is a shell script; the simulator is its child). RssAnon,
not maxrss: SMPI maps shared-malloc blocks and privatised segments many times over, which
maxrss counts again for every mapping.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from ..host.process import popen

MARKER = "fabench-sim-memory:"


def _rss_anon_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _group_pids(pgid: int, me: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid:  # field 5 of stat: process group
            pids.append(int(entry))
    return pids


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        print("usage: python -m fabench.sim.rss -- CMD...", file=sys.stderr)
        return 2
    me, pgid = os.getpid(), os.getpgrp()
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, sum(_rss_anon_kb(p) for p in _group_pids(pgid, me)))
            # every 0.1 s at first, then a hundredth of the time so far (at most 2 s): each
            # sample reads every process's stat, and at 10 Hz that cost 3.7 % of a core beside
            # a 512-host matrix whose simulator got 14 % of one on the loaded 2 cores; a
            # simulation's memory grows with what it has set up, not in blips of a second
            done.wait(min(2.0, max(0.1, (time.monotonic() - t0) / 100)))

    t0 = time.monotonic()
    proc = popen(argv)
    th = threading.Thread(target=sample, daemon=True)
    th.start()
    rc = proc.wait()
    done.set()
    th.join()
    print(f"{MARKER} peak_rss_anon_kb={peak} wall_s={time.monotonic() - t0:.3f}",
          file=sys.stderr, flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
