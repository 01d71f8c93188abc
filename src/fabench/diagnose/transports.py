"""`fabench diagnose transports`: is the library choosing its best path, per message size?

1. Sweep every path that exists for the placement (paths.py): latency and bandwidth per size,
   through the normal plan -> scheduler -> runner path, every run stored; rounds interleave the
   paths so a drift of the host falls on all of them.
2. Read what the library chose for the path that forces nothing (``auto``): the run's own
   selection report (ep_cfg lanes, ob1's BTL per peer) and, per size, the library's protocol
   report (libchoice.py).
3. Per size: the chosen path, the best measured path, and the loss (ratio of medians with its
   bootstrap interval and verdict from fabench.analysis.compare).
4. Recommend (recommend.py) and prove (prove.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..analysis.compare import DEFAULT_TOLERANCE, compare_series
from ..analysis.selection import Series, group_series, load_results
from ..host.provenance import host_provenance
from ..kernels import get_kernel
from ..metrics import Better, Metric
from ..mpi.onnode import FLAG as NIC_FLAG
from ..plan.plan import PlannedRun, plan_run, settings_for
from ..run.runner import execute_run
from ..schedulers import DirectScheduler, Scheduler
from ..store.database import Store
from ..util.units import format_number, format_size
from .libchoice import LibraryChoice, ob1_choice, ucx_choice
from .paths import Capabilities, Placement, SweepPath

KERNELS = ("mpi.latency", "mpi.bw")
Say = Callable[[str], None]


@dataclass
class PathRuns:
    """One path's runs and what the library reported for them."""

    path: SweepPath
    run_ids: dict[str, list[int]] = field(default_factory=dict)  # kernel -> ok runs
    selected: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    choice: LibraryChoice | None = None

    @property
    def on_nic(self) -> bool:
        return any(f.startswith(NIC_FLAG) for f in self.flags)

    @property
    def label(self) -> str:
        sel = "+".join(self.selected) or "?"
        return f"{self.path.name} [{sel}]"


@dataclass
class PathPoint:
    median: float
    low: float
    high: float


@dataclass
class SizeRow:
    """One size of one kernel: every path's median, the library's choice, the best, the loss."""

    kernel: str
    metric: Metric
    size: int
    mpi: str
    default: str  # the path that forces nothing
    chosen: str  # what the library does at this size (its own report)
    best: str
    points: dict[str, PathPoint]
    loss: float  # how many times worse the chosen path is than the best (>= 1)
    loss_low: float
    loss_high: float
    verdict: str  # compare's verdict of the chosen path against the best

    @property
    def loses(self) -> bool:
        return self.verdict == "worse"

    def records(self, flagged: dict[str, bool]) -> list[dict[str, Any]]:
        out = []
        for name, p in self.points.items():
            out.append({
                "type": "path", "kernel": self.kernel, "metric": self.metric.name,
                "unit": self.metric.unit, "better": self.metric.better.value, "mpi": self.mpi,
                "size": self.size, "path": name, "median": p.median, "ci_low": p.low,
                "ci_high": p.high, "default": name == self.default,
                "intra_node_over_nic": flagged.get(name, False),
                "chosen": self.chosen, "best": self.best, "loss": self.loss,
                "loss_low": self.loss_low, "loss_high": self.loss_high,
                "verdict": self.verdict})
        return out


@dataclass
class Diagnosis:
    placement: Placement
    where: str
    campaign_id: int
    store_path: Path
    caps: Capabilities
    paths: list[PathRuns]
    rows: list[SizeRow] = field(default_factory=list)

    def by_name(self, name: str) -> PathRuns:
        return next(p for p in self.paths if p.path.name == name)

    @property
    def flagged(self) -> dict[str, bool]:
        return {p.path.name: p.on_nic for p in self.paths}


