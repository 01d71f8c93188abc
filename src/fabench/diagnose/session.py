"""One `diagnose transports` session: place, discover, sweep, analyse, recommend, prove."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import FabenchError
from ..plan.plan import plan_run
from ..schedulers import Scheduler
from ..store.database import Store
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
    # prove these settings (for the first of ``mpis``) instead of sweeping: an alternative
    # the sweep listed, or a recommendation from an earlier run
    prove_settings: dict[str, str] | None = None


# Without --exhaustive the diagnosis answers at a user's pace (within about 5 minutes on a
# 2-core host): one point per protocol regime instead of every power of two (eager short,
# eager, the medium copy, rendezvous, large), quick iteration counts, no threshold-moved UCX
# paths, one sweep over the paths, and the proof at 2 ranks over 2 interleaved rounds. The
# runs are short, so their count sets the time: each costs an MPI start (about 6 s apiece on
# a loaded 2-core host here, 14 paths x 2 kernels x 2 rounds + 12 of the proof estimated
# 9 minutes).
QUICK_SIZES = "8,1K,16K,256K,4M"
QUICK_AB_SIZES = "8,4K,256K"


def transports_options(exhaustive: bool, **given: Any) -> TransportsOptions:
    """The options a user's words give: what they named, the rest by --exhaustive or not
    (None: not named)."""
    named = {k: v for k, v in given.items() if v is not None}
    if exhaustive:
        return TransportsOptions(**named)
    fast: dict[str, Any] = {"quick": True, "thresholds": False, "rounds": 1, "ab_ranks": (2,),
                            "ab_rounds": 2, "ab_sizes": QUICK_AB_SIZES}
    fast["sizes"] = QUICK_SIZES
    return TransportsOptions(**{**fast, **named})


class Progress:
    """`k/N` and an estimate of the time left, from the runs so far."""

    def __init__(self, total: int, say: Callable[[str], None]) -> None:
        self.total, self.done, self.say = total, 0, say
        self.t0 = time.monotonic()

    def step(self, what: str) -> None:
        self.done += 1
        took = time.monotonic() - self.t0
        left = took / self.done * (self.total - self.done)
        self.say(f"[{self.done}/{self.total}, {took:.0f} s, about {left:.0f} s left] {what}")


@dataclass
class TransportsOutcome:
    diagnosis: Diagnosis | None
    recommendations: list[Recommendation]
    proof: Proof | None

    @property
    def exit_code(self) -> int:
        d = self.diagnosis
        if d is None:
            return 0
        default_nic = any(p.on_nic for p in d.paths if p.path.default)
        return EXIT_FLAGGED if default_nic or any(r.loses for r in d.rows) else 0

    def lines(self) -> list[str]:
        out: list[str] = []
        if self.diagnosis is not None:
            out = table_lines(self.diagnosis) + full_table_lines(self.diagnosis)
            out.append("")
        if self.diagnosis is not None and not self.recommendations:
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
        d = self.diagnosis
        for row in d.rows if d else []:
            recs += row.records(d.flagged if d else {})
        for p in d.paths if d else []:
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
    if opts.prove_settings is not None:
        rec = Recommendation(opts.mpis[0], dict(opts.prove_settings), "given",
                             why="given on the command line")
        return TransportsOutcome(None, [rec], _prove(rec, opts, placed, store_path, say))
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
    sweep_runs = len(paths) * 2 * opts.rounds
    proof_runs = opts.ab_rounds * 2 * len(opts.ab_ranks) * 3 if opts.prove else 0
    say(f"{len(paths)} paths x 2 kernels x {opts.rounds} rounds on {placed.describe()}: "
        f"{sweep_runs} runs, then {proof_runs} of the proof"
        + ("" if opts.thresholds else "; more with --exhaustive (every size, full "
           "iterations, 2 rounds, UCX thresholds moved, the proof at 2 and 4 ranks)"))
    progress = Progress(sweep_runs + proof_runs, say)
    diag = run_diagnosis(placed, paths, caps, opts.placement, store_path, rounds=opts.rounds,
                         sizes=opts.sizes, iterations=opts.iterations, quick=opts.quick,
                         timeout_s=opts.timeout_s, say=progress.step)
    with Store(store_path) as store:
        recs = recommend(store, diag, opts.tolerance)
    proof = _prove(recs[0], opts, placed, store_path, say, progress.step) \
        if opts.prove and recs else None
    return TransportsOutcome(diag, recs, proof)


def _prove(rec: Recommendation, opts: TransportsOptions, placed: Scheduler, store_path: Path,
           say: Callable[[str], None], step: Callable[[str], None] | None = None) -> Proof:
    say(f"proving: {' '.join(f'{k}={v}' for k, v in rec.settings.items())}")
    return prove(rec, placed, store_path, ranks=opts.ab_ranks, rounds=opts.ab_rounds,
                 sizes=opts.ab_sizes, iterations=opts.ab_iterations, quick=opts.quick,
                 tolerance=opts.tolerance, timeout_s=opts.timeout_s, say=step or say)
