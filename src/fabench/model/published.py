"""Validation on published data: the corpus (corpus/published.yaml), fitted on its fit part,
judged on its test part (`fabench model validate --published`).

A system's fabric comes from its fit entry (a preset, or published point-to-point curves run
through the calibration, plus the in-network kind whose parameters were fitted to published
figures); every test case is then predicted with its band and compared with the published
value. Fit rows are shown too: they reproduce their input by construction and say so.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..choices import PREDICTION_LEVEL
from ..errors import FabenchError
from ..util.textable import Col, header, row, signed_percent
from ..util.yamlconf import parse_yaml_model
from .calibrate import Curve, RunCurves, calibrate_curves
from .collectives import algorithms
from .cost import Cluster, Model
from .decisions import library_choice
from .fabric import Fabric, Provenance
from .families import in_network_defaults
from .hpl import HplParams, hpl_point
from .limits import MAX_NICS
from .presets import PRESETS
from .scale import Observation, ScaleFit, extrapolation_error, fit_scale
from .sources import SOURCES
from .topology import TopologySpec
from .uncertainty import SAMPLES, variants

CORPUS = Path(__file__).parent / "corpus" / "published.yaml"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CurvesFit(_Strict):
    family: str = "custom"
    latency_us: dict[int, float]
    bandwidth_MBps: dict[int, float] = Field(default_factory=dict)
    # the NIC's published line rate (what the node's ranks share), when the system's
    # description gives it; else the calibration's (the streaming rate of one flow)
    link_MBps: float | None = None


class FitSpec(_Strict):
    preset: str | None = None
    curves: CurvesFit | None = None
    curves_from: str | None = None
    in_network: str | None = None
    against: str | None = None  # a second preset, for relative cases
    # the nodes' link rate when it is known or fitted for this system (else the fabric's)
    link_MBps: float | None = None


class TopoSpec(_Strict):
    kind: str = "fat-tree"
    hosts_per_leaf: int = 24
    levels: int | None = None


class CaseSpec(_Strict):
    kind: Literal["time", "ratio", "max_ratio", "gap", "relative", "relative_per_size", "hpl"]
    split: Literal["fit", "test"] = "test"
    collective: str = "allreduce"
    mpi: str | None = None
    algorithm: str | None = None
    nodes: int = 1
    ppn: int = 1
    size: int = 0
    sizes: list[int] = Field(default_factory=list)
    published: float | None = None
    published_range: tuple[float, float] | None = None
    note: str = ""
    fabric: str | None = None
    peak_gflops: float | None = None
    mem_gb: float | None = None
    efficiency_1node: float | None = None


class SystemSpec(_Strict):
    id: str
    source: str
    # The hardware a system shares with others in the corpus (two deployments of one instance
    # type): leave-one-system-out holds out the whole group. Default: the system's id.
    group: str | None = None
    description: str
    fit: FitSpec
    topology: TopoSpec = Field(default_factory=TopoSpec)
    # network links per node; more than one only with the source that says so
    nics_per_node: int = Field(default=1, ge=1, le=MAX_NICS)
    nics_source: str | None = None
    assumptions: list[str] = Field(default_factory=list)
    cases: list[CaseSpec]


class Corpus(_Strict):
    systems: list[SystemSpec]


@dataclass
class Row:
    system: str
    source: str
    split: str
    case: str
    predicted: float
    low: float | None
    high: float | None
    published: float
    published_range: tuple[float, float] | None
    error: float  # relative error (time, ratio, hpl) or difference (relative, gap)
    unit: str  # "us", "x", "%", "pts", "us-gap"
    note: str = ""
    group: str = ""  # leave-one-system-out holds out a whole group
    collective: str = ""
    nodes: int = 0
    ppn: int = 0
    kind: str = ""
    size: int = 0  # the message size (B) of a time or ratio case; 0 for the others
    band_kind: str = "parameters"  # "parameters" (assumed ranges) or "conformal 90%"


@dataclass
class Result:
    rows: list[Row]
    systems: list[SystemSpec]
    notes: list[str] = field(default_factory=list)
    scale_fits: dict[str, ScaleFit] = field(default_factory=dict)
    # per system without a scale fit of its own: the node memory it was predicted with
    memory_priors: dict[str, MemoryPrior] = field(default_factory=dict)
    coverage: Coverage | None = None
    # per system: the scale fit's error when extrapolating within its own fit rows
    # (scale.extrapolation_error), the difficulty of its host-based rows' bands
    extrapolation: dict[str, float] = field(default_factory=dict)


NOMINAL = PREDICTION_LEVEL  # the prediction intervals' level (choices: --help shows it)


@dataclass
class Coverage:
    """How the conformal bands did on the test rows (times and ratios)."""

    nominal: float
    rows: int
    inside: int
    median_width: float  # high / low of the band, median over the rows
    infinite: int  # rows whose pool was too small for a finite band
    method: str = ""  # how the bands were made (conformal_bands' options)

    @property
    def achieved(self) -> float:
        return self.inside / self.rows if self.rows else float("nan")


def load_corpus(path: Path = CORPUS) -> Corpus:
    c = parse_yaml_model(path.read_text(), str(path), Corpus, what="validation corpus",
                         hint="a 'systems' list", docs="docs/model.md", error=FabenchError)
    for s in c.systems:
        if s.source not in SOURCES:
            raise FabenchError(f"{path}: system {s.id} cites unknown source {s.source!r}")
        if s.nics_per_node > 1 and s.nics_source not in SOURCES:
            raise FabenchError(f"{path}: system {s.id} has {s.nics_per_node} NICs a node "
                               "and no known source for them (nics_source)")
    return c


def _curves_fabric(name: str, fit: CurvesFit) -> Fabric:
    sizes = sorted(fit.latency_us)
    lat = Curve(sizes, [fit.latency_us[s] for s in sizes])
    bw = None
    if fit.bandwidth_MBps:
        bsz = sorted(fit.bandwidth_MBps)
        bw = Curve(bsz, [s / fit.bandwidth_MBps[s] for s in bsz])
    runs = RunCurves(lat=[lat], bw=[bw] if bw else [], launchers={"import:published"})
    f = calibrate_curves(runs, name, "published curves", family=fit.family,
                         measure_gamma=False).fabric
    if fit.link_MBps:
        f.link_bandwidth_MBps = fit.link_MBps
    return f


def _fabric(system: SystemSpec, fitted: dict[str, Fabric]) -> Fabric:
    fit = system.fit
    if fit.preset:
        f = PRESETS[fit.preset]()
    elif fit.curves:
        f = _curves_fabric(system.id, fit.curves)
    elif fit.curves_from:
        f = fitted[fit.curves_from]
    else:
        raise FabenchError(f"system {system.id}: no fit")
    if fit.link_MBps:
        f = copy.deepcopy(f)
        f.link_bandwidth_MBps = fit.link_MBps
    if fit.in_network:
        f = copy.deepcopy(f)
        inn, prov = in_network_defaults(f.family, fit.in_network)
        f.in_network = inn
        f.provenance.update(prov)
    return f


def _cluster(system: SystemSpec, nodes: int, ppn: int) -> Cluster:
    t = system.topology
    spec = TopologySpec(t.kind, t.hosts_per_leaf, levels=t.levels)
    return Cluster(nodes, ppn, spec.build(nodes), nics=system.nics_per_node)


def _time(f: Fabric, cl: Cluster, case: CaseSpec, size: float) -> float:
    fns = algorithms(case.collective)
    algo = case.algorithm or library_choice(case.mpi or "openmpi", case.collective, cl.ranks,
                                            cl.ppn, size)
    return fns[algo][0](Model(f, cl), float(size))


def _ratio(f: Fabric, cl: Cluster, case: CaseSpec, size: float) -> float:
    host = _time(f, cl, case, size)
    inn = algorithms(case.collective)["in_network"][0](Model(f, cl), float(size))
    return host / inn


def _paired(v: Fabric, base: Fabric, other: Fabric, k: int) -> Fabric:
    """`other` moved with `v` (a variant of `base`): the same draws for what they share, the
    difference of `other` over `base` (latency, hop) drawn from `other`'s published range."""
    rng = np.random.default_rng(1000 + k)
    w = copy.deepcopy(v)
    w.name = other.name
    d_lat = other.segments[0].alpha_us - base.segments[0].alpha_us
    lo, hi = PAIRED_RANGE
    extra = float(rng.uniform(lo, hi)) if d_lat else 0.0
    for s in w.segments:
        s.alpha_us += extra
    w.hop_latency_us += other.hop_latency_us - base.hop_latency_us + (extra - d_lat)
    w.in_network = copy.deepcopy(other.in_network)
    return w


