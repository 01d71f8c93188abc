"""Topologies for the analytic model: how many switches a step's messages cross and how much
they share links.

A collective step is a communication *pattern* over nodes: every node talks to node + d
("shift", rings and pairwise exchanges) or node XOR d ("xor", recursive doubling/halving).
For a pattern a topology returns the largest switch count on any pair's path (the step waits for
its slowest pair) and the link congestion: how many flows share the most loaded link, relative
to one flow per link. Both are computed over all nodes (numpy), not guessed.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from ..errors import FabenchError


def _partners(n: int, pattern: str, d: int) -> tuple[np.ndarray, np.ndarray]:
    src = np.arange(n)
    if pattern == "xor":
        dst = src ^ d
        keep = dst < n
        return src[keep], dst[keep]
    return src, (src + d) % n


@dataclass
class StepPath:
    hops: int  # switches on the longest path of the step
    congestion: float  # flows on the most loaded link (>= 1)


class Topology(ABC):
    name: str = ""
    nodes: int = 1

    @abstractmethod
    def step(self, pattern: str, d: int) -> StepPath:
        """Path of a node-level pattern with distance d (d >= 1)."""

    def levels(self) -> int:
        """Switch levels a reduction tree over all nodes climbs (in-network models)."""
        return 1

    def describe(self) -> str:
        return self.name


@dataclass
class Single(Topology):
    """Every node on one switch (a star): one hop, no shared links."""

    nodes: int = 1
    name: str = "single"

    def step(self, pattern: str, d: int) -> StepPath:
        return StepPath(1, 1.0)


@dataclass
class Loopback(Topology):
    """All ranks on one host, talking through its loopback: no switch; the shared resource is
    the CPU (`cores`), which `cpu_share` in the collective model accounts for."""

    nodes: int = 1
    cores: int = 2
    name: str = "loopback"

    def step(self, pattern: str, d: int) -> StepPath:
        return StepPath(0, 1.0)


@dataclass
class FatTree(Topology):
    """Two-level leaf/spine: `hosts_per_leaf` nodes per leaf switch, uplinks oversubscribed by
    `oversubscription` (1.0 = non-blocking). ECMP collisions are not modelled."""

    nodes: int = 1
    hosts_per_leaf: int = 24
    oversubscription: float = 1.0
    name: str = "fat-tree"

    def step(self, pattern: str, d: int) -> StepPath:
        src, dst = _partners(self.nodes, pattern, d)
        leaf_s, leaf_d = src // self.hosts_per_leaf, dst // self.hosts_per_leaf
        cross = leaf_s != leaf_d
        if not cross.any():
            return StepPath(1, 1.0)
        # The busiest leaf's share of hosts sending up, against its uplink capacity.
        counts = np.bincount(leaf_s[cross], minlength=int(leaf_s.max()) + 1)
        frac = counts.max() / self.hosts_per_leaf
        return StepPath(3, max(1.0, frac * self.oversubscription))

    def levels(self) -> int:
        return 1 if self.nodes <= self.hosts_per_leaf else 2

    def describe(self) -> str:
        leaves = math.ceil(self.nodes / self.hosts_per_leaf)
        return (f"fat-tree: {leaves} leaves x {self.hosts_per_leaf} hosts, oversubscription "
                f"{self.oversubscription:g}:1")


@dataclass
class Torus(Topology):
    """k-ary n-cube, one router per node, dimension-order shortest routing; nodes fill x, then
    y, then z. Congestion of a pattern = mean link load per dimension and direction (every node
    sends one flow), the busiest dimension counting."""

    nodes: int = 1
    dims: tuple[int, ...] = (1,)
    name: str = "torus"

    def __post_init__(self) -> None:
        if math.prod(self.dims) < self.nodes:
            raise FabenchError(f"torus {'x'.join(map(str, self.dims))} has fewer than "
                               f"{self.nodes} nodes")

    def _coords(self, idx: np.ndarray) -> list[np.ndarray]:
        out, rest = [], idx
        for k in self.dims:
            out.append(rest % k)
            rest = rest // k
        return out

    def step(self, pattern: str, d: int) -> StepPath:
        src, dst = _partners(self.nodes, pattern, d)
        hops = np.zeros(len(src), dtype=int)
        load = 1.0
        for k, a, b in zip(self.dims, self._coords(src), self._coords(dst), strict=True):
            diff = np.abs(a - b)
            dist = np.minimum(diff, k - diff)
            hops += dist
            if k > 1:
                # link traversals over the directed links that carry them: a shift sends
                # every flow the same way (N links), an xor exchange uses both ways (2N)
                links = self.nodes * (2 if pattern == "xor" else 1)
                load = max(load, float(dist.sum()) / links)
        # a router per node: a path of h links passes h + 1 routers
        return StepPath(int(hops.max()) + 1, max(1.0, load))

    def levels(self) -> int:
        return 0  # a torus has no switch tree to reduce in

    def describe(self) -> str:
        return f"torus {'x'.join(map(str, self.dims))}"


def torus_dims(nodes: int, ndim: int = 3) -> tuple[int, ...]:
    """The most cubic ndim-torus holding `nodes` (e.g. 240 -> 5x6x8)."""
    best: tuple[int, ...] | None = None
    side = round(nodes ** (1 / ndim))

    def search(prefix: tuple[int, ...], remaining: int) -> None:
        nonlocal best
        if len(prefix) == ndim - 1:
            dims = tuple(sorted((*prefix, max(1, math.ceil(remaining)))))
            cap, spread = math.prod(dims), max(dims) - min(dims)
            if best is None or (cap, spread) < (math.prod(best), max(best) - min(best)):
                best = dims
            return
        for k in range(max(1, side - 3), side + 4):
            search((*prefix, k), remaining / k)

    search((), nodes)
    assert best is not None
    return best


def make_topology(kind: str, nodes: int, *, hosts_per_leaf: int = 24,
                  oversubscription: float = 1.0, dims: tuple[int, ...] | None = None,
                  cores: int = 2) -> Topology:
    if kind == "fat-tree":
        return FatTree(nodes, hosts_per_leaf, oversubscription)
    if kind == "torus":
        return Torus(nodes, dims or torus_dims(nodes))
    if kind == "single":
        return Single(nodes)
    if kind == "loopback":
        return Loopback(nodes, cores)
    raise FabenchError(f"unknown topology {kind!r} (fat-tree, torus, single, loopback)")
