"""`tune ab`: baseline, apply, measure, revert, compare.

Rounds alternate the order (A B, B A, ...) so that a drift of the shared host over the
experiment falls on both sides. Every B run happens with the profile applied and every A run
with it reverted; the journal makes sure a crash in between leaves `tune revert` able to undo.
"""

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..analysis.compare import compare_selections
from ..errors import FabenchError
from ..host.leftovers import undo_if_killed, undone
from ..host.provenance import host_provenance
from ..host.target import Target
from ..plan.plan import PlannedRun
from ..run.runner import RunOutcome, execute_run
from ..schedulers import Scheduler
from ..store.database import Store
from ..util.units import format_number, format_size
from . import apply as ap
from .profiles import Profile


@dataclass
class SizeDelta:
    kernel: str
    size: int
    metric: str
    unit: str
    median_a: float
    median_b: float
    ratio: float
    ratio_low: float
    ratio_high: float
    verdict: str

    def sentence(self) -> str:
        """"tcp.bw bandwidth at 4M +38 % (+31 % to +45 %)"; beyond 2x a factor reads better
        than "-100 %"."""
        if 0.5 <= self.ratio <= 2:
            pct = (self.ratio - 1) * 100
            lo, hi = (self.ratio_low - 1) * 100, (self.ratio_high - 1) * 100
            change = f"{pct:+.0f} % ({lo:+.0f} % to {hi:+.0f} %)"
        elif self.ratio > 2:
            change = f"x{self.ratio:.3g} (x{self.ratio_low:.3g} to x{self.ratio_high:.3g})"
        else:
            change = (f"/{1 / self.ratio:.3g} (/{1 / self.ratio_high:.3g} to "
                      f"/{1 / self.ratio_low:.3g})")
        return (f"{self.kernel} {self.metric} at {format_size(self.size)} {change}: "
                f"{format_number(self.median_a)} -> {format_number(self.median_b)} {self.unit}, "
                f"{self.verdict}")


@dataclass
class AbResult:
    campaign_id: int
    runs_a: dict[str, list[int]] = field(default_factory=dict)  # plain key -> run ids
    runs_b: dict[str, list[int]] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)
    deltas: list[SizeDelta] = field(default_factory=list)
    summaries: list[str] = field(default_factory=list)
    changes: int = 0


def variant_b(p: PlannedRun, profile: Profile) -> PlannedRun:
    """The run with the profile's runtime settings; the label keeps A and B apart in the store
    (the comparison groups runs by configuration, and the label is part of it)."""
    extra = profile.kernel_args()
    if extra and p.kernel.family != "tcp":
        raise FabenchError(f"profile {profile.name} sets socket options, which only fabench's "
                           f"tcp.* kernels take ({p.kernel.name} does not)")
    return replace(p, settings=replace(p.settings, extra=(*p.settings.extra, *extra)),
                   env={**p.env, **profile.runtime_env()}, label=profile.name)


def run_ab(profile: Profile, targets: list[Target], planned: list[PlannedRun],
           launcher: Scheduler, store_path: Path, journal_path: Path, *, rounds: int = 3,
           ifaces: list[str] | None = None, tolerance: float = 0.03,
           on_progress: Callable[[str], None] | None = None) -> AbResult:
    if rounds < 1:
        raise FabenchError("--rounds must be >= 1")
    say = on_progress or (lambda _m: None)
    sides = [(replace(p, label="baseline"), variant_b(p, profile)) for p in planned]
    # Fail before measuring anything if the profile cannot be applied here.
    plan = ap.make_plan(profile, targets, ifaces=ifaces)
    if ap.jr.load(journal_path) is not None:
        raise FabenchError(f"a tuning journal is pending ({journal_path}): "
                           "`fabench tune revert` first")
    with Store(store_path) as store:
        cid = store.begin_campaign(f"tune ab {profile.name}", {
            "profile": profile.name, "rounds": rounds,
            "targets": [t.name for t in targets],
            "changes": [f"{c.tgt.name}: {c.label}" for c in plan.changes],
            "runs": [a.record() for a, _ in sides]}, host_provenance())
        result = AbResult(cid, changes=len(plan.changes))
        try:
            for r in range(rounds):
                order = ("A", "B") if r % 2 == 0 else ("B", "A")
                for side in order:
                    if side == "B":
                        _measure_b(store, launcher, cid, sides, profile, targets, ifaces,
                                   journal_path, result, r, say)
                    else:
                        for a, _ in sides:
                            _record(result, "A", a, execute_run(store, launcher, a, cid), r,
                                    say)
        except KeyboardInterrupt:
            store.end_campaign(cid, "interrupted")
            raise
        store.end_campaign(cid, "finished" if not result.failed else
                           f"finished with {len(result.failed)} failed")
        _compare(store, result, tolerance)
    return result


