"""Infer switch groups from a matrix, and compare them with a declared topology.

Hosts that share a switch reach each other over fewer hops and no shared uplink: lower latency
and higher bandwidth than across switches. The distance between two hosts is the cost of their
link, both directions averaged: log(latency / best latency) + log(best bandwidth / bandwidth)
(zero for the best link on both counts, relative, so latency and bandwidth weigh alike), taken
on each direction's best sample (the fastest ping-pong, the fastest window) where the matrix has
them: the path's floor, which contention for the CPU cannot lower (judge._steady). Medians
carry the load instead: on a loaded 6-host testbed of two switches (a 50 Mbit/s uplink, 6
processes on 2 cores, load 8.9) the medians inside the switches spread so far that the cut was
rejected, while the fastest windows across stayed under 3.4 MB/s.
scipy's hierarchical clustering (average linkage) over that distance gives a tree; a cut into
k groups is accepted when the groups are real: the closest pair of hosts in different groups is
an outlier against the distances inside the groups (modified z-score above 3.5, the same rule
as the link verdicts, judge.py), and no group's own median distance is one (hosts behind a
switch are close among themselves; two slow hosts are far from each other as from the rest),
on that distance or on either half of it alone (latency, bandwidth). A slow uplink is a
bandwidth fault: on a loaded two-switch testbed (50 Mbit/s uplink, load 8.9) the fastest
windows inside were 450-2100 MB/s and across 2-6 MB/s, but the latencies inside, 22-95 us,
spread the whole distance so that the cut scored 2.24; on bandwidth alone it scored 4.20 (on
nine such matrices 4.20-80.6 on bandwidth, 2.24-29.5 on the whole; six healthy 6-host
matrices, loaded alike, scored at most 1.74 on either half).
The largest k that passes is reported; none: one group. A cut needs 6 host pairs inside its
groups to judge the others by (MIN_INSIDE_PAIRS): groups are inferred from 6 hosts on.

A declared topology is Slurm's topology.conf (`SwitchName=S Nodes=h[1-4],h9`: leaf switches,
those naming Nodes) or, in a plain file, `SWITCH: HOST HOST ...` per line.
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import FabenchError
from ..util.hostnames import check_host
from ..util.shown import shown
from .judge import THRESHOLD, Link, Matrix, Scale

MAX_GROUPS = 16


@dataclass
class Topology:
    groups: list[list[str]]  # inferred, hosts in rank order within each
    declared: dict[str, list[str]] | None = None  # switch -> hosts
    misplaced: list[str] = field(default_factory=list)  # one line each

    def group_of(self, host: str) -> int:
        return next((g for g, hs in enumerate(self.groups) if host in hs), -1)

    def to_json(self) -> dict[str, Any]:
        return {"groups": self.groups, "declared": self.declared, "misplaced": self.misplaced}


def _floors(m: Matrix) -> tuple[dict[Link, float], dict[Link, float]]:
    """Each direction's best samples where every measured direction has them, else medians."""
    lat, bw = m.best_values("latency"), m.best_values("bandwidth")
    if lat and bw and lat.keys() >= m.latency.keys() and bw.keys() >= m.bandwidth.keys():
        return lat, bw
    return m.latency, m.bandwidth


