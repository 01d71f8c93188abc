"""What the host was doing while runs measured: warnings for every result taken on it.

Below the report and the features (the report, `fabench matrix` and others warn alike), read
from each run's provenance only, so a store from another host is judged by its own figures.
"""

from ..host.probe import HOST_STATE_RATIO, run_core_to_core_ns
from ..store.database import RunRow

LOAD_PRESSURE_WARN = 0.10  # share of the run's wall time some task waited for a CPU


def _pressure_share(run: RunRow) -> float | None:
    prov = run.provenance
    try:
        a, b = prov["load_start"], prov["load_end"]
        waited = (float(b["cpu_pressure_some"]["total"]) -
                  float(a["cpu_pressure_some"]["total"])) / 1e6
        wall = float(b["time"]) - float(a["time"])
    except (KeyError, TypeError, ValueError):
        return None
    return waited / wall if wall > 0.5 else None


def measured_here(run: RunRow) -> bool:
    """A run whose values this host's load or state can move: not simulated (SimGrid's
    clock is the model's, whatever the host does) and not imported (measured elsewhere)."""
    return not (run.launcher == "simgrid" or run.mpi == "simgrid" or
                run.launcher.startswith("import:"))


def load_of(run: RunRow) -> tuple[float | None, float | None]:
    """(CPU-pressure share during the run, highest 1-min load average at its ends)."""
    la = [run.provenance[k].get("loadavg", [0])[0] for k in ("load_start", "load_end")
          if isinstance(run.provenance.get(k), dict)]
    return _pressure_share(run), (max(la) if la else None)


def load_warning(runs: list[RunRow], cores: int | None) -> str | None:
    """One line for all runs measured on a loaded host (the host is shared, so often all)."""
    hit, worst_share, worst_la = [], 0.0, 0.0
    runs = [r for r in runs if measured_here(r)]
    for r in runs:
        share, la = load_of(r)
        loaded = (share is not None and share > LOAD_PRESSURE_WARN) or (
            bool(cores) and la is not None and la > (cores or 0))
        if loaded:
            hit.append(r.id)
            worst_share = max(worst_share, share or 0.0)
            worst_la = max(worst_la, la or 0.0)
    if not hit:
        return None
    ids = ", ".join(map(str, hit[:12])) + (" ..." if len(hit) > 12 else "")
    return (f"host loaded during {len(hit)} of {len(runs)} runs ({ids}): load average up to "
            f"{worst_la:.1f} on {cores or '?'} cores, some task waiting for a CPU up to "
            f"{worst_share:.0%} of a run; repeats and medians absorb part of this, not all")


def host_state_warning(runs: list[RunRow]) -> str | None:
    """One line when the host's core-to-core hand-off changed between runs (host/probe.py)."""
    c2c = {r.id: v for r in runs
           if measured_here(r) and (v := run_core_to_core_ns(r.provenance)) is not None}
    if len(c2c) < 2 or max(c2c.values()) < HOST_STATE_RATIO * min(c2c.values()):
        return None
    fast = min(c2c.values())
    slow = sorted(i for i, v in c2c.items() if v >= HOST_STATE_RATIO * fast)
    ids = ", ".join(map(str, slow[:12])) + (" ..." if len(slow) > 12 else "")
    return (f"the host changed under the runs: a cache line between the ranks' first two "
            f"cores took {fast:.0f} to {max(c2c.values()):.0f} ns one way (slow in runs {ids}; "
            f"{len(slow)} of {len(c2c)}). Results at every size can move with it (on a virtual "
            "machine the hypervisor moves its CPUs); compare runs taken at like values")
