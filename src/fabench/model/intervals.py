"""Prediction intervals for `model predict`: split conformal bands over the published corpus's
leave-one-system-out residuals (docs/model.md, "Uncertainty").

A fabric `model predict` is given was never in the corpus, so every corpus test row is
out of its system: the pool of scores is the corpus's test rows (times and ratios), nothing
held out. What the fabric says of itself picks the score:
- its scale terms were fitted to the user's own collective runs (`model calibrate
  --scale-runs`), with a difficulty sigma (`fabric_sigma`: how well the fit extrapolates
  from the runs' smallest node count to their others): the band is prediction x
  exp(+-q sigma), q over the corpus's normalised scores |log(predicted / published)| / sigma
  of the rows whose system had such a fit (normalised conformal prediction: Papadopoulos,
  Vovk, Gammerman, "Normalized nonconformity measures for regression conformal
  prediction", AIA 2008);
- else prediction x exp(+-q), q over all the corpus's plain scores.
Signed (the default, as `model validate --published` validates it): each side of the band
from its own tail of the signed log residuals log(predicted / published) (normalised as
above when the fabric has a scale fit), at (1 + level) / 2 each (Linusson, Johansson,
Löfström, "Signed-error conformal regression", PAKDD 2014): the model errs mostly one way
on the corpus (too fast), so the band leans that way and is narrower than a symmetric one
(corpus: x29.4 against x44.7 at the median, 91 % against 88 % inside; docs/model.md).
With `mondrian`, the pool is first narrowed to the rows of the prediction's class (ranks per
node 1, 2-31, >= 32; in-network or host-based): Mondrian conformal prediction (Vovk, Gammerman,
Shafer, "Algorithmic Learning in a Random World", 2005, ch. 4.5), valid per class where the
class holds enough rows for the level, else the whole pool.

Running the corpus takes tens of seconds; the scores are cached once per user
(`$XDG_CACHE_HOME/fabench`, else `~/.cache/fabench`) under a key made of the corpus file and
the model's source, so any change to either recomputes them.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .collectives import Band, Prediction
from .fabric import Fabric
from .published import (
    CORPUS,
    NOMINAL,
    SIGMA_FLOOR,
    Row,
    _innet,
    _log_residual,
    _pool_bounds,
    _scored,
    _signed_residual,
    conformal_quantile,
    difficulty,
    run_corpus,
)

SCALE_FIT_KEY = "scale"  # fabric.fit[SCALE_FIT_KEY]: the scale fit's rms log error and runs


@dataclass
class Score:
    """One corpus test row's nonconformity scores and its class."""

    group: str
    plain: float  # |log(predicted / published)|
    normalised: float | None  # plain / sigma, when the row's system had its own fit rows
    ppn: int
    innet: bool
    log_ratio: float = 0.0  # log(predicted / published), signed: > 0 when the model is slow
    sigma: float | None = None  # the difficulty `normalised` was divided by


def ppn_class(ppn: int) -> str:
    return "1" if ppn <= 1 else ("2-31" if ppn < 32 else ">=32")


def scores_of(rows: list[Row], extrapolation: dict[str, float] | None = None) -> list[Score]:
    sig = difficulty(rows, extrapolation)
    out = []
    for r in rows:
        if r.split != "test" or not _scored(r):
            continue
        s = sig.get((r.system, _innet(r)))
        plain = _log_residual(r)
        out.append(Score(r.group, plain, None if s is None else plain / s, r.ppn, _innet(r),
                         _signed_residual(r), s))
    return out


def _cache_key(corpus: Path) -> str:
    h = hashlib.sha256(corpus.read_bytes())
    for src in sorted(Path(__file__).parent.glob("*.py")):
        h.update(src.name.encode())
        h.update(src.read_bytes())
    return h.hexdigest()[:16]