PAIRED_RANGE = (0.6, 0.7)  # [000]: RoCEv2 above IB at every size


def _band(f: Fabric, fn: object, n: int) -> tuple[float | None, float | None]:
    assert callable(fn)
    vals = [float(fn(v)) for v in variants(f, n)] if n > 1 else []
    if not vals:
        return None, None
    lo, hi = np.percentile(np.array(vals), (5, 95))
    return float(lo), float(hi)


OSU_SIZES_P2P = [0, *(1 << k for k in range(23))]
OSU_SIZES_COLL = [1 << k for k in range(2, 21)]


def _case_rows(system: SystemSpec, f: Fabric, case: CaseSpec, n: int) -> list[Row]:
    label = system.id
    if case.kind in ("time", "ratio"):
        cl = _cluster(system, case.nodes, case.ppn)
        fn = (lambda v: _time(v, cl, case, case.size)) if case.kind == "time" else \
            (lambda v: _ratio(v, cl, case, case.size))
        pred = fn(f)
        lo, hi = _band(f, fn, n)
        assert case.published is not None
        what = case.algorithm or f"{case.mpi or 'openmpi'} default"
        name = (f"{case.collective} {what}, {case.nodes}x{case.ppn}, {case.size} B"
                + (" (host/in-network)" if case.kind == "ratio" else ""))
        return [Row(label, system.source, case.split, name, pred, lo, hi, case.published,
                    case.published_range, (pred - case.published) / case.published,
                    "us" if case.kind == "time" else "x", case.note)]
    if case.kind == "max_ratio":
        cl = _cluster(system, case.nodes, case.ppn)

        def best(v: Fabric) -> float:
            return max(_ratio(v, cl, case, s) for s in case.sizes)
        pred = best(f)
        lo, hi = _band(f, best, n)
        assert case.published is not None
        return [Row(label, system.source, case.split,
                    f"{case.collective} host/in-network, {case.nodes} nodes, largest over "
                    f"{case.sizes[0]}-{case.sizes[-1]} B", pred, lo, hi, case.published, None,
                    (pred - case.published) / case.published, "x", case.note)]
    if case.kind == "gap":
        other = PRESETS[system.fit.against or ""]()
        gaps = [other.time(s) - f.time(s) for s in OSU_SIZES_P2P]
        lo_g, hi_g = min(gaps), max(gaps)
        assert case.published_range is not None
        a, b = case.published_range
        err = max(0.0, a - lo_g, hi_g - b)
        return [Row(label, system.source, case.split, "latency gap RoCEv2 - IB, 0 B-4 MiB",
                    (lo_g + hi_g) / 2, lo_g, hi_g, (a + b) / 2, (a, b), err, "us-gap",
                    case.note)]
    if case.kind in ("relative", "relative_per_size"):
        other = PRESETS[system.fit.against or ""]()
        cl = _cluster(system, case.nodes, case.ppn)

        def rel(ib: Fabric, roce: Fabric) -> float:
            ti = np.array([_time(ib, cl, case, s) for s in OSU_SIZES_COLL])
            tr = np.array([_time(roce, cl, case, s) for s in OSU_SIZES_COLL])
            if case.kind == "relative":
                return float(tr.mean() / ti.mean() - 1)
            return float(np.mean(tr / ti) - 1)
        pred = rel(f, other)
        # the two fabrics share their anchor: each variant of the first carries the second's
        # differences (latency and switch hop) over it, drawn from their own ranges
        vals = [rel(v, _paired(v, f, other, k)) for k, v in enumerate(variants(f, n))] \
            if n > 1 else []
        lo, hi = ((float(np.percentile(vals, 5)), float(np.percentile(vals, 95))) if vals
                  else (None, None))
        assert case.published is not None
        how = "mean of times" if case.kind == "relative" else "mean of per-size ratios"
        return [Row(label, system.source, case.split,
                    f"{case.collective} RoCEv2 vs IB, {case.nodes}x{case.ppn}, {how}", pred * 100,
                    None if lo is None else lo * 100, None if hi is None else hi * 100,
                    case.published * 100, None, (pred - case.published) * 100, "pts",
                    case.note)]
    if case.kind == "hpl":
        fab = PRESETS[case.fabric]() if case.fabric else f
        assert case.peak_gflops and case.mem_gb and case.efficiency_1node is not None
        prm = HplParams(case.peak_gflops, case.efficiency_1node, case.mem_gb,
                        sources={"node_cv": "assumed 0 (no node table for this cluster)"})

        def eff(v: Fabric) -> float:
            return hpl_point(v, case.nodes, prm).efficiency
        pred = eff(fab)
        lo, hi = _band(fab, eff, n)
        assert case.published is not None
        return [Row(label, system.source, case.split, f"HPL efficiency, {case.nodes} nodes",
                    pred * 100, None if lo is None else lo * 100,
                    None if hi is None else hi * 100, case.published * 100, None,
                    (pred - case.published) / case.published, "%", case.note)]
    raise FabenchError(f"unknown case kind {case.kind}")


