#!/usr/bin/env python3
"""Model variants against the published corpus (issue 30): what each change to the model's
structure does to the leave-one-system-out error, the 90 % bands' coverage and their width.

Each variant is the model of `src/fabench/model/` with one change patched in for this run
only (none of them is product code; docs/model.md, "Variants tried", says why each stayed
out). Every variant is scored exactly as `fabench model validate --published` scores the
model: a system's test rows predicted from its own fit rows only, bands from the other
groups' residuals. The test rows were in view when the variants were chosen: an unseen
corpus is the fair judge of any that would be kept.

    python bench/model_variants.py                 # every variant (~10 s of CPU each)
    python bench/model_variants.py base hcoll      # some of them
    python bench/model_variants.py xor-boundary+anchor   # several at once

Variants:
  base            the model as it is
  exponent-0.75   the noise tail's exponent may reach 3/4 (Pareto shape 4/3: finite mean,
                  infinite variance; the model stops at 1/2)
  xor-boundary    a recursive-doubling/binomial step at distance d < ppn crosses the
                  network when ppn is not a multiple of 2d (96 ranks per node: a third of
                  the pairs at d = 32 and 64 straddle two nodes; the model keeps them on the
                  node)
  nonoverlapping  Open MPI's allreduce 2 as its source runs it: the communicator's own
                  reduce and bcast, each by coll/tuned's decision rules
                  (coll_base_allreduce.c, ompi_coll_base_allreduce_intra_nonoverlapping),
                  where the model runs binomial reduce + binomial bcast
  hcoll           HPC-X systems (Azure HBv3) run HCOLL's two-level allreduce (the model's
                  `hierarchical` column) instead of coll/tuned's choice
  anchor          a test row's prediction scaled by the model's miss on the same system's
                  fit row of the same size at its largest node count (the model as a ratio
                  between node counts, anchored on the user's own largest run)
  rules-4.1       the model before issue 30's fourth round: every Open MPI system gets
                  4.1's decision rules, also those whose runs used 3.1 or 4.0 ([EXC],
                  [ABCI]; the corpus now names `openmpi-4.0` for them, decisions.py)
  shift-no-wrap   a shift by d takes min(d, ppn) ranks of a node across, as before that round
                  (the model now counts min(d, ppn, p - d): near a full turn the others'
                  partners wrap round to their own node, cost.Model.shift_crossing)
  ring-max        the ring priced as before that round: every step at the slowest link
                  (a network step) and the slowest of all p ranks' noise, where the model
                  now takes the ring's critical path (the mean link for eager steps, the
                  noise as a last passage: collectives.ring_steps)
  no-nic-gap-g    the model before issue 30's second round: a fabric calibrated from
                  point-to-point curves has no NIC gap until collectives on a few nodes fit
                  one (now it starts from LogGP's g of its own mpi.bw / osu_bw at <= 64 B,
                  calibrate.py; a fitted system's NIC gap is the fit's either way)
  one-nic         the model before issue 30's fifth round: every node one NIC, also Alps'
                  GH200 nodes, which have four (the corpus's nics_per_node, [ALPSHW])
  network-pairs   a shift on several nodes priced by its network pairs alone, as before
                  that round (cost.Model.stays: the same-node pairs of the step are now
                  waited for too)
  no-memory-prior a system without small runs of its own has an unlimited node memory, as
                  before that round (now the median of the other groups' fits,
                  published.memory_prior; the product's default, families.NODE_MEMORY_MBPS)

    python bench/model_variants.py --corpus OLD.yaml base   # another corpus file (before/after)
"""

from __future__ import annotations

import argparse
import contextlib
import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

import fabench.model.collectives as coll
import fabench.model.cost as cost
import fabench.model.published as pub
import fabench.model.scale as scale
from fabench.model.decisions import openmpi_choice
from fabench.model.fabric import Fabric


@contextlib.contextmanager
def patched(obj: object, name: str, value: object) -> Iterator[None]:
    old = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, old)


