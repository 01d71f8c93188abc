"""The cost of one collective step on a fabric and a cluster: what every algorithm is built of.

A step is a pattern over ranks (partner = rank XOR d, or rank + d) in which every active rank
sends m bytes. Ranks fill nodes in blocks of `ppn`; partners on one node use the fabric's
same-node (shared memory) segments, the others the topology's longest path and its most loaded
link. Ranks time-sharing cores (emulated nodes on one machine, `cores`) stretch a step's
latency part as the fabric's contention calibration says.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from .fabric import Fabric
from .topology import Loopback, Topology

ELEMENT_BYTES = 4  # the kernels reduce float32 (MPI_FLOAT sums)


@dataclass
class Cluster:
    nodes: int
    ppn: int
    topology: Topology
    # Nodes emulated on one machine (fabench's testbed): every rank of every node shares
    # these cores. None: a core per rank, as on a real cluster.
    cores: int | None = None
    # NICs (network links) per node. The node's ranks spread over them evenly: Open MPI's
    # and MPICH's libfabric layers give each rank the NIC nearest to it, so k ranks of a
    # node crossing the network put ceil(k / nics) flows and messages on one NIC.
    nics: int = 1

    @property
    def ranks(self) -> int:
        return self.nodes * self.ppn


def harmonic(n: float) -> float:
    """H(n) = 1 + 1/2 + ... + 1/n: the expected maximum of n unit-mean exponential delays
    (exact to 1e-3 from n = 1 through the asymptotic form above 64)."""
    n = max(1, int(n))
    if n <= 64:
        return float(sum(1.0 / k for k in range(1, n + 1)))
    return math.log(n) + 0.5772156649 + 1.0 / (2 * n) - 1.0 / (12 * n * n)


class Model:
    """Step costs of one fabric on one cluster."""

    def __init__(self, fabric: Fabric, cluster: Cluster) -> None:
        self.f = fabric
        self.c = cluster

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

    def link_per_byte(self, m: float, sharing: float = 1.0) -> float:
        """us per byte of a flow that shares its link with `sharing` flows in all: one flow is
        limited by its endpoints (beta), several by the link rate."""
        per_byte = self.f.beta(m)
        link = self.f.link_bandwidth_MBps
        if link > 0:
            per_byte = max(per_byte, sharing / link)
        return per_byte

    def geometry(self, d: int, pattern: str) -> tuple[bool, int, float]:
        """(same node, switches on the longest path, flows sharing the busiest link) of a
        step at rank distance d: fabric-independent, cached on the topology."""
        cache: dict[tuple[int, int, str, int], tuple[bool, int, float]] = \
            self.c.topology.__dict__.setdefault("_geometry", {})
        key = (self.c.ppn, self.c.nodes, pattern, d, self.c.nics)
        if key not in cache:
            ppn = self.c.ppn
            if d < ppn and (pattern == "xor" or ppn == 1):
                cache[key] = (True, 0, 1.0)
            else:
                if pattern == "xor":
                    nd, nic = max(1, d // ppn), ppn  # every rank of a node crosses over
                else:
                    nd, nic = max(1, math.ceil(d / ppn)), self.shift_crossing(d)
                if nd >= self.c.nodes and pattern == "shift":
                    nd = nd % self.c.nodes or 1
                path = self.c.topology.step(pattern, nd)
                cache[key] = (False, path.hops, float(self.per_nic(nic) * path.congestion))
        return cache[key]

    def per_nic(self, k: int) -> int:
        """Of k ranks of a node sending across the network at once, those on the busiest of
        its NICs (Cluster.nics)."""
        return max(1, math.ceil(k / max(self.c.nics, 1)))

    def shift_crossing(self, d: int) -> int:
        """Ranks of one node whose partner at rank + d (mod p) sits on another node, at least
        1: the last d of the node for d < ppn, every rank further on, and near a full turn
        (d > p - ppn) only p - d of them, the others' partners wrapping round to their own
        node. On 2 nodes that is half the shifts of a pairwise exchange: at 2 x 32 ranks a
        shift by 40 sends 24 ranks' messages through the NIC, not 32."""
        ppn, p = self.c.ppn, self.p
        if self.c.nodes < 2:
            return max(1, min(d, ppn))
        r = d % p
        return max(1, min(r, ppn, p - r))

    def node_senders(self, d: int, pattern: str, active: int | None = None) -> int:
        """Ranks of one node that send in one step at rank distance d: every rank of the node
        for "xor" steps (the active share of them when only `active` of the ranks send),
        `shift_crossing` for "shift"."""
        ppn = self.c.ppn
        if pattern == "xor":
            k = ppn if active is None else math.ceil(ppn * min(active, self.p) / max(self.p, 1))
        else:
            k = self.shift_crossing(d)
        return max(1, min(k, ppn))

    def nic_senders(self, d: int, pattern: str, active: int | None = None) -> int:
        """Ranks whose messages leave through one NIC of a node in one inter-node step at rank
        distance d (`node_senders` spread over the node's NICs)."""
        return self.per_nic(self.node_senders(d, pattern, active))

    def step_extra(self, active: int | None, nic: int) -> float:
        """What a step adds to its latency part beyond the point-to-point figure: the NIC's
        gap for each further rank of the node sending through it, and the noise of the
        slowest of the step's ranks (Fabric.nic_gap_us, Fabric.noise_us)."""
        extra = (nic - 1) * self.f.nic_gap_us
        if self.f.noise_us > 0:
            extra += self.noise(self.p if active is None else active)
        return extra

    def noise(self, n: int) -> float:
        """The expected delay of the slowest of n ranks in one step (Fabric.noise_us,
        Fabric.noise_exponent)."""
        b = self.f.noise_exponent
        return self.f.noise_us * (float(max(n, 1)) ** b if b > 0 else harmonic(n))

    def shift_parts(self, m: float, ds: Iterable[int], network_only: bool = False
                    ) -> tuple[np.ndarray, np.ndarray]:
        """(latency parts, bytes parts) of "shift" steps at every distance in `ds`, one m each
        (the steps of a pairwise exchange), vectorised; each the slower of its network and
        its same-node pairs (step_parts), or with `network_only` the network pairs' alone."""
        ds = tuple(ds)
        cache: dict[tuple[int, int, tuple[int, ...]], tuple[np.ndarray, ...]] = \
            self.c.topology.__dict__.setdefault("_shift_arrays", {})
        key = (self.c.ppn, self.c.nodes, ds, self.c.nics)
        if key not in cache:
            geo = [self.geometry(d, "shift") for d in ds]
            p = max(self.p, 1)
            cache[key] = (np.array([g[0] for g in geo], dtype=bool),
                          np.array([g[1] for g in geo], dtype=float),
                          np.array([g[2] for g in geo], dtype=float),
                          np.array([(2 * d) % p == 0 for d in ds], dtype=bool),
                          np.array([self.per_nic(self.shift_crossing(d)) for d in ds],
                                   dtype=float),
                          np.array([self.stays(d) for d in ds], dtype=float))
        intra, hops, sharing, exch, nic, stay = cache[key]
        seg = self.f.segment(m)
        a_net = np.maximum(seg.alpha_us + (hops - self.f.calibrated_hops)
                           * self.f.hop_latency_us, 0.0)
        link = self.f.link_bandwidth_MBps
        pb = np.full(len(ds), seg.beta_us_per_byte)
        if link > 0:
            pb = np.maximum(pb, sharing / link)
        pb = np.where(exch, pb * self.f.exchange_factor(m), pb)
        a_net = a_net + (nic - 1) * self.f.nic_gap_us
        noise = self.noise(self.p) if self.f.noise_us > 0 else 0.0
        a = np.where(intra, self.f.alpha(m, intra=True), a_net) + noise
        b = np.where(intra, self.intra_per_byte(m), pb) * max(m, 0.0)
        if stay.any() and not network_only:
            # the same-node pairs of each shift, the node's memory shared by those copying
            a_in = self.f.alpha(m, intra=True) + noise
            b_in = self.copy_per_byte(m, stay) * max(m, 0.0)
            share = self.cpu_share(self.p, m)  # as the callers stretch them (step_parts)
            slower = (stay > 0) & (self.stretch(a_in, b_in, share)
                                   > self.stretch(a, b, share))
            a = np.where(slower, a_in, a)
            b = np.where(slower, b_in, b)
        return a, b

    def stays(self, d: int) -> int:
        """Ranks of a node whose partner at rank + d is on the same node while others of it
        cross (a shift on several nodes): their copies run beside the network's flows, and
        the step ends with the slower of the two. 0 where nothing stays."""
        if self.c.nodes < 2 or isinstance(self.c.topology, Loopback):
            return 0
        return self.c.ppn - self.shift_crossing(d)

    def stay_parts(self, m: float, k: int) -> tuple[float, float]:
        """(latency part, bytes part) of the same-node pairs of a step while k ranks of the
        node copy at once (the node's memory shared among them, intra_per_byte)."""
        return self.f.alpha(m, intra=True), self.intra_per_byte(m, k) * m

    def step_parts(self, m: float, d: int, pattern: str = "xor", active: int | None = None,
                   exchange: bool | None = None, network_only: bool = False
                   ) -> tuple[float, float, float]:
        """(latency part, bytes part, cpu share) of a step in which every (active) rank
        sends m bytes to its partner at rank distance d. `exchange`: the partner sends m
        bytes back at the same time (recursive doubling/halving); for "shift" steps it is
        found (rank + d and rank - d are one rank). An exchange's bytes cost at least the
        fabric's exchange slowdown (measured with mpi.bibw) more than a one-way flow. A shift
        whose other pairs stay on their node costs the slower of its network pairs and its
        same-node ones (`stays`); `network_only`: the network pairs' parts alone."""
        m = max(m, 0.0)
        if exchange is None:
            exchange = pattern == "shift" and (2 * d) % max(self.p, 1) == 0
        share = self.cpu_share(self.p if active is None else active, m)
        intra, hops, sharing = self.geometry(d, pattern)
        if intra:
            k = self.node_senders(d, "xor", active)  # the node's ranks copying at once
            return (self.f.alpha(m, intra=True) + self.step_extra(active, 1),
                    self.intra_per_byte(m, k) * m, share)
        nic = self.nic_senders(d, pattern, active)
        full = self.per_nic(self.c.ppn)
        if pattern == "xor" and nic < full:
            # geometry counts every rank of the node on its links; in a tree's step only the
            # active share of them sends (one rank per node from a binomial tree's distance
            # ppn on), and only those divide the link
            sharing = sharing * nic / full
        per_byte = self.link_per_byte(m, sharing)
        if exchange:
            per_byte *= self.f.exchange_factor(m)
        extra = self.step_extra(active, nic)
        a, b = self.f.alpha(m, hops) + extra, per_byte * m
        stay = 0 if pattern != "shift" or network_only else self.stays(d)
        if stay > 0:
            a_in, b_in = self.stay_parts(m, stay)
            a_in += self.step_extra(active, 1)
            if self.stretch(a_in, b_in, share) > self.stretch(a, b, share):
                return a_in, b_in, share
        return a, b, share

    def step(self, m: float, d: int, pattern: str = "xor", active: int | None = None,
             exchange: bool | None = None) -> float:
        a, b, share = self.step_parts(m, d, pattern, active, exchange)
        return self.stretch(a, b, share)

    def node_step(self, m: float, d: int = 1, pattern: str = "shift",
                  active: int | None = None, nic: int = 1) -> float:
        """A step between node leaders (one rank per node sending, `nic` flows per node's
        link): the inter-node part of a hierarchical algorithm."""
        nd = max(1, d)
        if self.c.nodes < 2:
            return 0.0
        if nd >= self.c.nodes:
            nd = nd % self.c.nodes or 1
        path = self.c.topology.step(pattern, nd)
        a = self.f.alpha(m, path.hops) + self.step_extra(
            self.c.nodes if active is None else active, nic)
        b = self.link_per_byte(m, nic * path.congestion) * m
        share = self.cpu_share(self.c.nodes if active is None else active, m)
        return self.stretch(a, b, share)

    def intra_per_byte(self, m: float, k: int | None = None) -> float:
        """us per byte of a same-node copy while k ranks of the node copy at once (default:
        all of them): one rank's rate, or its share of the node's memory bandwidth."""
        return float(self.copy_per_byte(m, self.c.ppn if k is None else k))

    def copy_per_byte(self, m: float, k: float | np.ndarray) -> float | np.ndarray:
        """intra_per_byte for k copying ranks, k a count or an array of counts (one per step
        of a pairwise exchange, shift_parts)."""
        per_byte = self.f.beta(m, intra=True)
        mem = self.f.node_memory_MBps
        return np.maximum(per_byte, k / mem) if mem > 0 else per_byte

    def intra_step(self, m: float) -> float:
        return (self.f.alpha(m, intra=True) + self.intra_per_byte(m) * m
                + self.step_extra(self.c.ppn, 1))

    def reduce_cost(self, m: float) -> float:
        """Reducing m bytes while every rank of the node reduces: gamma, or the rank's share
        of the node's memory bandwidth."""
        per_byte = self.f.reduce_us_per_byte
        if self.f.node_memory_MBps > 0:
            per_byte = max(per_byte, self.c.ppn / self.f.node_memory_MBps)
        return per_byte * m

    def copy_cost(self, m: float) -> float:
        return self.intra_per_byte(m) * m
