"""One `diagnose transports` session: place, discover, sweep, analyse, recommend, prove."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import FabenchError
from ..plan import plan_run
from ..schedulers import Scheduler
from ..store import Store
from .paths import Placement, discover, sweep_paths
from .placed import PlacedScheduler
from .prove import Proof, proof_lines, prove
from .recommend import Recommendation, recommend
from .transports import Diagnosis, full_table_lines, run_diagnosis, run_env, table_lines

EXIT_FLAGGED = 3  # the product's "a diagnosis flagged something"


@dataclass
class TransportsOptions:
    placement: Placement
    hosts: list[str] | None = None
    mpis: list[str] = field(default_factory=lambda: ["openmpi", "mpich"])
    only: list[str] | None = None  # path names to keep (the default is always kept)
    sizes: str | None = None
    iterations: int | None = None
    rounds: int = 2
    quick: bool = False
    thresholds: bool = True
    prove: bool = True
    ab_ranks: tuple[int, ...] = (2, 4)
    ab_rounds: int = 3
    ab_sizes: str | None = None
    ab_iterations: int | None = None
    tolerance: float = 0.03
    timeout_s: float = 600.0


@dataclass
class TransportsOutcome:
    diagnosis: Diagnosis
    recommendations: list[Recommendation]
    proof: Proof | None

    @property
    def exit_code(self) -> int:
        d = self.diagnosis
        default_nic = any(p.on_nic for p in d.paths if p.path.default)
        return EXIT_FLAGGED if default_nic or any(r.loses for r in d.rows) else 0

    def lines(self) -> list[str]:
        out = table_lines(self.diagnosis) + full_table_lines(self.diagnosis)
        out.append("")
        if not self.recommendations:
            out.append("# recommendation: none - no measured path beat the library's own "
                       "choice at any size")
        for i, r in enumerate(self.recommendations[:4]):
            out.append(f"# {'recommendation' if i == 0 else 'alternative'} ({r.mpi}): "
                       f"{r.text()}")
        if self.proof:
            out.append("")
            out += proof_lines(self.proof)
        return out

    def records(self) -> list[dict[str, Any]]:
        recs: list[dict[str, Any]] = []
        for row in self.diagnosis.rows:
            recs += row.records(self.diagnosis.flagged)
        for p in self.diagnosis.paths:
            recs.append({"type": "path_info", "path": p.path.name, "mpi": p.path.mpi,
                         "transport": p.path.transport, "env": p.path.env_dict,
                         "default": p.path.default, "selected": p.selected,
                         "flags": p.flags, "failures": p.failures,
                         "runs": p.run_ids,
                         "library_choice": p.choice.as_dict() if p.choice else None})
        recs += [r.as_dict() for r in self.recommendations]
        if self.proof:
            for n, d in self.proof.deltas:
                recs.append({"type": "ab", "ranks": n,
                             "oversubscribed": n in self.proof.oversubscribed,
                             "settings": self.proof.settings, **vars(d),
                             "sentence": d.sentence()})
        return recs


def run_transports(opts: TransportsOptions, scheduler: Scheduler, store_path: Path,
                   say: Callable[[str], None]) -> TransportsOutcome:
    placed = PlacedScheduler(scheduler, opts.hosts, opts.placement)
    if not opts.mpis:
        raise FabenchError("--mpi names no MPI flavour")
    # What exists is asked on the host the ranks run on (another node may have an HCA).
    _, prefix = run_env(placed, plan_run("mpi.latency", transport="auto", mpi=opts.mpis[0]))
    caps = discover(opts.mpis, prefix)
    if not caps.flavours:
        raise FabenchError("no MPI flavour usable here: " + "; ".join(caps.notes))
    paths = sweep_paths(caps, opts.placement, opts.thresholds)
    if opts.only:
        unknown = set(opts.only) - {p.name for p in paths}
        if unknown:
            raise FabenchError(f"--paths: {', '.join(sorted(unknown))} not among the paths "
                               f"here: {', '.join(p.name for p in paths)}")
        paths = [p for p in paths if p.default or p.name in opts.only]
    say(f"{len(paths)} paths x 2 kernels x {opts.rounds} rounds on {placed.describe()}")
    diag = run_diagnosis(placed, paths, caps, opts.placement, store_path, rounds=opts.rounds,
                         sizes=opts.sizes, iterations=opts.iterations, quick=opts.quick,
                         timeout_s=opts.timeout_s, say=say)
    with Store(store_path) as store:
        recs = recommend(store, diag, opts.tolerance)
    proof = None
    if opts.prove and recs:
        say(f"proving: {' '.join(f'{k}={v}' for k, v in recs[0].settings.items())}")
        proof = prove(recs[0], placed, store_path, ranks=opts.ab_ranks,
                      rounds=opts.ab_rounds, sizes=opts.ab_sizes,
                      iterations=opts.ab_iterations, quick=opts.quick,
                      tolerance=opts.tolerance, timeout_s=opts.timeout_s, say=say)
    return TransportsOutcome(diag, recs, proof)