def _xor_geometry(orig: Callable[..., tuple[bool, int, float]]
                  ) -> Callable[..., tuple[bool, int, float]]:
    def geometry(self: cost.Model, d: int, pattern: str) -> tuple[bool, int, float]:
        intra, hops, sharing = orig(self, d, pattern)
        ppn, p = self.c.ppn, self.p
        if not intra or pattern != "xor" or self.c.nodes < 2 or ppn % (2 * d) == 0:
            return intra, hops, sharing
        r = np.arange(min(p, 4 * math.lcm(ppn, 2 * d)))
        q = r ^ d
        cross = (q // ppn != r // ppn) & (q < p)
        if not cross.any():
            return intra, hops, sharing
        busiest = int(np.bincount(r[cross] // ppn).max())
        path = self.c.topology.step("xor", 1)
        return False, path.hops, float(busiest * path.congestion)
    return geometry


def _nonoverlapping(md: cost.Model, m: float) -> float:
    r = openmpi_choice("reduce", md.p, m)[0]
    b = openmpi_choice("bcast", md.p, m)[0]
    return coll.ALGORITHMS["reduce"][r][0](md, m) + coll.ALGORITHMS["bcast"][b][0](md, m)


def _zeroed(orig: Callable[..., Fabric], attr: str) -> Callable[..., Fabric]:
    """A corpus fabric builder whose fabrics have `attr` 0 (none, or unlimited)."""
    def fabric(name: str, fit: pub.CurvesFit) -> Fabric:
        f = orig(name, fit)
        setattr(f, attr, 0.0)
        return f
    return fabric


def _hcoll_choice(orig: Callable[..., str]) -> Callable[..., str]:
    def choice(library: str, collective: str, p: int, ppn: int, size: float) -> str:
        if library == "hcoll":
            if collective in ("allreduce", "reduce", "bcast") and ppn > 1:
                return "hierarchical"
            library = "openmpi"
        return orig(library, collective, p, ppn, size)
    return choice


HPCX = ("azure-hbv3", "azure-hbv3-aks")
def _rules_41(orig: Callable[..., str]) -> Callable[..., str]:
    def choice(library: str, collective: str, p: int, ppn: int, size: float) -> str:
        return orig("openmpi" if library == "openmpi-4.0" else library, collective, p, ppn,
                    size)
    return choice


def _shift_no_wrap(md: cost.Model, d: int) -> int:
    return max(1, min(d, md.c.ppn))


def _ring_max(md: cost.Model, m: float, steps: int) -> float:
    return steps * md.step(m, 1, "shift")


@contextlib.contextmanager
def _hcoll(path: Path) -> Iterator[None]:
    corpus = pub.load_corpus(path)
    for s in corpus.systems:
        if s.id in HPCX:
            for c in s.cases:
                c.mpi = "hcoll" if c.mpi == "openmpi" else c.mpi
    with patched(pub, "library_choice", _hcoll_choice(pub.library_choice)), \
            patched(pub, "load_corpus", lambda path=pub.CORPUS: corpus):
        yield


@contextlib.contextmanager
def _one_nic(path: Path) -> Iterator[None]:
    corpus = pub.load_corpus(path)
    for s in corpus.systems:
        s.nics_per_node = 1
    with patched(pub, "load_corpus", lambda path=pub.CORPUS: corpus):
        yield


def _no_stays(md: cost.Model, d: int) -> int:
    return 0


@contextlib.contextmanager
def _no_memory_prior() -> Iterator[None]:
    with patched(pub, "memory_prior", lambda fits: None), \
            patched(pub, "_curves_fabric", _zeroed(pub._curves_fabric, "node_memory_MBps")):
        yield


def _patch(name: str, path: Path) -> contextlib.AbstractContextManager[None]:
    if name == "exponent-0.75":
        return patched(scale, "EXPONENT_GRID", [0.0, 0.25, 0.5, 0.75])
    if name == "xor-boundary":
        return patched(cost.Model, "geometry", _xor_geometry(cost.Model.geometry))
    if name == "nonoverlapping":
        algos = dict(coll.ALGORITHMS["allreduce"])
        algos["binomial"] = (_nonoverlapping, "redbcast")
        return patched(coll, "ALGORITHMS", {**coll.ALGORITHMS, "allreduce": algos})
    if name == "hcoll":
        return _hcoll(path)
    if name == "rules-4.1":
        return patched(pub, "library_choice", _rules_41(pub.library_choice))
    if name == "shift-no-wrap":
        return patched(cost.Model, "shift_crossing", _shift_no_wrap)
    if name == "ring-max":
        return patched(coll, "ring_steps", _ring_max)
    if name == "one-nic":
        return _one_nic(path)
    if name == "network-pairs":
        return patched(cost.Model, "stays", _no_stays)
    if name == "no-memory-prior":
        return _no_memory_prior()
    if name == "no-nic-gap-g":
        return patched(pub, "_curves_fabric", _zeroed(pub._curves_fabric, "nic_gap_us"))
    return contextlib.nullcontext()


def _run(name: str, path: Path = pub.CORPUS) -> pub.Result:
    """One variant, or several joined by '+' (applied together)."""
    parts = name.split("+")
    with contextlib.ExitStack() as stack:
        for part in parts:
            stack.enter_context(_patch(part, path))
        res = pub.run_corpus(path, band_samples=0)
    if "anchor" in parts:
        _anchor(res)
    return res


def _size(r: pub.Row) -> int | None:
    m = re.search(r", (\d+) B", r.case)
    return int(m.group(1)) if m else None


def _anchor(res: pub.Result) -> None:
    fits = [r for r in res.rows if r.split == "fit" and r.unit == "us"
            and "in_network" not in r.case]
    for r in res.rows:
        if r.split != "test" or not pub._scored(r):
            continue
        same = [f for f in fits if (f.system, f.collective, f.ppn, _size(f))
                == (r.system, r.collective, r.ppn, _size(r)) and f.nodes <= r.nodes]
        if same:
            top = max(f.nodes for f in same)
            k = float(np.mean([math.log(f.published / f.predicted)
                               for f in same if f.nodes == top]))
            r.predicted *= math.exp(k)
            r.error = (r.predicted - r.published) / r.published
    res.coverage = pub.conformal_bands(res.rows, extrapolation=res.extrapolation)


VARIANTS = ("base", "exponent-0.75", "xor-boundary", "nonoverlapping", "hcoll", "anchor",
            "xor-boundary+exponent-0.75", "no-nic-gap-g", "rules-4.1", "ring-max",
            "rules-4.1+ring-max", "shift-no-wrap", "rules-4.1+ring-max+shift-no-wrap",
            "one-nic", "network-pairs", "no-memory-prior",
            "one-nic+network-pairs+no-memory-prior")


def summary(name: str, res: pub.Result) -> str:
    tests = [r for r in res.rows if r.split == "test" and pub._scored(r)]

    def med(rs: list[pub.Row]) -> str:
        return f"{np.median(np.abs([r.error for r in rs])) * 100:5.1f}%" if rs else "    -"
    cov = res.coverage
    assert cov is not None
    innet = [r for r in tests if pub._innet(r)]
    host = [r for r in tests if not pub._innet(r)]
    return (f"{name:<27} {med(tests)} {med([r for r in tests if r.ppn <= 1])} "
            f"{med([r for r in tests if 1 < r.ppn < 32])} "
            f"{med([r for r in tests if r.ppn >= 32])} "
            f"{med([r for r in host if r.collective == 'allreduce'])} "
            f"{med([r for r in host if r.collective == 'alltoall'])} "
            f"{med([r for r in tests if r.nodes < 64])} {med([r for r in tests if r.nodes >= 64])} "
            f"{med(innet)} {cov.inside:>3}/{cov.rows:<3} x{cov.median_width:<9.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("variants", nargs="*", metavar="VARIANT",
                    help=f"some of: {', '.join(VARIANTS)} (default: all)")
    ap.add_argument("--corpus", type=Path, default=pub.CORPUS,
                    help="the corpus file (default: the package's)")
    args = ap.parse_args()
    unknown = [v for v in args.variants
               if any(p not in VARIANTS for p in v.split("+"))]
    if unknown:
        ap.error(f"unknown variant(s) {', '.join(unknown)}; known: {', '.join(VARIANTS)}")
    print(f"{'variant':<27} {'all':>6} {'1 rpn':>6} {'2-31':>6} {'>=32':>6} {'allred':>6} "
          f"{'a2a':>6} {'<64 n':>6} {'>=64 n':>6} {'innet':>6} {'in band':>7} width")
    for name in args.variants or VARIANTS:
        print(summary(name, _run(name, args.corpus)), flush=True)


if __name__ == "__main__":
    main()
