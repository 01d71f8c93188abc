"""Execute a plan: launch each run, write every result to the store as it arrives."""

import re
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import FabenchError
from ..host.probe import core_to_core
from ..host.process import cpu_snapshot, foreign_load, foreign_note
from ..host.provenance import load_snapshot, run_environment
from ..plan.plan import PlannedRun
from ..records import ResultRecord
from ..schedulers import Scheduler
from ..store.database import Store
from ..util.progress import Progress
from .adaptive import refine

SKIP_EXIT = 77  # the kernels' "cannot run here" status (automake's convention)


@dataclass
class RunOutcome:
    run_id: int
    planned: PlannedRun
    status: str  # ok, failed, skipped, interrupted
    reason: str | None = None
    selected_transport: str | None = None
    results: list[ResultRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)


# A run's closing core-to-core probe is also the next run's opening one when the next starts
# within this many seconds (a campaign's runs follow each other with only the store's writes
# between): one probe per run instead of two, 0.2-0.9 s each on a loaded 2-core host.
C2C_REUSE_S = 2.0


class _HandOff:
    """The latest core-to-core probe and when it ended (time.monotonic())."""

    last: tuple[float, dict[str, Any]] | None = None

    @classmethod
    def start(cls) -> dict[str, Any] | None:
        if cls.last is not None and time.monotonic() - cls.last[0] <= C2C_REUSE_S:
            return cls.last[1]
        return core_to_core()

    @classmethod
    def end(cls) -> dict[str, Any] | None:
        got = core_to_core()
        cls.last = (time.monotonic(), got) if got else None
        return got


# a kernel names itself by its executable (fb-tcp-latency: ...) or its kernel name
# (mpi.latency: ...), as the shared option parser does
_KERNEL_LINE = re.compile(r"^(fb-[\w.-]+|(mpi|tcp|udp|ucx|ofi|verbs)\.[a-z0-9_]+): ")


def failure_reason(stderr: str, returncode: int, errors: list[dict[str, Any]]) -> str:
    if errors and "reason" in errors[0]:  # a starter's own verdict (hpcc's residual)
        return str(errors[0]["reason"])
    if errors:
        e = errors[0]
        return (f"validation mismatch: size {e.get('size')} iteration {e.get('iteration')} "
                f"rank {e.get('rank')} offset {e.get('offset')}: expected {e.get('expected')}, "
                f"got {e.get('got')}")
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    # The kernel's own words (`mpi.NAME: --iterations wants ...`) say what to change; mpirun's
    # banner after them only that a rank failed. Theirs first, deduplicated over the ranks.
    own = list(dict.fromkeys(ln for ln in lines if _KERNEL_LINE.match(ln)))[:3]
    tail = [ln for ln in lines[-6:] if not ln.startswith("---") and ln not in own]
    return f"exit status {returncode}" + (": " + " | ".join([*own, *tail]) if own or tail
                                          else "")


