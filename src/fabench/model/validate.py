"""Predictions against stored runs (measured or simulated): per size and the median error."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..analysis.analyse import summarize_results
from ..errors import FabenchError
from ..metrics import LATENCY
from ..store.database import RunRow, Store
from .collectives import ALGORITHMS, algorithms
from .cost import Cluster, Model
from .decisions import (
    MPI_LIBRARIES,
    OPENMPI_TUNED,
    library_choice,
    openmpi_fallback,
    openmpi_rules,
)
from .fabric import Fabric
from .scale import Observation
from .topology import TopologySpec
from .uncertainty import SAMPLES, variants


@dataclass
class Validation:
    """One measured run against the model's prediction for it (``compare.Comparison`` is
    the other kind: two measured series against each other)."""

    run_id: int
    kernel: str
    algorithm: str
    simulated: bool
    sizes: list[int]
    observed: list[float]
    predicted: list[float]
    notes: list[str] = field(default_factory=list)
    ranks: int = 0
    low: list[float] = field(default_factory=list)  # the prediction's band, per size
    high: list[float] = field(default_factory=list)

    @property
    def rel_errors(self) -> list[float]:
        return [abs(p - o) / o for p, o in zip(self.predicted, self.observed, strict=True)]

    @property
    def median_abs_error(self) -> float:
        return float(np.median(self.rel_errors)) if self.sizes else float("nan")


def run_algorithm(run: RunRow, collective: str) -> str | None:
    """The algorithm a stored run used, when it was pinned: Open MPI's coll/tuned number in
    the run's environment, or the SimGrid launcher's record."""
    sim = run.provenance.get("simulation") or {}
    if sim.get("algorithm"):
        return str(sim["algorithm"])
    cfg = sim.get("cfg") or {}
    smpi = cfg.get(f"smpi/{collective}")
    if smpi:
        for name, (_, sname) in ALGORITHMS[collective].items():
            if sname == smpi:
                return name
    env = dict(run.settings.get("env") or {})
    env.update(run.provenance.get("environment") or {})
    num = env.get(f"OMPI_MCA_coll_tuned_{collective}_algorithm")
    if num is not None:
        for name, n in OPENMPI_TUNED.get(collective, {}).items():
            if str(n) == str(num):
                return name
    return None


def barrier_exit_skew(fabric: Fabric, cluster: Cluster) -> float:
    """What the collective kernels add to a call: every rank times the call from its own
    exit from the barrier before it, and the record is the max over ranks, so it holds the
    wait of the rank that left the barrier first for the last one. Ranks leave a barrier about
    one small-message step apart (its last exchange): that step, on the same cluster."""
    if cluster.ranks < 2:
        return 0.0
    d = cluster.ppn if cluster.nodes > 1 else 1
    return Model(fabric, cluster).step(0.0, d, "shift", exchange=False)


def effective_algorithms(run: RunRow, collective: str, algorithm: str,
                         sizes: list[int]) -> list[str]:
    """The algorithm that ran at each size: a pinned Open MPI algorithm falls back inside
    coll/base (decisions.openmpi_fallback); other runs run what they were pinned to."""
    if run.mpi != "openmpi" or run.launcher == "simgrid":
        return [algorithm] * len(sizes)
    return [openmpi_fallback(collective, algorithm, s, run.ranks) for s in sizes]


def predicted_times(fabric: Fabric, cluster: Cluster, collective: str, algos: list[str],
                    sizes: list[int]) -> list[float]:
    fns = algorithms(collective)
    md = Model(fabric, cluster)
    return [fns[a][0](md, float(s)) for a, s in zip(algos, sizes, strict=True)]


def compare_run(store: Store, run_id: int, fabric: Fabric, cluster: Cluster,
                algorithm: str | None = None, band_samples: int = SAMPLES) -> Validation:
    run = store.run(run_id)
    collective = run.kernel.partition(".")[2]
    if collective not in ALGORITHMS:
        raise FabenchError(f"run {run_id} is {run.kernel}: no collective model for it")
    algo = algorithm or run_algorithm(run, collective)
    notes = []
    if algo is None:
        raise FabenchError(f"run {run_id}: which {collective} algorithm ran is not recorded "
                           "(pin it: OMPI_MCA_coll_tuned_use_dynamic_rules=1 and "
                           f"OMPI_MCA_coll_tuned_{collective}_algorithm=N), or give --algorithm")
    if run.ranks != cluster.ranks:
        raise FabenchError(f"run {run_id} has {run.ranks} ranks; the cluster has "
                           f"{cluster.nodes} x {cluster.ppn} = {cluster.ranks}")
    if run.oversubscribed:
        notes.append("measured oversubscribed (more ranks than cores)")
    results = list(store.results(run_id))
    sums = summarize_results(run.kernel, results, LATENCY)
    sizes = [s.size for s in sums if s.size > 0]
    observed = [s.summary.median for s in sums if s.size > 0]
    algos = effective_algorithms(run, collective, algo, sizes)
    fell = sorted({f"{s} B: {a}" for s, a in zip(sizes, algos, strict=True) if a != algo})
    if fell:
        notes.append(f"Open MPI's {algo} falls back at " + ", ".join(fell))
    skew = barrier_exit_skew(fabric, cluster)
    predicted = [t + skew for t in predicted_times(fabric, cluster, collective, algos, sizes)]
    notes.append(f"predicted + {skew:.1f} us barrier exit skew")
    low: list[float] = []
    high: list[float] = []
    if band_samples > 1:
        rows = [[t + barrier_exit_skew(v, cluster) for t in
                 predicted_times(v, cluster, collective, algos, sizes)]
                for v in variants(fabric, band_samples)]
        arr = np.array(rows)
        low = [float(x) for x in np.percentile(arr, 5, axis=0)]
        high = [float(x) for x in np.percentile(arr, 95, axis=0)]
    return Validation(run_id, run.kernel, algo, "simulated" in run.flags, sizes, observed,
                      predicted, notes, run.ranks, low, high)


def merge_repeats(comps: list[Validation]) -> list[Validation]:
    """Repeats of one configuration (kernel, algorithm, simulated): the median per size."""
    groups: dict[tuple[str, str, bool, int], list[Validation]] = {}
    for c in comps:
        groups.setdefault((c.kernel, c.algorithm, c.simulated, c.ranks), []).append(c)
    out = []
    for (kernel, algo, sim, ranks), cs in groups.items():
        sizes = sorted(set.intersection(*(set(c.sizes) for c in cs)))
        obs = [float(np.median([c.observed[c.sizes.index(s)] for c in cs])) for s in sizes]
        first = cs[0]
        pred = [first.predicted[first.sizes.index(s)] for s in sizes]
        low = [first.low[first.sizes.index(s)] for s in sizes] if first.low else []
        high = [first.high[first.sizes.index(s)] for s in sizes] if first.high else []
        notes = sorted({n for c in cs for n in c.notes})
        out.append(Validation(first.run_id, kernel, algo, sim, sizes, obs, pred,
                              [*notes, f"median of runs {', '.join(str(c.run_id) for c in cs)}"],
                              ranks, low, high))
    return out


def simulated_as_prediction(store: Store, comp: Validation, sim_run_id: int,
                            skew: float = 0.0) -> Validation:
    """The same measured curve, with a stored simulated run's medians as the prediction.

    `skew`: the barrier exit skew to add. The simulated kernel's ranks leave its barrier
    together (SimGrid schedules no CPU); ranks sharing cores do not, and the measured record
    holds that wait, so on emulated nodes the simulation gets the model's skew term too."""
    run = store.run(sim_run_id)
    if "simulated" not in run.flags or run.kernel != comp.kernel:
        raise FabenchError(f"run {sim_run_id} is not a simulated {comp.kernel} run")
    sums = summarize_results(run.kernel, list(store.results(sim_run_id)), LATENCY)
    sim = {s.size: s.summary.median for s in sums}
    sizes = [s for s in comp.sizes if s in sim]
    obs = [comp.observed[comp.sizes.index(s)] for s in sizes]
    algo = run_algorithm(run, run.kernel.partition(".")[2]) or "?"
    notes = comp.notes + ([f"simulated + {skew:.1f} us barrier exit skew (ranks sharing "
                            "cores; SimGrid schedules no CPU)"] if skew else [])
    return Validation(sim_run_id, comp.kernel, f"{algo}, SimGrid run {sim_run_id}", False,
                      sizes, obs, [sim[s] + skew for s in sizes], notes, comp.ranks)