def _measure_b(store: Store, launcher: Scheduler, cid: int,
               sides: list[tuple[PlannedRun, PlannedRun]],
               profile: Profile, targets: list[Target], ifaces: list[str] | None,
               journal_path: Path, result: AbResult, rnd: int, say: Callable[[str], None]
               ) -> None:
    plan = ap.make_plan(profile, targets, ifaces=ifaces)
    # A SIGKILL cannot be caught: the supervisor (or the next start) reverts instead.
    reg = undo_if_killed(["tune", "revert", "--journal", str(journal_path.resolve())])
    try:
        if plan.changes:
            ap.apply(plan, journal_path)
            say(f"round {rnd + 1}: applied {len(plan.changes)} change(s)")
        for _, b in sides:
            _record(result, "B", b, execute_run(store, launcher, b, cid), rnd, say)
    finally:
        rep = ap.revert(journal_path)
        undone(reg)
        if rep.failed:
            raise FabenchError("revert after the B runs failed: " + "; ".join(rep.failed)
                               + f" (journal kept: {journal_path})")
        if plan.changes:
            say(f"round {rnd + 1}: reverted")


def _record(result: AbResult, side: str, p: PlannedRun, oc: RunOutcome, rnd: int,
            say: Callable[[str], None]) -> None:
    key = f"{p.kernel.name} {p.transport} np={p.ranks}"
    if oc.status != "ok":
        result.failed.append(f"{side} round {rnd + 1} {key}: {oc.status} ({oc.reason})")
        say(f"round {rnd + 1} {side} {key}: {oc.status} ({oc.reason})")
        return
    (result.runs_a if side == "A" else result.runs_b).setdefault(key, []).append(oc.run_id)
    say(f"round {rnd + 1} {side} {key}: run {oc.run_id} ok")


def _compare(store: Store, result: AbResult, tolerance: float) -> None:
    for key, ids_a in result.runs_a.items():
        ids_b = result.runs_b.get(key)
        if not ids_b:
            continue
        for d, sentence in compare_runs(store, ids_a, ids_b, tolerance):
            result.deltas.extend(d)
            result.summaries.append(sentence)


def compare_runs(store: Store, ids_a: list[int], ids_b: list[int], tolerance: float
                 ) -> list[tuple[list[SizeDelta], str]]:
    """The statistics module's comparison (difference and ratio of medians, bootstrap CIs,
    verdict within a noise band) of the A runs against the B runs."""
    out = []
    for c in compare_selections(store, [f"run:{i}" for i in ids_a],
                                [f"run:{i}" for i in ids_b], tolerance=tolerance):
        deltas = [SizeDelta(c.kernel, s.size, c.metric.name, c.metric.unit, s.two.median_a,
                            s.two.median_b, s.two.ratio, s.two.ratio_ci.low,
                            s.two.ratio_ci.high, s.verdict) for s in c.sizes]
        out.append((deltas, c.sentence()))
    return out


def deltas_json(result: AbResult) -> list[dict[str, Any]]:
    return [vars(d) | {"sentence": d.sentence()} for d in result.deltas]
