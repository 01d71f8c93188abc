"""Collective algorithms as sums of point-to-point steps on a calibrated fabric.

Sizes follow the kernels (docs/kernel-protocol.md): allreduce, reduce and bcast take the
message size, alltoall the bytes per peer, allgather and gather the bytes per rank.

Every algorithm is the textbook schedule (Thakur, Rabenseifner and Gropp 2005; Bruck et al.
1997) written as its steps; each step costs the fabric's piecewise point-to-point time for its
message size, plus the extra switches of the step's path, with the bytes term stretched by link
sharing. Ranks are placed in blocks of `ppn` per node; pairs on one node use the fabric's
same-node (shared memory) segments. Reductions add gamma (local reduction cost) per byte
reduced. In-network reduction has its own model (`in_network_allreduce`, assumptions in
docs/model.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import FabenchError
from .fabric import Fabric
from .topology import Loopback, Topology

# Per-switch-level reduction latency of an aggregating switch (not published by doc 000;
# SHARP-class switches are quoted in the hundreds of ns). An assumption, overridable.
SWITCH_REDUCE_US = 0.2


@dataclass
class Cluster:
    nodes: int
    ppn: int
    topology: Topology
    switch_reduce_us: float = SWITCH_REDUCE_US
    # Nodes emulated on one machine (fabench's testbed): every rank of every node shares
    # these cores. None: a core per rank, as on a real cluster.
    cores: int | None = None

    @property
    def ranks(self) -> int:
        return self.nodes * self.ppn


class Model:
    """Step costs of one fabric on one cluster."""

    def __init__(self, fabric: Fabric, cluster: Cluster) -> None:
        self.f = fabric
        self.c = cluster
        self._paths: dict[tuple[str, int], tuple[int, float]] = {}

    @property
    def p(self) -> int:
        return self.c.ranks

    def cpu_share(self, active: int, m: float = 0.0) -> float:
        """Ranks time-sharing cores (one host, or emulated nodes on one machine, with more
        ranks than cores): a step's CPU work is stretched by what the fabric measured under
        that contention, else by active ranks / cores (Fabric.contention_share). 1 on real
        clusters (a core per rank)."""
        topo = self.c.topology
        cores = topo.cores if isinstance(topo, Loopback) else self.c.cores
        if not cores:
            return 1.0
        return max(1.0, self.f.contention_share(active, cores, m))

    def stretch(self, a: float, b: float, share: float) -> float:
        """A step's time from its latency part a and bytes part b: on one host (loopback) the
        bytes are memory copies, CPU work like the rest; between emulated nodes they cross a
        link (rate-limited veths), so only the latency part (stack, MPI) is time-shared."""
        if isinstance(self.c.topology, Loopback):
            return (a + b) * share
        return a * share + b

    def _node_path(self, pattern: str, nd: int) -> tuple[int, float]:
        key = (pattern, nd)
        if key not in self._paths:
            sp = self.c.topology.step(pattern, nd)
            self._paths[key] = (sp.hops, sp.congestion)
        return self._paths[key]

    def step_parts(self, m: float, d: int, pattern: str = "xor", active: int | None = None,
                   exchange: bool | None = None) -> tuple[float, float, float]:
        """(latency part, bytes part, cpu share) of a step in which every (active) rank
        sends m bytes to its partner at rank distance d. `exchange`: the partner sends m
        bytes back at the same time (recursive doubling/halving); for "shift" steps it is
        found (rank + d and rank - d are one rank). An exchange's bytes cost at least the
        fabric's exchange slowdown (measured with mpi.bibw) more than a one-way flow."""
        m = max(m, 0.0)
        if exchange is None:
            exchange = pattern == "shift" and (2 * d) % max(self.p, 1) == 0
        ppn = self.c.ppn
        share = self.cpu_share(self.p if active is None else active, m)
        if d < ppn and (pattern == "xor" or ppn == 1):
            return self.f.alpha(m, intra=True), self.f.beta(m, intra=True) * m, share
        if pattern == "xor":
            nd, nic = max(1, d // ppn), ppn  # every rank of a node crosses to another node
        else:
            nd, nic = max(1, math.ceil(d / ppn)), min(d, ppn)
        if nd >= self.c.nodes and pattern == "shift":
            nd = nd % self.c.nodes or 1
        hops, cong = self._node_path(pattern, nd)
        link = self.f.link_bandwidth_MBps
        per_byte = self.f.beta(m)
        if link > 0:
            # one flow is limited by its endpoints (beta); several share the link
            per_byte = max(per_byte, nic * cong / link)
        if exchange:
            per_byte *= self.f.exchange_factor(m)
        return self.f.alpha(m, hops), per_byte * m, share

    def step(self, m: float, d: int, pattern: str = "xor", active: int | None = None,
             exchange: bool | None = None) -> float:
        a, b, share = self.step_parts(m, d, pattern, active, exchange)
        return self.stretch(a, b, share)

    def reduce_cost(self, m: float) -> float:
        return self.f.reduce_us_per_byte * m

    def copy_cost(self, m: float) -> float:
        return self.f.beta(m, intra=True) * m


def _pow2_floor(p: int) -> int:
    return 1 << (p.bit_length() - 1)


def _lg(p: int) -> int:
    return max(0, math.ceil(math.log2(p))) if p > 1 else 0


# -- allreduce ---------------------------------------------------------------------------------
def _non_pow2_fold(md: Model, m: float) -> float:
    """Ranks beyond the largest power of two hand their data in before and get it after."""
    p2 = _pow2_floor(md.p)
    if p2 == md.p:
        return 0.0
    extra = md.p - p2
    return 2 * md.step(m, p2, "shift", active=2 * extra) + md.reduce_cost(m)


def allreduce_recursive_doubling(md: Model, m: float) -> float:
    p2 = _pow2_floor(md.p)
    t = _non_pow2_fold(md, m)
    for k in range(int(math.log2(p2))):
        t += md.step(m, 1 << k, "xor", active=p2, exchange=True) + md.reduce_cost(m)
    return t


ELEMENT_BYTES = 4  # the kernels reduce float32 (MPI_FLOAT sums)


def allreduce_ring(md: Model, m: float) -> float:
    p = md.p
    if p == 1:
        return 0.0
    if m < ELEMENT_BYTES * p:
        # fewer elements than ranks cannot be split into p chunks: Open MPI's ring
        # (coll_base_allreduce_intra_ring) runs recursive doubling instead
        return allreduce_recursive_doubling(md, m)
    chunk = m / p
    return 2 * (p - 1) * md.step(chunk, 1, "shift") + (p - 1) * md.reduce_cost(chunk)


def _halving(md: Model, m: float, reduce: bool, exchange: bool = True) -> float:
    p2 = _pow2_floor(md.p)
    t, size = 0.0, m
    for k in range(int(math.log2(p2))):
        size /= 2
        t += md.step(size, p2 >> (k + 1), "xor", active=p2, exchange=exchange)
        if reduce:
            t += md.reduce_cost(size)
    return t


def allreduce_rabenseifner(md: Model, m: float) -> float:
    # reduce-scatter by recursive halving, allgather by recursive doubling (same steps back)
    return _non_pow2_fold(md, m) + _halving(md, m, True) + _halving(md, m, False)


def allreduce_binomial(md: Model, m: float) -> float:
    return reduce_binomial(md, m) + bcast_binomial(md, m)


def in_network_allreduce(md: Model, m: float) -> float:
    """Document 000's in-network computing: each leaf switch reduces its servers' data, a spine
    reduces the leaves, the result is multicast back, so each server sends and receives its
    data once. Ranks of one node first reduce over shared memory, and get the result back the
    same way. The switches reduce at line rate with the stream pipelined through them, so the
    bytes cross the fabric once; each reducing level adds `switch_reduce_us`."""
    return _intra_reduce(md, m) + _network_tree(md, m) + _intra_bcast(md, m)


def _network_tree(md: Model, m: float) -> float:
    levels = md.c.topology.levels()
    if levels == 0:
        raise FabenchError(f"in-network reduction needs a switch tree; "
                           f"{md.c.topology.describe()} has none")
    if md.c.nodes == 1:
        return 0.0
    hops = 2 * levels - 1  # up to the top level and back down: leaf(, spine, leaf)
    link = md.f.link_bandwidth_MBps
    per_byte = max(md.f.beta(m), 1 / link) if link > 0 else md.f.beta(m)
    return md.f.alpha(m, hops) + per_byte * m + levels * md.c.switch_reduce_us


def _intra_reduce(md: Model, m: float) -> float:
    t, d = 0.0, 1
    while d < md.c.ppn:
        t += md.f.time(m, intra=True) + md.reduce_cost(m)
        d *= 2
    return t


def _intra_bcast(md: Model, m: float) -> float:
    return _lg(md.c.ppn) * md.f.time(m, intra=True)


# -- reduce / bcast ----------------------------------------------------------------------------
def reduce_binomial(md: Model, m: float) -> float:
    t, d = 0.0, 1
    while d < md.p:
        t += md.step(m, d, "xor", active=max(2, md.p // d)) + md.reduce_cost(m)
        d *= 2
    return t


def reduce_rabenseifner(md: Model, m: float) -> float:
    # reduce-scatter by recursive halving, then a binomial gather of the pieces to the root
    return (_non_pow2_fold(md, m) + _halving(md, m, True)
            + _halving(md, m, False, exchange=False))


def in_network_reduce(md: Model, m: float) -> float:
    return _intra_reduce(md, m) + _network_tree(md, m)


def bcast_binomial(md: Model, m: float) -> float:
    t, d = 0.0, 1
    while d < md.p:
        t += md.step(m, d, "xor", active=min(md.p, 2 * d))
        d *= 2
    return t


def bcast_scatter_allgather(md: Model, m: float) -> float:
    """van de Geijn: binomial scatter of m/p pieces, then a ring allgather."""
    p, lg = md.p, _lg(md.p)
    t, size = 0.0, m
    for k in range(lg):
        size /= 2
        t += md.step(size, 1 << (lg - k - 1), "xor", active=min(p, 2 << k))
    return t + (p - 1) * md.step(m / p, 1, "shift")


# -- alltoall ----------------------------------------------------------------------------------
def alltoall_pairwise(md: Model, m: float) -> float:
    return sum(md.step(m, k, "shift") for k in range(1, md.p))


def alltoall_bruck(md: Model, m: float) -> float:
    p = md.p
    t = 2 * md.copy_cost(m * p)  # the local rotations before and after
    k = 1
    while k < p:
        blocks = sum(1 for i in range(p) if i & k)
        t += md.step(m * blocks, k, "shift")
        k <<= 1
    return t


def alltoall_linear(md: Model, m: float) -> float:
    """All sends posted at once: one latency (the longest path's), then every byte behind
    the busiest link, plus the injection gap of each further message."""
    p = md.p
    if p == 1:
        return 0.0
    parts = [md.step_parts(m, k, "shift") for k in range(1, p)]
    alpha = max(a for a, _, _ in parts)
    share = parts[0][2]
    return md.stretch(alpha + (p - 2) * md.f.gap_us, sum(b for _, b, _ in parts), share)


# -- allgather / gather ------------------------------------------------------------------------
def allgather_ring(md: Model, m: float) -> float:
    return (md.p - 1) * md.step(m, 1, "shift")


def allgather_recursive_doubling(md: Model, m: float) -> float:
    if _pow2_floor(md.p) != md.p:
        return allgather_bruck(md, m)
    t, k = 0.0, 1
    while k < md.p:
        t += md.step(m * k, k, "xor", exchange=True)
        k <<= 1
    return t


def allgather_bruck(md: Model, m: float) -> float:
    p = md.p
    t, k = md.copy_cost(m * p), 1
    while k < p:
        t += md.step(m * min(k, p - k), k, "shift")
        k <<= 1
    return t


def gather_binomial(md: Model, m: float) -> float:
    t, k = 0.0, 1
    while k < md.p:
        t += md.step(m * k, k, "xor", active=max(2, md.p // k))
        k <<= 1
    return t


def gather_linear(md: Model, m: float) -> float:
    """The root receives p - 1 messages back to back: its link is the bottleneck."""
    p = md.p
    if p == 1:
        return 0.0
    link = md.f.link_bandwidth_MBps
    per_byte = max(md.f.beta(m), 1 / link) if link > 0 else md.f.beta(m)
    return md.f.alpha(m) + (p - 1) * max(md.f.gap_us, per_byte * m) * md.cpu_share(p, m)


Algorithm = Callable[[Model, float], float]

# name -> (function, SimGrid SMPI algorithm name for --cfg=smpi/<collective>:<name>, or None)
ALGORITHMS: dict[str, dict[str, tuple[Algorithm, str | None]]] = {
    "allreduce": {
        "ring": (allreduce_ring, "lr"),
        "recursive_doubling": (allreduce_recursive_doubling, "rdb"),
        "rabenseifner": (allreduce_rabenseifner, "rab_rdb"),
        "binomial": (allreduce_binomial, "redbcast"),
        "in_network": (in_network_allreduce, None),
    },
    "alltoall": {
        # Open MPI's pairwise sends to rank + k and receives from rank - k (mod P): SimGrid's
        # "ring" does that for any P; its "pair" exchanges with rank XOR k, powers of two only.
        "pairwise": (alltoall_pairwise, "ring"),
        "bruck": (alltoall_bruck, "bruck"),
        "linear": (alltoall_linear, "basic_linear"),
    },
    "allgather": {
        "ring": (allgather_ring, "ring"),
        "recursive_doubling": (allgather_recursive_doubling, "rdb"),
        "bruck": (allgather_bruck, "bruck"),
    },
    "gather": {
        "binomial": (gather_binomial, "ompi_binomial"),
        "linear": (gather_linear, "ompi_basic_linear"),
    },
    "bcast": {
        "binomial": (bcast_binomial, "binomial_tree"),
        "scatter_allgather": (bcast_scatter_allgather, "scatter_LR_allgather"),
    },
    "reduce": {
        "binomial": (reduce_binomial, "binomial"),
        "rabenseifner": (reduce_rabenseifner, "rab"),
        "in_network": (in_network_reduce, None),
    },
}

# Algorithms whose every step is a pairwise exchange (both partners send at once): their bytes
# pay the fabric's exchange slowdown (calibrated from mpi.bibw); the simulator is told so too.
EXCHANGE_ALGORITHMS = {("allreduce", "recursive_doubling"), ("allreduce", "rabenseifner"),
                       ("allgather", "recursive_doubling")}

# Open MPI 4.1 coll/tuned algorithm numbers (coll_tuned_<collective>_algorithm), to pin the
# measured runs that validate the model to the algorithm it predicts. Checked against
# `ompi_info --param coll tuned --level 9` of Open MPI 4.1.4 (tests/test_model.py does it again
# when ompi_info is there). Open MPI's names: alltoall 3 is "modified_bruck"; bcast 8
# "scatter_allgather" is a binomial scatter + *recursive doubling* allgather, 9
# "scatter_allgather_ring" the binomial scatter + ring allgather (van de Geijn) that the model
# and SimGrid's scatter_LR_allgather compute, so the model's scatter_allgather is 9.
OPENMPI_TUNED = {
    "allreduce": {"recursive_doubling": 3, "ring": 4, "rabenseifner": 6},
    "alltoall": {"linear": 1, "pairwise": 2, "bruck": 3},
    "allgather": {"bruck": 2, "recursive_doubling": 3, "ring": 4},
    "gather": {"linear": 1, "binomial": 2},
    "bcast": {"binomial": 6, "scatter_allgather": 9},
    "reduce": {"binomial": 5, "rabenseifner": 7},
}


def algorithms(collective: str) -> dict[str, tuple[Algorithm, str | None]]:
    try:
        return ALGORITHMS[collective]
    except KeyError:
        raise FabenchError(f"no model for {collective!r}; collectives: "
                           f"{', '.join(ALGORITHMS)}") from None


def applicable(collective: str, algorithm: str, cluster: Cluster) -> bool:
    """Whether the topology allows the algorithm (the fabric's switches aside)."""
    if algorithm == "in_network":
        return cluster.topology.levels() > 0 and not isinstance(cluster.topology, Loopback)
    return True


def not_applicable(fabric: Fabric, collective: str, algorithm: str,
                   cluster: Cluster) -> str | None:
    """Why an algorithm is left out of a prediction, None when it is not."""
    if algorithm == "in_network" and not fabric.in_network_reduction:
        return (f"in_network left out: fabric {fabric.name} does not declare switches that "
                "reduce (presets ib-100g and roce-100g do; a calibration with `fabench model "
                "calibrate --in-network`)")
    if not applicable(collective, algorithm, cluster):
        return f"{algorithm} left out: {cluster.topology.describe()} has no switch tree"
    return None


def predict(fabric: Fabric, cluster: Cluster, collective: str, algorithm: str,
            sizes: list[int]) -> list[float]:
    algos = algorithms(collective)
    if algorithm not in algos:
        raise FabenchError(f"no algorithm {algorithm!r} for {collective}; known: "
                           f"{', '.join(algos)}")
    if algorithm == "in_network" and not fabric.in_network_reduction:
        raise FabenchError(str(not_applicable(fabric, collective, algorithm, cluster)))
    fn = algos[algorithm][0]
    md = Model(fabric, cluster)
    return [fn(md, float(s)) for s in sizes]


@dataclass
class Prediction:
    collective: str
    sizes: list[int]
    times: dict[str, list[float]]  # algorithm -> us per size
    notes: list[str] = field(default_factory=list)  # algorithms left out, and why

    def winners(self) -> list[str]:
        return [fastest(self.times, i) for i in range(len(self.sizes))]


def fastest(times: dict[str, list[float]], i: int, among: list[str] | None = None) -> str:
    """The fastest algorithm at size index i. A tie of ring with recursive doubling is the
    ring allreduce falling back to recursive doubling (fewer floats than ranks): name the one
    that runs."""
    names = among if among is not None else list(times)
    return min(names, key=lambda a: (times[a][i], a == "ring"))


def predict_all(fabric: Fabric, cluster: Cluster, collective: str, sizes: list[int],
                only: list[str] | None = None) -> Prediction:
    times, notes = {}, []
    for name in algorithms(collective):
        if only and name not in only:
            continue
        why = not_applicable(fabric, collective, name, cluster)
        if why:
            notes.append(why)
            continue
        times[name] = predict(fabric, cluster, collective, name, sizes)
    if not times:
        raise FabenchError(f"no applicable {collective} algorithm among {only}"
                           + "".join(f"; {n}" for n in notes))
    return Prediction(collective, sizes, times, notes)
