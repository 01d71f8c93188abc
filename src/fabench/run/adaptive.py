"""Adaptive repetition: run more batches until each size's median is known precisely enough.

A run that asks for `precision` P (e.g. 0.01: the 95 % CI half-width of the median at most 1 %
of the median) and a `budget_s` first runs as usual. Then, while some sizes miss P and the
budget (counted from the start of the run) allows another batch as long as the last one, the
runner launches the kernel again for just those sizes, with the iteration count each had in the
first batch, and appends the new samples to the stored results. Separate launches on purpose:
they also sample launch-to-launch variation (placement, memory layout), which one long loop
would hide. Each result records the target, what was reached, whether it was met and how many
batches it took; a run that ran out of budget carries a flag, so the report warns. Every
batch's own notes, flags and selected transport are kept with the run; a batch whose library
selected another transport than the first batch's is not pooled (its samples would measure
another path): the run is flagged and refinement stops.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..metrics import Metric
from ..plan.plan import PlannedRun
from ..records import ResultRecord
from ..schedulers import Scheduler
from ..store.database import Store
from ..util.stats import median_ci

MAX_BATCHES = 20


@dataclass
class SizeState:
    size: int
    iterations: int
    precision: float = float("inf")
    batches: int = 1


def relative_precision(rec: ResultRecord, metric: Metric) -> float:
    """95 % CI half-width of the median over the median (inf when undefined)."""
    vals = metric.values(rec.times, rec.bytes_per_sample, rec.messages_per_sample)
    ci = median_ci(vals)
    med = float(np.nanmedian(vals)) if len(vals) else float("nan")
    if not ci.defined or not med:
        return float("inf")
    return ci.half_width() / abs(med)


def _holder(held: list[ResultRecord]) -> Callable[[dict[str, Any]], None]:
    """Keep a batch's results until its selected transport is known."""
    def on_record(obj: dict[str, Any]) -> None:
        if obj.get("type") == "result":
            held.append(ResultRecord.from_json(obj))
    return on_record


def refine(store: Store, scheduler: Scheduler, planned: PlannedRun, run_id: int,
           started: float, selected: str | None = None) -> dict[str, Any]:
    """Extra batches for a finished run whose first batch selected ``selected``; returns what
    happened (also written to the store)."""
    precision, budget = planned.precision, planned.budget_s
    assert precision is not None
    metric = planned.kernel.primary
    states = {r.size: SizeState(r.size, r.iterations, relative_precision(r, metric))
              for r in store.results(run_id)}
    last_batch = time.monotonic() - started
    batches = 1
    while batches < MAX_BATCHES:
        todo = [s for s in states.values() if s.precision > precision]
        elapsed = time.monotonic() - started
        if not todo or (budget is not None and elapsed + last_batch > budget):
            break
        t0 = time.monotonic()
        by_iters: dict[int, list[int]] = {}
        for s in todo:
            by_iters.setdefault(s.iterations, []).append(s.size)
        for iters, sizes in sorted(by_iters.items()):
            held: list[ResultRecord] = []
            res = scheduler.run(planned.batch(sizes, iters), _holder(held))
            tag = f"adaptive batch {batches + 1}"
            for note in res.notes:
                store.add_note(run_id, f"{tag}: {note}")
            for flag in res.flags:
                store.add_flag(run_id, f"{tag}: {flag}")
            if res.returncode != 0:
                store.add_flag(run_id, f"adaptive: batch {batches + 1} failed (exit "
                                       f"{res.returncode}); kept the samples so far")
                return _finish(store, run_id, states, precision, budget, batches, started)
            if selected and res.selected_transport and res.selected_transport != selected:
                store.add_flag(run_id, f"adaptive: batch {batches + 1} selected "
                                       f"{res.selected_transport}, the first batch {selected}; "
                                       "its samples were not pooled")
                return _finish(store, run_id, states, precision, budget, batches, started)
            for rec in held:
                store.append_samples(run_id, rec)
        batches += 1
        for rec in store.results(run_id):
            if rec.size in states and states[rec.size].precision > precision:
                states[rec.size].precision = relative_precision(rec, metric)
                states[rec.size].batches = batches
        last_batch = time.monotonic() - t0
    return _finish(store, run_id, states, precision, budget, batches, started)


def _finish(store: Store, run_id: int, states: dict[int, SizeState], precision: float,
            budget: float | None, batches: int, started: float) -> dict[str, Any]:
    met = [s for s in states.values() if s.precision <= precision]
    for s in states.values():
        store.update_result_extra(run_id, s.size, {"adaptive": {
            "target": precision, "achieved": s.precision if np.isfinite(s.precision) else None,
            "met": s.precision <= precision, "batches": s.batches}})
    spent = time.monotonic() - started
    text = (f"adaptive: {len(met)}/{len(states)} sizes reached +-{precision:.1%} in {batches} "
            f"batch(es), {spent:.0f} s" + (f" of a {budget:.0f} s budget" if budget else ""))
    store.add_note(run_id, text)
    if len(met) < len(states):
        store.add_flag(run_id, f"adaptive: precision {precision:.1%} not met at "
                               f"{len(states) - len(met)} sizes within the budget")
    return {"target": precision, "budget_s": budget, "batches": batches, "met": len(met),
            "sizes": len(states), "elapsed_s": round(spent, 1), "text": text}
