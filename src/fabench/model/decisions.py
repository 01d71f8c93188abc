"""What an MPI library runs by default: the algorithm per collective, rank count and size.

Open MPI 4.1 (coll/tuned's fixed decision rules, [OMPI41]) and MPICH 4.0 (the default JSON
selection of the MPIR and ch4 layers, [MPICH40]), transcribed as data: for each collective a
list of (communicator sizes below, [(message bytes below, algorithm), ...], algorithm above).
The "what your MPI will do" prediction evaluates the chosen algorithm at every size, after
the library's own fallbacks inside an algorithm (Open MPI's Rabenseifner with fewer elements
than ranks runs basic linear, its ring recursive doubling, ...).

Open MPI's algorithm numbers (coll_tuned_<collective>_algorithm) also pin measured runs to the
modelled algorithm; `tests/test_model.py` checks them against the installed `ompi_info`.
"""

from __future__ import annotations

import re

from .cost import ELEMENT_BYTES

INF = float("inf")
Rule = tuple[float, list[tuple[float, int]], int]

# Open MPI 4.1 coll/tuned algorithm numbers -> the model's algorithm (None: not modelled,
# approximated as noted in `OPENMPI_APPROX`).
OPENMPI_ALGORITHMS: dict[str, dict[int, str]] = {
    "allreduce": {1: "linear", 2: "binomial", 3: "recursive_doubling", 4: "ring", 5: "ring",
                  6: "rabenseifner"},
    "alltoall": {1: "linear", 2: "pairwise", 3: "bruck", 4: "linear", 5: "pairwise"},
    "allgather": {1: "linear", 2: "bruck", 3: "recursive_doubling", 4: "ring",
                  5: "neighbor_exchange", 6: "recursive_doubling"},
    "gather": {1: "linear", 2: "binomial", 3: "linear"},
    "bcast": {1: "linear", 2: "chain", 3: "pipeline", 4: "split_binary_tree",
              5: "binary_tree", 6: "binomial", 7: "knomial", 8: "scatter_rd_allgather",
              9: "scatter_allgather"},
    "reduce": {1: "linear", 2: "chain", 3: "pipeline", 4: "binary_tree", 5: "binomial",
               6: "binary_tree", 7: "rabenseifner"},
}
OPENMPI_APPROX = {
    ("allreduce", 2): "nonoverlapping (reduce then bcast) modelled as binomial reduce + "
                      "binomial bcast",
    ("allreduce", 5): "segmented ring without a segment size runs the ring",
    ("alltoall", 4): "linear_sync without a request limit posts every message at once",
    ("alltoall", 5): "two_proc is a pairwise exchange",
    ("allgather", 6): "two_proc is one exchange",
    ("gather", 3): "linear_sync modelled as linear",
    ("reduce", 6): "in-order binary modelled as binary",
}

# The numbers that pin a measured run to one modelled algorithm (the inverse of the above,
# the exact ones only).
OPENMPI_TUNED: dict[str, dict[str, int]] = {
    "allreduce": {"linear": 1, "binomial": 2, "recursive_doubling": 3, "ring": 4,
                  "rabenseifner": 6},
    "alltoall": {"linear": 1, "pairwise": 2, "bruck": 3},
    "allgather": {"linear": 1, "bruck": 2, "recursive_doubling": 3, "ring": 4,
                  "neighbor_exchange": 5},
    "gather": {"linear": 1, "binomial": 2},
    "bcast": {"linear": 1, "chain": 2, "pipeline": 3, "split_binary_tree": 4,
              "binary_tree": 5, "binomial": 6, "knomial": 7, "scatter_rd_allgather": 8,
              "scatter_allgather": 9},
    "reduce": {"linear": 1, "chain": 2, "pipeline": 3, "binary_tree": 4, "binomial": 5,
               "rabenseifner": 7},
}

