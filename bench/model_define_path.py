#!/usr/bin/env python3
"""The published corpus predicted the way a user with only two published figures would
(issue 30: `model define` from a system's latency and bandwidth, then `model predict` at the
published node and rank counts), against the corpus's own path (`model validate
--published`: the system's whole point-to-point curves and, where its series starts small,
scale terms fitted to those runs).

For every system with published curves: `model define` with the family's defaults, the
latency of its smallest message and the bandwidth of its largest (osu_bw's, else the
latency curve's last slope), nothing else; every host-based time row of the corpus (fit and
test alike: the defined fabric is fitted to none of them) predicted with the algorithm the
row's library picks. Prints the median |error| per class, for the model as it is and for
the variants named.

    python bench/model_define_path.py              # the product's defaults
    python bench/model_define_path.py --nic-gap 0  # and with no NIC gap per message
"""

from __future__ import annotations

import argparse

import numpy as np

import fabench.model.published as pub
from fabench.model.collectives import algorithms
from fabench.model.cost import Model
from fabench.model.decisions import library_choice
from fabench.model.define import Figure, Published, define_fabric


def _defined(s: pub.SystemSpec, nic_gap: float | None) -> object:
    c = s.fit.curves
    assert c is not None
    small = min(c.latency_us)
    lat = c.latency_us[small]
    if c.bandwidth_MBps:
        big = max(c.bandwidth_MBps)
        bw = c.bandwidth_MBps[big]
    else:  # the last slope of the latency curve
        a, b = sorted(c.latency_us)[-2:]
        bw = (b - a) / (c.latency_us[b] - c.latency_us[a])
    f = define_fabric(Published(s.id.replace("_", "-"), c.family, Figure(lat), Figure(bw),
                                link_MBps=c.link_MBps))
    if nic_gap is not None:
        f.nic_gap_us = f.gap_us if nic_gap < 0 else nic_gap
    return f


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nic-gap", type=float, default=None,
                    help="every defined fabric's NIC gap (us a message; default: define's; "
                         "negative: its own gap_us, LogGP's g = o)")
    args = ap.parse_args()
    corpus = pub.load_corpus()
    errs: dict[str, list[float]] = {}
    for s in corpus.systems:
        if s.fit.curves is None:
            continue
        f = _defined(s, args.nic_gap)
        for case in s.cases:
            if case.kind != "time" or case.algorithm == "in_network":
                continue
            cl = pub._cluster(s, case.nodes, case.ppn)
            algo = library_choice(case.mpi or "openmpi", case.collective, cl.ranks, cl.ppn,
                                  case.size)
            t = algorithms(case.collective)[algo][0](Model(f, cl), float(case.size))
            e = abs(t / case.published - 1)
            keys = ["all", case.collective, ">= 32 ranks/node" if case.ppn >= 32 else
                    "2-31 ranks/node" if case.ppn > 1 else "1 rank/node", s.id]
            for k in keys:
                errs.setdefault(k, []).append(e)
    for k, v in errs.items():
        print(f"{k:<28} {len(v):>4} {np.median(v) * 100:6.1f}%")


if __name__ == "__main__":
    main()