# -- measuring ----------------------------------------------------------------------------------
def _planned(path: SweepPath, kernel: str, rnd: int, sizes: str | None,
             iterations: int | None, quick: bool, timeout_s: float) -> PlannedRun:
    k = get_kernel(kernel)
    return plan_run(kernel, transport=path.transport, ranks=2, mpi=path.mpi, repeat=rnd,
                    settings=settings_for(k, sizes=sizes, iterations=iterations, quick=quick),
                    env=path.env_dict, timeout_s=timeout_s, label=path.name)


def sweep(store: Store, scheduler: Scheduler, paths: Sequence[SweepPath], cid: int, *,
          rounds: int, sizes: str | None, iterations: int | None, quick: bool,
          timeout_s: float, say: Say) -> list[PathRuns]:
    """Every path x kernel, ``rounds`` times; each round walks the paths in a rotated order."""
    out = [PathRuns(p) for p in paths]
    for rnd in range(rounds):
        shift = rnd % len(out)
        order = out[shift:] + out[:shift]
        for pr in order:
            for kernel in KERNELS:
                planned = _planned(pr.path, kernel, rnd, sizes, iterations, quick, timeout_s)
                oc = execute_run(store, scheduler, planned, cid)
                what = f"round {rnd + 1}/{rounds} {pr.path.name} {kernel}"
                if oc.status != "ok":
                    pr.failures.append(f"{kernel} round {rnd + 1}: {oc.status}: {oc.reason}")
                    say(f"{what}: {oc.status} ({(oc.reason or '')[:160]})")
                    continue
                pr.run_ids.setdefault(kernel, []).append(oc.run_id)
                if oc.selected_transport and oc.selected_transport not in pr.selected:
                    pr.selected.append(oc.selected_transport)
                for f in oc.flags:
                    if f not in pr.flags:
                        pr.flags.append(f)
                nic = " FLAG intra-node over the NIC" if any(
                    f.startswith(NIC_FLAG) for f in oc.flags) else ""
                say(f"{what}: run {oc.run_id} via {oc.selected_transport}{nic}")
    return out


def library_choice(pr: PathRuns, env: dict[str, str], peer: str,
                   prefix: Sequence[str]) -> LibraryChoice | None:
    """The library's per-size report for what the path's runs selected."""
    sel = pr.selected[0] if pr.selected else ""
    if sel.startswith("ob1/"):
        btls = sel.split("/", 1)[1].split("+")
        btl = "vader" if "vader" in btls and peer == "intra" else btls[-1]
        return ob1_choice(btl, env, prefix)
    if sel.startswith(("ucx/", "ch4:ucx/")):
        features = "t" if pr.path.mpi == "openmpi" else "tr"
        return ucx_choice(env, peer, features, prefix)
    return None


def run_env(scheduler: Scheduler, planned: PlannedRun) -> tuple[dict[str, str], tuple[str, ...]]:
    """The steering environment of a run's ranks (the flavour's translation of the transport,
    the scheduler's own variables, the run's), and how to run a command on its first host."""
    env = dict(planned.mpi.flavour().direct_launch_env(planned.transport))
    prefix: tuple[str, ...] = ()
    if isinstance(scheduler, DirectScheduler):
        alloc = scheduler.allocation(planned)
        env.update(alloc.extra_env)
        prefix = alloc.execs[alloc.placed[0].name].prefix
    env.update(planned.env)
    return env, prefix


def same_as_default(default: PathRuns, cand: PathRuns) -> bool:
    """The library's own choice forced explicitly: same selection, same per-size report. A
    difference from the default is then the run-to-run spread, or a setting the library's
    report does not show (the table says which paths these are)."""
    if cand.selected != default.selected:
        return False
    if default.choice is None or cand.choice is None:
        return default.choice is cand.choice
    return default.choice.bands == cand.choice.bands


