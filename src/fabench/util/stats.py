"""Robust summaries of per-iteration samples, and confidence intervals for them.

The median is the headline figure: on a shared host a few preempted iterations drag the mean
(OSU's headline) by tens of percent while the median moves a few percent. Nothing is dropped:
the mean and the tail percentiles are reported beside it, and samples beyond Tukey's far-out
fences (3 x IQR outside the quartiles) are counted, not removed, so outliers stay visible.

The interval of one run's median is the exact distribution-free one: the pair of order
statistics whose binomial coverage is at least the confidence (scipy.stats.quantile_test;
Conover, Practical Nonparametric Statistics, 3rd ed., section 3.2). It needs no resampling,
holds for any distribution, and always contains the median; below six samples no pair of order
statistics reaches 95 % and the interval is undefined rather than invented. Intervals that pool
several runs, and two-sample differences and ratios, come from the percentile bootstrap
(scipy.stats.bootstrap's, computed with numpy: _bootstrap); above MAX_BOOTSTRAP_SAMPLES a side
is an evenly strided subsample of m samples and the interval's half-widths are scaled by
sqrt(m / n) around the full sample's statistic -- the m-out-of-n rescaling, valid because the
median's standard error falls as 1/sqrt(n). A percentile interval need not contain the point
estimate (with a handful of runs it can miss it): it is reported as the method gives it, with
`point_outside` set, never widened.
docs/statistics.md explains the choices and their limits (iid resampling ignores the
correlation between consecutive iterations; run-to-run variation is judged from repeats).
"""

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

CONFIDENCE = 0.95
N_RESAMPLES = 800
MAX_BOOTSTRAP_SAMPLES = 500
SEED = 20240501  # fixed: the same store gives the same report
FAR_OUT_IQR = 3.0


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    mean: float
    min: float
    max: float
    p5: float
    p95: float
    p99: float
    stdev: float
    cv: float  # stdev / mean; robust_cv below is the one used for stability checks
    robust_cv: float  # 1.4826 * MAD / median: a normal-consistent CV that ignores outliers
    outliers_low: int = 0  # samples below Q1 - 3 IQR (counted, never removed)
    outliers_high: int = 0  # samples above Q3 + 3 IQR: preemptions, interrupts

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def summarize(values: Sequence[float] | np.ndarray) -> Summary:
    a = np.asarray(values, dtype=float)
    a = a[np.isfinite(a)]
    if a.size == 0:
        nan = float("nan")
        return Summary(0, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan)
    p5, med, p95, p99 = np.percentile(a, [5, 50, 95, 99])
    mean = float(a.mean())
    stdev = float(a.std(ddof=1)) if a.size > 1 else 0.0
    mad = float(np.median(np.abs(a - med)))
    low, high = outlier_counts(a)
    return Summary(
        n=int(a.size), median=float(med), mean=mean, min=float(a.min()), max=float(a.max()),
        p5=float(p5), p95=float(p95), p99=float(p99), stdev=stdev,
        cv=stdev / mean if mean else float("nan"),
        robust_cv=1.4826 * mad / float(med) if med else float("nan"),
        outliers_low=low, outliers_high=high,
    )


def outlier_counts(values: np.ndarray) -> tuple[int, int]:
    """Samples beyond Tukey's far-out fences, (below, above). Counted for the report only."""
    if values.size < 4:
        return 0, 0
    q1, q3 = np.percentile(values, [25, 75])
    iqr = q3 - q1
    return (int(np.count_nonzero(values < q1 - FAR_OUT_IQR * iqr)),
            int(np.count_nonzero(values > q3 + FAR_OUT_IQR * iqr)))


def coefficient_of_variation(values: Sequence[float]) -> float:
    """CV across repeats (e.g. three runs' medians): sample stdev / mean."""
    a = np.asarray(values, dtype=float)
    if a.size < 2 or a.mean() == 0:
        return float("nan")
    return float(a.std(ddof=1) / a.mean())