def scale_observations(store: Store, run_ids: list[int], ppn: int,
                       topology: TopologySpec, nics: int = 1) -> list[Observation]:
    """Stored collective runs on a few nodes as observations for `scale.fit_scale`: one per
    run and size (the median over the run's samples), predicted with the algorithm the run
    was pinned to, else the one its MPI library runs by default (Open MPI's rules for an
    unknown library). The kernels' records hold the barrier's exit skew (`compare_run`); an
    imported peer tool's (OSU, IMB) do not."""
    obs: list[Observation] = []
    for rid in run_ids:
        run = store.run(rid)
        collective = run.kernel.partition(".")[2]
        if collective not in ALGORITHMS:
            raise FabenchError(f"run {rid} is {run.kernel}: not a collective run")
        if run.ranks % ppn:
            raise FabenchError(f"run {rid} has {run.ranks} ranks: not a multiple of "
                               f"--scale-ppn {ppn}")
        nodes = run.ranks // ppn
        cluster = Cluster(nodes, ppn, topology.build(nodes), nics=nics)
        pinned = run_algorithm(run, collective)
        library = run.mpi if run.mpi in MPI_LIBRARIES else "openmpi"
        if library == "openmpi" and run.campaign_id is not None:
            # the rules of the Open MPI the campaign recorded (3.x-4.0 run other ones)
            libs = store.campaign(run.campaign_id).provenance.get("libraries") or {}
            library = openmpi_rules(libs.get("openmpi") if isinstance(libs, dict) else None)
        skewed = not run.launcher.startswith("import")
        sums = summarize_results(run.kernel, list(store.results(rid)), LATENCY)
        for s in sums:
            if s.size <= 0 or not s.summary.median > 0:
                continue
            algo = (effective_algorithms(run, collective, pinned, [s.size])[0] if pinned
                    else library_choice(library, collective, cluster.ranks, ppn, s.size))

            def fn(f: Fabric, cl: Cluster = cluster, c: str = collective, a: str = algo,
                   m: int = s.size, sk: bool = skewed) -> float:
                t = algorithms(c)[a][0](Model(f, cl), float(m))
                return t + (barrier_exit_skew(f, cl) if sk else 0.0)
            obs.append(Observation(fn, float(s.summary.median), nodes))
    if not obs:
        raise FabenchError("no collective times in runs " + ", ".join(map(str, run_ids)))
    return obs
