"""`fabench accept`: the spec's checks in order, each with its verdict, within a budget.

Order: doctor, node consistency (HPL per node), the matrix, point to point, collectives, the
rest; within a stage, the spec's order. A check runs only when the checks it depends on
passed: its own `after:`, every doctor check, and for the fabric checks (matrix, p2p,
collectives) every node-consistency check, since a fabric compared over inconsistent nodes
measures the nodes (document 000 runs node consistency first for that reason).
"""

from __future__ import annotations

import time
from pathlib import Path

from ..errors import FabenchError
from ..host.provenance import host_provenance
from ..schedulers import Scheduler
from ..store.database import Store
from .baseline import attach_baseline
from .checks import Stage
from .measure import MEASURES, MORE, Context, Say, _say
from .spec import AcceptSpec, PlannedCheck
from .verdict import (
    ERROR,
    INCONCLUSIVE,
    PASS,
    SKIPPED,
    Acceptance,
    Measured,
    Verdict,
    decide,
)

MAX_EXTRA_RUNS = 20  # per check: a threshold exactly at the true value never decides
_FABRIC = (Stage.MATRIX, Stage.P2P, Stage.COLLECTIVES)


def dependencies(pc: PlannedCheck, before: list[PlannedCheck]) -> list[str]:
    deps = list(pc.after)
    for o in before:
        gates = (o.check.stage == Stage.DOCTOR and pc.check.stage != Stage.DOCTOR) or \
            (o.check.stage == Stage.NODES and pc.check.stage in _FABRIC)
        if gates:
            deps.append(o.ident)
    return list(dict.fromkeys(deps))


def _measure(ctx: Context, pc: PlannedCheck, more: bool) -> tuple[Measured | None, str, str]:
    try:
        m = MEASURES[pc.check.kind](ctx, pc, more)
    except FabenchError as exc:
        return None, ERROR, str(exc)
    return m, decide(pc.check, m), ""


def run_acceptance(spec: AcceptSpec, scheduler: Scheduler, store_path: Path, *,
                   budget_s: float | None = None, baseline: int | None = None,
                   say: Say = _say) -> Acceptance:
    t0 = time.monotonic()
    budget = spec.model.budget_s if budget_s is None else budget_s
    with Store(store_path) as store:
        if baseline is not None:
            store.campaign(baseline)  # an unknown campaign is refused before anything runs
        cid = store.begin_campaign(spec.name, {"accept": spec.model.model_dump(),
                                               "source": spec.source,
                                               "on": scheduler.describe()}, host_provenance())
    ctx = Context(spec, scheduler, store_path, cid, say)
    verdicts: dict[str, Verdict] = {}
    status = "interrupted"
    try:
        done: list[PlannedCheck] = []
        for pc in spec.checks:
            deps = dependencies(pc, done)
            blocked = [d for d in deps if verdicts[d].status != PASS]
            done.append(pc)
            if blocked:
                verdicts[pc.ident] = Verdict(pc.check, SKIPPED, reason="depends on " + "; ".join(
                    f"{d!r} ({verdicts[d].status})" for d in blocked))
                continue
            say(f"accept: {pc.check.text}")
            t = time.monotonic()
            m, st, why = _measure(ctx, pc, False)
            verdicts[pc.ident] = Verdict(pc.check, st, m, why, time.monotonic() - t)
        spent = _spend_budget(ctx, spec, verdicts, budget)
        status = "finished"
    finally:
        with Store(store_path) as store:
            store.end_campaign(cid, status)
    acc = Acceptance(spec.name, spec.source, cid, scheduler.describe(),
                     [verdicts[pc.ident] for pc in spec.checks], budget, spent,
                     time.monotonic() - t0, baseline)
    if baseline is not None:
        attach_baseline(acc, store_path, baseline)
    return acc


def _spend_budget(ctx: Context, spec: AcceptSpec, verdicts: dict[str, Verdict],
                  budget: float) -> float:
    """Measure inconclusive checks again, pooled with what they had, while the budget lasts:
    the check whose last measurement was cheapest first; a check stops when it is decided,
    or when its next measurement would not end within the budget."""
    spent = 0.0
    extra: dict[str, int] = {}
    while True:
        open_ = [pc for pc in spec.checks if verdicts[pc.ident].status == INCONCLUSIVE
                 and pc.check.kind in MORE and extra.get(pc.ident, 0) < MAX_EXTRA_RUNS
                 and spent + verdicts[pc.ident].wall_s <= budget]
        if not open_:
            return spent
        pc = min(open_, key=lambda p: verdicts[p.ident].wall_s)
        ctx.say(f"accept: {pc.check.text}: inconclusive, measuring more "
                f"({budget - spent:.0f} s of the budget left)")
        t = time.monotonic()
        m, st, why = _measure(ctx, pc, True)
        took = time.monotonic() - t
        spent += took
        extra[pc.ident] = extra.get(pc.ident, 0) + 1
        verdicts[pc.ident] = Verdict(pc.check, st, m, why, took, first=INCONCLUSIVE,
                                     extra_runs=extra[pc.ident])
        # checks sharing the measurement (the same sweep at another size) see the new runs
        for o in spec.checks:
            v = verdicts[o.ident]
            if o is not pc and v.status == INCONCLUSIVE and o.check.kind == pc.check.kind:
                m2, st2, why2 = _measure(ctx, o, False)
                verdicts[o.ident] = Verdict(
                    o.check, st2, m2, why2, v.wall_s, first=INCONCLUSIVE,
                    extra_runs=max(0, (m2.runs if m2 else 0) - spec.model.repeats))
