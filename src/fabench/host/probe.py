"""Host state that moves small-message results and that load averages do not show.

The core-to-core probe times one cache line handed back and forth between the first two CPUs
the ranks may use (`--bind-to core` puts ranks 0 and 1 there). On a virtual machine the
hypervisor moves the virtual CPUs between physical cores: on the 2-vCPU host this was built on
the hand-off switched between about 60 and 230-370 ns within minutes, and 8 B shared-memory
latency between 0.29 and 0.58 us with it. Recorded before and after each run, it lets a
report tell that change of host from a change of configuration.
"""

import json
import statistics
import subprocess
from collections.abc import Iterable, Mapping
from typing import Any

from ..host.native import native_root
from .process import run_once

PROBE = "fb-probe-c2c"
TIMEOUT_S = 5.0
# Slower over faster hand-off at which runs count as taken on a different host: the two states
# seen here were 58-82 and 225-370 ns; one state's own probes spread well under 1.5x.
HOST_STATE_RATIO = 1.5


def core_to_core() -> dict[str, Any] | None:
    """{"one_way_ns", "best_ns", "cpus", "round_trips"}, or None where it cannot be measured
    (probe not built, fewer than two CPUs, or it failed): a missing probe never fails a run."""
    exe = native_root() / "bin" / PROBE
    if not exe.is_file():
        return None
    try:
        p = run_once([str(exe)], capture_output=True, text=True, timeout=TIMEOUT_S,
                           check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in p.stdout.splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if p.returncode == 0 and rec.get("type") == "probe":
            return {k: rec[k] for k in ("one_way_ns", "best_ns", "cpus", "round_trips")}
    return None


def run_core_to_core_ns(provenance: Mapping[str, Any]) -> float | None:
    """A run's core-to-core hand-off: the mean of its before and after probes."""
    vals = [p["one_way_ns"] for k in ("core_to_core_start", "core_to_core_end")
            if isinstance(p := provenance.get(k), dict) and p.get("one_way_ns")]
    return sum(vals) / len(vals) if vals else None


def sides_differ(provs_a: Iterable[Mapping[str, Any]],
                 provs_b: Iterable[Mapping[str, Any]]) -> str:
    """A sentence when two sets of runs were taken at different core-to-core hand-offs (the
    medians of their runs' probes >= HOST_STATE_RATIO apart), else ""."""
    sides = []
    for provs in (provs_a, provs_b):
        vals = [v for p in provs if (v := run_core_to_core_ns(p)) is not None]
        if not vals:
            return ""
        sides.append(statistics.median(vals))
    a, b = sides
    if max(a, b) < HOST_STATE_RATIO * min(a, b):
        return ""
    return (f"A's runs saw a core-to-core hand-off of {a:.0f} ns, B's {b:.0f} ns: the host "
            "changed between them, and the difference may be the host's at any size")
