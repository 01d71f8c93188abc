"""Collective algorithms as sums of point-to-point steps on a calibrated fabric.

Sizes follow the kernels (docs/kernel-protocol.md): allreduce, reduce and bcast take the
message size, alltoall the bytes per peer, allgather and gather the bytes per rank.

Every algorithm is the schedule an MPI library runs (Thakur, Rabenseifner and Gropp 2005; Bruck
et al. 1997; Open MPI 4.1's coll/base, MPICH 4.0's MPIR), written as its steps; each step costs
the fabric's piecewise point-to-point time for its message size, plus the extra switches of the
step's path, with the bytes term stretched by link sharing (cost.py). Tree-shaped broadcasts
and reductions are in trees.py, in-network reduction in innetwork.py. Reductions add gamma
(local reduction cost) per byte reduced.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import FabenchError
from .cost import ELEMENT_BYTES, Cluster, Model
from .decisions import library_choice
from .fabric import Fabric
from .families import eager_default
from .innetwork import in_network_time, intra_bcast, intra_reduce
from .topology import Loopback
from .trees import (
    CHAIN_FANOUT,
    KNOMIAL_RADIX,
    binary_tree,
    chain_tree,
    knomial_tree,
    linear_tree,
    shaped,
)


def _pow2_floor(p: int) -> int:
    return 1 << (p.bit_length() - 1)


def _lg(p: int) -> int:
    return max(0, math.ceil(math.log2(p))) if p > 1 else 0


# -- allreduce ---------------------------------------------------------------------------------
def _non_pow2_fold(md: Model, m: float) -> float:
    """Ranks beyond the largest power of two hand their data in before and get it after.
    Open MPI (coll_base_allreduce.c) and MPICH both pair neighbours: each of the first
    2 * extra ranks that is even sends to rank + 1 (and gets the result back from it), so
    with an even number of ranks per node the fold never leaves the node ([OMPI41],
    [MPICH40]). One rank per node: the neighbour is the next node."""
    p2 = _pow2_floor(md.p)
    if p2 == md.p:
        return 0.0
    extra = md.p - p2
    return 2 * md.step(m, 1, "xor", active=2 * extra) + md.reduce_cost(m)


def allreduce_recursive_doubling(md: Model, m: float) -> float:
    p2 = _pow2_floor(md.p)
    t = _non_pow2_fold(md, m)
    for k in range(int(math.log2(p2))):
        t += md.step(m, 1 << k, "xor", active=p2, exchange=True) + md.reduce_cost(m)
    return t


def ring_steps(md: Model, m: float, steps: int) -> float:
    """`steps` steps of a ring: each rank sends m bytes to rank + 1, what it got from rank - 1
    the step before. An eager send leaves at once, so a rank waits only for its left
    neighbour: the critical path runs back through one link per step and, with ranks in
    blocks of ppn, crosses a node in `nodes` of every p links and stays on the node in the
    others (an average, where pricing every step as the slowest link sums the maximum). Each
    link still carries one message per step: the link that leaves a node, at its bytes rate,
    bounds the pipeline from below. From the rendezvous on (Fabric.rendezvous_bytes; a
    single-segment fabric: its family's eager limit) a send waits for its receiver's
    handshake too, the path can turn back across the slow link every step or two, and every
    step is priced at it: the link that leaves a node, or the same-node one where the node's
    copies (its memory shared by all its ranks) are slower. One rank per node: every link
    leaves its node, the same figure.

    The noise follows the same path: no step waits for the slowest of all p ranks, the delays
    add along the longest path, which at each step stays on its rank or moves one back. For
    exponential delays of mean noise_us that is last-passage percolation over a lattice of
    `steps` moves, max over j of (sqrt(steps - j) + sqrt(j))^2 = 2 x steps mean delays
    (Johansson, "Shape fluctuations and random matrices", Commun. Math. Phys. 209, 2000; noise
    along a collective's dependencies: Hoefler, Schneider, Lumsdaine, SC10)."""
    a, b, share = md.step_parts(m, 1, "shift", network_only=True)
    noisy = md.noise(md.p) if md.f.noise_us > 0 else 0.0  # what step_parts charged a step
    t_cross = md.stretch(a - noisy, b, share)
    path_noise = 2.0 * md.f.noise_us
    nodes, p = md.c.nodes, md.p
    rendezvous = md.f.rendezvous_bytes()
    if not math.isfinite(rendezvous):  # one segment: the family's eager limit
        rendezvous = eager_default(md.f.family).value
    if md.c.ppn <= 1 or nodes <= 1 or isinstance(md.c.topology, Loopback):
        return steps * (t_cross + path_noise)
    a_in, b_in, share_in = md.step_parts(m, 1, "xor")  # the next rank on the node
    t_in = md.stretch(a_in - noisy, b_in, share_in)
    if m >= rendezvous:  # every step at the slowest link, a node's copies or its NIC
        return steps * (max(t_cross, t_in) + path_noise)
    path = (nodes * t_cross + (p - nodes) * t_in) / p
    return steps * (max(path, md.stretch(0.0, b, share), md.f.gap_us) + path_noise)


def allreduce_ring(md: Model, m: float) -> float:
    p = md.p
    if p == 1:
        return 0.0
    if m < ELEMENT_BYTES * p:
        # fewer elements than ranks cannot be split into p chunks: Open MPI's ring
        # (coll_base_allreduce_intra_ring) runs recursive doubling instead
        return allreduce_recursive_doubling(md, m)
    chunk = m / p
    return ring_steps(md, chunk, 2 * (p - 1)) + (p - 1) * md.reduce_cost(chunk)


def _halving_steps(m: float, p2: int) -> list[tuple[float, bool]]:
    """(bytes, balanced) of each reduce-scatter step of Rabenseifner's algorithm as MPICH (and
    SimGrid's rab_rdb) cut the vector: p2 blocks of count // p2 elements, the remainder in the
    last block. A step exchanges half of the current range; the pair whose half holds the last
    block moves the most, so with fewer elements than ranks every step moves the whole
    message one way (the fallback the split does not have)."""
    count = max(int(m // ELEMENT_BYTES), 0)
    q = count // p2
    last = count - q * (p2 - 1)
    out, blocks = [], p2
    while blocks > 1:
        blocks //= 2
        elems = (blocks - 1) * q + last
        out.append((elems * ELEMENT_BYTES if count else m / (p2 // blocks), last == q))
    return out


def _halving(md: Model, m: float, reduce: bool, exchange: bool = True) -> float:
    """Recursive vector halving with distance doubling, as Open MPI's redscat_allgather and
    MPICH's reduce_scatter_allgather run it (mask = 1, 2, 4, ...): the largest halves go to
    the nearest ranks, so with several ranks per node they stay on the node and only the
    small blocks cross the network; the allgather retraces the same pairs."""
    p2 = _pow2_floor(md.p)
    t = 0.0
    for k, (size, balanced) in enumerate(_halving_steps(m, p2)):
        t += md.step(size, 1 << k, "xor", active=p2, exchange=exchange and balanced)
        if reduce:
            t += md.reduce_cost(size)
    return t


def allreduce_rabenseifner(md: Model, m: float) -> float:
    # reduce-scatter by recursive halving, allgather by recursive doubling (same steps back)
    return _non_pow2_fold(md, m) + _halving(md, m, True) + _halving(md, m, False)


def allreduce_binomial(md: Model, m: float) -> float:
    return reduce_binomial(md, m) + bcast_binomial(md, m)


def allreduce_linear(md: Model, m: float) -> float:
    """Open MPI's basic linear: every rank sends to rank 0, which reduces and sends the result
    to every rank (its fallback for Rabenseifner with fewer elements than ranks)."""
    return reduce_linear(md, m) + bcast_linear(md, m)


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


def bcast_binomial(md: Model, m: float) -> float:
    t, d = 0.0, 1
    while d < md.p:
        t += md.step(m, d, "xor", active=min(md.p, 2 * d))
        d *= 2
    return t


def bcast_scatter_allgather(md: Model, m: float) -> float:
    """van de Geijn: binomial scatter of m/p pieces, then a ring allgather."""
    return _scatter(md, m) + ring_steps(md, m / md.p, md.p - 1)


def bcast_scatter_rd_allgather(md: Model, m: float) -> float:
    """Binomial scatter, then a recursive-doubling allgather of the pieces (Open MPI's bcast
    8, MPICH's scatter_recursive_doubling_allgather)."""
    p = md.p
    t, k = _scatter(md, m), 1
    while k < p:
        t += md.step(m / p * k, k, "xor", exchange=True)
        k <<= 1
    return t


def _scatter(md: Model, m: float) -> float:
    p, lg = md.p, _lg(md.p)
    t, size = 0.0, m
    for k in range(lg):
        size /= 2
        t += md.step(size, 1 << (lg - k - 1), "xor", active=min(p, 2 << k))
    return t


bcast_linear = shaped("linear", linear_tree)
reduce_linear = shaped("linear", linear_tree, reduce=True)
bcast_binary = shaped("binary", binary_tree)
reduce_binary = shaped("binary", binary_tree, reduce=True)
bcast_knomial = shaped("knomial", lambda p: knomial_tree(p, KNOMIAL_RADIX))
reduce_knomial = shaped("knomial", lambda p: knomial_tree(p, KNOMIAL_RADIX), reduce=True)
bcast_chain = shaped("chain", lambda p: chain_tree(p, CHAIN_FANOUT))
reduce_chain = shaped("chain", lambda p: chain_tree(p, CHAIN_FANOUT), reduce=True)
bcast_pipeline = shaped("pipeline", lambda p: chain_tree(p, 1))
reduce_pipeline = shaped("pipeline", lambda p: chain_tree(p, 1), reduce=True)


def bcast_split_binary(md: Model, m: float) -> float:
    """Open MPI's split binary tree: each half of the message down one half of a binary tree,
    then the two halves exchanged pairwise."""
    return bcast_binary(md, m / 2) + md.step(m / 2, 1, "xor", exchange=True)


# -- hierarchical (node leaders) ---------------------------------------------------------------
def _leaders(md: Model) -> Model:
    """The node leaders as a cluster of one rank per node."""
    return Model(md.f, Cluster(md.c.nodes, 1, md.c.topology, md.c.cores))


def leader_allreduce(md: Model, m: float) -> float:
    """MPICH's inter-node choice among node leaders (MPIR generic rules, MPICH40): recursive
    doubling up to 8 bytes or with fewer elements than leaders (power of two below),
    Rabenseifner above."""
    lead = _leaders(md)
    if m <= 8 or m / ELEMENT_BYTES < _pow2_floor(lead.p):
        return allreduce_recursive_doubling(lead, m)
    return allreduce_rabenseifner(lead, m)


def allreduce_hierarchical(md: Model, m: float) -> float:
    """Reduce within each node (shared memory, binomial), allreduce among node leaders, then
    broadcast within each node: MPICH 4.0's composition alpha for ranks per node > 1."""
    return intra_reduce(md, m) + leader_allreduce(md, m) + intra_bcast(md, m)


def bcast_hierarchical(md: Model, m: float) -> float:
    return bcast_binomial(_leaders(md), m) + intra_bcast(md, m)


def reduce_hierarchical(md: Model, m: float) -> float:
    return intra_reduce(md, m) + reduce_binomial(_leaders(md), m)


# -- in-network --------------------------------------------------------------------------------
def _host_fallback(md: Model, m: float) -> float:
    """What the library runs when the switches cannot take the message: its best host-based
    algorithm (HCOLL's own choice is not modelled)."""
    return min(allreduce_recursive_doubling(md, m), allreduce_rabenseifner(md, m),
               allreduce_ring(md, m))


def in_network_allreduce(md: Model, m: float) -> float:
    t = in_network_time(md, m)
    if t is None:
        return _host_fallback(md, m)
    return intra_reduce(md, m) + t + intra_bcast(md, m)


def in_network_reduce(md: Model, m: float) -> float:
    t = in_network_time(md, m)
    if t is None:
        return min(reduce_binomial(md, m), reduce_rabenseifner(md, m))
    return intra_reduce(md, m) + t


def in_network_fell_back(md: Model, m: float) -> bool:
    return in_network_time(md, m) is None


# -- alltoall ----------------------------------------------------------------------------------
def alltoall_pairwise(md: Model, m: float) -> float:
    if md.p < 2:
        return 0.0
    a, b = md.shift_parts(m, range(1, md.p))
    share = md.cpu_share(md.p, m)
    return float(md.stretch(a, b, share).sum())


def alltoall_bruck(md: Model, m: float) -> float:
    p = md.p
    t = 2 * md.copy_cost(m * p)  # the local rotations before and after
    k = 1
    while k < p:
        # ranks 0..p-1 with bit k set: full periods of 2k hold k each, then the remainder
        blocks = (p // (2 * k)) * k + max(0, p % (2 * k) - k)
        t += md.step(m * blocks, k, "shift")
        k <<= 1
    return t


def alltoall_linear(md: Model, m: float) -> float:
    """All sends posted at once: one latency (the longest path's), then every byte behind
    the busiest link, plus the injection gap of each further message. The same-node copies
    run beside the network's flows: a rank's ppn - 1 of them, while every rank of the node
    copies (the node's memory shared), bound it from below."""
    p = md.p
    if p == 1:
        return 0.0
    a, b = md.shift_parts(m, range(1, p), network_only=True)
    share = md.cpu_share(p, m)
    total = float(b.sum())
    if md.stays(1) > 0:
        total = max(total, (md.c.ppn - 1) * md.intra_per_byte(m) * m)
    return float(md.stretch(float(a.max()) + (p - 2) * md.f.gap_us, total, share))


# -- allgather / gather ------------------------------------------------------------------------
def allgather_ring(md: Model, m: float) -> float:
    return ring_steps(md, m, md.p - 1)


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


def allgather_neighbor_exchange(md: Model, m: float) -> float:
    """Open MPI's neighbor exchange: P/2 steps, the first of m bytes, the rest of 2m, each with
    a neighbour; an odd P runs the ring instead."""
    p = md.p
    if p % 2:
        return allgather_ring(md, m)
    return md.step(m, 1, "shift", exchange=True) + (p // 2 - 1) * md.step(2 * m, 1, "shift",
                                                                          exchange=True)


def allgather_linear(md: Model, m: float) -> float:
    """Open MPI's basic linear allgather: a linear gather to rank 0, then a broadcast of the
    whole vector."""
    return gather_linear(md, m) + bcast_binomial(md, m * md.p)


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
    per_byte = md.link_per_byte(m)
    return md.f.alpha(m) + (p - 1) * max(md.f.gap_us, per_byte * m) * md.cpu_share(p, m)


Algorithm = Callable[[Model, float], float]

# name -> (function, SimGrid SMPI algorithm name for --cfg=smpi/<collective>:<name>, or None
# when SimGrid has no equivalent: the model predicts it, `fabench sim` refuses it)
ALGORITHMS: dict[str, dict[str, tuple[Algorithm, str | None]]] = {
    "allreduce": {
        "ring": (allreduce_ring, "lr"),
        "recursive_doubling": (allreduce_recursive_doubling, "rdb"),
        "rabenseifner": (allreduce_rabenseifner, "rab_rdb"),
        "binomial": (allreduce_binomial, "redbcast"),
        "linear": (allreduce_linear, None),
        "hierarchical": (allreduce_hierarchical, None),
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
        "neighbor_exchange": (allgather_neighbor_exchange, "ompi_neighborexchange"),
        "linear": (allgather_linear, None),
    },
    "gather": {
        "binomial": (gather_binomial, "ompi_binomial"),
        "linear": (gather_linear, "ompi_basic_linear"),
    },
    "bcast": {
        "binomial": (bcast_binomial, "binomial_tree"),
        "scatter_allgather": (bcast_scatter_allgather, "scatter_LR_allgather"),
        "scatter_rd_allgather": (bcast_scatter_rd_allgather, "scatter_rdb_allgather"),
        "linear": (bcast_linear, "flattree"),
        "binary_tree": (bcast_binary, None),
        "split_binary_tree": (bcast_split_binary, None),
        "knomial": (bcast_knomial, None),
        "chain": (bcast_chain, None),
        "pipeline": (bcast_pipeline, None),
        "hierarchical": (bcast_hierarchical, None),
    },
    "reduce": {
        "binomial": (reduce_binomial, "binomial"),
        "rabenseifner": (reduce_rabenseifner, "rab"),
        "linear": (reduce_linear, "flat_tree"),
        "binary_tree": (reduce_binary, None),
        "knomial": (reduce_knomial, None),
        "chain": (reduce_chain, None),
        "pipeline": (reduce_pipeline, None),
        "hierarchical": (reduce_hierarchical, None),
        "in_network": (in_network_reduce, None),
    },
}

# Algorithms whose every step is a pairwise exchange (both partners send at once): their bytes
# pay the fabric's exchange slowdown (calibrated from mpi.bibw); the simulator is told so too.
EXCHANGE_ALGORITHMS = {("allreduce", "recursive_doubling"), ("allreduce", "rabenseifner"),
                       ("allgather", "recursive_doubling")}
# Algorithms only meaningful with several ranks per node.
NEEDS_PPN = {"hierarchical"}


def algorithms(collective: str) -> dict[str, tuple[Algorithm, str | None]]:
    try:
        return ALGORITHMS[collective]
    except KeyError:
        raise FabenchError(f"no model for {collective!r}; collectives: "
                           f"{', '.join(ALGORITHMS)}") from None


def not_applicable(fabric: Fabric, collective: str, algorithm: str,
                   cluster: Cluster) -> str | None:
    """Why an algorithm is left out of a prediction, None when it is not."""
    if algorithm == "in_network":
        if not fabric.in_network_reduction:
            return (f"in_network left out: fabric {fabric.name} declares no switches that "
                    "reduce (presets ib-100g and roce-100g do; `model define --in-network "
                    "KIND`, `model calibrate --in-network`)")
        if cluster.topology.levels() == 0 or isinstance(cluster.topology, Loopback):
            return f"in_network left out: {cluster.topology.describe()} has no switch tree"
    if algorithm in NEEDS_PPN and cluster.ppn < 2:
        return f"{algorithm} left out: one rank per node (nothing to do within a node)"
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
class Band:
    """A prediction's uncertainty per size: the 5th and 95th percentile over fabric variants
    (uncertainty.py)."""

    low: list[float]
    high: list[float]


@dataclass
class Prediction:
    collective: str
    sizes: list[int]
    times: dict[str, list[float]]  # algorithm (or "openmpi", "mpich") -> us per size
    notes: list[str] = field(default_factory=list)  # algorithms left out, and why
    # composite columns (what an MPI library runs): the algorithm chosen at each size
    chosen: dict[str, list[str]] = field(default_factory=dict)
    bands: dict[str, Band] = field(default_factory=dict)
    # what the bands are: "" for the parameter bands (5th-95th percentile over fabric
    # variants), else the prediction interval's description and its nominal level
    band_label: str = ""
    band_level: float | None = None

    @property
    def algorithms(self) -> list[str]:
        return [a for a in self.times if a not in self.chosen]

    def winners(self) -> list[str]:
        return [fastest(self.times, i, self.algorithms) for i in range(len(self.sizes))]


def fastest(times: dict[str, list[float]], i: int, among: list[str] | None = None) -> str:
    """The fastest algorithm at size index i. A tie of ring with recursive doubling is the
    ring allreduce falling back to recursive doubling (fewer floats than ranks): name the one
    that runs."""
    names = among if among is not None else list(times)
    return min(names, key=lambda a: (times[a][i], a == "ring"))


def predict_all(fabric: Fabric, cluster: Cluster, collective: str, sizes: list[int],
                only: list[str] | None = None, libraries: tuple[str, ...] = ()) -> Prediction:
    """Every applicable algorithm (or `only` these), plus for each library in `libraries`
    ("openmpi", "mpich") a column with the algorithm it runs at each size by default."""
    times, notes = {}, []
    for name in algorithms(collective):
        if only and name not in only:
            continue
        why = not_applicable(fabric, collective, name, cluster)
        if why:
            notes.append(why)
            continue
        times[name] = predict(fabric, cluster, collective, name, sizes)
    if not times and (only or not libraries):
        raise FabenchError(f"no applicable {collective} algorithm among {only}"
                           + "".join(f"; {n}" for n in notes))
    inn = fabric.in_network
    if "in_network" in times and inn is not None:
        above = [s for s in sizes if s > inn.max_bytes and not (
            inn.streaming_rate(fabric.link_bandwidth_MBps or fabric.peak_bandwidth_MBps) > 0
            and 0 < inn.streaming_from_bytes <= s)]
        if above:
            notes.append(f"in_network from {min(above)} B: the library's host-based fallback "
                         f"(the switches take at most {inn.max_bytes} B)")
        if cluster.nodes < inn.min_nodes:
            notes.append(f"in_network: fewer than {inn.min_nodes} nodes, host-based")
    pred = Prediction(collective, sizes, times, notes)
    for lib in libraries:
        add_library_column(pred, fabric, cluster, lib)
    return pred


def add_library_column(pred: Prediction, fabric: Fabric, cluster: Cluster,
                       library: str) -> None:
    """The time of the algorithm `library` chooses at each size (decisions.py)."""
    chosen = [library_choice(library, pred.collective, cluster.ranks, cluster.ppn, s)
              for s in pred.sizes]
    md = Model(fabric, cluster)
    fns = algorithms(pred.collective)
    pred.times[library] = [
        pred.times[a][i] if a in pred.times else fns[a][0](md, float(s))
        for i, (a, s) in enumerate(zip(chosen, pred.sizes, strict=True))]
    pred.chosen[library] = chosen
