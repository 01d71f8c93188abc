"""A congestion test: rounds of victims alone and under each aggressor, every victim run
stored, the impact factors computed from the store.

Rounds interleave the phases (alone first in even rounds, last in odd ones) so that a slow
drift of a shared host's load falls on both sides of every ratio instead of on whichever
phase ran later; each aggressor is started for its phase only and stopped after it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import FabenchError
from ..host.placement import Allocation, cpu_count
from ..host.process import output_of
from ..host.provenance import host_provenance
from ..mpi.base import SHARED_CORES_ENV
from ..plan.plan import PlannedRun
from ..run.runner import RunOutcome, execute_run
from ..schedulers import DirectScheduler, Scheduler
from ..store.database import Store
from .aggressors import MAX_SECONDS, PATTERNS, AggressorPlan, start
from .impact import ImpactRow, impact_rows_from_store
from .victims import ISOLATED, VICTIMS, VictimSettings, victim_runs

if TYPE_CHECKING:  # annotations only (plan/plan.py says why)
    from ..plan.spec import CongestionBlock

SETTLE_S = 1.0  # aggressor traffic ramps up (TCP slow start, MPI wire-up) before victims run


@dataclass(frozen=True)
class CongestionConfig:
    victims: tuple[str, ...] = tuple(VICTIMS)
    aggressors: tuple[str, ...] = ("incast",)
    victim_hosts: tuple[str, ...] = ()  # default: the testbed's first two hosts
    aggressor_hosts: tuple[str, ...] = ()  # default: every other host
    target: str = ""  # incast/bulk destination; default: the victims' second host
    rounds: int = 3
    settle_s: float = SETTLE_S
    settings: VictimSettings = field(default_factory=VictimSettings)

    def __post_init__(self) -> None:
        if self.rounds < 1:
            raise FabenchError(f"--rounds must be >= 1, got {self.rounds}")
        if not 0 <= self.settle_s <= 60:
            raise FabenchError(f"--settle must be 0..60 seconds, got {self.settle_s}")
        if not self.aggressors:
            raise FabenchError("give at least one --aggressor: " + ", ".join(PATTERNS))
        for a in self.aggressors:
            if a not in PATTERNS:
                raise FabenchError(f"--aggressor {a!r}: one of {', '.join(PATTERNS)}")
        if len(set(self.aggressors)) != len(self.aggressors):
            raise FabenchError("an --aggressor is given twice")
        for v in self.victims:
            if v not in VICTIMS:
                raise FabenchError(f"--victim {v!r}: one of {', '.join(VICTIMS)}")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def config_from_block(b: CongestionBlock, mpi: str, timeout_s: float) -> CongestionConfig:
    """A spec's `congestion:` block as the command's configuration."""
    return CongestionConfig(
        victims=tuple(b.victim), aggressors=tuple(b.aggressor),
        victim_hosts=tuple(b.victim_hosts), aggressor_hosts=tuple(b.aggressor_hosts),
        target=b.target, rounds=b.rounds, settle_s=b.settle,
        settings=VictimSettings(iterations=b.iterations, bw_iterations=b.bw_iterations,
                                bw_window=b.bw_window, mpi=mpi, transport=b.transport,
                                timeout_s=min(timeout_s, 600.0)))


@dataclass(frozen=True)
class Layout:
    """Which hosts are victims, which aggressors, where incast and bulk send."""

    victims: tuple[str, ...]
    aggressors: tuple[str, ...]
    target: str


def layout(cfg: CongestionConfig, hosts: list[str]) -> Layout:
    victims = cfg.victim_hosts or tuple(hosts[:2])
    aggressors = cfg.aggressor_hosts or tuple(h for h in hosts if h not in victims)
    for h in (*victims, *aggressors, *((cfg.target,) if cfg.target else ())):
        if h not in hosts:
            raise FabenchError(f"host {h!r} is not one of the testbed's ({','.join(hosts)})")
    if len(victims) < 2:
        raise FabenchError("--victim-hosts: at least two hosts")
    if set(victims) & set(aggressors):
        raise FabenchError(f"hosts {','.join(sorted(set(victims) & set(aggressors)))} are "
                           "both victims and aggressors")
    if not aggressors:
        raise FabenchError(f"no host left for the aggressors: the testbed has {len(hosts)} "
                           "hosts (make one with --hosts 4 or more)")
    return Layout(victims, aggressors, cfg.target or victims[1])


def hosts_of(scheduler: Scheduler) -> list[str]:
    """The hosts victims and aggressors go to: the scheduler must offer hosts and start
    processes on a host of fabench's choosing (a testbed, a hostfile, a site's own)."""
    names = scheduler.host_names()
    if not names or len(names) < 2:
        raise FabenchError("fabench congestion places victims and aggressors on hosts of "
                           "their own and starts aggressors there: it runs where fabench "
                           "places processes on hosts (a testbed: `fabench testbed up --hosts "
                           f"6 ...`, then --on testbed NAME; or --on hosts FILE), not --on "
                           f"{scheduler.name}")
    return names


# TCP congestion controls that do not slow down on CE marks: BBR (v1, Linux's `bbr`) reacts
# to neither loss nor ECN, only to its own bandwidth and RTT estimates (Cardwell et al., "BBR:
# Congestion-Based Congestion Control", ACM Queue 14(5), 2016).
IGNORES_ECN = ("bbr",)


def tcp_settings(scheduler: Scheduler) -> dict[str, dict[str, str]]:
    """Each host's TCP congestion control and ECN mode, read on it: what decides whether
    a CE mark slows anything down (recorded with the campaign)."""
    out = {}
    for name in hosts_of(scheduler):
        prefix = list(scheduler.host_exec(name).prefix)
        got = {}
        for key in ("net.ipv4.tcp_congestion_control", "net.ipv4.tcp_ecn"):
            got[key.rsplit(".", 1)[1]] = output_of([*prefix, "sysctl", "-n", key]) or "?"
        out[name] = got
    return out


def ecn_warning(tcp: dict[str, dict[str, str]], bottleneck_ecn: bool) -> str | None:
    deaf = sorted({v["tcp_congestion_control"] for v in tcp.values()} & set(IGNORES_ECN))
    if not bottleneck_ecn or not deaf:
        return None
    return (f"the hosts' TCP congestion control is {', '.join(deaf)}, which does not slow "
            "down on CE marks: the ECN queue marks but the senders ignore it. For ECN's "
            "effect make the testbed with --sysctl net.ipv4.tcp_congestion_control=reno")


@dataclass
class CongestionOutcome:
    campaign_id: int
    rows: list[ImpactRow]
    runs: list[RunOutcome]
    aggressors: list[dict[str, Any]]
    layout: Layout
    tcp: dict[str, dict[str, str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


Progress = Callable[[str], None]


def phase_seconds(cfg: CongestionConfig) -> float:
    """The longest a congested phase can last: the settling time and every victim run's
    limit. Its aggressors end by themselves after that, whatever happens to fabench."""
    return min(cfg.settle_s + len(cfg.victims) * cfg.settings.timeout_s, MAX_SECONDS)


def run_congestion(cfg: CongestionConfig, scheduler: Scheduler, store: Store,
                   campaign_id: int, progress: Progress | None = None,
                   tcp: dict[str, dict[str, str]] | None = None) -> CongestionOutcome:
    """Every round and phase into the store under campaign_id; the impact rows after."""
    lay = layout(cfg, hosts_of(scheduler))
    say = progress or (lambda _: None)
    tcp = tcp if tcp is not None else tcp_settings(scheduler)
    warning = ecn_warning(tcp, any("ecn=" in spec for spec in scheduler.link_impairments()))
    if warning:
        say(f"warning: {warning}")

    def alloc_for(run: PlannedRun, hosts: list[str]) -> Allocation:
        view = scheduler.on_hosts(hosts)
        if not isinstance(view, DirectScheduler):
            raise FabenchError(f"the {scheduler.name} scheduler cannot start aggressors from "
                               "here")
        view.check_ranks(run)  # more aggressor ranks than cores: only with --oversubscribe
        return view.allocation(run)

    # Where every host of the test is a namespace of this machine and they outnumber its
    # cores, the victim's ranks wait beside the aggressors and the links on the same cores: they
    # nap in long waits (SHARED_CORES_ENV) in every phase alike, so the factor compares like
    # with like. An incast test on 4 hosts over 2 cores: 55 % of the machine's CPU samples
    # were the victim's ranks spinning for pongs queued behind the incast.
    hosts_busy = {*lay.victims, *lay.aggressors, lay.target}
    env = dict(SHARED_CORES_ENV) if scheduler.ranks_here and len(hosts_busy) > cpu_count() \
        else {}
    outcomes: list[RunOutcome] = []
    stopped: list[dict[str, Any]] = []
    for rnd in range(cfg.rounds):
        phases = [ISOLATED, *cfg.aggressors]
        if rnd % 2:
            phases = [*cfg.aggressors, ISOLATED]
        for phase in phases:
            running = None
            if phase != ISOLATED:
                say(f"round {rnd + 1}/{cfg.rounds}: starting aggressor {phase} on "
                    f"{','.join(lay.aggressors)}" + (f" toward {lay.target}"
                                                     if phase in ("incast", "bulk") else ""))
                running = start(AggressorPlan(phase, lay.aggressors, lay.target,
                                              cfg.settings.mpi, cfg.settings.transport,
                                              phase_seconds(cfg)),
                                alloc_for)
                time.sleep(cfg.settle_s)
            phase_runs: list[RunOutcome] = []
            try:
                for planned, on in victim_runs(list(cfg.victims), list(lay.victims), phase,
                                               rnd, cfg.settings, env):
                    say(f"round {rnd + 1}/{cfg.rounds} {phase}: {planned.kernel.name} on "
                        f"{','.join(on)}")
                    oc = execute_run(store, scheduler.on_hosts(on), planned, campaign_id)
                    if oc.status != "ok":
                        say(f"  {oc.status}: {oc.reason}")
                    phase_runs.append(oc)
            finally:
                if running is not None:
                    st = running.stop()
                    stopped.append({"round": rnd, **st.to_json()})
                    for oc in phase_runs:
                        store.add_note(oc.run_id, f"aggressor {phase}: pids "
                                       f"{','.join(map(str, st.pids))}, {st.seconds:.1f} s")
                        if st.died_early:
                            # The phase was not congested all along: said with every run.
                            store.add_flag(oc.run_id, f"aggressor-died: {phase}: "
                                           f"{'; '.join(st.died_early)}")
            outcomes.extend(phase_runs)
    return CongestionOutcome(campaign_id, impact_rows_from_store(store, campaign_id),
                             outcomes, stopped, lay, tcp, [warning] if warning else [])


def congestion_campaign(cfg: CongestionConfig, scheduler: Scheduler, store_path: Any,
                        name: str = "congestion",
                        progress: Progress | None = None) -> CongestionOutcome:
    """The test as a campaign of its own in the store."""
    layout(cfg, hosts_of(scheduler))  # refused before anything is stored
    tcp = tcp_settings(scheduler)
    with Store(store_path) as store:
        cid = store.begin_campaign(name, {"congestion": cfg.to_json(),
                                          "launcher": scheduler.describe(), "tcp": tcp},
                                   host_provenance())
        try:
            out = run_congestion(cfg, scheduler, store, cid, progress, tcp)
        except BaseException:
            store.end_campaign(cid, "interrupted")
            raise
        failed = sum(o.status != "ok" for o in out.runs)
        store.end_campaign(cid, "finished" if not failed else f"finished with {failed} failed")
    return out
