"""Topologies for the analytic model: how many switches a step's messages cross and how much
they share links.

A collective step is a communication *pattern* over nodes: every node talks to node + d
("shift", rings and pairwise exchanges) or node XOR d ("xor", recursive doubling/halving).
For a pattern a topology returns the largest switch count on any pair's path (the step waits for
its slowest pair) and the link congestion: how many flows share the most loaded link, relative
to one flow per link. Both are computed over all nodes (numpy), not guessed, and cached per
pattern (a prediction band evaluates the same steps for every fabric variant).

`TopologySpec` is the one description the CLI, the analytic model and the SimGrid platform
generator share (sim/platform.py builds the same tree or dragonfly).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..choices import TOPOLOGY_KINDS
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

    def step(self, pattern: str, d: int) -> StepPath:
        """Path of a node-level pattern with distance d (d >= 1), cached."""
        cache: dict[tuple[str, int], StepPath] = self.__dict__.setdefault("_steps", {})
        key = (pattern, d)
        if key not in cache:
            cache[key] = self._step(pattern, d)
        return cache[key]

    @abstractmethod
    def _step(self, pattern: str, d: int) -> StepPath:
        ...

    def pair_hops(self, a: int, b: int) -> int:
        """Switches between nodes a and b (tree algorithms' edges), cached."""
        cache: dict[tuple[int, int], int] = self.__dict__.setdefault("_pairs", {})
        key = (a, b)
        if key not in cache:
            cache[key] = self._pair_hops(a, b)
        return cache[key]

    def _pair_hops(self, a: int, b: int) -> int:
        return 1

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

    def _step(self, pattern: str, d: int) -> StepPath:
        return StepPath(1, 1.0)


@dataclass
class Loopback(Topology):
    """All ranks on one host, talking through its loopback: no switch; the shared resource is
    the CPU (`cores`), which `cpu_share` in the collective model accounts for."""

    nodes: int = 1
    cores: int = 1
    name: str = "loopback"

    def _step(self, pattern: str, d: int) -> StepPath:
        return StepPath(0, 1.0)

    def _pair_hops(self, a: int, b: int) -> int:
        return 0

    def levels(self) -> int:
        return 0


@dataclass
class FatTree(Topology):
    """Leaf/spine (2 levels) or leaf/pod/spine (3 levels) fat tree: `hosts_per_leaf` nodes per
    leaf switch, `leaves_per_pod` leaves per pod (3 levels), uplinks tapered by
    `oversubscription` per level from the leaves up (1.0 = non-blocking). A path crosses 1
    switch in a leaf, 3 in a pod, 5 across pods. Congestion per level: the busiest group's
    flows leaving it over its uplink capacity. ECMP collisions are not modelled."""

    nodes: int = 1
    hosts_per_leaf: int = 24
    oversubscription: tuple[float, ...] = (1.0,)
    tree_levels: int = 2
    leaves_per_pod: int = 24
    name: str = "fat-tree"

    def __post_init__(self) -> None:
        if isinstance(self.oversubscription, (int, float)):
            self.oversubscription = (float(self.oversubscription),)
        if self.tree_levels not in (2, 3):
            raise FabenchError(f"fat tree with {self.tree_levels} levels: 2 or 3")

    def _taper(self, level: int) -> float:
        """Cumulative oversubscription of a level-`level` group's uplinks."""
        t = 1.0
        for i in range(level):
            t *= self.oversubscription[min(i, len(self.oversubscription) - 1)]
        return t

    def _groups(self) -> list[int]:
        sizes = [self.hosts_per_leaf]
        if self.tree_levels == 3:
            sizes.append(self.hosts_per_leaf * self.leaves_per_pod)
        return sizes

    def _step(self, pattern: str, d: int) -> StepPath:
        src, dst = _partners(self.nodes, pattern, d)
        hops, cong = 1, 1.0
        for level, size in enumerate(self._groups(), start=1):
            gs, gd = src // size, dst // size
            cross = gs != gd
            if not cross.any():
                break
            hops = 2 * level + 1
            # the busiest group's share of hosts sending up, against its uplink capacity
            out = np.bincount(gs[cross], minlength=int(gs.max()) + 1).max()
            inn = np.bincount(gd[cross], minlength=int(gd.max()) + 1).max()
            cong = max(cong, float(max(out, inn)) / size * self._taper(level))
        return StepPath(hops, max(1.0, cong))

    def _pair_hops(self, a: int, b: int) -> int:
        hops = 1
        for level, size in enumerate(self._groups(), start=1):
            if a // size != b // size:
                hops = 2 * level + 1
        return hops

    def levels(self) -> int:
        if self.nodes <= self.hosts_per_leaf:
            return 1
        if self.tree_levels == 3 and self.nodes > self.hosts_per_leaf * self.leaves_per_pod:
            return 3
        return 2

    @property
    def leaves(self) -> int:
        return math.ceil(self.nodes / self.hosts_per_leaf)

    def describe(self) -> str:
        taper = ",".join(f"{x:g}" for x in self.oversubscription)
        if self.tree_levels == 3:
            pods = math.ceil(self.leaves / self.leaves_per_pod)
            return (f"fat-tree, 3 levels: {pods} pods x {self.leaves_per_pod} leaves x "
                    f"{self.hosts_per_leaf} hosts, oversubscription {taper}")
        return (f"fat-tree: {self.leaves} leaves x {self.hosts_per_leaf} hosts, "
                f"oversubscription {taper}:1")


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

    def _step(self, pattern: str, d: int) -> StepPath:
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

    def _pair_hops(self, a: int, b: int) -> int:
        ca, cb = self._coords(np.array([a])), self._coords(np.array([b]))
        dist = sum(min(abs(int(x[0]) - int(y[0])), k - abs(int(x[0]) - int(y[0])))
                   for k, x, y in zip(self.dims, ca, cb, strict=True))
        return dist + 1

    def levels(self) -> int:
        return 0  # a torus has no switch tree to reduce in

    def describe(self) -> str:
        return f"torus {'x'.join(map(str, self.dims))}"


@dataclass
class Dragonfly(Topology):
    """Groups of chassis of routers, `hosts_per_router` nodes each; routers of a chassis fully
    connected ("green" links, `green` in parallel), same-position routers of a group's chassis
    fully connected ("black"), one "blue" link bundle between every two groups, attached to
    router (group i, chassis 0, router j) for group j. Minimal routing as SimGrid's
    DragonflyZone routes it (the platform generator builds the same zone), flows counted per
    directed link over its parallel links."""

    nodes: int = 1
    groups: int = 1
    chassis: int = 1
    routers: int = 1
    hosts_per_router: int = 1
    blue: int = 1
    black: int = 1
    green: int = 1
    name: str = "dragonfly"

    def __post_init__(self) -> None:
        cap = self.groups * self.chassis * self.routers * self.hosts_per_router
        if cap < self.nodes:
            raise FabenchError(f"dragonfly {self.shape()} holds {cap} nodes, not {self.nodes}")
        if self.groups > self.routers:
            raise FabenchError(f"dragonfly {self.shape()}: the group links attach to router j "
                               "of chassis 0 for group j, so groups <= routers per chassis")

    def shape(self) -> str:
        return (f"{self.groups}x{self.chassis}x{self.routers}x{self.hosts_per_router}")

    def _router(self, g: np.ndarray, c: np.ndarray, b: np.ndarray) -> np.ndarray:
        return (g * self.chassis + c) * self.routers + b

    def _step(self, pattern: str, d: int) -> StepPath:
        hops, cong = self._route(*_partners(self.nodes, pattern, d))
        return StepPath(int(hops.max()), cong)

    def _route(self, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, float]:
        """(switches on each pair's path, flows on the busiest link over its parallel
        links) for flows src[i] -> dst[i]."""
        per_g = self.chassis * self.routers * self.hosts_per_router
        per_c = self.routers * self.hosts_per_router

        def coords(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            return x // per_g, (x % per_g) // per_c, (x % per_c) // self.hosts_per_router
        g1, c1, b1 = coords(src)
        g2, c2, b2 = coords(dst)
        nr = self.groups * self.chassis * self.routers
        links: list[np.ndarray] = []
        caps: list[np.ndarray] = []
        hops = np.ones(len(src), dtype=int)

        def hop(mask: np.ndarray, a: np.ndarray, b: np.ndarray, kind: int, par: int) -> None:
            nonlocal hops
            links.append(np.where(mask, (kind * nr + a) * nr + b, -1))
            caps.append(np.full(len(src), par))
            hops = hops + mask.astype(int)
        moving = self._router(g1, c1, b1) != self._router(g2, c2, b2)
        other = moving & (g1 != g2)
        cg, cc, cb = g1.copy(), c1.copy(), b1.copy()
        m = other & (cb != g2)  # to the router of our chassis that leads to group g2
        hop(m, self._router(cg, cc, cb), self._router(cg, cc, g2), 0, self.green)
        cb = np.where(m, g2, cb)
        m = other & (cc != 0)  # to chassis 0
        hop(m, self._router(cg, cc, cb), self._router(cg, np.zeros_like(cc), cb), 1, self.black)
        cc = np.where(m, 0, cc)
        hop(other, self._router(cg, cc, cb), self._router(g2, np.zeros_like(cc), g1), 2,
            self.blue)
        cg, cc, cb = (np.where(other, g2, cg), np.where(other, 0, cc), np.where(other, g1, cb))
        # within the destination group, as SimGrid routes it: to the destination blade (the
        # current router's green link), then from chassis 0's router at that blade
        m = moving & (cb != b2)
        hop(m, self._router(cg, cc, cb), self._router(cg, cc, b2), 0, self.green)
        cc = np.where(m, 0, cc)
        cb = np.where(m, b2, cb)
        m = moving & (cc != c2)
        hop(m, self._router(cg, cc, cb), self._router(cg, c2, cb), 1, self.black)
        cong = 1.0
        if links:
            ids = np.concatenate(links)
            par = np.concatenate(caps)
            keep = ids >= 0
            uniq, inv, counts = np.unique(ids[keep], return_inverse=True, return_counts=True)
            if len(uniq):
                par_of = np.zeros(len(uniq))
                par_of[inv] = par[keep]
                cong = max(cong, float((counts / par_of).max()))
        return hops, cong

    def _pair_hops(self, a: int, b: int) -> int:
        return int(self._route(np.array([a]), np.array([b]))[0][0])

    def levels(self) -> int:
        if self.nodes <= self.hosts_per_router:
            return 1
        if self.nodes <= self.chassis * self.routers * self.hosts_per_router:
            return 2
        return 3

    def describe(self) -> str:
        return (f"dragonfly {self.groups} groups x {self.chassis} chassis x {self.routers} "
                f"routers x {self.hosts_per_router} hosts (links blue {self.blue}, black "
                f"{self.black}, green {self.green})")


def torus_dims(nodes: int, ndim: int = 3) -> tuple[int, ...]:
    """The most cubic ndim-torus holding `nodes` (e.g. 240 -> 5x6x8)."""
    best: tuple[int, ...] | None = None
    side = round(nodes ** (1 / ndim))

    def search(prefix: tuple[int, ...], remaining: float) -> None:
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


KINDS = TOPOLOGY_KINDS


@dataclass
class TopologySpec:
    """What the user asked for, before it meets a node count: `--topology` and its options.
    Fat tree: `levels` None takes the fewest levels that hold the nodes with switches of
    2 x hosts_per_leaf ports (2 levels up to 2 k^2 hosts, 3 levels beyond); `leaves_per_pod`
    None is hosts_per_leaf. Dragonfly: (groups, chassis, routers, hosts per router), None
    sizes a balanced one."""

    kind: str = "fat-tree"
    hosts_per_leaf: int = 24
    oversubscription: tuple[float, ...] = (1.0,)
    levels: int | None = None
    leaves_per_pod: int | None = None
    dims: tuple[int, ...] | None = None
    dragonfly: tuple[int, int, int, int] | None = None
    dragonfly_links: tuple[int, int, int] = (1, 1, 1)  # blue, black, green in parallel
    cores: int = 1
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise FabenchError(f"unknown topology {self.kind!r} ({', '.join(KINDS)})")
        if self.hosts_per_leaf < 1 or any(x < 1 for x in self.oversubscription):
            raise FabenchError("hosts per leaf >= 1 and oversubscription >= 1")

    def tree_levels(self, nodes: int) -> int:
        if self.levels is not None:
            return self.levels
        k = self.hosts_per_leaf
        return 2 if nodes <= 2 * k * k else 3

    def dragonfly_shape(self, nodes: int) -> tuple[int, int, int, int]:
        if self.dragonfly is not None:
            return self.dragonfly
        # balanced: a hosts per router, a routers per chassis, 1 chassis, groups as needed
        # (groups <= routers per chassis, as the group links require)
        a = 2
        while a * a * a < nodes:
            a += 1
        groups = max(1, math.ceil(nodes / (a * a)))
        return groups, 1, max(a, groups), a

    def build(self, nodes: int) -> Topology:
        if self.kind == "fat-tree":
            return FatTree(nodes, self.hosts_per_leaf, tuple(self.oversubscription),
                           self.tree_levels(nodes),
                           self.leaves_per_pod or self.hosts_per_leaf)
        if self.kind == "torus":
            return Torus(nodes, self.dims or torus_dims(nodes))
        if self.kind == "dragonfly":
            g, c, r, h = self.dragonfly_shape(nodes)
            blue, black, green = self.dragonfly_links
            return Dragonfly(nodes, g, c, r, h, blue, black, green)
        if self.kind == "single":
            return Single(nodes)
        return Loopback(nodes, self.cores)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TopologySpec:
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        for key in ("oversubscription", "dims", "dragonfly", "dragonfly_links"):
            if known.get(key) is not None:
                known[key] = tuple(known[key])
        return cls(**known)


def make_topology(kind: str, nodes: int, *, hosts_per_leaf: int = 24,
                  oversubscription: float | tuple[float, ...] = 1.0,
                  dims: tuple[int, ...] | None = None, cores: int = 1,
                  levels: int | None = None, leaves_per_pod: int | None = None,
                  dragonfly: tuple[int, int, int, int] | None = None) -> Topology:
    over = (oversubscription,) if isinstance(oversubscription, (int, float)) \
        else tuple(oversubscription)
    return TopologySpec(kind, hosts_per_leaf, tuple(float(x) for x in over), levels,
                        leaves_per_pod, dims, dragonfly, cores=cores).build(nodes)