@dataclass(frozen=True)
class Interval:
    """A confidence interval and how it was obtained."""

    low: float
    high: float
    confidence: float = CONFIDENCE
    method: str = "bootstrap-percentile"
    n: int = 0  # samples behind it (per side for two-sample intervals)
    n_boot: int = 0  # samples the bootstrap resampled (< n when subsampled)
    # the point estimate lies outside [low, high] (a percentile bootstrap over few runs):
    # shown to the reader, not hidden by widening the interval
    point_outside: bool = False

    @property
    def defined(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)

    def half_width(self) -> float:
        return (self.high - self.low) / 2


NO_INTERVAL = Interval(float("nan"), float("nan"), method="none")


def _finite(values: Sequence[float] | np.ndarray) -> np.ndarray:
    a = np.asarray(values, dtype=float)
    return a[np.isfinite(a)]


def subsample(a: np.ndarray, m: int = MAX_BOOTSTRAP_SAMPLES) -> np.ndarray:
    """At most m samples, evenly strided over the iterations (deterministic; keeps the spread
    over the run's duration, so a slow phase is neither lost nor over-weighted)."""
    if a.size <= m:
        return a
    idx = np.linspace(0, a.size - 1, m).round().astype(int)
    return a[idx]


def _median(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(samples[0], axis=axis)


def _bootstrap(data: tuple[np.ndarray, ...], statistic: Callable[..., np.ndarray],
               n_resamples: int, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """scipy.stats.bootstrap(data, statistic, method="percentile", vectorized=True,
    rng=default_rng(SEED)), computed here: the same draws (for each sample in turn, resample
    indices rng.integers(0, n, (n_resamples, n))), the same statistic and the same linear
    quantiles of its replicates, so the same interval (tests/test_stats.py holds the two
    equal). Not scipy's own: importing scipy.stats took 1.7 s of a 7.6 s two-run campaign
    here (10-18 s on a loaded host), every campaign's report paying it for these intervals."""
    rng = np.random.default_rng(SEED)
    resampled = [x[..., rng.integers(0, x.shape[-1], (n_resamples, x.shape[-1]))]
                 for x in data]
    replicates = np.asarray(statistic(*resampled, axis=-1), dtype=float)
    alpha = (1.0 - confidence) / 2
    low, high = np.quantile(replicates, [alpha, 1.0 - alpha], axis=-1)
    return np.asarray(low, dtype=float), np.asarray(high, dtype=float)


def median_ci(values: Sequence[float] | np.ndarray,
              confidence: float = CONFIDENCE) -> Interval:
    """Exact order-statistic confidence interval of the median (see the module note)."""
    a = _finite(values)
    if a.size < 2 or np.all(a == a[0]):
        if a.size >= 2:  # constant samples: the interval is the point
            return Interval(float(a[0]), float(a[0]), confidence, "degenerate", int(a.size),
                            int(a.size))
        return NO_INTERVAL
    lo_i, hi_i = _median_order_statistics(a.size, confidence)
    if lo_i < 0 or hi_i >= a.size:
        # too few samples for any pair of order statistics to reach the confidence
        return Interval(float("nan"), float("nan"), confidence, "order-statistic", int(a.size))
    x = np.sort(a)
    return Interval(float(x[lo_i]), float(x[hi_i]), confidence, "order-statistic",
                    int(a.size), int(a.size))


@functools.lru_cache(maxsize=256)
def _median_order_statistics(n: int, confidence: float) -> tuple[int, int]:
    """The 0-based ranks of the two-sided interval's order statistics, as
    scipy.stats.quantile_test(p=0.5).confidence_interval computes them (binom(n, 1/2).ppf and
    .isf at (1 - confidence) / 2). The binomial CDF is summed here from its probabilities in
    log space (each the last times (n - k + 1) / k): scipy.stats costs 1-2 s to import on a
    quiet host and 10-18 s on a loaded one, scipy.special 0.4 s, and a campaign's report asks
    for a few hundred intervals of a few sample counts (cached). tests/test_stats.py holds
    the ranks equal to scipy's for every n up to 400 and large ones."""
    tail = (1.0 - confidence) / 2
    k = np.arange(1, n + 1, dtype=float)
    logpmf = np.concatenate(([0.0], np.cumsum(np.log((n - k + 1) / k)))) - n * math.log(2.0)
    cdf = np.cumsum(np.exp(logpmf))
    low = int(np.searchsorted(cdf, tail, side="left")) - 1  # ppf: first k with CDF >= tail
    high = int(np.searchsorted(-(1.0 - cdf), -tail, side="left"))  # isf: first k, SF <= tail
    return low, high


def _percentile_interval(replicates: np.ndarray, point: float, confidence: float,
                         method: str, n: int, n_boot: int) -> Interval:
    """The percentile interval of bootstrap replicates, flagged when it misses the point."""
    alpha = (1.0 - confidence) / 2
    with np.errstate(invalid="ignore"):
        lo, hi = (float(x) for x in np.quantile(replicates, [alpha, 1.0 - alpha]))
    outside = math.isfinite(point) and not lo <= point <= hi
    return Interval(lo, hi, confidence, method, n, n_boot, outside)


def median_ci_runs(runs: Sequence[Sequence[float] | np.ndarray],
                   confidence: float = CONFIDENCE, n_resamples: int = N_RESAMPLES,
                   max_samples: int = MAX_BOOTSTRAP_SAMPLES) -> Interval:
    """Interval of the pooled median of several runs of one configuration, by a two-stage
    bootstrap: draw runs with replacement, then samples within each drawn run.

    Iterations of one run are not independent of the run (placement, memory layout, the
    neighbours' load), so resampling the pooled samples alone gives an interval far narrower
    than the run-to-run spread (measured here: three 8 B tcp runs with medians 7.30, 5.51 and
    7.38 us got 7.19-7.22 us). Drawing runs first carries that spread into the interval; with
    few runs the interval is wide, which is the honest answer.
    """
    arrs = [a for a in (_finite(r) for r in runs) if a.size]
    if len(arrs) < 2:
        return median_ci(arrs[0] if arrs else np.array([]), confidence)
    pooled = np.concatenate(arrs)
    med = float(np.median(pooled))
    stats = _two_stage_medians(arrs, np.random.default_rng(SEED), n_resamples, max_samples)
    used = int(min(a.size for a in arrs) * len(arrs))
    if np.ptp(stats) == 0 and np.ptp(pooled) == 0:
        return Interval(med, med, confidence, "degenerate", int(pooled.size), used)
    return _percentile_interval(stats, med, confidence, "two-stage-bootstrap",
                                int(pooled.size), used)


def _two_stage_medians(arrs: list[np.ndarray], rng: np.random.Generator, n_resamples: int,
                       max_samples: int) -> np.ndarray:
    """Bootstrap replicates of the pooled median: runs drawn with replacement, then samples
    within each drawn run. Each run contributes the same number of samples (an evenly strided
    subsample), so runs weigh equally."""
    k = len(arrs)
    m = max(1, min(min(a.size for a in arrs), max_samples // k))
    subs = np.stack([subsample(a, m) for a in arrs])
    which = rng.integers(0, k, (n_resamples, k))
    within = rng.integers(0, m, (n_resamples, k, m))
    return np.asarray(np.median(subs[which[..., None], within].reshape(n_resamples, -1),
                                axis=1))


@dataclass(frozen=True)
class TwoSample:
    """B against A: difference and ratio of medians with their bootstrap intervals."""

    median_a: float
    median_b: float
    diff: float  # median(B) - median(A)
    diff_ci: Interval
    ratio: float  # median(B) / median(A)
    ratio_ci: Interval


def _diff_ratio(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    ma = np.median(a, axis=axis)
    mb = np.median(b, axis=axis)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.stack([mb - ma, mb / ma])


def compare_medians(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray,
                    confidence: float = CONFIDENCE, n_resamples: int = N_RESAMPLES,
                    max_samples: int = MAX_BOOTSTRAP_SAMPLES) -> TwoSample:
    """Bootstrap of the difference (and ratio) of two medians, the sides resampled
    independently. A side with a single value (an imported aggregate) is held fixed: the
    interval then carries only the other side's uncertainty."""
    xa, xb = _finite(a), _finite(b)
    if xa.size == 0 or xb.size == 0:
        nan = float("nan")
        return TwoSample(nan, nan, nan, NO_INTERVAL, nan, NO_INTERVAL)
    ma, mb = float(np.median(xa)), float(np.median(xb))
    diff, ratio = mb - ma, (mb / ma if ma else float("nan"))
    var_a, var_b = xa.size >= 2 and np.ptp(xa) > 0, xb.size >= 2 and np.ptp(xb) > 0
    if not var_a and not var_b:
        return TwoSample(ma, mb, diff, NO_INTERVAL, ratio, NO_INTERVAL)
    sa, sb = subsample(xa, max_samples), subsample(xb, max_samples)
    if var_a and var_b:
        lo, hi = _bootstrap((sa, sb), _diff_ratio, n_resamples, confidence)
        # m-out-of-n rescaling per side: the variance of the difference is the sum of the
        # sides' variances, each shrunk by its own m/n.
        ka, kb = sa.size / xa.size, sb.size / xb.size
        scale = math.sqrt((ka * _mvar(sa) + kb * _mvar(sb)) / (_mvar(sa) + _mvar(sb)))
        sub = _diff_ratio(sa, sb)
        method = "bootstrap-percentile" + ("" if scale == 1 else "-m-of-n")
    else:
        fixed = float(np.median(xb if var_a else xa))
        varying, full = (sa, xa) if var_a else (sb, xb)
        b_varies = not var_a

        def stat(x: np.ndarray, axis: int = -1) -> np.ndarray:
            mx = np.median(x, axis=axis)
            with np.errstate(divide="ignore", invalid="ignore"):
                if b_varies:
                    return np.stack([mx - fixed, mx / fixed])
                return np.stack([fixed - mx, fixed / mx])

        lo, hi = _bootstrap((varying,), stat, n_resamples, confidence)
        scale = math.sqrt(varying.size / full.size)
        sub = stat(varying)
        method = "bootstrap-percentile, one side fixed"
    center = np.array([diff, ratio])
    low = center - (sub - lo) * scale
    high = center + (hi - sub) * scale
    n = int(min(xa.size, xb.size))
    nb = int(min(sa.size, sb.size))
    return TwoSample(ma, mb, diff, Interval(float(low[0]), float(high[0]), confidence, method,
                                            n, nb),
                     ratio, Interval(float(low[1]), float(high[1]), confidence, method, n, nb))


def compare_medians_runs(runs_a: Sequence[Sequence[float] | np.ndarray],
                         runs_b: Sequence[Sequence[float] | np.ndarray],
                         confidence: float = CONFIDENCE, n_resamples: int = N_RESAMPLES,
                         max_samples: int = MAX_BOOTSTRAP_SAMPLES) -> TwoSample:
    """Like compare_medians, for sides made of repeated runs: each side's median is
    resampled by the two-stage bootstrap (runs, then samples within runs), so the interval of
    the difference carries the run-to-run spread, not only the noise within runs. A side
    with one run is resampled within it (m-out-of-n unscaled, so slightly conservative)."""
    arrs_a = [a for a in (_finite(r) for r in runs_a) if a.size]
    arrs_b = [b for b in (_finite(r) for r in runs_b) if b.size]
    if not arrs_a or not arrs_b:
        nan = float("nan")
        return TwoSample(nan, nan, nan, NO_INTERVAL, nan, NO_INTERVAL)
    pa, pb = np.concatenate(arrs_a), np.concatenate(arrs_b)
    ma, mb = float(np.median(pa)), float(np.median(pb))
    diff, ratio = mb - ma, (mb / ma if ma else float("nan"))
    if np.ptp(pa) == 0 and np.ptp(pb) == 0:
        return TwoSample(ma, mb, diff, NO_INTERVAL, ratio, NO_INTERVAL)
    rng = np.random.default_rng(SEED)
    sa = _two_stage_medians(arrs_a, rng, n_resamples, max_samples)
    sb = _two_stage_medians(arrs_b, rng, n_resamples, max_samples)
    with np.errstate(divide="ignore", invalid="ignore"):
        diffs, ratios = sb - sa, sb / sa
    n = int(min(pa.size, pb.size))
    # samples each replicate draws per side (what n_boot means in median_ci_runs)
    nb = int(min(min(a.size for a in arrs) * len(arrs) for arrs in (arrs_a, arrs_b)))
    method = "two-stage-bootstrap"
    return TwoSample(ma, mb, diff, _percentile_interval(diffs, diff, confidence, method, n, nb),
                     ratio, _percentile_interval(ratios, ratio, confidence, method, n, nb))


def _mvar(a: np.ndarray) -> float:
    """Asymptotic variance of the median up to a constant (1 / f(m)^2 ~ IQR^2) over n."""
    q1, q3 = np.percentile(a, [25, 75])
    return float((q3 - q1) ** 2 / a.size) or 1e-300


def _two_stage_quantiles(arrs: list[np.ndarray], q: float, rng: np.random.Generator,
                         n_resamples: int, max_samples: int) -> np.ndarray:
    """Bootstrap replicates of the pooled q-quantile, runs then samples drawn (as
    _two_stage_medians, for any quantile)."""
    k = len(arrs)
    m = max(1, min(min(a.size for a in arrs), max_samples // k))
    subs = np.stack([subsample(a, m) for a in arrs])
    which = rng.integers(0, k, (n_resamples, k))
    within = rng.integers(0, m, (n_resamples, k, m))
    return np.asarray(np.quantile(subs[which[..., None], within].reshape(n_resamples, -1), q,
                                  axis=1))


@dataclass(frozen=True)
class QuantileRatio:
    """quantile_q(B) / quantile_q(A) with its interval (B against A, as TwoSample)."""

    q: float
    value_a: float
    value_b: float
    ratio: float
    ratio_ci: Interval


# A tail quantile needs more samples per replicate than a median: at P99, 500 samples leave
# five beyond it. 4000 keeps 40 at P99 per replicate at ~800 x 4000 draws (a few MB).
MAX_TAIL_BOOTSTRAP_SAMPLES = 4000


def quantile_ratio_runs(runs_a: Sequence[Sequence[float] | np.ndarray],
                        runs_b: Sequence[Sequence[float] | np.ndarray], q: float,
                        confidence: float = CONFIDENCE, n_resamples: int = N_RESAMPLES,
                        max_samples: int = MAX_TAIL_BOOTSTRAP_SAMPLES) -> QuantileRatio:
    """Ratio of the pooled q-quantiles of two sides made of runs (rounds), with a two-stage
    bootstrap interval per side as compare_medians_runs: the round-to-round spread is in it.
    A side with one run is resampled within it (unscaled: slightly conservative)."""
    if not 0 < q < 1:
        raise ValueError(f"quantile {q} outside (0, 1)")
    arrs_a = [a for a in (_finite(r) for r in runs_a) if a.size]
    arrs_b = [b for b in (_finite(r) for r in runs_b) if b.size]
    nan = float("nan")
    if not arrs_a or not arrs_b:
        return QuantileRatio(q, nan, nan, nan, NO_INTERVAL)
    pa, pb = np.concatenate(arrs_a), np.concatenate(arrs_b)
    va, vb = float(np.quantile(pa, q)), float(np.quantile(pb, q))
    ratio = vb / va if va else nan
    if np.ptp(pa) == 0 and np.ptp(pb) == 0:
        return QuantileRatio(q, va, vb, ratio, NO_INTERVAL)
    rng = np.random.default_rng(SEED)
    sa = _two_stage_quantiles(arrs_a, q, rng, n_resamples, max_samples)
    sb = _two_stage_quantiles(arrs_b, q, rng, n_resamples, max_samples)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = sb / sa
    n = int(min(pa.size, pb.size))
    nb = int(min(min(a.size for a in arrs) * len(arrs) for arrs in (arrs_a, arrs_b)))
    return QuantileRatio(q, va, vb, ratio, _percentile_interval(
        ratios, ratio, confidence, "two-stage-bootstrap", n, nb))


def compare_ratio_runs(den_a: Sequence[Sequence[float] | np.ndarray],
                       num_a: Sequence[Sequence[float] | np.ndarray],
                       den_b: Sequence[Sequence[float] | np.ndarray],
                       num_b: Sequence[Sequence[float] | np.ndarray], q: float = 0.5,
                       confidence: float = CONFIDENCE, n_resamples: int = N_RESAMPLES,
                       max_samples: int = MAX_TAIL_BOOTSTRAP_SAMPLES) -> TwoSample:
    """A ratio of quantiles measured twice, B against A: r = quantile_q(num) / quantile_q(den)
    on each side (a congestion impact factor before and after), as a TwoSample of r_a and r_b.
    Each of the four groups is resampled by the two-stage bootstrap (runs, then samples), so
    the interval of r_b - r_a and of r_b / r_a carries every group's round-to-round spread."""
    if not 0 < q < 1:
        raise ValueError(f"quantile {q} outside (0, 1)")
    groups = [[a for a in (_finite(r) for r in g) if a.size] for g in (den_a, num_a, den_b, num_b)]
    nan = float("nan")
    if not all(groups):
        return TwoSample(nan, nan, nan, NO_INTERVAL, nan, NO_INTERVAL)
    pooled = [np.concatenate(g) for g in groups]
    v = [float(np.quantile(p, q)) for p in pooled]
    ra = v[1] / v[0] if v[0] else nan
    rb = v[3] / v[2] if v[2] else nan
    diff, ratio = rb - ra, (rb / ra if ra else nan)
    if all(np.ptp(p) == 0 for p in pooled):
        return TwoSample(ra, rb, diff, NO_INTERVAL, ratio, NO_INTERVAL)
    rng = np.random.default_rng(SEED)
    s = [_two_stage_quantiles(g, q, rng, n_resamples, max_samples) for g in groups]
    with np.errstate(divide="ignore", invalid="ignore"):
        sa, sb = s[1] / s[0], s[3] / s[2]
        diffs, ratios = sb - sa, sb / sa
    n = int(min(p.size for p in pooled))
    nb = int(min(min(a.size for a in g) * len(g) for g in groups))
    method = "two-stage-bootstrap"
    return TwoSample(ra, rb, diff, _percentile_interval(diffs, diff, confidence, method, n, nb),
                     ratio, _percentile_interval(ratios, ratio, confidence, method, n, nb))


def compare_medians_paired(clusters_a: Sequence[Sequence[float] | np.ndarray],
                           clusters_b: Sequence[Sequence[float] | np.ndarray],
                           confidence: float = CONFIDENCE, n_resamples: int = N_RESAMPLES,
                           max_samples: int = MAX_BOOTSTRAP_SAMPLES) -> TwoSample:
    """Like compare_medians_runs, for clusters measured on both sides (the same directions of
    two matrices): each replicate draws one set of clusters for both sides, then samples
    within each side's cluster. Drawing them apart would put the spread *between* clusters
    (one link 10 % faster than another, on both days) into the difference, which it is not."""
    both = [(a, b) for a, b in ((_finite(x), _finite(y)) for x, y in
                                zip(clusters_a, clusters_b, strict=True)) if a.size and b.size]
    if len(both) < 2:
        return compare_medians(both[0][0] if both else [], both[0][1] if both else [],
                               confidence, n_resamples, max_samples)
    pa = np.concatenate([a for a, _ in both])
    pb = np.concatenate([b for _, b in both])
    ma, mb = float(np.median(pa)), float(np.median(pb))
    diff, ratio = mb - ma, (mb / ma if ma else float("nan"))
    if np.ptp(pa) == 0 and np.ptp(pb) == 0:
        return TwoSample(ma, mb, diff, NO_INTERVAL, ratio, NO_INTERVAL)
    rng = np.random.default_rng(SEED)
    k = len(both)
    which = rng.integers(0, k, (n_resamples, k))
    reps = []
    for side in (0, 1):
        arrs = [pair[side] for pair in both]
        m = max(1, min(min(a.size for a in arrs), max_samples // k))
        subs = np.stack([subsample(a, m) for a in arrs])
        within = rng.integers(0, m, (n_resamples, k, m))
        reps.append(np.median(subs[which[..., None], within].reshape(n_resamples, -1), axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        diffs, ratios = reps[1] - reps[0], reps[1] / reps[0]
    n = int(min(pa.size, pb.size))
    method = "paired-two-stage-bootstrap"
    return TwoSample(ma, mb, diff, _percentile_interval(diffs, diff, confidence, method, n, n),
                     ratio, _percentile_interval(ratios, ratio, confidence, method, n, n))
