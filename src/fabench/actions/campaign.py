"""Campaigns and single benchmarks: spec -> plan -> launch -> store, then the summary."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..congestion.session import config_from_block, run_congestion
from ..congestion.victims import phase_of
from ..errors import FabenchError
from ..host.provenance import host_provenance
from ..plan.plan import PlannedRun, make_plan
from ..run.runner import RunOutcome, execute_plan, execute_run
from ..schedulers import Scheduler
from ..store.database import Store
from ..util.progress import Progress

if TYPE_CHECKING:  # annotations only (plan/plan.py says why)
    from ..plan.spec import CampaignSpec


@dataclass
class CampaignResult:
    campaign_id: int
    store_path: Path
    outcomes: list[RunOutcome]
    skipped_done: int
    status: str


def run_campaign(spec: CampaignSpec, scheduler: Scheduler, store_path: Path, *,
                 quick: bool = False, resume: bool = False, resume_id: int | None = None,
                 show_progress: bool = True) -> CampaignResult:
    plan = make_plan(spec, quick=quick)
    if not plan:
        raise FabenchError("the spec expands to no runs (check ranks against the kernels: "
                           "e.g. mbw_mr needs an even number of ranks)")
    with Store(store_path) as store:  # a damaged store is refused before anything else
        for p in plan:  # every run's ranks against the slots, before the first run starts
            scheduler.check_ranks(p)
        done: set[str] = set()
        if resume or resume_id is not None:
            cid = store.unfinished_campaign(id=resume_id, name=spec.name).id
            store.reopen_campaign(cid)
            done = store.completed_keys(cid)
        else:
            cid = store.begin_campaign(spec.name, {**spec.model_dump(by_alias=True),
                                                   "quick": quick}, host_provenance())
        todo = [p for p in plan if p.key not in done]
        progress = Progress(len(todo), stream=sys.stderr, enabled=show_progress)
        try:
            outcomes = execute_plan(store, scheduler, plan, cid, progress, done)
            if spec.congestion is not None and not any(
                    phase_of(str(r.settings.get("label") or "")) for r in store.runs(cid)):
                # After the spec's runs, on the same launcher; on --resume only if the
                # congestion test has no run yet (its rounds are one measurement).
                say = (lambda m: print(f"fabench: {m}", file=sys.stderr)) \
                    if show_progress else None
                outcomes += run_congestion(
                    config_from_block(spec.congestion, spec.mpi, spec.timeout_s), scheduler,
                    store, cid, say).runs
        except KeyboardInterrupt:
            store.end_campaign(cid, "interrupted")
            raise
        failed = sum(o.status == "failed" for o in outcomes)
        status = "finished" if not failed else f"finished with {failed} failed"
        store.end_campaign(cid, status)
    return CampaignResult(cid, store_path, outcomes, len(plan) - len(todo), status)


def run_bench(planned: PlannedRun, scheduler: Scheduler, store_path: Path) -> RunOutcome:
    """One run as its own campaign in the store."""
    spec: dict[str, Any] = {"bench": planned.record()}
    with Store(store_path) as store:
        cid = store.begin_campaign(f"bench {planned.kernel.name}", spec, host_provenance())
        try:
            outcome = execute_run(store, scheduler, planned, cid)
        except KeyboardInterrupt:
            store.end_campaign(cid, "interrupted")
            raise
        store.end_campaign(cid, "finished" if outcome.status == "ok" else outcome.status)
    return outcome