def _scale_observations(system: SystemSpec, f: Fabric) -> list[Observation]:
    """The system's fit rows that are host-based collective times on several nodes: the
    small end of its series, to fit the scale-dependent terms on."""
    obs = []
    for case in system.cases:
        if (case.split == "fit" and case.kind == "time" and case.algorithm != "in_network"
                and case.nodes > 1 and case.published):
            cl = _cluster(system, case.nodes, case.ppn)
            obs.append(Observation(lambda v, cl=cl, case=case: _time(v, cl, case, case.size),
                                   case.published, case.nodes))
    return obs


@dataclass
class MemoryPrior:
    """A node's memory bandwidth for a system whose fit rows cannot show it: the median of
    what the other groups' small runs at several ranks per node fitted (scale.fit_scale;
    a fit of 0, unlimited, counts as the largest)."""

    node_memory_MBps: float
    systems: int
    low: float
    high: float

    def apply(self, fabric: Fabric) -> Fabric:
        f = copy.deepcopy(fabric)
        f.node_memory_MBps = self.node_memory_MBps
        f.provenance["node_memory_MBps"] = Provenance(
            f"assumed: the median of {self.systems} other systems' fitted node memory "
            f"(their small runs at several ranks per node, docs/model.md)", True,
            self.low, self.high)
        return f


