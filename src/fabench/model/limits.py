"""How large a system the model and the simulator take, refused beyond with the limit named
(`model predict -N 1e9` grew until it was killed; `sim -N 1e9` too).

The model: up to 200,000 nodes and 10 million ranks, which holds every system of the TOP500
list (the largest by nodes, Fugaku: 158,976 nodes, 7,630,848 cores; top500.org, list of
November 2023); its time grows with the node count (the topology is built node by node), so
the largest take minutes. Ranks per node up to 1,024.

The simulator: SimGrid runs every simulated rank in one process, each with its own stack and
buffers; the largest runs docs/model.md reports took 2,492 MB at 4,096 ranks (about 0.61 MB a
rank). A simulation is refused beyond 65,536 ranks, and below that where those 0.61 MB a rank
exceed the memory this host has available (MemAvailable), which would end in the kernel's
out-of-memory killer instead of a result.
"""

from pathlib import Path

from ..errors import FabenchError

MODEL_MAX_NODES = 200_000
MODEL_MAX_RANKS = 10_000_000
MAX_PPN = 1024
SIM_MAX_RANKS = 65_536
SIM_BYTES_PER_RANK = 2492e6 / 4096  # docs/model.md: 4,096 ranks, 2,492 MB RssAnon


def _positive(what: str, value: int, top: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
        raise FabenchError(f"{what} must be 1..{top:,}, got {value!r}")


# --nics-per-node: the densest nodes built carry 8-16 network links (8 GPUs, a NIC each, plus
# storage); 64 leaves room and refuses a typo's thousands.
MAX_NICS = 64


def check_nics(nics: int, flag: str = "--nics-per-node") -> None:
    _positive(flag, nics, MAX_NICS)


# --cores: the cores the emulated nodes of one machine shared; no machine has more.
MAX_CORES = 1 << 20


def check_cores(cores: int | None) -> None:
    """`--cores 0` was taken as "not given" (a core per rank) and a negative count ran."""
    if cores is not None:
        _positive("--cores", cores, MAX_CORES)


def check_model_scale(nodes: int, ppn: int, cores: int | None = None) -> None:
    _positive("--nodes", nodes, MODEL_MAX_NODES)
    _positive("--ppn", ppn, MAX_PPN)
    check_cores(cores)
    if nodes * ppn > MODEL_MAX_RANKS:
        raise FabenchError(f"{nodes:,} nodes x {ppn} ranks = {nodes * ppn:,} ranks: the model "
                           f"takes up to {MODEL_MAX_RANKS:,} ranks (every TOP500 system)")


def mem_available() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return float(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def check_sim_scale(nodes: int, ppn: int, cores: int | None = None) -> None:
    _positive("--nodes", nodes, SIM_MAX_RANKS)
    _positive("--ppn", ppn, MAX_PPN)
    check_cores(cores)
    ranks = nodes * ppn
    if ranks > SIM_MAX_RANKS:
        raise FabenchError(f"{nodes:,} nodes x {ppn} ranks = {ranks:,} ranks: the simulator "
                           f"takes up to {SIM_MAX_RANKS:,} (SimGrid runs them all in one "
                           "process; use `fabench model predict` beyond)")
    need, have = ranks * SIM_BYTES_PER_RANK, mem_available()
    if have is not None and need > have:
        raise FabenchError(f"{ranks:,} simulated ranks need about {need / 2**30:.1f} GiB "
                           f"(~{SIM_BYTES_PER_RANK / 1e6:.2f} MB a rank); this host has "
                           f"{have / 2**30:.1f} GiB available")