# -- analysis -----------------------------------------------------------------------------------
def _series(store: Store, ids: list[int], metric: Metric) -> Series | None:
    runs = [store.run(i) for i in ids]
    runs = [r for r in runs if r.status == "ok"]
    if not runs:
        return None
    found = group_series(runs, load_results(store, runs), metric.name)
    return found[0] if found else None


def _better(metric: Metric, a: float, b: float) -> bool:
    return a < b if metric.better is Better.LOWER else a > b


def analyse(store: Store, diag: Diagnosis, tolerance: float = DEFAULT_TOLERANCE) -> None:
    """Fill ``diag.rows``: per MPI flavour, kernel and size."""
    for default in [p for p in diag.paths if p.path.default]:
        same = [p for p in diag.paths if p.path.mpi == default.path.mpi]
        for kernel in KERNELS:
            metric = get_kernel(kernel).primary
            series = {p.path.name: s for p in same
                      if (s := _series(store, p.run_ids.get(kernel, []), metric))}
            base = series.get(default.path.name)
            if base is None:
                continue
            for point in base.points:
                size = point.size
                pts = {n: PathPoint(e.summary.median, e.ci.low, e.ci.high)
                       for n, s in series.items() if (e := s.at(size)) is not None}
                best = default.path.name
                for n, p in pts.items():
                    if _better(metric, p.median, pts[best].median):
                        best = n
                loss, lo, hi, verdict = 1.0, 1.0, 1.0, "best"
                if best != default.path.name:
                    comp = compare_series(series[best], base, tolerance)
                    sc = next((c for c in comp.sizes if c.size == size), None)
                    if sc is not None:
                        r, ci = sc.two.ratio, sc.two.ratio_ci
                        if metric.better is Better.LOWER:
                            loss, lo, hi = r, ci.low, ci.high
                        else:
                            loss, lo, hi = 1 / r, 1 / ci.high, 1 / ci.low
                        verdict = sc.verdict
                band = default.choice.at(size) if default.choice else None
                chosen = (f"{'+'.join(default.selected) or '?'}: {band.text()}" if band
                          else "+".join(default.selected) or "?")
                diag.rows.append(SizeRow(kernel, metric, size, default.path.mpi,
                                         default.path.name, chosen, best, pts, loss, lo, hi,
                                         verdict))


def run_diagnosis(scheduler: Scheduler, paths: list[SweepPath], caps: Capabilities,
                  placement: Placement, store_path: Path, *, rounds: int = 2,
                  sizes: str | None = None, iterations: int | None = None,
                  quick: bool = False, timeout_s: float = 600.0,
                  say: Say | None = None) -> Diagnosis:
    say = say or (lambda _m: None)
    with Store(store_path) as store:
        cid = store.begin_campaign(f"diagnose transports {placement}", {
            "diagnose": "transports", "placement": placement, "rounds": rounds,
            "where": scheduler.describe(),
            "paths": [{"name": p.name, "mpi": p.mpi, "transport": p.transport,
                       "env": p.env_dict, "default": p.default} for p in paths]},
            host_provenance())
        try:
            runs = sweep(store, scheduler, paths, cid, rounds=rounds, sizes=sizes,
                         iterations=iterations, quick=quick, timeout_s=timeout_s, say=say)
        except KeyboardInterrupt:
            store.end_campaign(cid, "interrupted")
            raise
        store.end_campaign(cid, "finished")
        diag = Diagnosis(placement, scheduler.describe(), cid, store_path, caps, runs)
        for pr in runs:
            if pr.run_ids:
                probe = _planned(pr.path, KERNELS[0], 0, sizes, iterations, quick, timeout_s)
                env, prefix = run_env(scheduler, probe)
                pr.choice = library_choice(pr, env, placement, prefix)
        analyse(store, diag)
    return diag


# -- words --------------------------------------------------------------------------------------
def _fmt(v: float) -> str:
    return format_number(v)