def memory_prior(fits: dict[str, ScaleFit]) -> MemoryPrior | None:
    """MemoryPrior over these fits (None without any)."""
    vals = sorted(v.node_memory_MBps or math.inf for v in fits.values())
    if not vals:
        return None
    mid = float(np.median(vals))
    finite = [v for v in vals if math.isfinite(v)]
    return MemoryPrior(mid if math.isfinite(mid) else 0.0, len(vals),
                       min(finite, default=0.0), max(finite, default=0.0))


def run_corpus(path: Path = CORPUS, band_samples: int = SAMPLES,
               systems: list[str] | None = None, scale: bool = True,
               nominal: float = NOMINAL) -> Result:
    """Every case of the corpus predicted from its system's fit part. With `scale`, a system
    whose fit part holds host-based collective times (the small node counts of a series)
    gets its scale-dependent terms fitted to them first (scale.py). Times and ratios then get
    a conformal band from the other groups' test residuals (`conformal_bands`); the other
    kinds keep the band of their assumed parameters."""
    corpus = load_corpus(path)
    fitted: dict[str, Fabric] = {}
    rows: list[Row] = []
    fits: dict[str, ScaleFit] = {}
    extrap: dict[str, float] = {}
    chosen = [s for s in corpus.systems if not systems or s.id in systems]
    for system in corpus.systems:
        f = _fabric(system, fitted)
        fitted[system.id] = f  # the point-to-point fabric, without this system's scale terms
        # every system's own fit, chosen or not: the others' node memory is a prior (below)
        obs = _scale_observations(system, f) if scale else []
        if obs:
            if system in chosen:
                x = extrapolation_error(f, obs)
                if x is not None:
                    extrap[system.id] = x
            fits[system.id] = fit_scale(f, obs)
    group = {s.id: s.group or s.id for s in corpus.systems}
    full = {s.id for s in corpus.systems
            if any(c.split == "fit" and c.ppn > 1 for c in s.cases)}
    priors: dict[str, MemoryPrior] = {}
    for system in chosen:
        f = fitted[system.id]
        if system.id in fits:
            f = fits[system.id].apply(f, f"{system.id}'s fit rows")
        elif scale and any(c.ppn > 1 for c in system.cases):
            prior = memory_prior({k: v for k, v in fits.items() if k in full
                                  and group[k] != group[system.id]})
            if prior is not None:
                priors[system.id] = prior
                f = prior.apply(f)
        for case in system.cases:
            n = 0 if case.kind in ("time", "ratio", "max_ratio") else band_samples
            for r in _case_rows(system, f, case, n):
                r.group, r.collective, r.kind = system.group or system.id, case.collective, \
                    case.kind
                r.nodes, r.ppn, r.size = case.nodes, case.ppn, case.size
                rows.append(r)
    res = Result(rows, chosen, scale_fits={k: v for k, v in fits.items()
                                           if k in {s.id for s in chosen}},
                 extrapolation=extrap, memory_priors=priors)
    res.coverage = conformal_bands(rows, nominal, extrapolation=extrap)
    return res


