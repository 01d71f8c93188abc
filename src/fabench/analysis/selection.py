"""Which runs a report or a comparison is about, grouped into configurations.

A selector names runs in a store: `12` or `run:12` (a run), `c3` or `campaign:3` (a campaign),
`latest` (the newest campaign), `key=value[,key=value...]` filters (kernel, transport, mpi,
ranks, campaign, run, repeat, selected, launcher, label, source, env.NAME), or a bare word
taken as a transport (`shm`, `tcp`, `ucx:posix`). Runs that did not finish `ok` are left out
of the statistics (the report lists them under warnings).

A configuration is everything about a run except its repeat index, its sizes and iteration
counts: runs of one configuration (repeats, or the same bench run twice) are pooled, see
docs/statistics.md. Runs whose kernel settings differ (hugepages, window, datatype, rounds,
validate, the kernel's own options) are different configurations, and their labels say how.
"""

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ..errors import FabenchError
from ..kernels import get_kernel
from ..metrics import METRICS, Metric
from ..plan.plan import configuration_of, configuration_text
from ..records import ResultRecord
from ..store.database import RunRow, Store
from ..util.stats import (
    Interval,
    Summary,
    coefficient_of_variation,
    median_ci,
    median_ci_runs,
    summarize,
)
from ..util.units import format_size

RUN_FIELDS = ("kernel", "transport", "mpi", "ranks", "campaign", "run", "repeat", "selected",
              "launcher", "label", "source", "status")


def run_source(run: RunRow) -> str:
    """Where the samples came from: "fabench", or the tool an import read (osu, imb, ...)."""
    return run.launcher.split(":", 1)[1] if run.launcher.startswith("import:") else "fabench"


def run_label(run: RunRow) -> str:
    return str(run.settings.get("label") or "")


def run_metrics(run: RunRow) -> tuple[Metric, ...]:
    """The kernel's metrics; an imported run of a kernel this build lacks (e.g. tcp.bw from
    iperf3 before the transport kernels exist) names its metrics in its settings."""
    try:
        return get_kernel(run.kernel).metrics
    except FabenchError:
        names = run.settings.get("metrics") or ["latency"]
        return tuple(METRICS[n] for n in names if n in METRICS)


def _field(run: RunRow, name: str) -> str:
    if name == "campaign":
        return str(run.campaign_id)
    if name == "run":
        return str(run.id)
    if name == "selected":
        return run.selected_transport or ""
    if name == "label":
        return run_label(run)
    if name == "source":
        return run_source(run)
    if name.startswith("env."):
        return str(run.settings.get("env", {}).get(name[4:], ""))
    return str(getattr(run, name))


@dataclass(frozen=True)
class Selector:
    text: str
    filters: tuple[tuple[str, str], ...]
    latest: bool = False

    def matches(self, run: RunRow) -> bool:
        return all(_field(run, k) == v for k, v in self.filters)


def parse_selector(text: str) -> Selector:
    t = text.strip()
    if not t:
        raise FabenchError("empty selector")
    low = t.lower()
    if low == "latest":
        return Selector(t, (), latest=True)
    if t.isdigit():
        return Selector(t, (("run", t),))
    for prefix, key in (("run:", "run"), ("r", "run"), ("campaign:", "campaign"),
                        ("c", "campaign")):
        rest = t[len(prefix):]
        if low.startswith(prefix) and rest.isdigit():
            return Selector(t, ((key, rest),))
    if "=" not in t:
        return Selector(t, (("transport", t),))
    filters = []
    for part in t.split(","):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or not (key in RUN_FIELDS or key.startswith("env.")):
            raise FabenchError(f"selector {text!r}: {part!r} is not KEY=VALUE with KEY one of "
                               f"{', '.join(RUN_FIELDS)} or env.NAME")
        filters.append((key, value.strip()))
    return Selector(t, tuple(filters))


def select_runs(store: Store, selectors: Iterable[str], kernel: str | None = None,
                include_failed: bool = False) -> list[RunRow]:
    runs = store.runs()
    chosen: dict[int, RunRow] = {}
    for text in selectors:
        sel = parse_selector(text)
        pool = runs
        if sel.latest:
            cid = store.latest_campaign()
            pool = [r for r in runs if r.campaign_id == cid]
        hits = [r for r in pool if sel.matches(r)]
        if not hits:
            raise FabenchError(f"selector {text!r} matches no run in {store.path}")
        for r in hits:
            chosen[r.id] = r
    out = [r for r in sorted(chosen.values(), key=lambda r: r.id)
           if (kernel is None or r.kernel == kernel) and (include_failed or r.status == "ok")]
    return out


