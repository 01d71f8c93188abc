"""Advise placement: the K hosts of a stored matrix with the best measured connectivity.

Hosts under a verdict (slow node, unreachable) are left out, and so are either end of a bad
link and the hosts behind a bad leaf or uplink when enough hosts remain. One inferred switch
group is used where it has K healthy hosts (a job inside one leaf does not share an uplink);
the hosts are then chosen greedily: first the one with the cheapest links to the others, then
each time the host whose links to those chosen cost least (the link cost of
topology.distances: relative latency and bandwidth, both ways).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import FabenchError
from .judge import GROUP_KINDS, Matrix
from .topology import distances


@dataclass(frozen=True)
class Advice:
    hosts: list[str]
    group: int | None  # the inferred group used, None: one group, or across groups
    groups: int  # inferred groups
    left_out: list[str]  # hosts left out for a verdict, one line each
    mean_cost: float

    def lines(self) -> list[str]:
        where = (f"inferred group {self.group + 1} of {self.groups}" if self.group is not None
                 else "the one inferred group" if self.groups == 1
                 else "across groups (no group has enough healthy hosts)")
        return [f"hosts: {','.join(self.hosts)}", f"from {where}; mean link cost "
                f"{self.mean_cost:.3f} (0: the best latency and bandwidth measured)",
                *self.left_out]


def matrix_from_json(j: dict[str, Any]) -> Matrix:
    m = Matrix(list(j["hosts"]))
    for i, k, v in j.get("latency_us", []):
        m.latency[(int(i), int(k))] = float(v)
    for i, k, v in j.get("bandwidth_MBps", []):
        m.bandwidth[(int(i), int(k))] = float(v)
    return m


def advise(judgement: dict[str, Any], k: int) -> Advice:
    m = matrix_from_json(judgement)
    hosts = m.hosts
    if not 1 <= k <= len(hosts):
        raise FabenchError(f"--nodes {k}: the matrix has {len(hosts)} hosts")
    bad: dict[str, str] = {}
    weak: dict[str, str] = {}
    for v in judgement.get("verdicts", []):
        if v["kind"] in GROUP_KINDS:
            # a bad leaf's or uplink's hosts work; avoid them when enough others remain
            for h in v.get("hosts", []):
                weak.setdefault(h, v["line"])
        elif v["dst"] is None:
            bad[v["src"]] = v["line"]
        else:
            weak.setdefault(v["src"], v["line"])
            weak.setdefault(v["dst"], v["line"])
    healthy = [h for h in hosts if h not in bad]
    if len(healthy) < k:
        raise FabenchError(f"--nodes {k}: only {len(healthy)} hosts have no verdict "
                           f"({', '.join(sorted(bad))} left out)")
    best = [h for h in healthy if h not in weak]
    pool = best if len(best) >= k else healthy
    left = [f"left out {h}: {bad.get(h) or weak[h]}" for h in hosts
            if h in bad or (h in weak and h not in pool)]
    groups = judgement.get("topology", {}).get("groups") or [hosts]
    group = None
    fits = [g for g, hs in enumerate(groups) if sum(h in pool for h in hs) >= k]
    if fits and len(groups) > 1:
        group = min(fits, key=lambda g: sum(h in pool for h in groups[g]))
        pool = [h for h in pool if h in groups[group]]
    d = distances(m)
    idx = [hosts.index(h) for h in pool]
    chosen = [min(idx, key=lambda i: float(np.mean([d[i, o] for o in idx if o != i] or [0])))]
    while len(chosen) < k:
        rest = [i for i in idx if i not in chosen]
        chosen.append(min(rest, key=lambda i: float(np.mean([d[i, c] for c in chosen]))))
    pairs = [d[a, b] for x, a in enumerate(chosen) for b in chosen[x + 1:]]
    return Advice([hosts[i] for i in sorted(chosen)], group, len(groups), left,
                  float(np.mean(pairs)) if pairs else 0.0)
