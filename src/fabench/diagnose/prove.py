"""Prove a recommendation: the collectives document 003 improved (allgather, alltoall, gather),
before (nothing forced) and after (the recommendation as MPI/UCX environment), in interleaved
rounds (A B, B A, ...), compared per size by fabench.analysis.compare through `tune ab`'s
comparison."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import FabenchError
from ..host.provenance import host_provenance
from ..kernels import get_kernel
from ..plan.plan import plan_run, settings_for
from ..run.runner import execute_run
from ..schedulers import Scheduler
from ..store.database import Store
from ..tune.ab import SizeDelta, compare_runs
from .recommend import Recommendation

PROOF_KERNELS = ("mpi.allgather", "mpi.alltoall", "mpi.gather")


@dataclass
class Proof:
    campaign_id: int
    settings: dict[str, str]
    deltas: list[tuple[int, SizeDelta]] = field(default_factory=list)  # (ranks, delta)
    summaries: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    oversubscribed: set[int] = field(default_factory=set)


def prove(rec: Recommendation, scheduler: Scheduler, store_path: Path, *,
          ranks: Sequence[int] = (2, 4), rounds: int = 3, sizes: str | None = None,
          iterations: int | None = None, quick: bool = False, tolerance: float = 0.03,
          timeout_s: float = 600.0, say: Callable[[str], None] | None = None) -> Proof:
    if rounds < 1:
        raise FabenchError("--ab-rounds must be >= 1")
    say = say or (lambda _m: None)
    with Store(store_path) as store:
        cid = store.begin_campaign("diagnose transports: proof", {
            "recommendation": rec.as_dict(), "ranks": list(ranks), "rounds": rounds},
            host_provenance())
        proof = Proof(cid, rec.settings)
        ids: dict[tuple[str, int, str], list[int]] = {}
        for rnd in range(rounds):
            for side in (("A", "B") if rnd % 2 == 0 else ("B", "A")):
                for n in ranks:
                    for kernel in PROOF_KERNELS:
                        k = get_kernel(kernel)
                        planned = plan_run(
                            kernel, transport="auto", ranks=n, mpi=rec.mpi, repeat=rnd,
                            settings=settings_for(k, sizes=sizes, iterations=iterations,
                                                  quick=quick),
                            env=rec.settings if side == "B" else {}, timeout_s=timeout_s,
                            label="recommended" if side == "B" else "nothing forced")
                        oc = execute_run(store, scheduler, planned, cid)
                        what = f"round {rnd + 1} {side} {kernel} np={n}"
                        if oc.status != "ok":
                            proof.failed.append(f"{what}: {oc.status} ({oc.reason})")
                            say(f"{what}: {oc.status}")
                            continue
                        if store.run(oc.run_id).oversubscribed:
                            proof.oversubscribed.add(n)
                        ids.setdefault((kernel, n, side), []).append(oc.run_id)
                        say(f"{what}: run {oc.run_id} via {oc.selected_transport}")
        store.end_campaign(cid, "finished" if not proof.failed else
                           f"finished with {len(proof.failed)} failed")
        for n in ranks:
            for kernel in PROOF_KERNELS:
                a, b = ids.get((kernel, n, "A")), ids.get((kernel, n, "B"))
                if not a or not b:
                    continue
                for deltas, sentence in compare_runs(store, a, b, tolerance):
                    proof.deltas.extend((n, d) for d in deltas)
                    proof.summaries.append(f"np={n}: {sentence}")
    return proof


def proof_lines(proof: Proof) -> list[str]:
    env = " ".join(f"{k}={v}" for k, v in proof.settings.items())
    lines = [f"# proof (campaign {proof.campaign_id}): nothing forced (A) vs {env} (B), "
             "interleaved rounds"]
    for n in sorted(proof.oversubscribed):
        lines.append(f"# np={n}: oversubscribed (more ranks than cores): those latencies are "
                     "noise, read them as such")
    for n, d in proof.deltas:
        lines.append(f"  np={n} {d.sentence()}")
    for s in proof.summaries:
        lines.append(f"# {s}")
    for f in proof.failed:
        lines.append(f"# FAILED {f}")
    return lines