def _log_residual(r: Row) -> float:
    return abs(float(np.log(r.predicted / r.published)))


def conformal_quantile(residuals: list[float], level: float) -> float:
    """Split-conformal quantile: the ceil((n + 1) * level)-th smallest residual (infinite
    when the pool is too small for that level)."""
    n = len(residuals)
    k = int(np.ceil((n + 1) * level))
    if k > n:
        return float("inf")
    return float(sorted(residuals)[k - 1])


def _scored(r: Row) -> bool:
    return r.unit in ("us", "x") and r.predicted > 0 and r.published > 0


SIGMA_FLOOR = 0.1  # a fit that reproduces its rows exactly still leaves 10 % unexplained


def _innet(r: Row) -> bool:
    return r.kind in ("ratio", "max_ratio") or "in_network" in r.case


def difficulty(rows: list[Row], extrapolation: dict[str, float] | None = None
               ) -> dict[tuple[str, bool], float]:
    """How hard each system's rows are to predict, per kind (host-based or in-network),
    at least SIGMA_FLOOR; a system with no fit row of a kind has none for it. Known before
    any test row is looked at. Host-based rows of a system in `extrapolation` (its scale fit
    extrapolated from its smallest node count to its other fit rows,
    scale.extrapolation_error): that error; any other kind: the rms of its fit rows'
    |log(predicted / published)| (the fit's own error: how well it interpolates)."""
    acc: dict[tuple[str, bool], list[float]] = {}
    for r in rows:
        if r.split == "fit" and _scored(r):
            acc.setdefault((r.system, _innet(r)), []).append(_log_residual(r) ** 2)
    out = {k: max(SIGMA_FLOOR, float(np.sqrt(np.mean(v)))) for k, v in acc.items()}
    for system, x in (extrapolation or {}).items():
        if (system, False) in out:
            out[(system, False)] = max(SIGMA_FLOOR, x)
    return out


SMALL_BELOW = 8192  # a message below it is latency-bound: one or a few packets per rank


def band_class(r: Row) -> str:
    """A test row's class for Mondrian (class-conditional) bands: in-network, or the
    collective with its message size band (latency-bound below SMALL_BELOW, else
    bandwidth-bound)."""
    if _innet(r):
        return "in-network"
    return f"{r.collective} {'small' if r.size < SMALL_BELOW else 'large'}"


