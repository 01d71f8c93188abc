"""The smpirun command line for one kernel on a generated platform."""

from __future__ import annotations

import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import FabenchError
from ..model.collectives import ALGORITHMS, EXCHANGE_ALGORITHMS
from ..model.fabric import Fabric
from ..model.limits import check_sim_scale
from ..model.topology import TopologySpec
from .platform import Platform, hostfile_lines, make_platform, smpi_factors, write_platform
from .rss import MARKER

FLAVOUR = "simgrid"  # the kernels built with smpicc live in _native/simgrid/
# From here on SMPI's shared buffers are folded per 2 MiB block, not per page: at 1024 ranks
# and more SimGrid 3.32 failed with "Could not map folded virtual memory" under Linux's
# default vm.max_map_count of 65530 (measured; docs/model.md, "SimGrid").
SHARED_MALLOC_RANKS = 1024

# The kernel's helper collectives (names gathered at start, times reduced at the end, a barrier
# per iteration) are pinned too: SMPI's default selector is not meant for performance and
# O(P^2)-flow choices blow up at scale.
HELPER_ALGORITHMS = {"barrier": "ompi_recursivedoubling", "reduce": "binomial",
                     "gather": "ompi_binomial"}
# What a kernel's collective runs when no algorithm is asked: the O(P)/O(log P)-message ones.
DEFAULT_ALGORITHM = {"allreduce": "rabenseifner", "alltoall": "pairwise",
                     "allgather": "recursive_doubling", "gather": "binomial",
                     "bcast": "binomial", "reduce": "binomial"}

_MEM_RE = re.compile(re.escape(MARKER) + r" peak_rss_anon_kb=(\d+) wall_s=([0-9.]+)")


@dataclass
class SimSetup:
    """The simulated platform and settings. The topology is `spec` when given (three-level
    trees, tapering, dragonflies: `fabench sim`), else the plain fields below."""

    fabric: Fabric
    topology: str = "fat-tree"
    nodes: int = 2
    ppn: int = 1
    hosts_per_leaf: int = 24
    oversubscription: float = 1.0
    dims: tuple[int, ...] | None = None
    algorithm: str | None = None  # the model's name (ring, pairwise, ...)
    cores: int | None = None  # cores the emulated nodes shared (None: a core per rank)
    extra_cfg: dict[str, str] = field(default_factory=dict)
    spec: TopologySpec | None = None
    # a platform written out beforehand (sim/faulty.py: a tree with faults); None: generated
    # from the fields above
    platform: Platform | None = None

    def __post_init__(self) -> None:
        check_sim_scale(self.nodes, self.ppn, self.cores)
        if self.spec is not None:
            self.topology = self.spec.kind
            self.hosts_per_leaf = self.spec.hosts_per_leaf

    @property
    def ranks(self) -> int:
        return self.nodes * self.ppn

    def topology_spec(self) -> TopologySpec:
        if self.spec is not None:
            return self.spec
        return TopologySpec(self.topology, self.hosts_per_leaf, (self.oversubscription,),
                            dims=self.dims)


def smpi_algorithm(collective: str, algorithm: str | None) -> tuple[str, str]:
    """(model name, SMPI name) of the algorithm a simulated collective is pinned to."""
    algos = ALGORITHMS.get(collective)
    if algos is None:
        raise FabenchError(f"no collective {collective!r} to pin")
    name = algorithm or DEFAULT_ALGORITHM[collective]
    if name not in algos:
        raise FabenchError(f"no algorithm {name!r} for {collective}; known: {', '.join(algos)}")
    smpi = algos[name][1]
    if smpi is None:
        raise FabenchError(f"{collective} {name}: SimGrid switches cannot compute; use "
                           "`fabench model predict` for in-network reduction")
    return name, smpi


def smpirun_path() -> str:
    path = shutil.which("smpirun")
    if not path:
        raise FabenchError("smpirun not found: install libsimgrid-dev (Debian) or SimGrid")
    return path


def build_command(setup: SimSetup, exe: Path, kernel_name: str, kernel_args: list[str],
                  workdir: Path) -> tuple[list[str], dict[str, str], list[str]]:
    """(argv, configuration used, notes). The command runs under the RssAnon sampler."""
    platform = setup.platform or make_platform(setup.fabric, setup.topology_spec(),
                                               setup.nodes)
    hosts = hostfile_lines(platform, setup.nodes, setup.ppn)
    pxml, hfile = write_platform(platform, hosts, workdir)
    cfg: dict[str, str] = {
        # only the network is simulated: host code between MPI calls takes no simulated time,
        # so the results do not depend on how loaded this host is while simulating
        "smpi/simulate-computation": "no",
        "smpi/host-speed": "1Gf",
        "network/crosstraffic": "0",
    }
    short = kernel_name.partition(".")[2]
    algo = smpi_algorithm(short, setup.algorithm)[0] if short in ALGORITHMS else None
    cfg.update(smpi_factors(setup.fabric, setup.ranks, setup.cores,
                            exchanges=(short, algo) in EXCHANGE_ALGORITHMS))
    # The calibrated segments already hold the protocols' costs (the rendezvous handshake is
    # in the large segments' alpha). SMPI's own rendezvous path skips smpi/os, which would
    # drop that cost, so every message is sent "detached" (eager) in the simulator.
    cfg["smpi/send-is-detached-thresh"] = str(1 << 30)
    cfg.update({f"smpi/{k}": v for k, v in HELPER_ALGORITHMS.items()})
    notes = [f"simulated: SimGrid SMPI on {platform.description}, fabric {setup.fabric.name}"]
    if short in ALGORITHMS:
        name, smpi = smpi_algorithm(short, setup.algorithm)
        cfg[f"smpi/{short}"] = smpi
        notes.append(f"{short} algorithm pinned: {name} (smpi/{short}:{smpi})")
    if setup.ranks >= SHARED_MALLOC_RANKS:
        # one mapping per block instead of per page: stays under vm.max_map_count (65530)
        cfg["smpi/shared-malloc-blocksize"] = str(1 << 21)
    cfg.update(setup.extra_cfg)
    argv = [sys.executable, "-m", "fabench.sim.rss", "--", smpirun_path(),
            "-np", str(setup.ranks), "-platform", str(pxml), "-hostfile", str(hfile),
            *[f"--cfg={k}:{v}" for k, v in cfg.items()],
            # SMPI copies the kernel once per rank for dlopen privatization, into /tmp by
            # default: a signal between copy and unlink left the copies there. The work dir is
            # fabench's own (swept however fabench ends) and, a path, is not part of `cfg`.
            f"--cfg=smpi/tmpdir:{workdir}", str(exe), *kernel_args]
    return argv, cfg, notes


def parse_memory(stderr: str) -> dict[str, float]:
    m = _MEM_RE.search(stderr)
    if not m:
        return {}
    return {"peak_rss_anon_mb": int(m.group(1)) / 1024, "wall_s": float(m.group(2))}
