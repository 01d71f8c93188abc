"""In-network reduction (SHARP-class switches, document 000's in-network computing) as
measured systems behave, not as an ideal line-rate tree.

One reduction of m bytes on a switch tree of L levels (the topology's, over the job's nodes):
  ranks of a node first reduce over shared memory (and get the result back the same way);
  the node's leader posts ceil(m / fragment_bytes) aggregation operations: the first costs the
  host's post and completion overhead plus L levels up and L down (`level_us` each way), each
  further fragment `fragment_us` (issued and completed one after the other), and the bytes
  cross the node's link once;
  from `streaming_from_bytes` on, a streaming engine moves the bytes at `streaming_fraction`
  of the fabric's link rate (or a fixed `streaming_MBps` when no fraction is given) instead,
  after a fixed `streaming_us` (at least one fragment's trip);
  above `max_bytes` (and not streaming), or with fewer than `min_nodes` nodes, the library
  falls back to a host-based algorithm (the caller's `fallback`).
Parameters and their sources: families.py; docs/model.md ("In-network reduction").
"""

from __future__ import annotations

import math

from ..errors import FabenchError
from .cost import Model


def in_network_time(md: Model, m: float) -> float | None:
    """The switch tree's part of one reduction of m bytes among node leaders, or None when
    the library falls back to host-based at this size or node count."""
    inn = md.f.in_network
    if inn is None:
        raise FabenchError(f"fabric {md.f.name} declares no in-network reduction")
    levels = md.c.topology.levels()
    if levels == 0:
        raise FabenchError(f"in-network reduction needs a switch tree; "
                           f"{md.c.topology.describe()} has none")
    if md.c.nodes < 2:
        return 0.0
    if md.c.nodes < inn.min_nodes:
        return None
    rate = inn.streaming_rate(md.f.link_bandwidth_MBps or md.f.peak_bandwidth_MBps)
    streaming = rate > 0 and 0 < inn.streaming_from_bytes <= m
    if not streaming and m > inn.max_bytes:
        return None
    first = inn.host_overhead_us + 2 * levels * inn.level_us
    if streaming:
        return max(first, inn.streaming_us) + m / rate
    frags = max(1, math.ceil(m / inn.fragment_bytes))
    return first + (frags - 1) * inn.fragment_us + md.link_per_byte(m) * m


def _lg(n: int) -> int:
    return max(0, math.ceil(math.log2(n))) if n > 1 else 0


def intra_reduce(md: Model, m: float) -> float:
    """Reduce to the node's leader over shared memory: a binomial tree for small messages,
    a reduce-scatter then gather (each rank reducing its share) for large ones, whichever
    costs less, as MPI libraries switch between them."""
    k = md.c.ppn
    if k < 2:
        return 0.0
    lg = _lg(k)
    binomial = lg * (md.intra_step(m) + md.reduce_cost(m))
    share = m * (k - 1) / k
    split = (2 * lg * md.f.alpha(m, intra=True) + 2 * share * md.intra_per_byte(m)
             + md.reduce_cost(share))
    return min(binomial, split)


def intra_bcast(md: Model, m: float) -> float:
    """Broadcast from the node's leader over shared memory: binomial, or scatter then
    allgather for large messages, whichever costs less."""
    k = md.c.ppn
    if k < 2:
        return 0.0
    lg = _lg(k)
    binomial = lg * md.intra_step(m)
    split = 2 * lg * md.f.alpha(m, intra=True) + 2 * m * (k - 1) / k * md.intra_per_byte(m)
    return min(binomial, split)