# -- configurations -------------------------------------------------------------------------
def run_configuration(run: RunRow) -> tuple[tuple[str, str], ...]:
    """What the run's kernel settings measured (hugepages, window, datatype, rounds, validate,
    the kernel's own options...), as plan.configuration_of reads them."""
    return configuration_of([str(a) for a in run.settings.get("kernel_args") or []])


def config_key(run: RunRow) -> tuple[Any, ...]:
    env = tuple(sorted(run.settings.get("env", {}).items()))
    return (run.kernel, run.transport, run.mpi, run.ranks, env, run_label(run),
            run_source(run), run_configuration(run))


def config_label(run: RunRow, with_kernel: bool = False) -> str:
    parts = [run_label(run) or run.transport]
    if run.selected_transport and run.selected_transport != run.transport:
        parts.append(f"[{run.selected_transport}]")
    parts.append(f"np={run.ranks}")
    if run_source(run) == "fabench":
        parts.append(run.mpi)
    else:
        parts.append(f"({run_source(run)})")
    env = run.settings.get("env") or {}
    parts += [f"{k}={v}" for k, v in sorted(env.items())]
    if kernel_settings := configuration_text(run_configuration(run)):
        parts.append(kernel_settings)
    return (f"{run.kernel} " if with_kernel else "") + " ".join(parts)


@dataclass
class SizeEstimate:
    """One size of one configuration: pooled samples of all its runs, and per-run medians."""

    size: int
    values: np.ndarray  # pooled metric values
    run_medians: list[float]
    per_run: list[np.ndarray] = field(default_factory=list, repr=False)

    @cached_property
    def summary(self) -> Summary:
        return summarize(self.values)

    @cached_property
    def ci(self) -> Interval:
        # With repeats the interval must carry the run-to-run spread (stats.median_ci_runs).
        if len(self.per_run) >= 2:
            return median_ci_runs(self.per_run)
        return median_ci(self.values)

    @property
    def repeat_cv(self) -> float:
        """CV of the runs' medians (NaN with fewer than two runs)."""
        return coefficient_of_variation(self.run_medians)

    def as_dict(self) -> dict[str, Any]:
        s = self.summary
        return {"size": self.size, **s.as_dict(), "ci_low": self.ci.low,
                "ci_high": self.ci.high, "ci_method": self.ci.method,
                "ci_point_outside": self.ci.point_outside,
                "confidence": self.ci.confidence, "runs": len(self.run_medians),
                "run_medians": self.run_medians, "repeat_cv": self.repeat_cv}


@dataclass
class Series:
    """One configuration, one metric: what a chart line or one side of a comparison shows."""

    kernel: str
    metric: Metric
    runs: list[RunRow]
    results: dict[int, list[ResultRecord]] = field(repr=False)

    @property
    def label(self) -> str:
        return config_label(self.runs[0])

    @property
    def sizes(self) -> list[int]:
        return sorted({r.size for rs in self.results.values() for r in rs})

    @cached_property
    def points(self) -> list[SizeEstimate]:
        out = []
        for size in self.sizes:
            per_run = []
            for run in self.runs:
                vals = [self.metric.values(r.times, r.bytes_per_sample, r.messages_per_sample)
                        for r in self.results.get(run.id, []) if r.size == size]
                if vals:
                    per_run.append(np.concatenate(vals))
            if not per_run:
                continue
            meds = [float(np.nanmedian(v)) for v in per_run if v.size]
            out.append(SizeEstimate(size, np.concatenate(per_run), meds, per_run))
        return out

    def at(self, size: int) -> SizeEstimate | None:
        for p in self.points:
            if p.size == size:
                return p
        return None

    def describe(self) -> str:
        return (f"{self.kernel} {self.label}: {len(self.runs)} run(s) "
                f"{', '.join(str(r.id) for r in self.runs)}; sizes "
                f"{format_size(self.sizes[0]) if self.sizes else '-'}.."
                f"{format_size(self.sizes[-1]) if self.sizes else '-'}")


def load_results(store: Store, runs: Iterable[RunRow]) -> dict[int, list[ResultRecord]]:
    return {r.id: list(store.results(r.id)) for r in runs}


def group_series(runs: list[RunRow], results: dict[int, list[ResultRecord]],
                 metric: str | None = None) -> list[Series]:
    """Series per (configuration, metric); all metrics of each kernel unless one is named."""
    groups: dict[tuple[Any, ...], list[RunRow]] = defaultdict(list)
    for r in runs:
        groups[config_key(r)].append(r)
    out = []
    for members in groups.values():
        for m in run_metrics(members[0]):
            if metric is None or m.name == metric:
                out.append(Series(members[0].kernel, m, members,
                                  {r.id: results.get(r.id, []) for r in members}))
    return out
