"""The application proxies (mpi.halo3d, mpi.fft) predicted from a calibrated fabric, and
stored runs of them compared with the prediction (`fabench model validate RUN`).

halo3d: a step is the compute phase, then the busiest rank's face exchange with its
neighbours, all posted at once: the longest path's latency once plus an injection gap per
further message, then every face's bytes through the rank's endpoint (the bytes parts add
up, as in alltoall_linear). The neighbours are at the rank distances of a row-major
MPI_Cart grid (z: 1, y: dz, x: dy dz), each an exchange (both directions at once).

fft: a step is one MPI_Alltoall per transpose, in the row communicator (contiguous ranks) and
then the column communicator (ranks a row apart), each predicted as the pairwise exchange
(Open MPI's algorithm for large messages) of size / members bytes per peer, on the cluster
those members make (members on one node share memory; a column a node apart crosses).
The local FFT work (--local-fft) is not modelled: validate runs without it.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ..analysis.analyse import summarize_results
from ..errors import FabenchError
from ..metrics import LATENCY
from ..store.database import Store
from .collectives import alltoall_pairwise
from .cost import Cluster, Model
from .fabric import Fabric
from .uncertainty import SAMPLES, variants
from .validate import Validation

APPS = ("mpi.halo3d", "mpi.fft")


def dims_create(n: int, nd: int) -> list[int]:
    """MPI_Dims_create's balanced factorisation (largest factors first)."""
    dims = [1] * nd
    rest = n
    factors: list[int] = []
    f = 2
    while f * f <= rest:
        while rest % f == 0:
            factors.append(f)
            rest //= f
        f += 1
    if rest > 1:
        factors.append(rest)
    for f in sorted(factors, reverse=True):
        i = dims.index(min(dims))
        dims[i] *= f
    return sorted(dims, reverse=True)


def halo_distances(ranks: int) -> list[int]:
    """Rank distances of the busiest rank's neighbours on the 3D grid (non-periodic)."""
    dx, dy, dz = dims_create(ranks, 3)
    out: list[int] = []
    for size, stride in ((dx, dy * dz), (dy, dz), (dz, 1)):
        if size >= 3:
            out += [stride, stride]  # an interior rank: both sides
        elif size == 2:
            out.append(stride)
    return out


def halo3d_time(md: Model, m: float, compute_us: float = 0.0) -> float:
    ds = halo_distances(md.p)
    if not ds:
        return compute_us
    a, b = md.shift_parts(m, ds)
    share = md.cpu_share(md.p, m)
    # each face is an exchange with its neighbour: its bytes cost the exchange slowdown
    b = b * md.f.exchange_factor(m)
    t = md.stretch(float(a.max()) + (len(ds) - 1) * md.f.gap_us, float(b.sum()), share)
    return compute_us + float(t)


def _sub_model(md: Model, members: int, stride: int) -> Model:
    """The cluster that `members` ranks `stride` apart make."""
    ppn = md.c.ppn
    per_node = max(1, min(members, ppn // stride)) if stride < ppn else 1
    nodes = max(1, math.ceil(members / per_node))
    return Model(md.f, replace(md.c, nodes=nodes, ppn=per_node,
                               topology=md.c.topology))


def fft_time(md: Model, m: float, dims: int = 3) -> float:
    if dims == 2:
        return alltoall_pairwise(md, m / md.p)
    pr, pc = sorted(dims_create(md.p, 2))  # rows x columns, columns the larger
    t = 0.0
    for members, stride in ((pc, 1), (pr, pc)):
        if members > 1:
            t += alltoall_pairwise(_sub_model(md, members, stride), m / members)
    return t


def app_time(kernel: str, fabric: Fabric, cluster: Cluster, m: float,
             extra: dict[str, object]) -> float:
    md = Model(fabric, cluster)
    if kernel == "mpi.halo3d":
        return halo3d_time(md, m, float(str(extra.get("compute_us") or 0)))
    return fft_time(md, m, 2 if extra.get("transposes") == 1 else 3)


def compare_app_run(store: Store, run_id: int, fabric: Fabric, cluster: Cluster,
                    band_samples: int = SAMPLES) -> Validation:
    run = store.run(run_id)
    if run.kernel not in APPS:
        raise FabenchError(f"run {run_id} is {run.kernel}, not an application proxy")
    if run.ranks != cluster.ranks:
        raise FabenchError(f"run {run_id} has {run.ranks} ranks; the cluster has "
                           f"{cluster.nodes} x {cluster.ppn} = {cluster.ranks}")
    if "--local-fft" in (run.settings.get("kernel_args") or []):
        raise FabenchError(f"run {run_id} ran --local-fft: the model predicts the transposes "
                           "only")
    results = [r for r in store.results(run_id) if r.size > 0]
    sums = summarize_results(run.kernel, results, LATENCY)
    sizes = [s.size for s in sums]
    observed = [s.summary.median for s in sums]
    extra = results[0].extra if results else {}
    predicted = [app_time(run.kernel, fabric, cluster, float(s), extra) for s in sizes]
    notes = ["measured oversubscribed (more ranks than cores)"] if run.oversubscribed else []
    low: list[float] = []
    high: list[float] = []
    if band_samples > 1 and sizes:
        arr = np.array([[app_time(run.kernel, v, cluster, float(s), extra) for s in sizes]
                        for v in variants(fabric, band_samples)])
        low = [float(x) for x in np.percentile(arr, 5, axis=0)]
        high = [float(x) for x in np.percentile(arr, 95, axis=0)]
    name = "halo exchange" if run.kernel == "mpi.halo3d" else "transposes"
    return Validation(run_id, run.kernel, name, "simulated" in run.flags, sizes, observed,
                      predicted, notes, run.ranks, low, high)
