"""Tree-shaped broadcasts and reductions, unsegmented, as MPI libraries run them when their
default rules give no segment size (Open MPI 4.1's fixed decisions pass 0).

A tree is a parent and an ordered child list per rank (rank 0 the root). Broadcast: a rank
forwards the message to its children one after the other once it has it; a child has it one
message time after its send started, and the parent's sends queue behind each other's bytes
(one NIC, one injection gap each). Reduction: the mirror image, each parent receiving and
reducing its children's contributions in turn. Edges between ranks of one node cost the
same-node segment, the others the path between their nodes (`Topology.pair_hops`).

The tree's shape and its edges' paths do not depend on the fabric: they are built once per
cluster and cached on the topology, so a prediction band's variants only redo arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .cost import Model

Tree = list[list[int]]  # children of each rank, in send order


def binary_tree(p: int) -> Tree:
    return [[c for c in (2 * r + 1, 2 * r + 2) if c < p] for r in range(p)]


def knomial_tree(p: int, radix: int) -> Tree:
    """k-nomial tree rooted at 0, as its broadcast runs: in each round (the largest distance
    first) every rank that has the data sends to the ranks j x mask above it, j < radix."""
    children: Tree = [[] for _ in range(p)]
    masks, mask = [], 1
    while mask < p:
        masks.append(mask)
        mask *= radix
    for mask in reversed(masks):
        for r in range(0, p, radix * mask):
            children[r].extend(c for c in (r + j * mask for j in range(1, radix)) if c < p)
    return children


def chain_tree(p: int, fanout: int) -> Tree:
    """`fanout` chains hanging off the root (Open MPI's chain; fanout 1 is its pipeline)."""
    children: Tree = [[] for _ in range(p)]
    rest = list(range(1, p))
    if not rest:
        return children
    fanout = max(1, min(fanout, len(rest)))
    per = -(-len(rest) // fanout)
    for i in range(fanout):
        chain = rest[i * per:(i + 1) * per]
        if not chain:
            continue
        children[0].append(chain[0])
        for a, b in zip(chain, chain[1:], strict=False):
            children[a].append(b)
    return children


def linear_tree(p: int) -> Tree:
    return [list(range(1, p))] + [[] for _ in range(p - 1)]


@dataclass
class _Shape:
    """A tree on a cluster: edges (parent, child) in breadth-first order, each edge's
    sibling rank and path (same node, or switches between the nodes)."""

    parent: list[int]
    child: list[int]
    intra: np.ndarray
    hops: np.ndarray
    postorder: list[int]
    children: Tree
    edge_of: dict[int, int]
    child_idx: np.ndarray  # edge -> child rank
    parent_of: np.ndarray  # rank -> parent rank (the root its own)


def _shape(md: Model, key: str, build: Callable[[int], Tree]) -> _Shape:
    cache: dict[tuple[str, int, int], _Shape] = \
        md.c.topology.__dict__.setdefault("_trees", {})
    ck = (key, md.p, md.c.ppn)
    if ck in cache:
        return cache[ck]
    tree = build(md.p)
    parent, child = [], []
    order = [0]
    for r in order:
        for c in tree[r]:
            parent.append(r)
            child.append(c)
            order.append(c)
    ppn = md.c.ppn
    intra = np.array([a // ppn == b // ppn for a, b in zip(parent, child, strict=True)],
                     dtype=bool)
    hops = np.array([0 if same else md.c.topology.pair_hops(a // ppn, b // ppn)
                     for a, b, same in zip(parent, child, intra, strict=True)], dtype=float)
    post: list[int] = []
    stack: list[tuple[int, bool]] = [(0, False)]
    while stack:
        r, seen = stack.pop()
        if seen:
            post.append(r)
            continue
        stack.append((r, True))
        stack.extend((c, False) for c in tree[r])
    parent_of = np.zeros(md.p, dtype=np.int64)
    parent_of[np.asarray(child, dtype=np.int64)] = np.asarray(parent, dtype=np.int64)
    cache[ck] = _Shape(parent, child, intra, hops, post, tree,
                       {c: e for e, c in enumerate(child)}, np.asarray(child, dtype=np.int64),
                       parent_of)
    return cache[ck]


def _edge_costs(md: Model, sh: _Shape, m: float) -> tuple[np.ndarray, np.ndarray]:
    """(latency, bytes time) of every edge at size m."""
    seg = md.f.segment(m)
    a_net = np.maximum(seg.alpha_us + (sh.hops - md.f.calibrated_hops) * md.f.hop_latency_us,
                       0.0)
    lat = np.where(sh.intra, md.f.alpha(m, intra=True), a_net)
    byt = np.where(sh.intra, md.f.beta(m, intra=True) * m, md.link_per_byte(m) * m)
    return lat, byt


def tree_bcast(md: Model, m: float, key: str, build: Callable[[int], Tree]) -> float:
    if md.p <= 1:
        return 0.0
    sh = _shape(md, key, build)
    lat, byt = _edge_costs(md, sh, m)
    share = md.cpu_share(md.p, m)
    cost = md.stretch(lat, byt, share)
    # a parent's sends leave one after the other: each waits for the bytes (or injection
    # gap) of the sends before it to the same parent's children (edges of one parent are
    # contiguous in breadth-first order)
    ser = np.maximum(md.f.gap_us * share, byt)
    par = np.asarray(sh.parent)
    run = np.cumsum(ser)
    first = np.r_[True, par[1:] != par[:-1]]
    base = np.maximum.accumulate(np.where(first, run - ser, 0.0))
    # ready[child] = ready[parent] + w[edge]: summed up every path by pointer jumping
    acc = np.zeros(md.p)
    acc[sh.child_idx] = run - ser - base + cost
    anc = sh.parent_of.copy()
    while True:
        acc = acc + acc[anc]
        nxt = anc[anc]
        if np.array_equal(nxt, anc):
            break
        anc = nxt
    return float(acc.max())


def tree_reduce(md: Model, m: float, key: str, build: Callable[[int], Tree]) -> float:
    if md.p <= 1:
        return 0.0
    sh = _shape(md, key, build)
    lat, byt = _edge_costs(md, sh, m)
    share = md.cpu_share(md.p, m)
    arrive = (lat * share).tolist()
    after = (byt + md.reduce_cost(m)).tolist()
    edge_of = sh.edge_of
    done = [0.0] * md.p
    for r in sh.postorder:
        t = 0.0
        for c in sh.children[r]:
            e = edge_of[c]
            # children's data arrive one after the other; each is reduced on arrival
            t = max(t, done[c] + arrive[e]) + after[e]
        done[r] = t
    return done[0]


KNOMIAL_RADIX = 4  # Open MPI 4.1 coll_tuned_bcast_algorithm_knomial_radix default
CHAIN_FANOUT = 4  # Open MPI's default chain fanout


def shaped(key: str, build: Callable[[int], Tree],
           reduce: bool = False) -> Callable[[Model, float], float]:
    """An algorithm (Model, m) -> us from a tree shape."""
    def algo(md: Model, m: float) -> float:
        return tree_reduce(md, m, key, build) if reduce else tree_bcast(md, m, key, build)
    return algo