def _signed_residual(r: Row) -> float:
    return float(np.log(r.predicted / r.published))


def _pool_bounds(scores: list[float], level: float, signed: bool) -> tuple[float, float]:
    """(down, up): the band is prediction x [exp(-down), exp(+up)] in units of the scores.
    Symmetric: both the `level` quantile of |score|. Signed: each tail at (1 + level) / 2 of
    the signed log residual log(predicted / published), so each side misses at most
    (1 - level) / 2 and the band together at most 1 - level (Linusson, Johansson, Löfström,
    "Signed-error conformal regression", PAKDD 2014): a model that errs mostly one way gets
    a band that leans that way instead of one as wide on both sides."""
    if not signed:
        q = conformal_quantile([abs(x) for x in scores], level)
        return q, q
    tail = (1 + level) / 2
    # published = predicted x exp(-score): the largest scores bound it from below
    return conformal_quantile(scores, tail), conformal_quantile([-x for x in scores], tail)


def conformal_bands(rows: list[Row], level: float = NOMINAL,
                    normalised: bool = True,
                    extrapolation: dict[str, float] | None = None,
                    signed: bool = True, mondrian: bool = False) -> Coverage:
    """A prediction interval on every time and ratio row, from the TEST rows of every other
    group only (leave-one-system-out: no residual of the row's own group, fit or test, enters
    its band).

    A row whose system has fit rows of its kind (host-based or in-network) is *calibrated*:
    its band is prediction x exp(-down sigma .. +up sigma), sigma the system's difficulty
    (how well its scale fit extrapolates within its own fit rows, or how well they are
    reproduced: `difficulty`) and down, up the conformal quantiles of log(predicted /
    published) / sigma over the other groups' calibrated test rows (normalised split
    conformal, Papadopoulos et al. 2008): a system whose small runs fit badly gets a wider
    band. Any other row gets the quantiles of log(predicted / published) over all the other
    groups' test rows: the corpus's spread, nothing known of the system. `signed` (the
    default): each side from its own tail (`_pool_bounds`); else both from |log|.
    `normalised=False`: every row as an uncalibrated one. `mondrian`: the pool narrowed to
    the row's `band_class` where that class alone gives finite quantiles (Vovk, Gammerman,
    Shafer, "Algorithmic Learning in a Random World", 2005, ch. 4.5), else the whole pool.
    The coverage is over the test rows; the published value is a hit when it lies inside
    the band (the published point, not its range)."""
    sig = difficulty(rows, extrapolation) if normalised else {}

    def sigma(r: Row) -> float | None:
        return sig.get((r.system, _innet(r)))
    pool = [r for r in rows if r.split == "test" and _scored(r)]
    q_cache: dict[tuple[str, bool, str], tuple[float, float]] = {}
    for r in rows:
        if not _scored(r):
            continue
        s = sigma(r)
        cls = band_class(r) if mondrian else ""
        key = (r.group, s is not None, cls)
        if key not in q_cache:
            others = [o for o in pool if o.group != r.group
                      and (s is None or sigma(o) is not None)]

            def scores(rs: list[Row], calibrated: bool = s is not None) -> list[float]:
                return [_signed_residual(o) / (sigma(o) or 1.0) if calibrated
                        else _signed_residual(o) for o in rs]
            bounds = _pool_bounds(scores(others), level, signed)
            if mondrian:
                narrow = _pool_bounds(scores([o for o in others if band_class(o) == cls]),
                                      level, signed)
                if all(np.isfinite(narrow)):
                    bounds = narrow
            q_cache[key] = bounds
        down, up = (b * (s if s is not None else 1.0) for b in q_cache[key])
        r.low = r.predicted * float(np.exp(-down)) if np.isfinite(down) else 0.0
        r.high = r.predicted * float(np.exp(up)) if np.isfinite(up) else float("inf")
        r.band_kind = f"conformal {level:.0%}"
    inside = sum(1 for r in pool if r.low is not None and r.high is not None
                 and r.low <= r.published <= r.high)
    widths = [r.high / r.low for r in pool
              if r.low and r.high is not None and np.isfinite(r.high)]
    how = ("signed" if signed else "symmetric") + (", normalised" if normalised else "") + \
        (", Mondrian per collective x size band" if mondrian else "")
    return Coverage(level, len(pool), inside,
                    float(np.median(widths)) if widths else float("inf"),
                    sum(1 for r in pool if r.high is not None and not np.isfinite(r.high)),
                    how)


