"""Interface counters of every node of a Slurm allocation, before and after each run.

fabench cannot reach the compute nodes itself, so the job script does it: one task per node
copies /proc/net/dev into the job's working directory (shared with the submit host), named
`<run>.<job id>.<before|after>.<node>.netdev`. After the job fabench reads those copies and
checks them the way the testbed and hosts launchers check the counters they read live
(fabench.host.netcounters). The job id in the name keeps a by-hand submission of the same script
from mixing its copies with fabench's.
"""

import shlex
from pathlib import Path

from ..host.launched import LaunchResult
from ..host.netcounters import IfCounters, crossing_flag, delta, link_counters
from ..util.hostnames import host_problem

PHASES = ("before", "after")

# A bash function every generated script defines. Explicit --nodes/--ntasks/--ntasks-per-node
# because a step otherwise inherits the job's task layout (SLURM_NTASKS...) and would start
# as many copies as ranks, or be refused. `timeout` because a snapshot must never hold up the
# job, and `|| echo` because it must never fail it: why a copy is missing goes to `.err`.
NETDEV_FUNCTION = [
    "# Interface counters of every node, one copy per node ($1: run, $2: before|after), so",
    "# the results can show whether the run's traffic crossed the network. Never fails the",
    "# job; why a copy is missing goes to the .err file.",
    "fabench_netdev() {",
    '  local stem="$1.$SLURM_JOB_ID.$2" err',
    '  err=$(timeout 120 srun --mpi=none --nodes="$SLURM_JOB_NUM_NODES" \\',
    '      --ntasks="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1 --kill-on-bad-exit=0 sh -c \\',
    "      'n=${SLURMD_NODENAME:-$(hostname -s)}; "
    'cat /proc/net/dev > "$0.$n.tmp" && mv "$0.$n.tmp" "$0.$n.netdev"\' \\',
    '      "$stem" 2>&1) || echo "snapshot step exited $?: $err" > "$stem.err"',
    "}",
]


def snapshot_line(stem: str, phase: str) -> str:
    return f"fabench_netdev {shlex.quote(stem)} {phase}"


def read_snapshots(wd: Path, stem: str, job: str, phase: str,
                   ifname: str | None) -> tuple[dict[str, IfCounters], str]:
    """{node: counters} from one phase's copies, and why copies are missing ('' if none)."""
    prefix = f"{stem}.{job}.{phase}."
    nodes = {}
    for f in wd.glob(f"{prefix}*.netdev"):
        node = f.name[len(prefix):-len(".netdev")]
        # A node name from the job's own file names is data that reaches reports: anything
        # but a host name (another file dropped in the shared directory) is not a node.
        if host_problem(node) is None:
            nodes[node] = link_counters(f.read_text(errors="replace"), ifname)
    err = wd / f"{prefix}err"
    why = err.read_text(errors="replace").strip()[-500:] if err.exists() else ""
    return nodes, why


def check_slurm_crossing(res: LaunchResult, *, wd: Path, stem: str, job: str,
                         alloc_nodes: int, ranks: int, on_node: bool,
                         ifname: str | None) -> None:
    """Record what each node's links carried during the run; flag it when the allocation spans
    several nodes, the transport can cross, and the links carried less than the run moved."""
    (before, why_b), (after, why_a) = (read_snapshots(wd, stem, job, p, ifname)
                                       for p in PHASES)
    missing = "; ".join(f"{p}: {w}" for p, w in zip(PHASES, (why_b, why_a), strict=True) if w)
    if not before or not after:
        res.notes.append("interface counters of the allocation's nodes missing"
                         + (f" ({missing})" if missing else " (the job ended before the "
                            "snapshot step?)"))
        return
    carried = delta(before, after)
    res.extra["interface_bytes"] = {"where": ifname or "all but lo", "per_host": carried}
    if missing or set(before) != set(after):
        res.notes.append(f"interface counters incomplete: before on {sorted(before)}, after on "
                         f"{sorted(after)}" + (f" ({missing})" if missing else ""))
    nodes = max(alloc_nodes, len(set(before) | set(after)))
    if on_node or ranks < 2:
        why = "an on-node transport" if on_node else f"{ranks} rank"
        res.notes.append(f"interface bytes recorded; {why} stays on one node, so nothing "
                         "claimed to cross")
    elif nodes < 2:
        res.notes.append("interface bytes recorded; one-node allocation, so nothing claimed to "
                         "cross (sbatch -N 2 --ntasks-per-node=1 puts ranks on two nodes)")
    else:
        flag = crossing_flag(carried, res.output.results, list(carried))
        if flag:
            res.flags.append(f"{flag}; ranks may have been packed on one node of the "
                             f"{nodes}-node allocation (ask sbatch for -N {ranks} "
                             "--ntasks-per-node=1)")
