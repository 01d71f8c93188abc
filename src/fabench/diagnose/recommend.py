"""Settings that would close the measured loss, each with the sizes it helps and hurts.

Every recommendation is one measured path's settings set against the path that forces nothing,
size by size, with fabench.analysis.compare's verdict (ratio interval outside the no-change band):
`helps` are the sizes where that path measured better, `hurts` where it measured worse. A
threshold (UCX_RNDV_THRESH, UCX_ZCOPY_THRESH) is proposed only where the measured table shows
a crossover: the path with rendezvous (zero copy) off is better at every size below some
measured size and never better from there on; the threshold is set at that size, so the sizes
above keep the library's choice. Nothing here is a figure of this machine: each value comes
from the table the run just measured.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..analysis.compare import DEFAULT_TOLERANCE, compare_series
from ..kernels import get_kernel
from ..kernels.transport_request import ON_NODE_TLS, parse_transport
from ..mpi.base import get_flavour
from ..store.database import Store
from ..util.units import format_size
from .paths import SweepPath
from .transports import KERNELS, Diagnosis, PathRuns, _series

# Variables that only make the library report its choice: never part of a recommendation.
VERBOSITY = ("UCX_LOG_LEVEL", "UCX_LOG_FILE", "OMPI_MCA_pml_base_verbose",
             "OMPI_MCA_btl_base_verbose", "OMPI_MCA_mtl_ofi_verbose")
THRESHOLDS = {"UCX_RNDV_THRESH": "rendezvous", "UCX_ZCOPY_THRESH": "zero copy"}


@dataclass
class Recommendation:
    mpi: str
    settings: dict[str, str]
    source_path: str  # the measured path it comes from
    helps: dict[str, list[int]] = field(default_factory=dict)  # kernel -> sizes
    hurts: dict[str, list[int]] = field(default_factory=dict)
    why: str = ""

    @property
    def net(self) -> int:
        return sum(map(len, self.helps.values())) - sum(map(len, self.hurts.values()))

    def text(self) -> str:
        def sizes(d: dict[str, list[int]]) -> str:
            parts = [f"{k} at {', '.join(format_size(s) for s in v)}" for k, v in d.items()
                     if v]
            return "; ".join(parts) or "none measured"

        env = " ".join(f"{k}={v}" for k, v in self.settings.items()) or "(nothing)"
        return (f"{env}\n    from path {self.source_path}: {self.why}\n"
                f"    helps: {sizes(self.helps)}\n    hurts: {sizes(self.hurts)}")

    def as_dict(self) -> dict[str, Any]:
        return {"type": "recommendation", "mpi": self.mpi, "settings": self.settings,
                "path": self.source_path, "why": self.why, "helps": self.helps,
                "hurts": self.hurts}


def path_env(path: SweepPath, placement: str) -> dict[str, str]:
    """The environment that reproduces ``path`` for ranks started by any launcher: the
    flavour's own translation of the transport request (MCA as OMPI_MCA_*, UCX_TLS) plus
    the path's settings, without verbosity."""
    flavour = get_flavour(path.mpi)
    env = {k: v for k, v in flavour.direct_launch_env(parse_transport(path.transport)).items()
           if k not in VERBOSITY}
    env.update(path.env_dict)
    tls = env.get("UCX_TLS")
    if placement == "inter" and tls and not tls.startswith("^") and \
            not set(tls.split(",")) & ON_NODE_TLS:
        # a network-only set measured between two hosts would send on-node peers of a
        # larger job over the NIC (document 003): shared memory stays in the set
        env["UCX_TLS"] = f"{tls},sm,self"
    return env


def _verdicts(store: Store, diag: Diagnosis, default: str, cand: str,
              tolerance: float) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    helps: dict[str, list[int]] = {}
    hurts: dict[str, list[int]] = {}
    a_runs, b_runs = diag.by_name(default), diag.by_name(cand)
    for kernel in KERNELS:
        metric = get_kernel(kernel).primary
        a = _series(store, a_runs.run_ids.get(kernel, []), metric)
        b = _series(store, b_runs.run_ids.get(kernel, []), metric)
        if a is None or b is None:
            continue
        for sc in compare_series(a, b, tolerance).sizes:
            if sc.verdict == "better":
                helps.setdefault(kernel, []).append(sc.size)
            elif sc.verdict == "worse":
                hurts.setdefault(kernel, []).append(sc.size)
    return helps, hurts


def _threshold(store: Store, diag: Diagnosis, default: str, cand: PathRuns,
               tolerance: float) -> Recommendation | None:
    """A crossover threshold from a path with rendezvous (zero copy) switched off, against
    the path it changes (its base): below the threshold the setting behaves as the path
    measured, from it on as the base did."""
    var = next((v for v in THRESHOLDS if cand.path.env_dict.get(v) == "inf"), None)
    base_name = cand.path.base
    if var is None or not base_name or not diag.by_name(base_name).run_ids:
        return None
    over_base, under_base = _verdicts(store, diag, base_name, cand.path.name, tolerance)
    if not over_base:
        return None
    top = max(max(v) for v in over_base.values())
    if any(s <= top for v in under_base.values() for s in v):
        return None  # helps and hurts interleave: no clean crossover
    above = sorted({r.size for r in diag.rows if r.size > top})
    if not above:
        return None  # it never stops helping: the path itself is the recommendation
    at = above[0]
    c_helps, c_hurts = _verdicts(store, diag, default, cand.path.name, tolerance)
    b_helps, b_hurts = (({}, {}) if base_name == default
                        else _verdicts(store, diag, default, base_name, tolerance))

    def join(low: dict[str, list[int]], high: dict[str, list[int]]) -> dict[str, list[int]]:
        out = {k: [s for s in v if s < at] for k, v in low.items()}
        for k, v in high.items():
            out.setdefault(k, []).extend(s for s in v if s >= at)
        return {k: sorted(v) for k, v in out.items() if v}

    helps, hurts = join(c_helps, b_helps), join(c_hurts, b_hurts)
    if not helps:
        return None
    settings = {**path_env(cand.path, diag.placement), var: str(at)}
    why = (f"{THRESHOLDS[var]} only from {format_size(at)} on: below it {cand.path.name} "
           f"measured better than {base_name}, from it on it did not")
    return Recommendation(cand.path.mpi, settings, cand.path.name, helps, hurts, why)


def recommend(store: Store, diag: Diagnosis,
              tolerance: float = DEFAULT_TOLERANCE) -> list[Recommendation]:
    """Recommendations per flavour, the best (most sizes helped net of sizes hurt) first."""
    out: list[Recommendation] = []
    for default in [p for p in diag.paths if p.path.default and p.run_ids]:
        recs = []
        for cand in diag.paths:
            if cand is default or cand.path.mpi != default.path.mpi or not cand.run_ids:
                continue
            if cand.on_nic:
                continue  # never recommend on-node traffic over the NIC
            thr = _threshold(store, diag, default.path.name, cand, tolerance)
            if thr is not None:
                recs.append(thr)
            helps, hurts = _verdicts(store, diag, default.path.name, cand.path.name,
                                     tolerance)
            if helps:
                recs.append(Recommendation(default.path.mpi,
                                           path_env(cand.path, diag.placement),
                                           cand.path.name, helps, hurts, cand.path.why))
        recs.sort(key=lambda r: (-r.net, sum(map(len, r.hurts.values()))))
        out.extend(recs)
    return out