def table_lines(diag: Diagnosis) -> list[str]:
    lines = [f"# diagnose transports: {diag.placement}-node, {diag.where}",
             f"# campaign {diag.campaign_id} in {diag.store_path}"]
    for n in diag.caps.notes:
        lines.append(f"# note: {n}")
    lines.append("# paths (selected by the library, from its own report):")
    for pr in diag.paths:
        state = ("FAILED: " + pr.failures[0][:140]) if not pr.run_ids and pr.failures else \
            f"runs {','.join(str(i) for ids in pr.run_ids.values() for i in ids)}"
        default = next((d for d in diag.paths if d.path.default
                        and d.path.mpi == pr.path.mpi), None)
        noise = (" (same selection and per-size report as auto: the library's own choice, "
                 "forced)") if default and default is not pr and pr.run_ids and \
            same_as_default(default, pr) else ""
        lines.append(f"#   {pr.label:<34} {pr.path.why}; {state}{noise}")
        for f in pr.flags:
            lines.append(f"#     FLAG {f}")
        if pr.path.default and pr.choice:
            if pr.choice.error:
                lines.append(f"#     per-size report ({pr.choice.source}) failed: "
                             f"{pr.choice.error}")
            else:
                bands = "; ".join(f"{format_size(b.low)}..{_hi(b.high)}: {b.text()}"
                                  for b in pr.choice.bands)
                lines.append(f"#     library per size ({pr.choice.source}): {bands}")
    keyed: dict[tuple[str, str], list[SizeRow]] = {}
    for r in diag.rows:
        keyed.setdefault((r.mpi, r.kernel), []).append(r)
    for (mpi, kernel), rows in keyed.items():
        m = rows[0].metric
        lines.append("")
        lines.append(f"# {kernel} ({mpi}) {m.name} [{m.unit}, {m.better.value} is better]; "
                     f"loss = chosen vs best, 95% CI")
        lines.append(f"# {'size':>7}  {'chosen (auto)':>13}  {'best':>13}  {'best path':<22} "
                     f"{'loss':>6} {'95% CI':>15}  verdict   library's choice at this size")
        for r in rows:
            c, b = r.points[r.default], r.points[r.best]
            ci = f"[{r.loss_low:.2f}, {r.loss_high:.2f}]" if r.best != r.default else "-"
            verdict = "chosen is best" if r.verdict == "best" else {
                "worse": "LOSS", "equal": "equal", "inconclusive": "inconcl."}.get(
                r.verdict, r.verdict)
            lines.append(f"  {format_size(r.size):>7}  {_fmt(c.median):>13}  "
                         f"{_fmt(b.median):>13}  {r.best:<22} {r.loss:>6.2f} {ci:>15}  "
                         f"{verdict:<9} {r.chosen}")
    return lines


def full_table_lines(diag: Diagnosis) -> list[str]:
    """Every path's median per size (the measured table the recommendations come from)."""
    lines: list[str] = []
    keyed: dict[tuple[str, str], list[SizeRow]] = {}
    for r in diag.rows:
        keyed.setdefault((r.mpi, r.kernel), []).append(r)
    for (mpi, kernel), rows in keyed.items():
        names = list(dict.fromkeys(n for r in rows for n in r.points))
        m = rows[0].metric
        lines.append("")
        lines.append(f"# {kernel} ({mpi}) median {m.name} [{m.unit}] per path"
                     + ("; * = intra-node over the NIC" if any(diag.flagged.values()) else ""))
        head = "".join(f" {(n + ('*' if diag.flagged.get(n) else ''))[:13]:>13}" for n in names)
        lines.append(f"# {'size':>7}{head}")
        for r in rows:
            cells = "".join(f" {_fmt(r.points[n].median) if n in r.points else '-':>13}"
                            for n in names)
            lines.append(f"  {format_size(r.size):>7}{cells}")
    return lines


def _hi(high: int) -> str:
    return "inf" if high >= 1 << 61 else format_size(high - 1)
