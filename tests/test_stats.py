"""Statistics against distributions whose answer is known."""

import numpy as np
import pytest

from fabench.util.stats import (
    compare_medians,
    compare_medians_runs,
    median_ci,
    median_ci_runs,
    subsample,
    summarize,
)


def test_median_ci_takes_the_order_statistics_scipy_quantile_test_takes() -> None:
    """median_ci finds its ranks without scipy.stats (seconds to import): the same pair of
    order statistics as quantile_test's interval, for every n where it might slip by one."""
    from scipy import stats

    rng = np.random.default_rng(3)
    for n in [*range(2, 400), 1000, 1001, 4096, 10000, 65537]:
        x = rng.lognormal(size=n)
        for conf in (0.9, 0.95, 0.99):
            ci = median_ci(x, conf)
            ref = stats.quantile_test(x, q=float(np.median(x)), p=0.5) \
                .confidence_interval(conf)
            if np.isfinite(ref.low) and np.isfinite(ref.high):
                assert (ci.low, ci.high) == (ref.low, ref.high), (n, conf)
            else:
                assert not ci.defined, (n, conf)


def test_bootstrap_is_scipy_stats_bootstrap_without_importing_it() -> None:
    """The two-sample intervals come from fabench's own percentile bootstrap (scipy.stats
    costs seconds to import on every campaign's report): the same intervals as
    scipy.stats.bootstrap with the same seed, one sample and two, small and subsampled."""
    import inspect

    from scipy import stats

    from fabench.util.stats import SEED, _bootstrap, _diff_ratio

    seed_kw = "rng" if "rng" in inspect.signature(stats.bootstrap).parameters \
        else "random_state"
    gen = np.random.default_rng(11)

    def one(x: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.stack([np.median(x, axis=axis), np.mean(x, axis=axis)])

    cases = [((gen.lognormal(size=40), gen.lognormal(size=57) * 1.1), _diff_ratio, 0.95),
             ((gen.normal(5, 1, 500), gen.normal(5.2, 2, 300)), _diff_ratio, 0.9),
             ((gen.exponential(size=7),), one, 0.95),
             ((np.round(gen.normal(3, 0.1, 200), 2),), one, 0.99)]
    for data, statistic, conf in cases:
        lo, hi = _bootstrap(data, statistic, 800, conf)
        ref = stats.bootstrap(data, statistic, n_resamples=800, confidence_level=conf,
                              method="percentile", vectorized=True,
                              **{seed_kw: np.random.default_rng(SEED)}).confidence_interval
        np.testing.assert_allclose(lo, ref.low, rtol=1e-12, atol=0)
        np.testing.assert_allclose(hi, ref.high, rtol=1e-12, atol=0)
        assert np.all(lo < hi)


def test_median_ci_covers_the_true_median_about_95_percent_of_the_time() -> None:
    rng = np.random.default_rng(7)
    trials, hits = 400, 0
    for _ in range(trials):
        x = rng.lognormal(mean=0.0, sigma=0.5, size=300)  # true median exp(0) = 1
        ci = median_ci(x)
        hits += ci.low <= 1.0 <= ci.high
    # The order-statistic interval is exact-or-conservative: coverage >= 95 % up to the
    # binomial noise of 400 trials (sd ~1.1 %), and not far above (it is the tightest pair).
    assert 0.925 <= hits / trials <= 0.99


def test_median_ci_is_the_order_statistic_pair_computed_by_hand() -> None:
    # n = 10: P(Binomial(10, 1/2) <= 1) = 11/1024 = 0.0107 <= 0.025 < P(<= 2) = 0.0547, so
    # the 95 % interval is [x(2), x(9)] (1-based), with coverage 1 - 2 * 11/1024 = 97.9 %.
    x = np.array([9.0, 1.0, 7.0, 3.0, 10.0, 2.0, 8.0, 4.0, 6.0, 5.0])
    ci = median_ci(x)
    assert (ci.low, ci.high) == (2.0, 9.0) and ci.method == "order-statistic"
    # Five samples cannot reach 95 % (1 - 2/32 = 93.75 %): no interval is invented.
    assert not median_ci([1.0, 2.0, 3.0, 4.0, 5.0]).defined


def test_median_ci_width_agrees_with_normal_theory() -> None:
    rng = np.random.default_rng(11)
    x = rng.normal(10.0, 1.0, 10000)
    ci = median_ci(x)
    assert ci.n == 10000
    # SE of the median of a normal sample = 1.2533 sigma / sqrt(n): 95 % half-width 0.0246.
    assert 0.020 < ci.half_width() < 0.030


def test_interval_narrows_with_more_samples() -> None:
    rng = np.random.default_rng(3)
    small = median_ci(rng.exponential(1.0, 200))
    large = median_ci(rng.exponential(1.0, 5000))
    assert large.half_width() < small.half_width() / 2.5  # ~sqrt(25) = 5 expected


def test_shift_between_two_distributions_is_found_with_the_right_size() -> None:
    rng = np.random.default_rng(5)
    a = rng.normal(10.0, 1.0, 4000)
    b = rng.normal(10.5, 1.0, 4000)
    t = compare_medians(a, b)
    assert t.diff_ci.low < 0.5 < t.diff_ci.high
    assert t.diff_ci.low > 0.3
    assert t.ratio_ci.low < 1.05 < t.ratio_ci.high


def test_same_distribution_gives_an_interval_around_zero() -> None:
    rng = np.random.default_rng(9)
    a, b = rng.gamma(2.0, 1.0, 3000), rng.gamma(2.0, 1.0, 3000)
    t = compare_medians(a, b)
    assert t.diff_ci.low < 0 < t.diff_ci.high
    assert t.ratio_ci.low < 1 < t.ratio_ci.high


def test_single_aggregate_is_held_fixed() -> None:
    rng = np.random.default_rng(1)
    b = rng.normal(5.0, 0.5, 2000)
    t = compare_medians([4.0], b)
    assert "one side fixed" in t.diff_ci.method
    assert t.diff_ci.low < 1.0 < t.diff_ci.high
    assert not compare_medians([4.0], [5.0]).diff_ci.defined  # no spread: no interval


def test_outliers_are_counted_never_dropped() -> None:
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.normal(1.0, 0.01, 1000), [50.0, 60.0, 70.0]])
    s = summarize(x)
    assert s.n == 1003 and s.max == 70.0
    assert s.outliers_high == 3 and s.outliers_low == 0
    assert s.median == pytest.approx(1.0, abs=0.01)  # the median resists them
    assert s.mean > 1.1  # the mean does not: why it is not the headline


