"""Predictions against stored runs (measured or simulated): per size and the median error."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..analyse import summarize_results
from ..errors import FabenchError
from ..metrics import LATENCY
from ..store import RunRow, Store
from .collectives import ALGORITHMS, OPENMPI_TUNED, Cluster, Model, predict
from .fabric import Fabric


@dataclass
class Comparison:
    run_id: int
    kernel: str
    algorithm: str
    simulated: bool
    sizes: list[int]
    observed: list[float]
    predicted: list[float]
    notes: list[str] = field(default_factory=list)

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


def compare_run(store: Store, run_id: int, fabric: Fabric, cluster: Cluster,
                algorithm: str | None = None) -> Comparison:
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
    skew = barrier_exit_skew(fabric, cluster)
    predicted = [t + skew for t in predict(fabric, cluster, collective, algo, sizes)]
    notes.append(f"predicted + {skew:.1f} us barrier exit skew")
    return Comparison(run_id, run.kernel, algo, "simulated" in run.flags, sizes, observed,
                      predicted, notes)


def merge_repeats(comps: list[Comparison]) -> list[Comparison]:
    """Repeats of one configuration (kernel, algorithm, simulated): the median per size."""
    groups: dict[tuple[str, str, bool], list[Comparison]] = {}
    for c in comps:
        groups.setdefault((c.kernel, c.algorithm, c.simulated), []).append(c)
    out = []
    for (kernel, algo, sim), cs in groups.items():
        sizes = sorted(set.intersection(*(set(c.sizes) for c in cs)))
        obs = [float(np.median([c.observed[c.sizes.index(s)] for c in cs])) for s in sizes]
        pred = [cs[0].predicted[cs[0].sizes.index(s)] for s in sizes]
        notes = sorted({n for c in cs for n in c.notes})
        out.append(Comparison(cs[0].run_id, kernel, algo, sim, sizes, obs, pred,
                              [*notes, f"median of runs {', '.join(str(c.run_id) for c in cs)}"]))
    return out


def simulated_as_prediction(store: Store, comp: Comparison, sim_run_id: int,
                            skew: float = 0.0) -> Comparison:
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
    return Comparison(sim_run_id, comp.kernel, f"{algo}, SimGrid run {sim_run_id}", False,
                      sizes, obs, [sim[s] + skew for s in sizes], notes)