def user_cache_dir() -> Path:
    """Where the corpus's scores are kept between commands (one computation per user)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "fabench"


def corpus_scores(cache_dir: Path | None = None, corpus: Path = CORPUS) -> list[Score]:
    """The corpus's test-row scores (cached under `cache_dir` when given)."""
    path = cache_dir / f"conformal-scores-{_cache_key(corpus)}.json" if cache_dir else None
    if path is not None and path.is_file():
        try:
            return [Score(**d) for d in json.loads(path.read_text())]
        except (ValueError, TypeError):
            pass  # a damaged cache is recomputed
    res = run_corpus(corpus, band_samples=0)
    scores = scores_of(res.rows, res.extrapolation)
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # written aside then renamed: a concurrent reader never sees half a file
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps([asdict(s) for s in scores]))
            tmp.replace(path)
        except OSError:
            pass  # a read-only results directory only costs the recomputation
    return scores


def fabric_sigma(fabric: Fabric) -> float | None:
    """The difficulty of a fabric whose scale terms were fitted to the user's collective
    runs, as the corpus's rows have theirs (published.difficulty): the fit's error when
    extrapolating from the runs' smallest node count to the others, else (one node count)
    its rms log error on the runs; None without a scale fit."""
    fit = fabric.fit.get(SCALE_FIT_KEY)
    if not isinstance(fit, dict):
        return None
    for key in ("extrapolation_rms_log_error", "rms_log_error"):
        if fit.get(key) is not None:
            return max(SIGMA_FLOOR, float(fit[key]))
    return None


@dataclass
class Interval:
    q: float  # the band is prediction x exp(+-q)
    level: float
    rows: int  # scores in the pool
    how: str
    # signed bands: prediction x [exp(-down), exp(+up)] (q is then their mean)
    down: float | None = None
    up: float | None = None

    @property
    def factors(self) -> tuple[float, float]:
        """(low, high) multipliers of the prediction."""
        down = self.q if self.down is None else self.down
        up = self.q if self.up is None else self.up
        return (math.exp(-down) if np.isfinite(down) else 0.0,
                math.exp(up) if np.isfinite(up) else math.inf)

    @property
    def width(self) -> float:
        lo, hi = self.factors
        return hi / lo if lo else math.inf


def interval(scores: list[Score], sigma: float | None, level: float = NOMINAL,
             ppn: int | None = None, innet: bool | None = None,
             mondrian: bool = False, signed: bool = True) -> Interval:
    pool = scores
    cls = ""
    if mondrian and ppn is not None:
        narrowed = [s for s in scores if ppn_class(s.ppn) == ppn_class(ppn)
                    and (innet is None or s.innet == innet)]
        usable = [s for s in narrowed if sigma is None or s.normalised is not None]
        if math.ceil((len(usable) + 1) * level) <= len(usable):
            pool, cls = narrowed, f", class {ppn_class(ppn)} ranks/node"
    if sigma is not None:
        used = [s for s in pool if s.normalised is not None]
        vals = [s.normalised for s in used if s.normalised is not None]
        signed_vals = [s.log_ratio / (s.sigma or 1.0) for s in used]
        scale = sigma
        how = (f"normalised by the scale fit's difficulty {sigma:.2f}, over "
               f"{len(vals)} corpus rows{cls}")
    else:
        vals = [s.plain for s in pool]
        signed_vals = [s.log_ratio for s in pool]
        scale = 1.0
        how = f"over {len(vals)} corpus rows{cls}, nothing fitted to this system's collectives"
    if not signed:
        return Interval(conformal_quantile(vals, level) * scale, level, len(vals), how)
    down, up = (b * scale for b in _pool_bounds(signed_vals, level, True))
    return Interval((down + up) / 2, level, len(vals), "signed, " + how, down, up)


def add_intervals(pred: Prediction, iv: Interval) -> None:
    """The same relative interval on every column of `pred`."""
    lo, hi = iv.factors
    for c, ts in pred.times.items():
        pred.bands[c] = Band([t * lo for t in ts], [t * hi for t in ts])
    side = (f"x{1 / lo if lo else math.inf:.2f} below, x{hi:.2f} above" if iv.down is not None
            else f"x{hi:.2f} either side")
    pred.band_label = (f"[low-high]: {iv.level:.0%} prediction interval, {side} "
                       f"(split conformal over the published corpus's "
                       f"leave-one-system-out residuals, {iv.how}; docs/model.md "
                       "'Uncertainty')")
    pred.band_level = iv.level