def test_subsample_is_deterministic_and_spans_the_run() -> None:
    x = np.arange(10000.0)
    s = subsample(x, 1000)
    assert s.size == 1000 and s[0] == 0 and s[-1] == 9999
    assert np.array_equal(s, subsample(x, 1000))


def test_median_ci_degenerate_cases() -> None:
    assert not median_ci([]).defined
    assert not median_ci([1.0]).defined
    c = median_ci([2.0] * 50)
    assert c.low == c.high == 2.0


def test_interval_of_repeats_carries_the_run_to_run_spread() -> None:
    # Three runs whose own medians differ (a run-level offset, as placement or a neighbour's
    # load gives): pooling the samples alone would give an interval far inside that spread.
    rng = np.random.default_rng(3)
    offsets = [7.3, 5.5, 7.4]
    runs = [off + rng.exponential(0.3, 1000) for off in offsets]
    pooled = median_ci(np.concatenate(runs))
    two_stage = median_ci_runs(runs)
    assert two_stage.method == "two-stage-bootstrap" and not two_stage.point_outside
    assert two_stage.high - two_stage.low > 10 * (pooled.high - pooled.low)
    assert two_stage.low <= 5.5 + 0.3 and two_stage.high >= 7.4
    # Identical runs: the two-stage interval stays about as narrow as one run's.
    same = [rng.normal(1.0, 0.01, 1000) for _ in range(3)]
    assert median_ci_runs(same).high - median_ci_runs(same).low < 0.005