def execute_run(store: Store, scheduler: Scheduler, planned: PlannedRun,
                campaign_id: int | None,
                on_result: Callable[[ResultRecord], None] | None = None,
                on_other: Callable[[int, dict[str, Any]], bool] | None = None) -> RunOutcome:
    """One run, stored as it goes. `on_other` takes the kernel's records of other types
    (mpi.matrix's `pair`) with the run's id and says whether one counts as a result."""
    scheduler.check_ranks(planned)  # before the store records a run that never starts
    run_id = store.begin_run(
        campaign_id=campaign_id, key=planned.key, kernel=planned.kernel.name,
        transport=str(planned.transport), mpi=str(planned.mpi), ranks=planned.ranks,
        launcher=scheduler.name, repeat=planned.repeat, settings=planned.record())
    c2c_start = _HandOff.start() if scheduler.ranks_here else None
    load_start = load_snapshot()
    cpu_start = cpu_snapshot()
    t_start = time.monotonic()
    outcome = RunOutcome(run_id, planned, "failed")
    pooled_rounds = False
    others = 0

    def on_record(obj: dict[str, Any]) -> None:
        nonlocal pooled_rounds, others
        if on_other is not None and obj.get("type") not in ("result", "meta", "end", "error",
                                                              "skip") and on_other(run_id, obj):
            others += 1
        if obj.get("type") == "result":
            rec = ResultRecord.from_json(obj)
            if rec.extra.get("round", 0):
                # A later sweep (--rounds): its samples join the size's stored result.
                store.append_samples(run_id, rec)
                pooled_rounds = True
            else:
                store.add_result(run_id, rec)
            outcome.results.append(rec)
            if on_result is not None:
                on_result(rec)

    try:
        res = scheduler.run(planned, on_record)
    except KeyboardInterrupt as exc:
        store.finish_run(run_id, status="interrupted", reason=str(exc) or "interrupted by the user",
                         provenance={"load_start": load_start, "load_end": load_snapshot(),
                                     **run_environment(planned.env)})
        outcome.status = "interrupted"
        raise
    except FabenchError as exc:
        store.finish_run(run_id, status="failed", reason=str(exc),
                         provenance={"load_start": load_start, "load_end": load_snapshot(),
                                     **run_environment(planned.env)})
        outcome.reason = str(exc)
        return outcome
    out = res.output
    if out.skip_reason or res.returncode == SKIP_EXIT:
        status, reason = "skipped", out.skip_reason or "kernel reported it cannot run here"
    elif res.returncode == 0 and not out.errors and (out.results or others):
        status, reason = "ok", None
    elif res.returncode == 0 and not out.results and not others:
        status, reason = "failed", "kernel produced no results"
    else:
        status, reason = "failed", failure_reason(res.stderr, res.returncode, out.errors)
    foreign = foreign_load(cpu_start)
    note = foreign_note(foreign)
    if note:
        res.notes.append(note)
    provenance = {
        "load_start": load_start, "load_end": load_snapshot(), "foreign_load": foreign,
        **({"core_to_core_start": c2c_start, "core_to_core_end": _HandOff.end()}
           if c2c_start else {}),
        # the launchers start the ranks under os.environ + what fabench set: record both
        **run_environment({**res.extra.get("env", {}), **planned.env}),
        "launcher": scheduler.describe(),
        "starter": scheduler.starter_for(planned.kernel).name,
        "elapsed_s": res.extra.get("elapsed_s"),
        # the kernel's own clock from MPI_Init to the end record: simulated under SimGrid
        "kernel_elapsed_s": (out.end or {}).get("elapsed_s"),
        **{k: v for k, v in res.extra.items() if k not in ("env", "elapsed_s")},
    }
    store.finish_run(
        run_id, status=status, reason=reason, selected_transport=res.selected_transport,
        oversubscribed=res.oversubscribed, notes=res.notes,
        command=shlex.join(res.command), stderr_tail=res.stderr[-8192:],
        kernel_meta=out.meta, provenance=provenance, flags=res.flags)
    outcome.status, outcome.reason = status, reason
    if pooled_rounds:
        outcome.results = list(store.results(run_id))  # one record per size, rounds pooled
    outcome.selected_transport, outcome.notes = res.selected_transport, res.notes
    outcome.flags = list(res.flags)
    if status == "ok" and planned.precision:
        outcome.notes.append(refine(store, scheduler, planned, run_id, t_start,
                                    res.selected_transport)["text"])
        outcome.results = list(store.results(run_id))  # with every batch's samples
    return outcome


def execute_plan(store: Store, scheduler: Scheduler, plan: list[PlannedRun], campaign_id: int,
                 progress: Progress | None = None,
                 skip_keys: set[str] | None = None) -> list[RunOutcome]:
    outcomes = []
    todo = [p for p in plan if p.key not in (skip_keys or set())]
    progress = progress or Progress(len(todo), enabled=False)
    for planned in todo:
        progress.begin(planned.label_text)
        t0 = time.monotonic()
        oc = execute_run(store, scheduler, planned, campaign_id)
        status = oc.status if oc.status != "failed" else f"FAILED ({oc.reason})"
        if oc.status == "ok" and oc.selected_transport:
            status = f"ok via {oc.selected_transport}"
        progress.end(planned.label_text, status, time.monotonic() - t0)
        outcomes.append(oc)
    progress.finish()
    return outcomes
