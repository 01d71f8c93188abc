"""Statistics against distributions whose answer is known."""

import numpy as np
import pytest

from fabench.stats import (
    MAX_BOOTSTRAP_SAMPLES,
    compare_medians,
    compare_medians_runs,
    median_ci,
    median_ci_runs,
    subsample,
    summarize,
)


def test_median_ci_covers_the_true_median_about_95_percent_of_the_time() -> None:
    rng = np.random.default_rng(7)
    trials, hits = 120, 0
    for _ in range(trials):
        x = rng.lognormal(mean=0.0, sigma=0.5, size=300)  # true median exp(0) = 1
        ci = median_ci(x)
        hits += ci.low <= 1.0 <= ci.high
    # 95 % nominal; the percentile bootstrap of a median runs a little narrow at n = 300.
    assert 0.85 <= hits / trials <= 0.995


def test_subsampled_interval_matches_the_full_bootstrap_width() -> None:
    rng = np.random.default_rng(11)
    x = rng.normal(10.0, 1.0, 10000)
    fast = median_ci(x)
    full = median_ci(x, max_samples=x.size)
    assert fast.n == 10000 and fast.n_boot == MAX_BOOTSTRAP_SAMPLES
    assert "m-of-n" in fast.method and "m-of-n" not in full.method
    assert 0.7 < (fast.high - fast.low) / (full.high - full.low) < 1.4
    # Normal theory: SE of the median = 1.2533 sigma / sqrt(n), 95 % half-width ~0.0246.
    assert 0.015 < fast.half_width() < 0.035
    med = float(np.median(x))
    assert fast.low < med < fast.high
    assert abs((fast.low + fast.high) / 2 - (full.low + full.high) / 2) < 0.01


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
    assert two_stage.method == "two-stage-bootstrap"
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
