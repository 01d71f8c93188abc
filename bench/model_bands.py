#!/usr/bin/env python3
"""Prediction-interval methods on the published corpus (issue 30): coverage of the nominal
90 % band and its median width (high / low) over the scored test rows, for each way of
building the band from the other groups' leave-one-system-out residuals.

    python bench/model_bands.py                 # the package's corpus (~15 s of CPU)
    python bench/model_bands.py --corpus FILE

The normalised methods are `published.conformal_bands` itself (signed or symmetric, with or
without Mondrian classes); the plain ones (no normalisation) and the group-weighted one are
computed here. Every band uses the test rows of the other groups only. The test rows were
in view when one of these was chosen (docs/model.md, "Uncertainty").
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

import fabench.model.published as pub

LEVEL = 0.9
Key = Callable[[pub.Row], tuple[object, ...]]


def _weighted_quantile(vals: list[float], w: list[float], level: float) -> float:
    """Split-conformal quantile with weights: the smallest value whose cumulative weight
    reaches level x (total + the largest weight, the test point's own share)."""
    order = np.argsort(vals)
    v, ww = np.array(vals)[order], np.array(w)[order]
    total = ww.sum() + (ww.max() if len(ww) else 0.0)
    idx = int(np.searchsorted(np.cumsum(ww), level * total - 1e-12))
    return float("inf") if idx >= len(v) else float(v[idx])


def plain(tests: list[pub.Row], keys: list[Key], signed: bool, grouped: bool
          ) -> tuple[int, float]:
    """Bands over unnormalised log residuals: the first key (class) whose pool gives finite
    bounds serves; `grouped`: each other group's rows share a weight of 1."""
    inside, widths = 0, []
    for r in tests:
        band = None
        for key in keys:
            pool = [o for o in tests if o.group != r.group and key(o) == key(r)]
            if not pool:
                continue
            counts: dict[str, int] = {}
            for o in pool:
                counts[o.group] = counts.get(o.group, 0) + 1
            w = [1 / counts[o.group] if grouped else 1.0 for o in pool]
            s = [pub._signed_residual(o) for o in pool]
            if signed:
                down = _weighted_quantile(s, w, (1 + LEVEL) / 2)
                up = _weighted_quantile([-x for x in s], w, (1 + LEVEL) / 2)
            else:
                down = up = _weighted_quantile([abs(x) for x in s], w, LEVEL)
            if math.isfinite(down) and math.isfinite(up):
                band = (r.predicted * math.exp(-down), r.predicted * math.exp(up))
                break
        assert band is not None, "the whole pool gives a finite band"
        inside += band[0] <= r.published <= band[1]
        widths.append(band[1] / band[0])
    return inside, float(np.median(widths))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, default=pub.CORPUS)
    args = ap.parse_args()
    res = pub.run_corpus(args.corpus, band_samples=0)
    tests = [r for r in res.rows if r.split == "test" and pub._scored(r)]
    n = len(tests)

    def rpn(r: pub.Row) -> str:
        return "1" if r.ppn <= 1 else ("2-31" if r.ppn < 32 else ">=32")
    everything: Key = lambda r: ()  # noqa: E731
    cls: Key = lambda r: (pub.band_class(r),)  # noqa: E731
    cls_rpn: Key = lambda r: (pub.band_class(r), rpn(r))  # noqa: E731
    print(f"{'method (nominal 90 %, LOSO over groups)':<66} {'inside':>10} width")
    for signed in (False, True):
        for mondrian in (False, True):
            cov = pub.conformal_bands(res.rows, LEVEL, extrapolation=res.extrapolation,
                                      signed=signed, mondrian=mondrian)
            print(f"{cov.method:<66} {cov.inside:>3}/{n} {cov.achieved:4.0%} "
                  f"x{cov.median_width:.1f}")
    for name, keys, signed, grouped in (
            ("symmetric, plain", [everything], False, False),
            ("signed, plain", [everything], True, False),
            ("symmetric, plain, Mondrian per collective x size band", [cls, everything],
             False, False),
            ("signed, plain, Mondrian per collective x size band", [cls, everything],
             True, False),
            ("symmetric, plain, Mondrian per collective x size band x ranks/node",
             [cls_rpn, cls, everything], False, False),
            # (signed and group-weighted: a 95 % tail over ~12 groups' weights is infinite)
            ("symmetric, plain, group-weighted", [everything], False, True)):
        inside, width = plain(tests, keys, signed, grouped)
        print(f"{name:<66} {inside:>3}/{n} {inside / n:4.0%} x{width:.1f}")


if __name__ == "__main__":
    main()
