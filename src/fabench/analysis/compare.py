"""A against B: per message size, the difference and ratio of medians with their confidence
intervals, a verdict only where the interval says so, and one sentence for the whole curve.

"No change" is a band, not a point: +-tolerance (default 5 %) around A, widened to twice the
relative spread of the run medians when a side has repeats. Two runs of one configuration on
this shared host differ by 1-5 % at their medians (measured), while the bootstrap interval of a
difference of two 500-sample medians is a fraction of a percent wide: it measures noise within
a run, not between runs. So:
- `better`/`worse`: the ratio's interval lies wholly outside the band (and, when both sides
  have repeats, every run of B lies on the same side of every run of A);
- `equal`: the interval lies wholly inside the band ("equal within noise");
- `inconclusive`: the interval straddles an edge of the band;
- `no-ci`: neither side has spread (two imported aggregates): no verdict.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..choices import DEFAULT_TOLERANCE
from ..errors import FabenchError
from ..host.probe import sides_differ
from ..metrics import Better, Metric
from ..store.database import RunRow, Store
from ..util.stats import Interval, TwoSample, compare_medians, compare_medians_runs
from ..util.textable import Col, header, row
from ..util.units import format_number
from .selection import (
    Series,
    group_series,
    load_results,
    run_configuration,
    run_metrics,
    run_source,
    select_runs,
)

PAIR_FIELDS = ("transport", "mpi", "env", "label", "source", "kernel_settings")


@dataclass
class SizeComparison:
    size: int
    two: TwoSample
    verdict: str  # better, worse, equal, inconclusive, no-ci
    runs_a: int
    runs_b: int
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        t = self.two
        return {"size": self.size, "median_a": t.median_a, "median_b": t.median_b,
                "diff": t.diff, "diff_low": t.diff_ci.low, "diff_high": t.diff_ci.high,
                "ratio": t.ratio, "ratio_low": t.ratio_ci.low, "ratio_high": t.ratio_ci.high,
                "ci_method": t.diff_ci.method,
                "ci_point_outside": t.diff_ci.point_outside or t.ratio_ci.point_outside,
                "verdict": self.verdict,
                "runs_a": self.runs_a, "runs_b": self.runs_b, "note": self.note}


@dataclass
class Comparison:
    kernel: str
    metric: Metric
    a: Series
    b: Series
    tolerance: float
    sizes: list[SizeComparison] = field(default_factory=list)

    @property
    def name_a(self) -> str:
        return self.a.label

    @property
    def name_b(self) -> str:
        return self.b.label

    def sentence(self) -> str:
        return summary_sentence(self)

    @property
    def host_note(self) -> str:
        """Non-empty when A and B were measured on a host in different states."""
        return sides_differ((r.provenance for r in self.a.runs),
                            (r.provenance for r in self.b.runs))

    def as_dict(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "metric": self.metric.name, "unit": self.metric.unit,
                "better": self.metric.better.value, "a": self.name_a, "b": self.name_b,
                "runs_a": [r.id for r in self.a.runs], "runs_b": [r.id for r in self.b.runs],
                "tolerance": self.tolerance, "summary": self.sentence(),
                "host_note": self.host_note,
                "sizes": [s.as_dict() for s in self.sizes]}


def _verdict(two: TwoSample, metric: Metric, tol: float, meds_a: list[float],
             meds_b: list[float]) -> tuple[str, str]:
    ci = two.ratio_ci
    if not ci.defined:
        return "no-ci", "no spread on either side (aggregates only): no interval"
    # "equal" needs the interval inside the user's band; "different" needs it outside the band
    # widened by the repeats' spread; anything between is no call.
    band = max(tol, 2 * repeat_spread(meds_a), 2 * repeat_spread(meds_b))
    if ci.low >= 1 - tol and ci.high <= 1 + tol:
        return "equal", ""
    if ci.low > 1 + band or ci.high < 1 / (1 + band):
        higher = ci.low > 1 + band
        if len(meds_a) >= 2 and len(meds_b) >= 2:
            separated = (min(meds_b) > max(meds_a)) if higher else (max(meds_b) < min(meds_a))
            if not separated:
                return "inconclusive", "repeats overlap"
        good = higher == (metric.better is Better.HIGHER)
        return ("better" if good else "worse"), ""
    return "inconclusive", ""


def repeat_spread(medians: list[float]) -> float:
    """(max - min) / median of one side's run medians; 0 with fewer than two runs."""
    if len(medians) < 2:
        return 0.0
    mid = sorted(medians)[len(medians) // 2]
    return (max(medians) - min(medians)) / abs(mid) if mid else 0.0


def compare_series(a: Series, b: Series, tolerance: float = DEFAULT_TOLERANCE) -> Comparison:
    comp = Comparison(a.kernel, a.metric, a, b, tolerance)
    for pa in a.points:
        pb = b.at(pa.size)
        if pb is None:
            continue
        comp.sizes.append(compare_samples(pa.size, pa.per_run, pb.per_run, a.metric, tolerance,
                                          pa.run_medians, pb.run_medians))
    return comp


def compare_samples(size: int, per_run_a: Sequence[Sequence[float]],
                    per_run_b: Sequence[Sequence[float]], metric: Metric, tolerance: float,
                    meds_a: list[float], meds_b: list[float]) -> SizeComparison:
    """One size of B against A: samples in runs (or any clusters a two-stage bootstrap should
    draw first), judged with the run medians `meds_a`/`meds_b` (empty: no repeats, the band
    is the tolerance alone)."""
    # With repeats on either side the interval must carry the run-to-run spread.
    if max(len(per_run_a), len(per_run_b)) >= 2:
        two = compare_medians_runs(per_run_a, per_run_b)
    else:
        two = compare_medians(_pooled(per_run_a), _pooled(per_run_b))
    sc = judge_two(size, two, metric, tolerance, meds_a, meds_b)
    if "one side fixed" in two.diff_ci.method:
        sc.note = "; ".join(x for x in (sc.note, "one side is a single aggregate (held fixed)")
                            if x)
    return sc


def _pooled(per_run: Sequence[Sequence[float]]) -> np.ndarray:
    return np.concatenate([np.asarray(r, dtype=float) for r in per_run]) if per_run else \
        np.array([])


def judge_two(size: int, two: TwoSample, metric: Metric, tolerance: float,
              meds_a: list[float], meds_b: list[float]) -> SizeComparison:
    """The verdict on a two-sample difference (any TwoSample: medians, or ratios such as an
    impact factor before and after), with the band widened by the repeats' spread."""
    verdict, note = _verdict(two, metric, tolerance, meds_a, meds_b)
    band = max(tolerance, 2 * repeat_spread(meds_a), 2 * repeat_spread(meds_b))
    if band > tolerance:
        note = "; ".join(x for x in (note, f"no-change band widened to +-{band:.1%} by "
                                           "the repeats' spread") if x)
    return SizeComparison(size, two, verdict, max(1, len(meds_a)), max(1, len(meds_b)), note)


def _pair_key(s: Series, fields: list[str]) -> tuple[Any, ...]:
    run = s.runs[0]
    vals: list[Any] = [s.kernel, s.metric.name, run.ranks]
    for f in fields:
        if f == "env":
            vals.append(tuple(sorted(run.settings.get("env", {}).items())))
        elif f == "label":
            vals.append(str(run.settings.get("label") or ""))
        elif f == "source":
            vals.append(run_source(run))
        elif f == "kernel_settings":
            vals.append(run_configuration(run))
        else:
            vals.append(getattr(run, f))
    return tuple(vals)


def pair_series(side_a: list[Series], side_b: list[Series]) -> list[tuple[Series, Series]]:
    """Pair A's configurations with B's: same kernel, metric and ranks, and the same value of
    every field that varies *within* a side (comparing two campaigns pairs shm with shm and
    tcp with tcp; comparing `shm` with `tcp` pairs across the transport)."""
    varying = []
    for f in PAIR_FIELDS:
        for side in (side_a, side_b):
            by_kernel: dict[tuple[str, int], set[Any]] = {}
            for s in side:
                k = (s.kernel, s.runs[0].ranks)
                by_kernel.setdefault(k, set()).add(_pair_key(s, [f])[-1])
            if any(len(v) > 1 for v in by_kernel.values()):
                varying.append(f)
                break
    index = {}
    for s in side_b:
        index.setdefault(_pair_key(s, varying), []).append(s)
    pairs = []
    for s in side_a:
        for t in index.get(_pair_key(s, varying), []):
            if s.runs[0].id != t.runs[0].id:
                pairs.append((s, t))
    return pairs


def compare_selections(store: Store, a: list[str], b: list[str], *, metric: str | None = None,
                       kernel: str | None = None,
                       tolerance: float = DEFAULT_TOLERANCE) -> list[Comparison]:
    runs_a = select_runs(store, a, kernel)
    runs_b = select_runs(store, b, kernel)
    if not runs_a or not runs_b:
        raise FabenchError("nothing to compare: " + ("A" if not runs_a else "B") +
                           " selects no finished run" + (f" of {kernel}" if kernel else ""))
    results = load_results(store, {r.id: r for r in runs_a + runs_b}.values())
    side_a = group_series(runs_a, results, metric)
    side_b = group_series(runs_b, results, metric)
    if metric is None:  # by default each kernel's primary metric only
        side_a = [s for s in side_a if s.metric == _primary(s)]
        side_b = [s for s in side_b if s.metric == _primary(s)]
    pairs = pair_series(side_a, side_b)
    if not pairs:
        ka = sorted({s.kernel for s in side_a})
        kb = sorted({s.kernel for s in side_b})
        raise FabenchError(f"no matching configurations: A has {', '.join(ka)}; B has "
                           f"{', '.join(kb)} (same kernel, ranks and metric needed)")
    return [compare_series(x, y, tolerance) for x, y in pairs]


def _primary(s: Series) -> Metric:
    return run_metrics(s.runs[0])[0]


# -- words ----------------------------------------------------------------------------------
_WORDS = {"latency": ("slower", "faster"), "bandwidth": ("lower bandwidth", "higher bandwidth"),
          "message_rate": ("lower message rate", "higher message rate")}


def size_text(n: int) -> str:
    for suffix, mult in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= mult and n % mult == 0:
            return f"{n // mult} {suffix}"
    return f"{n} B"


def _span(sizes: list[int]) -> str:
    if len(sizes) == 1:
        return f"at {size_text(sizes[0])}"
    return f"from {size_text(sizes[0])} to {size_text(sizes[-1])}"


def short_names(a: str, b: str) -> tuple[str, str]:
    """The words that tell two configuration labels apart ('tcp [ob1/tcp]' vs 'shm ...')."""
    ta, tb = a.split(), b.split()
    da = [w for w in ta if w not in tb]
    db = [w for w in tb if w not in ta]
    if da and db:
        return " ".join(da), " ".join(db)
    # One side adds a setting to the other ('... hugepages' against '...'): name it by it.
    if da or db:
        words = " ".join(da or db)
        return (words, f"without {words}") if da else (f"without {words}", words)
    return a, b


def _amount(sc: SizeComparison, unit: str) -> str:
    d, ci = abs(sc.two.diff), sc.two.diff_ci
    lo, hi = sorted((abs(ci.low), abs(ci.high)))
    r = sc.two.ratio
    ratio = f"{r:.2f}x" if r < 10 else f"{r:.1f}x"
    return f"{format_number(d)} {unit} ({format_number(lo)}–{format_number(hi)}, {ratio})"


# A size range is told as one regime while its ratios, or its differences, stay within this
# factor of each other: a reader can act on "small messages 6-9x slower" or "a fixed 5 us
# more", not on a span from 6x to 60x.
REGIME_SPREAD = 2.0


def _spread(values: list[float]) -> float:
    lo, hi = min(values), max(values)
    return hi / lo if lo > 0 else float("inf")


def _regimes(scs: list[SizeComparison]) -> list[list[SizeComparison]]:
    """Consecutive sizes of one verdict, cut where both the ratio and the difference move into
    another regime (a constant overhead is one regime even while its ratio falls)."""
    out: list[list[SizeComparison]] = []
    for sc in scs:
        if out:
            grp = [*out[-1], sc]
            if min(_spread([x.two.ratio for x in grp]),
                   _spread([abs(x.two.diff) for x in grp])) <= REGIME_SPREAD:
                out[-1].append(sc)
                continue
        out.append([sc])
    return out


def _range_amount(scs: list[SizeComparison], unit: str) -> str:
    """'by 3.6 us (3.5-3.8, 12x)' for one size; for a range the stable quantity first:
    'by 5.9x-9.2x (3.5 to 4.3 us)' or 'by 5.29 to 5.36 us (6.21x-13.4x)'."""
    if len(scs) == 1:
        return f"by {_amount(scs[0], unit)}"
    rs = sorted(x.two.ratio for x in scs)
    ds = sorted(abs(x.two.diff) for x in scs)

    def fx(r: float) -> str:
        return f"{r:.2f}x" if r < 10 else f"{r:.1f}x"

    ratios = f"{fx(rs[0])}-{fx(rs[-1])}"
    diffs = f"{format_number(ds[0])} to {format_number(ds[-1])} {unit}"
    if _spread(ds) < _spread(rs):
        return f"by {diffs} ({ratios})"
    return f"by {ratios} ({diffs})"


def summary_sentence(c: Comparison) -> str:
    """'tcp vs shm (mpi.latency): slower by 4.8 us (4.6–5.0, 12x) at 1 B up to ... from 1 B to
    8 KiB; equal within noise (3%) from 1 MiB to 4 MiB; inconclusive at 16 KiB'."""
    na, nb = short_names(c.name_a, c.name_b)
    if not c.sizes:
        return f"{nb} vs {na}: no message size in common"
    worse, better = _WORDS.get(c.metric.name, ("worse", "better"))
    segments: list[tuple[str, list[SizeComparison]]] = []
    for sc in c.sizes:
        if segments and segments[-1][0] == sc.verdict:
            segments[-1][1].append(sc)
        else:
            segments.append((sc.verdict, [sc]))
    parts = []
    for verdict, scs in segments:
        sizes = [s.size for s in scs]
        if verdict in ("better", "worse"):
            word = better if verdict == "better" else worse
            for rng in _regimes(scs):
                parts.append(f"{word} {_range_amount(rng, c.metric.unit)} "
                             f"{_span([s.size for s in rng])}")
        elif verdict == "equal":
            parts.append(f"equal within noise ({c.tolerance:.0%}) {_span(sizes)}")
        elif verdict == "no-ci":
            parts.append(f"no interval (aggregates only) {_span(sizes)}")
        else:
            parts.append(f"inconclusive {_span(sizes)}")
    return f"{nb} vs {na} ({c.kernel}, {c.metric.name}): " + "; ".join(parts)


_COMPARE_COLUMNS = (Col("Size", 9), Col("A median", 11), Col("B median", 11), Col("B-A", 10),
                    Col("95% CI", 23), Col("B/A", 7), Col("95% CI", 17))


def _on(runs: Sequence[RunRow]) -> str:
    """Where the runs ran, as their launcher described it (a testbed with its rate, MTU and
    impairments): a number from a rate-limited link must say so wherever it is shown."""
    places = list(dict.fromkeys(str(r.provenance.get("launcher") or r.launcher) for r in runs))
    return f" on {'; '.join(places)}" if places else ""


def comparison_table(c: Comparison) -> list[str]:
    u = c.metric.unit
    lines = [f"# {c.kernel} {c.metric.name} [{u}, {c.metric.better.value} is better]",
             f"# A: {c.name_a} (runs {', '.join(str(r.id) for r in c.a.runs)}){_on(c.a.runs)}",
             f"# B: {c.name_b} (runs {', '.join(str(r.id) for r in c.b.runs)}){_on(c.b.runs)}",
             header(_COMPARE_COLUMNS, "  verdict")]
    for sc in c.sizes:
        t = sc.two
        nums = (format_number(v) for v in (t.median_a, t.median_b, t.diff))
        cells = [size_text(sc.size), *nums,
                 _ci_text(t.diff_ci, 10), f"{t.ratio:.3f}", _ci_text(t.ratio_ci, 7, ratio=True)]
        lines.append(row(_COMPARE_COLUMNS, cells, f"  {sc.verdict}"
                         + (f" ({sc.note})" if sc.note else "")))
    lines.append(f"# {c.sentence()}")
    if c.host_note:
        lines.append(f"# caution: {c.host_note}")
    return lines


def _ci_text(ci: Interval, width: int, ratio: bool = False) -> str:
    if not ci.defined:
        return "-"
    if ratio:
        return f"[{ci.low:.3f}, {ci.high:.3f}]"
    return f"[{format_number(ci.low)}, {format_number(ci.high)}]"