def _fmt(v: float | None, unit: str) -> str:
    if v is None:
        return "-"
    if unit in ("%", "pts", "x"):
        return f"{v:.2f}"
    return f"{v:.1f}" if abs(v) >= 100 else f"{v:.2f}"


def corpus_lines(res: Result) -> list[str]:
    lines = ["# fabench model validate --published: the corpus of docs/model.md, fitted on "
             "'fit' rows, judged on 'test' rows",
             "# error: relative (prediction - published) / published for times, ratios and "
             "HPL efficiency; difference in points for relative results; for the latency gap "
             "the distance of the predicted gaps from the published range (us)"]
    for s in res.systems:
        nics = (f"; {s.nics_per_node} NICs per node [{s.nics_source}]"
                if s.nics_per_node > 1 else "")
        lines.append(f"# [{s.source}] {s.id}: {s.description}{nics}")
        lines += [f"#   assumed: {a}" for a in s.assumptions]
    cols = [Col("split", 5, text=True), Col("system", 16, text=True), Col("case", 52, text=True),
            Col("predicted", 10), Col("band (90 % or params)", 21), Col("published", 22),
            Col("error", 9)]
    lines.append(header(cols))
    for r in res.rows:
        band = (f"{_fmt(r.low, r.unit)}-{_fmt(r.high, r.unit)}"
                if r.low is not None and r.high is not None else "-")
        pub = _fmt(r.published, r.unit)
        if r.published_range and r.unit != "us-gap":
            pub += f" ({_fmt(r.published_range[0], r.unit)}-{_fmt(r.published_range[1], r.unit)})"
        if r.unit == "pts":
            err = f"{r.error:+.1f}pt"
        elif r.unit == "us-gap":
            err = f"{r.error:.2f}us"
        else:
            err = signed_percent(r.error)
        lines.append(row(cols, [r.split, r.system, r.case, _fmt(r.predicted, r.unit), band,
                                pub, err], f"  {r.note}" if r.note else ""))
    lines += loso_lines(res)
    lines += contributor_lines(res)
    return lines


def _classes(r: Row) -> list[str]:
    out = ["all"]
    out.append("1 rank/node" if r.ppn <= 1 else
               ("2-31 ranks/node" if r.ppn < 32 else ">= 32 ranks/node"))
    innet = r.kind in ("ratio", "max_ratio") or "in_network" in r.case
    out.append("in-network" if innet else f"host-based {r.collective}")
    out.append("< 64 nodes" if r.nodes < 64 else ("64-255 nodes" if r.nodes < 256 else
                                                   (">= 256 nodes" if r.nodes < 1000
                                                    else ">= 1000 nodes")))
    return out


@dataclass
class Contributor:
    """How much of the test set's error one system or class of rows carries."""

    name: str
    rows: int
    share: float  # of the summed |log(predicted / published)| over all test rows
    median_without: float  # the test set's median |error| with these rows left out


def contributors(rows: list[Row]) -> list[Contributor]:
    """Where the error comes from: per system and per class of test row (times and ratios),
    its share of the summed |log(predicted / published)| and the median |error| of the other
    test rows, largest share first. A row's log residual weighs a factor-of-2 miss the same
    either way, so a system that misses by 25x outweighs several that miss by 30 %; the
    median without it says whether leaving it out would move the headline figure."""
    tests = [r for r in rows if r.split == "test" and _scored(r)]
    if not tests:
        return []
    total = sum(_log_residual(r) for r in tests) or 1.0
    groups: dict[str, list[Row]] = {}
    for r in tests:
        groups.setdefault(f"system {r.system}", []).append(r)
        for c in _classes(r)[1:]:
            groups.setdefault(c, []).append(r)
    out = []
    for name, rs in groups.items():
        rest = [abs(r.error) for r in tests if r not in rs]
        out.append(Contributor(name, len(rs), sum(_log_residual(r) for r in rs) / total,
                               float(np.median(rest)) if rest else float("nan")))
    return sorted(out, key=lambda c: -c.share)