# [OMPI41] coll_tuned_decision_fixed.c, commutative operations; sizes as the function
# computes them: allreduce, bcast and reduce the whole message, alltoall, allgather and
# gather the bytes per rank.
OPENMPI_RULES: dict[str, list[Rule]] = {
    "allreduce": [
        (4, [(8, 4), (4096, 3), (8192, 4), (16384, 3), (65536, 4), (262144, 5)], 6),
        (8, [(16, 4), (8192, 3)], 6),
        (16, [(8192, 3)], 6),
        (32, [(64, 5), (4096, 3)], 6),
        (64, [(128, 5)], 6),
        (128, [(262144, 3)], 6),
        (256, [(131072, 2), (262144, 3)], 6),
        (512, [(4096, 2)], 6),
        (2048, [(2048, 2), (16384, 3)], 6),
        (4096, [(2048, 2), (4096, 5), (16384, 3)], 6),
        (INF, [(2048, 2), (16384, 5), (32768, 3)], 6),
    ],
    "alltoall": [
        (3, [(2, 2), (4, 5), (16, 2), (64, 5), (256, 2), (4096, 5), (32768, 2), (262144, 4),
             (1048576, 5)], 2),
        (8, [(8192, 4), (16384, 1), (65536, 4), (524288, 1), (1048576, 2)], 1),
        (16, [(262144, 4)], 1),
        (32, [(4, 4), (512, 3), (8192, 4), (32768, 1), (262144, 4), (524288, 1)], 4),
        (64, [(512, 3), (524288, 1)], 4),
        (128, [(1024, 3), (2048, 1), (4096, 4), (262144, 1)], 2),
        (256, [(1024, 3), (2048, 4), (262144, 1)], 2),
        (512, [(1024, 3), (8192, 4), (32768, 1)], 2),
        (1024, [(512, 3), (8192, 4), (16384, 1), (131072, 4), (262144, 1)], 2),
        (2048, [(512, 3), (1024, 4), (2048, 1), (16384, 4), (262144, 1)], 4),
        (4096, [(1024, 3), (4096, 4), (8192, 1), (131072, 4)], 1),
        (INF, [(2048, 3), (8192, 4), (16384, 1), (32768, 4), (65536, 1)], 4),
    ],
    "allgather": [
        (3, [], 6),
        (32, [], 3),
        (64, [(1024, 3), (65536, 5)], 4),
        (128, [(512, 3), (65536, 5)], 4),
        (256, [(512, 3), (131072, 5), (524288, 4), (1048576, 5)], 4),
        (512, [(32, 3), (128, 2), (1024, 3), (131072, 5), (524288, 4), (1048576, 5)], 4),
        (1024, [(64, 3), (256, 2), (2048, 3)], 5),
        (2048, [(4, 3), (8, 2), (16, 3), (32, 2), (256, 3), (512, 2), (4096, 3)], 5),
        (4096, [(32, 2), (128, 3), (512, 2), (4096, 3)], 5),
        (INF, [(2, 3), (8, 2), (16, 3), (512, 2), (4096, 3)], 5),
    ],
    "gather": [
        (4, [(2, 3), (4, 1), (32768, 2), (65536, 1), (131072, 2)], 3),
        (8, [(1024, 2), (8192, 1), (32768, 2), (262144, 1)], 3),
        (256, [], 2),
        (512, [(2048, 2), (8192, 1)], 2),
        (INF, [], 2),
    ],
    "bcast": [
        (4, [(32, 3), (256, 5), (512, 3), (1024, 7), (32768, 1), (131072, 5), (262144, 2),
             (524288, 1), (1048576, 6)], 5),
        (8, [(64, 5), (128, 6), (2048, 5), (8192, 6), (1048576, 1)], 2),
        (16, [(8, 7), (64, 5), (4096, 7), (16384, 5), (32768, 6)], 1),
        (32, [(4096, 7), (1048576, 6)], 8),
        (64, [(2048, 6)], 7),
        (128, [], 7),
        (256, [(2, 6), (16384, 5), (32768, 1), (65536, 5)], 7),
        (1024, [(16384, 7), (32768, 4)], 7),
        (2048, [(524288, 7)], 8),
        (4096, [(262144, 7)], 8),
        (INF, [(8192, 7), (16384, 5), (262144, 7)], 8),
    ],
    "reduce": [
        (4, [(8, 7), (16, 4), (32, 3), (262144, 1), (524288, 3), (1048576, 2)], 3),
        (8, [(4096, 4), (65536, 2), (262144, 5), (524288, 1), (1048576, 5)], 1),
        (16, [(8192, 4)], 5),
        (32, [(4096, 4)], 5),
        (256, [], 5),
        (512, [(8192, 5), (16384, 6)], 5),
        (2048, [], 5),
        (4096, [(512, 5), (1024, 6), (8192, 5), (16384, 6)], 5),
        (INF, [(16, 5), (32, 6), (1024, 5), (2048, 6), (8192, 5), (16384, 6)], 5),
    ],
}


