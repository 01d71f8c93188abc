"""Prediction bands: how far a prediction moves when its inputs move as far as they are known.

A fabric variant takes one bootstrap replicate of the calibration (calibrate.py: the runs
resampled and refitted, when the fabric was calibrated) and draws every parameter that carries
a range (an assumed value's plausible range, a published range such as doc 004's 1.4-1.9 us)
uniformly and independently from it. The band of a prediction is the 5th to 95th percentile of
the same prediction over the variants. Parameters without a range (a fitted value, a value
given without one) stay fixed: the band says nothing about them.
"""

from __future__ import annotations

import copy

import numpy as np

from ..choices import BAND_SAMPLES
from .collectives import Band, Prediction, add_library_column, predict
from .cost import Cluster
from .fabric import Fabric
from .params import BY_NAME

SAMPLES = BAND_SAMPLES
PERCENTILES = (5.0, 95.0)


def ranged(fabric: Fabric) -> list[str]:
    """The parameters a band draws."""
    return [k for k, p in fabric.provenance.items()
            if p.low is not None and p.high is not None and p.high > p.low and k in BY_NAME
            and BY_NAME[k].get(fabric) is not None]


def variants(fabric: Fabric, n: int = SAMPLES, seed: int = 0) -> list[Fabric]:
    rng = np.random.default_rng(seed)
    names = ranged(fabric)
    out = []
    for i in range(n):
        f = copy.deepcopy(fabric)
        f.replicates = []
        if fabric.replicates:
            rep = fabric.replicates[i % len(fabric.replicates)]
            f.segments = copy.deepcopy(rep.segments)
            if rep.intra:
                f.intra = copy.deepcopy(rep.intra)
        for name in names:
            p = fabric.provenance[name]
            assert p.low is not None and p.high is not None
            BY_NAME[name].set(f, float(rng.uniform(p.low, p.high)))
        out.append(f)
    return out


def add_bands(pred: Prediction, fabric: Fabric, cluster: Cluster, n: int = SAMPLES) -> None:
    """A band on every column of `pred` (algorithms and library columns)."""
    if n <= 1 or not (fabric.replicates or ranged(fabric)):
        return
    cols: dict[str, list[list[float]]] = {c: [] for c in pred.times}
    for f in variants(fabric, n):
        vp = Prediction(pred.collective, pred.sizes,
                        {a: predict(f, cluster, pred.collective, a, pred.sizes)
                         for a in pred.algorithms})
        for lib in pred.chosen:
            add_library_column(vp, f, cluster, lib)
        for c in cols:
            cols[c].append(vp.times[c])
    for c, rows in cols.items():
        arr = np.array(rows)
        lo, hi = np.percentile(arr, PERCENTILES, axis=0)
        pred.bands[c] = Band([float(x) for x in lo], [float(x) for x in hi])


def band_of(fabric: Fabric, fn: object, n: int = SAMPLES) -> tuple[float, float]:
    """(low, high) of a scalar function of a fabric over its variants (HPL, ratios)."""
    assert callable(fn)
    vals = [float(fn(f)) for f in variants(fabric, n)] if (fabric.replicates
                                                           or ranged(fabric)) else []
    if not vals:
        v = float(fn(fabric))
        return v, v
    lo, hi = np.percentile(np.array(vals), PERCENTILES)
    return float(lo), float(hi)