def test_two_stage_interval_covers_the_true_median_across_run_offsets() -> None:
    # Runs drawn with a random offset (sd 0.05) around a true centre of 1.0: the interval of
    # the pooled median should cover it about 95 % of the time, the pooled-only one rarely.
    rng = np.random.default_rng(11)
    hits_two, hits_pooled, trials = 0, 0, 200
    for _ in range(trials):
        runs = [1.0 + rng.normal(0, 0.05) + rng.normal(0, 0.02, 300) for _ in range(5)]
        two, pooled = median_ci_runs(runs, n_resamples=400), median_ci(np.concatenate(runs))
        hits_two += two.low <= 1.0 <= two.high
        hits_pooled += pooled.low <= 1.0 <= pooled.high
    assert hits_two / trials >= 0.80
    assert hits_pooled / trials < 0.5


def test_two_stage_compare_says_no_change_when_runs_differ_only_by_their_offsets() -> None:
    # A and B are the same configuration: five runs each, every run offset at random (sd 5 %).
    # The ratio interval should hold 1 most of the time; the one-stage interval, which sees
    # only the noise within runs, calls a difference most of the time.
    rng = np.random.default_rng(5)
    hits_two, hits_one, trials = 0, 0, 150
    for _ in range(trials):
        a, b = ([1.0 + rng.normal(0, 0.05) + rng.normal(0, 0.02, 300) for _ in range(5)]
                for _ in range(2))
        two = compare_medians_runs(a, b, n_resamples=400)
        one = compare_medians(np.concatenate(a), np.concatenate(b))
        assert two.ratio_ci.method == "two-stage-bootstrap"
        hits_two += two.ratio_ci.low <= 1.0 <= two.ratio_ci.high
        hits_one += one.ratio_ci.low <= 1.0 <= one.ratio_ci.high
    assert hits_two / trials >= 0.80
    assert hits_one / trials < 0.5


def test_two_stage_compare_still_separates_a_real_difference() -> None:
    rng = np.random.default_rng(6)
    a = [1.0 + rng.normal(0, 0.01) + rng.normal(0, 0.02, 300) for _ in range(3)]
    b = [1.3 + rng.normal(0, 0.01) + rng.normal(0, 0.02, 300) for _ in range(3)]
    t = compare_medians_runs(a, b)
    assert 1.2 < t.ratio_ci.low <= t.ratio <= t.ratio_ci.high < 1.4
    assert 0.2 < t.diff_ci.low <= t.diff <= t.diff_ci.high < 0.4
    # A single-run side is resampled within its run; a constant pair has no interval.
    one = compare_medians_runs(a[:1], b)
    assert one.ratio_ci.defined and one.ratio_ci.low > 1.2
    assert not compare_medians_runs([[2.0, 2.0]], [[3.0], [3.0]]).ratio_ci.defined


def test_an_interval_that_misses_its_point_is_flagged_not_widened() -> None:
    # One long run near 1.0 and six short runs near 2.0: the pooled median is ~1.0 (1000 of
    # 1060 samples), but the two-stage bootstrap weighs runs equally, and a replicate's median
    # falls near 1.0 only when 4 of its 7 draws are the long run (p ~ 0.8 %): its 95 %
    # interval lies near 2.0 and misses the point estimate. That must show, not be papered over.
    rng = np.random.default_rng(4)
    runs = [1.0 + rng.normal(0, 0.01, 1000)] + [2.0 + rng.normal(0, 0.01, 10) for _ in range(6)]
    ci = median_ci_runs(runs)
    med = float(np.median(np.concatenate(runs)))
    assert med < 1.1 and ci.low > 1.5
    assert ci.point_outside
    # A single well-behaved run never sets the flag.
    assert not median_ci_runs([1.0 + rng.normal(0, 0.01, 300)] * 3).point_outside