def _rule(rules: list[Rule], p: int, size: float) -> int:
    for below, steps, above in rules:
        if p < below:
            for limit, alg in steps:
                if size < limit:
                    return alg
            return above
    raise AssertionError("the last rule covers every communicator size")


def _pow2_floor(p: int) -> int:
    return 1 << (p.bit_length() - 1)


def openmpi_fallback(collective: str, algorithm: str, size: float, p: int) -> str:
    """What Open MPI's coll/base actually runs when asked for `algorithm` ([OMPI41]
    coll_base_allreduce.c, coll_base_allgather.c): Rabenseifner with fewer elements than the
    largest power of two <= p runs basic linear; ring with fewer elements than ranks runs
    recursive doubling; recursive-doubling allgather on a non-power of two runs Bruck,
    neighbor exchange on an odd count the ring."""
    count = size / ELEMENT_BYTES
    if collective == "allreduce":
        if algorithm == "rabenseifner" and count < _pow2_floor(p):
            return "linear"
        if algorithm == "ring" and count < p:
            return "recursive_doubling"
    if collective == "allgather":
        if algorithm == "recursive_doubling" and p & (p - 1):
            return "bruck"
        if algorithm == "neighbor_exchange" and p % 2:
            return "ring"
    return algorithm


def openmpi_choice(collective: str, p: int, size: float) -> tuple[str, int]:
    """(model algorithm, Open MPI's number) Open MPI 4.1 runs by default."""
    num = _rule(OPENMPI_RULES[collective], p, size)
    name = OPENMPI_ALGORITHMS[collective][num]
    return openmpi_fallback(collective, name, size, p), num


# [OMPI40]: what Open MPI 3.0-4.0 runs (coll/tuned's fixed rules before 4.1 replaced them with
# the table above). Formulas of (ranks, bytes), not tables; the thresholds are the source's.
# Its segmented trees and pipelines (bcast, reduce) are modelled unsegmented, as trees.py
# models every tree, and linear_sync (gather above 6,000 B a rank) as linear.
OPENMPI40_APPROX = {
    ("allreduce", "ring_segmented"): "the segmented ring (messages above ranks x 1 MiB) is "
                                     "modelled as the ring",
    ("allreduce", "nonoverlapping"): "reduce then bcast (no more elements than ranks) modelled "
                                     "as binomial reduce + binomial bcast",
    ("bcast", "segmented"): "split binary trees and pipelines with 1-128 KiB segments "
                            "modelled unsegmented",
    ("reduce", "segmented"): "binomial, binary and pipeline trees with 1-64 KiB segments "
                             "modelled unsegmented",
}


