"""Victims: the small jobs whose slowdown under congestion is measured (GPCNeT's victims).

An 8 B ping-pong (latency), a small allreduce (8 B, over every victim host) and 1 MiB
bandwidth, each an existing MPI kernel run through the plan/scheduler/starter pipeline on the
victim hosts only. Every sample is a time (us per iteration; for bandwidth, per window of
messages), so the impact factor is one formula for all: congested / isolated of the time, at
the median and at P99. For bandwidth that is isolated bandwidth / congested bandwidth, as
GPCNeT reports it (greater than 1: worse under congestion).
"""

from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import FabenchError
from ..plan.plan import PlannedRun, plan_run, settings_for

# The label a victim run carries in the store: `congestion:isolated` or
# `congestion:PATTERN`; the report finds the runs of a congestion test by it.
LABEL_PREFIX = "congestion:"
ISOLATED = "isolated"


@dataclass(frozen=True)
class Victim:
    """One victim metric: which kernel, at which size, on how many victim hosts."""

    name: str
    kernel: str
    size: int
    all_hosts: bool  # the allreduce runs over every victim host; the others on the first two
    description: str


VICTIMS: dict[str, Victim] = {v.name: v for v in (
    Victim("latency", "mpi.latency", 8, False, "8 B ping-pong latency"),
    Victim("allreduce", "mpi.allreduce", 8, True, "8 B allreduce"),
    Victim("bandwidth", "mpi.bw", 1 << 20, False, "1 MiB bandwidth"),
)}


@dataclass(frozen=True)
class VictimSettings:
    """How long each victim measures per phase."""

    iterations: int = 1000  # latency and allreduce
    bw_iterations: int = 10  # bandwidth: windows of bw_window messages
    bw_window: int = 4  # 1 MiB x 4 in flight: ~0.2 s per sample at 200 Mbit/s
    mpi: str = "openmpi"
    transport: str = "tcp"
    timeout_s: float = 600.0

    def __post_init__(self) -> None:
        for name in ("iterations", "bw_iterations", "bw_window"):
            if getattr(self, name) < 1:
                raise FabenchError(f"--{name.replace('_', '-')} must be >= 1")


def label(phase: str) -> str:
    return LABEL_PREFIX + phase


def phase_of(run_label: str) -> str | None:
    """`isolated` or the aggressor's pattern for a congestion run's label; None otherwise."""
    return run_label[len(LABEL_PREFIX):] if run_label.startswith(LABEL_PREFIX) else None


def victim_of(kernel: str, size: int) -> Victim | None:
    return next((v for v in VICTIMS.values() if v.kernel == kernel and v.size == size), None)


def victim_runs(names: list[str], hosts: list[str], phase: str, repeat: int,
                s: VictimSettings, env: Mapping[str, str] | None = None,
                ) -> list[tuple[PlannedRun, list[str]]]:
    """The victims of one phase of one round, each with the hosts it runs on and `env` for
    its ranks."""
    out = []
    for name in names:
        v = VICTIMS.get(name)
        if v is None:
            raise FabenchError(f"--victim {name!r}: one of {', '.join(VICTIMS)}")
        on = hosts if v.all_hosts else hosts[:2]
        base = plan_run(v.kernel, transport=s.transport, ranks=len(on), mpi=s.mpi)
        bw = v.name == "bandwidth"
        settings = settings_for(base.kernel, sizes=str(v.size),
                                iterations=s.bw_iterations if bw else s.iterations,
                                warmup=1 if bw else max(1, s.iterations // 10),
                                window=s.bw_window if bw else None)
        out.append((plan_run(v.kernel, transport=s.transport, ranks=len(on), mpi=s.mpi,
                             repeat=repeat, settings=settings, timeout_s=s.timeout_s,
                             label=label(phase), env=env), on))
    return out