def distances(m: Matrix, latency: bool = True, bandwidth: bool = True) -> np.ndarray:
    """The hosts' distances on the link cost, or on one of its halves."""
    n = len(m.hosts)
    lat_of, bw_of = _floors(m)
    lat = [v for v in lat_of.values() if v > 0 and math.isfinite(v)]
    bw = [v for v in bw_of.values() if v > 0 and math.isfinite(v)]
    best_lat, best_bw = (min(lat) if lat else 1.0), (max(bw) if bw else 1.0)
    # cost of each measured direction, as arrays: a million directions at 1024 hosts
    cost = np.full((n, n), np.nan)
    for (a, b), lv in lat_of.items():
        bv = bw_of.get((a, b))
        if lv and bv and lv > 0 and bv > 0:
            cost[a, b] = (math.log(lv / best_lat) if latency else 0.0) + \
                (math.log(best_bw / bv) if bandwidth else 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a pair with neither direction
        d = np.nanmean(np.stack([cost, cost.T]), axis=0)
    finite = d[np.isfinite(d)]
    # an unmeasured pair (unreachable) counts as far as the farthest measured one
    d[~np.isfinite(d)] = finite.max() if finite.size else 0.0
    np.fill_diagonal(d, 0.0)
    return d


# Host pairs inside the groups below which no cut is accepted: their distances are the yardstick
# of the across ones, and a median and MAD of fewer than 6 values mean nothing (the judge's
# own floor, judge.MIN_NODE_HOSTS). Two groups of 2 hosts have 2 such pairs: on a 4-host
# testbed whose links the CPU sets (unshaped, 2 cores), an in-group spread taken from those
# 2 made the host state's 10-50 % look like two switches, and an uplink verdict between them
# followed (a clean-clone CI run, 2026-11-28). A declared topology (--topology) is not
# inferred and has no such floor.
MIN_INSIDE_PAIRS = 6


def _separated(d: np.ndarray, labels: np.ndarray) -> bool:
    upper = np.triu_indices(len(labels), k=1)
    same = labels[upper[0]] == labels[upper[1]]
    inside, across = d[upper][same], d[upper][~same]
    if inside.size < MIN_INSIDE_PAIRS or not across.size:
        return False
    # distances are >= 0 and may be 0: shift by 1 so the log scale of Scale applies
    sc = Scale.of((1.0 + inside).tolist())
    if sc.score(1.0 + float(across.min()), worse_up=True) <= THRESHOLD:
        return False
    # hosts behind one switch are close among themselves: a group whose own distances stand
    # out (two slow hosts, far from each other as from everyone) is not a switch
    for g in np.unique(labels):
        mine = (labels[upper[0]] == g) & (labels[upper[1]] == g)
        if mine.any() and sc.score(1.0 + float(np.median(d[upper][mine])),
                                   worse_up=True) > THRESHOLD:
            return False
    return True


def cluster(m: Matrix, groups: int | None = None) -> list[list[str]]:
    n = len(m.hosts)
    if n < 4 and groups is None:
        return [list(m.hosts)]
    # scipy's clustering here, not at the top: importing it costs 0.6-0.7 CPU-s, which every
    # process that loads the matrix code (an acceptance, the tests' collection) paid unused
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    d = distances(m)
    z = linkage(squareform(d, checks=False), method="average")
    if groups is not None:
        labels = fcluster(z, groups, criterion="maxclust")
    else:
        labels = np.ones(n, dtype=int)
        halves: list[np.ndarray] = []  # latency alone, bandwidth alone: made when first asked
        for k in range(2, min(MAX_GROUPS, n // 2) + 1):
            cut = fcluster(z, k, criterion="maxclust")
            # every group at least 2 hosts: one odd host is a slow node, not a switch
            sizes = np.bincount(cut)[1:]
            if len(sizes) != k or sizes.min() < 2:
                continue
            real = _separated(d, cut)
            if not real:
                halves = halves or [distances(m, bandwidth=False), distances(m, latency=False)]
                real = any(_separated(x, cut) for x in halves)
            if real:
                labels = cut
    order: dict[int, list[str]] = {}
    for h, lab in zip(m.hosts, labels, strict=True):
        order.setdefault(int(lab), []).append(h)
    return sorted(order.values(), key=lambda g: m.hosts.index(g[0]))


# More hosts than any matrix measures (every ordered pair of N hosts: N^2 runs).
MAX_TOPOLOGY_HOSTS = 100_000


def _expand(nodes: str) -> list[str]:
    """Slurm host lists: `h[1-4,7],x9`."""
    out: list[str] = []
    for m in re.finditer(r"([^,\[]+)(?:\[([^\]]+)\])?", nodes):
        prefix, ranges = m.group(1), m.group(2)
        if not ranges:
            out.append(prefix)
            continue
        for part in ranges.split(","):
            lo, _, hi = part.partition("-")
            width = len(lo)
            if int(hi or lo) - int(lo) + len(out) >= MAX_TOPOLOGY_HOSTS:
                raise ValueError("too many hosts")  # h[1-999999999999] would fill memory
            for k in range(int(lo), int(hi or lo) + 1):
                out.append(f"{prefix}{k:0{width}d}")
    return out


def read_topology(path: str | Path) -> dict[str, list[str]]:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise FabenchError(f"cannot read topology file {path}: {exc.strerror}") from None
    switches: dict[str, list[str]] = {}
    last: dict[str, int] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.lower().startswith("switchname="):
            kv = dict(w.split("=", 1) for w in line.split() if "=" in w)
            name = kv.get("SwitchName") or kv.get("switchname") or ""
            if "Nodes" in kv:
                try:
                    switches[name] = _expand(kv["Nodes"])
                    last[name] = n
                except ValueError:
                    raise FabenchError(f"{path} line {n}: cannot read Nodes="
                                       f"{shown(kv['Nodes'])}") from None
            continue
        name, sep, rest = line.partition(":")
        if not sep or not rest.split():
            raise FabenchError(f"{path} line {n}: a line is `SWITCH: HOST HOST ...` or "
                               "Slurm's `SwitchName=S Nodes=...`")
        switches[name.strip()] = rest.split()
        last[name.strip()] = n
    # Names are checked as names (a file that is no topology, /etc/shadow, must not pass as
    # one and be stored with the matrix)
    for name, hosts in switches.items():
        where = f"{path} line {last.get(name, '?')}"
        check_host(name, f"{where}: switch")
        for h in hosts:
            check_host(h, where)
    if not switches:
        raise FabenchError(f"topology file {path} names no switch with hosts")
    return switches


def compare(groups: list[list[str]], declared: dict[str, list[str]]) -> list[str]:
    """Hosts whose measured group is mostly another declared switch: one line each."""
    where = {h: s for s, hs in declared.items() for h in hs}
    switches = {where[h] for g in groups for h in g if h in where}
    if len(groups) < len(switches):
        # fewer groups measured than switches declared: which host is "misplaced" would be
        # a guess; say so instead
        return [f"declared {len(switches)} switches over these hosts, measured "
                f"{len(groups)} group{'s' if len(groups) > 1 else ''}: the links do not "
                "separate them"]
    lines = []
    for g in groups:
        known = [where[h] for h in g if h in where]
        if not known:
            continue
        major = max(set(known), key=known.count)
        for h in g:
            if h in where and where[h] != major:
                lines.append(f"misplaced host {h}: declared on {where[h]}, measured with "
                             f"the hosts of {major}")
    return lines


def infer_topology(m: Matrix, groups: int | None = None,
                   declared: dict[str, list[str]] | None = None) -> Topology:
    g = cluster(m, groups)
    return Topology(g, declared, compare(g, declared) if declared else [])