def openmpi40_choice(collective: str, p: int, size: float) -> str:
    """The algorithm Open MPI 3.0-4.0 runs by default ([OMPI40]); `size` as OPENMPI_RULES
    measures it (the whole message, or the bytes per rank for alltoall, allgather, gather)."""
    count = size / ELEMENT_BYTES
    if collective == "allreduce":
        if size < 10000:
            return "recursive_doubling"
        return "ring" if count > p else "binomial"
    if collective == "alltoall":
        if p == 2:
            return "pairwise"
        if size < 200 and p > 12:
            return "bruck"
        return "linear" if size < 3000 else "pairwise"
    if collective == "allgather":
        if p == 2:
            return "recursive_doubling"
        if size * p < 50000:
            return "recursive_doubling" if p & (p - 1) == 0 else "bruck"
        return "ring" if p % 2 else "neighbor_exchange"
    if collective == "bcast":
        if size < 2048 or count <= 1:
            return "binomial"
        if size < 370728:
            return "split_binary_tree"
        if p < 1.6134e-6 * size + 2.1102 or p >= 13:
            return "pipeline"
        return "split_binary_tree"
    if collective == "reduce":
        if p < 8 and size < 512:
            return "linear"
        if (p < 8 and size < 20480) or size < 2048 or count <= 1:
            return "binomial"
        if p > 0.6016 / 1024 * size + 1.3496:
            return "binomial"
        if p > 0.0410 / 1024 * size + 9.7128:
            return "pipeline"
        if p > 0.0422 / 1024 * size + 1.1614:
            return "binary_tree"
        return "pipeline"
    if collective == "gather":
        if size > 6000:
            return "linear"
        if p > 60 or (p > 10 and size < 1024):
            return "binomial"
        return "linear"
    raise KeyError(collective)


def mpich_choice(collective: str, p: int, ppn: int, size: float) -> str:
    """The algorithm MPICH 4.0 runs by default ([MPICH40]). With several ranks per node the
    ch4 layer composes allreduce, reduce and small bcasts hierarchically (node leaders, then
    shared memory), modelled as `hierarchical`; otherwise the MPIR generic rules."""
    count = size / ELEMENT_BYTES
    pof2 = _pow2_floor(p)
    is_pow2 = pof2 == p
    if collective == "allreduce":
        if ppn > 1:
            return "hierarchical"
        if size <= 8 or count < pof2:
            return "recursive_doubling"
        return "rabenseifner"
    if collective == "reduce":
        if ppn > 1:
            return "hierarchical"
        if size <= 2048 or count < pof2:
            return "binomial"
        return "rabenseifner"
    if collective == "bcast":
        if ppn > 1 and (p < 8 or size < 12288):
            return "hierarchical"
        if p < 8 or size <= 12288:
            return "binomial"
        if is_pow2 and size <= 524288:
            return "scatter_rd_allgather"
        return "scatter_allgather"
    if collective == "alltoall":
        if p < 8:
            return "linear" if size <= 32768 else "pairwise"
        if size <= 256:
            return "bruck"
        return "linear" if size <= 32768 else "pairwise"
    if collective == "allgather":
        total = size * p
        if is_pow2:
            return "recursive_doubling" if total < 524288 else "ring"
        return "bruck" if total < 81920 else "ring"
    if collective == "gather":
        return "binomial"
    raise KeyError(collective)


# "openmpi-4.0": Open MPI before 4.1 (3.0-4.0.x), whose fixed rules differ ([OMPI40])
MPI_LIBRARIES = ("openmpi", "openmpi-4.0", "mpich")


def openmpi_rules(version: str | None) -> str:
    """Which Open MPI rules a run's recorded version ran (host provenance: the first line of
    `mpirun --version`, "mpirun (Open MPI) 4.0.3"): "openmpi-4.0" for 3.x and 4.0.x,
    "openmpi" for 4.1 on and when it is not known."""
    m = re.search(r"(\d+)\.(\d+)", version or "")
    if m is None:
        return "openmpi"
    major, minor = int(m[1]), int(m[2])
    return "openmpi-4.0" if major >= 3 and (major, minor) < (4, 1) else "openmpi"


def library_choice(library: str, collective: str, p: int, ppn: int, size: float) -> str:
    if library == "openmpi":
        return openmpi_choice(collective, p, size)[0]
    if library == "openmpi-4.0":
        return openmpi40_choice(collective, p, size)
    if library == "mpich":
        return mpich_choice(collective, p, ppn, size)
    raise KeyError(library)
