"""A placement fixed by the diagnosis: both ranks on one host, or one rank on each of a pair.

It wraps a direct scheduler (local, testbed, hosts) and keeps everything of its allocation
(how hosts are reached, its interface, its counters) except where the ranks go.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import FabenchError
from ..host.launched import LaunchResult, RecordCallback
from ..host.netcounters import IfCounters
from ..host.placement import Allocation, HostSlots
from ..plan.plan import PlannedRun
from ..schedulers import DirectScheduler, Scheduler


class PlacedScheduler(DirectScheduler):
    """``hosts`` one name: every rank there; two names: ranks dealt over the two."""

    def __init__(self, inner: Scheduler, hosts: list[str] | None, placement: str) -> None:
        super().__init__(inner.starter_name)
        if not isinstance(inner, DirectScheduler):
            raise FabenchError(f"diagnose transports places ranks itself: --on {inner.name} "
                               "is a batch scheduler (use local, testbed or hosts)")
        self.inner = inner
        self.placement = placement
        self.hosts = hosts
        self.name = inner.name  # type: ignore[misc]
        self.results_dir = inner.results_dir

    @property
    def ranks_here(self) -> bool:  # type: ignore[override]
        return self.inner.ranks_here

    def describe(self) -> str:
        where = "one host" if self.placement == "intra" else "two hosts"
        names = f" ({', '.join(self.hosts)})" if self.hosts else ""
        return f"{self.inner.describe()}, ranks on {where}{names}"

    def close(self) -> None:
        self.inner.close()

    def _names(self, alloc: Allocation) -> list[str]:
        offered = list(alloc.execs)
        names = self.hosts or offered[: 1 if self.placement == "intra" else 2]
        for n in names:
            if n not in alloc.execs:
                raise FabenchError(f"host {n!r} is not one of {', '.join(offered)}")
        if self.placement == "inter" and len(set(names)) < 2:
            raise FabenchError(f"two hosts are needed between nodes; {self.inner.describe()} "
                               f"offers {', '.join(offered)}")
        return names

    def names_for(self, run: PlannedRun) -> list[str]:
        """The hosts this run would be placed on, in order (a pair kernel: client, server)."""
        return self._names(self.inner.allocation(run))

    def allocation(self, run: PlannedRun) -> Allocation:
        alloc = self.inner.allocation(run)
        names = self._names(alloc)
        if self.placement == "intra":
            placed = [HostSlots(names[0], run.ranks)]
        else:
            per, extra = divmod(run.ranks, len(names))
            placed = [HostSlots(n, per + (i < extra)) for i, n in enumerate(names)]
            placed = [h for h in placed if h.slots]
        crosses = len(placed) > 1
        first = alloc.execs[placed[0].name]
        env = dict(alloc.extra_env)
        if not crosses:
            env.pop("UCX_NET_DEVICES", None)  # on one host UCX may pick among its own
        elif alloc.iface and alloc.remote and alloc.launch_prefix:
            env["UCX_NET_DEVICES"] = alloc.iface
        return replace(alloc, placed=placed, crosses=crosses,
                       launch_prefix=first.prefix if alloc.launch_prefix else (),
                       extra_env=env)

    def counters(self, hosts: list[str]) -> dict[str, IfCounters]:
        return self.inner.counters(hosts)

    def counters_where(self) -> str:
        return self.inner.counters_where()

    def run(self, run: PlannedRun, on_record: RecordCallback | None = None) -> LaunchResult:
        res = super().run(run, on_record)
        if hasattr(self.inner, "state"):  # the testbed's description of itself
            st = self.inner.state
            res.extra["testbed"] = {"name": st.name, "subnet": st.subnet, "mode": st.mode}
        return res