def contributor_lines(res: Result) -> list[str]:
    lines = [f"# {'error contributors, test rows':<34} {'rows':>4} {'share of |log err|':>18} "
             f"{'median |err| without':>21}"]
    for c in contributors(res.rows):
        lines.append(f"#   {c.name:<32} {c.rows:>4} {c.share * 100:>17.1f}% "
                     f"{c.median_without * 100:>20.1f}%")
    return lines


def loso_lines(res: Result) -> list[str]:
    """The leave-one-system-out summary: per class of test row (times and ratios), the
    median |error| of the point prediction (no row of a system is fitted to another system's
    rows, so every error is already out of system) and the coverage and median width of the
    conformal band (built from the other groups' residuals only)."""
    tests = [r for r in res.rows if r.split == "test" and _scored(r)]
    if not tests:
        return []
    lines = []
    for sid, fit in res.scale_fits.items():
        lines.append(f"# scale terms of {sid}, fitted to its fit rows (the small node counts): "
                     f"noise {fit.noise_us:.3g} us/step, NIC gap {fit.nic_gap_us:.3g} "
                     f"us/message, noise exponent {fit.noise_exponent:g}, node memory "
                     f"{fit.node_memory_MBps:.3g} MB/s, rms log error "
                     f"{fit.rms_log_error:.2f} over {fit.n} runs"
                     + (f"; fitted to its smallest node count alone, its other fit rows miss "
                        f"by rms log {res.extrapolation[sid]:.2f} (its bands' difficulty)"
                        if sid in res.extrapolation else ""))
    for sid, prior in res.memory_priors.items():
        lines.append(f"# node memory of {sid} (no small runs of its own at several ranks per "
                     f"node): {prior.node_memory_MBps:.3g} MB/s, the median of {prior.systems} "
                     f"other groups' systems' fits ({prior.low:.3g}-{prior.high:.3g})")
    errs = np.abs([r.error for r in tests])
    lines.append(f"# test set, times and ratios: {len(tests)} cases, median |error| "
                 f"{np.median(errs) * 100:.1f} %, within a factor of 2: "
                 f"{sum(1 for r in tests if 0.5 <= 1 + r.error <= 2.0)}")
    cov = res.coverage
    if cov is not None:
        lines.append(f"# prediction intervals: nominal {cov.nominal:.0%}, split conformal over "
                     f"leave-one-system-out log(predicted/published) of the test rows "
                     f"({cov.method}); achieved {cov.inside}/{cov.rows} = {cov.achieved:.0%}, "
                     f"median width "
                     f"x{cov.median_width:.2f} (high/low)"
                     + (f", {cov.infinite} rows without a finite band" if cov.infinite else ""))
    order: dict[str, list[Row]] = {}
    for r in tests:
        for c in _classes(r):
            order.setdefault(c, []).append(r)
    for r in tests:
        order.setdefault(f"system {r.system}", []).append(r)
    lines.append(f"# {'leave-one-system-out, test rows':<34} {'rows':>4} {'median |err|':>12} "
                 f"{'in band':>8} {'band width':>10}")
    for name, rs in order.items():
        errs = np.abs([r.error for r in rs])
        inside = sum(1 for r in rs if r.low is not None and r.high is not None
                     and r.low <= r.published <= r.high)
        widths = [r.high / r.low for r in rs if r.low and r.high is not None
                  and np.isfinite(r.high)]
        width = f"x{np.median(widths):.2f}" if widths else "-"
        lines.append(f"#   {name:<32} {len(rs):>4} {np.median(errs) * 100:>11.1f}% "
                     f"{inside:>3}/{len(rs):<4} {width:>10}")
    return lines
