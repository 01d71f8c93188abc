"""testbed: ranks across the hosts of a namespace testbed (MPI started inside its first host,
transport kernels inside two of its hosts), interface counters read inside each host.

`--on testbed NAME` uses a testbed made by `fabench testbed up --name NAME`; `--on testbed`
alone uses the default testbed (`tb`, what `fabench testbed up` makes) when it is up, else
makes a 2-host testbed for this process and removes it at exit (also on Ctrl-C and SIGTERM;
after a kill -9, `fabench testbed down --all` finds it by its name prefix). `--on auto` does
the same when namespaces can be made here and falls back to local.
"""

import atexit
import copy
import os
import signal
import sys
from collections.abc import Sequence
from types import FrameType
from typing import ClassVar

from ..errors import FabenchError
from ..host.fanout import on_each
from ..host.launched import LaunchResult, RecordCallback
from ..host.leftovers import own_session_base
from ..host.netcounters import IfCounters, read_host_counters
from ..host.placement import Allocation, HostExec, HostSlots, cpu_count, place_ranks
from ..mpi.openmpi import SESSION_BASE
from ..plan.plan import PlannedRun
from ..testbed import (
    HostState,
    TestbedConfig,
    TestbedState,
    create,
    destroy,
    list_states,
    load_state,
)
from ..testbed.links import LinkWatch
from ..testbed.state import NAME_RE
from . import SCHEDULERS, DirectScheduler, Scheduler
from .local import LocalScheduler

DEFAULT_TESTBED = "tb"  # the name `fabench testbed up` gives when none is asked
_EPHEMERAL: list[TestbedState] = []


def _cleanup_ephemeral() -> None:
    while _EPHEMERAL:
        destroy(_EPHEMERAL.pop())


def _on_signal(signum: int, frame: FrameType | None) -> None:
    # Turn SIGTERM/SIGHUP into a normal exit so the atexit hook removes the namespaces.
    raise SystemExit(128 + signum)


def _install_cleanup() -> None:
    atexit.register(_cleanup_ephemeral)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) == signal.SIG_DFL:
            signal.signal(sig, _on_signal)


def make_ephemeral(hosts: int = 2) -> TestbedState:
    config = TestbedConfig(hosts=hosts)
    name = f"r{os.getpid()}"
    _install_cleanup()
    state = create(name, config)
    _EPHEMERAL.append(state)
    return state


def testbed_execs(state: TestbedState) -> dict[str, HostExec]:
    return {h.name: HostExec(h.name, h.address, tuple(h.enter)) for h in state.hosts}


def default_testbed() -> TestbedState | None:
    for st in list_states():
        if st.name == DEFAULT_TESTBED and st.complete:
            return st
    return None


@SCHEDULERS.register("testbed")
class TestbedScheduler(DirectScheduler):
    description = "the hosts of a namespace testbed (fabench testbed up)"
    usage = "testbed [NAME]"
    ranks_here: ClassVar[bool] = True  # namespaces on this machine's CPUs

    def __init__(self, testbed: str | None = None, hosts: int = 2,
                 starter: str | None = None, use_default: bool = True) -> None:
        super().__init__(starter)
        # A view on some hosts only (on_hosts): ranks go there, TCP counters of every host.
        self.only: tuple[str, ...] = ()
        state = load_state(testbed) if testbed else \
            default_testbed() if use_default else None
        if state is not None:
            if not state.complete:
                raise FabenchError(f"testbed {state.name!r} was not fully made (a crash during "
                                   f"`up`?); `fabench testbed down {state.name}` and make it "
                                   "again")
            self.state, self.ephemeral = state, False
        else:
            self.state, self.ephemeral = make_ephemeral(hosts), True

    @classmethod
    def from_words(cls, words: list[str], starter: str | None = None) -> Scheduler:
        if len(words) > 1:
            raise FabenchError(f"--on testbed takes one testbed name (got {' '.join(words)})")
        if words and not NAME_RE.match(words[0]):
            raise FabenchError(f"--on testbed {words[0][:40]!r}: a testbed name is 1-16 "
                               "lower-case letters/digits, starting with a letter")
        return cls(testbed=words[0] if words else None, starter=starter)

    def describe(self) -> str:
        s, c = self.state, self.state.config
        rate = f", rate {c.rate}" if c.rate else ""
        kind = ", made for this run" if self.ephemeral else ""
        sw = (f", {c.switches} switches" + (f" (uplink {c.uplink_rate})" if c.uplink_rate
                                             else "")) if c.switches > 1 else ""
        imp = f", impaired: {'; '.join(c.impairs)}" if c.impairs else ""
        return (f"testbed {s.name} ({len(s.hosts)} hosts, {s.subnet}, mtu {c.mtu}{rate}{sw}, "
                f"{s.mode}{kind}{imp})")

    def host_names(self) -> list[str] | None:
        return [h.name for h in self._hosts()]

    def host_exec(self, name: str) -> HostExec:
        execs = testbed_execs(self.state)
        if name not in execs:
            raise FabenchError(f"host {name!r} is not one of testbed {self.state.name}'s")
        return execs[name]

    def link_impairments(self) -> tuple[str, ...]:
        return tuple(self.state.config.impairs)

    def on_hosts(self, names: Sequence[str]) -> "TestbedScheduler":
        """The same testbed, ranks placed on these hosts only (in this order); each run
        records the TCP counters of every host of the testbed, since traffic it did not send
        (aggressors sharing its links) is what explains its numbers. The view never removes
        the testbed: its owner (this scheduler) does."""
        known = [h.name for h in self.state.hosts]
        bad = [n for n in names if n not in known]
        if bad or not names or len(set(names)) != len(names):
            raise FabenchError(f"hosts {','.join(names)}: each once, among the testbed's "
                               f"{','.join(known)}")
        view = copy.copy(self)
        view.only, view.ephemeral = tuple(names), False
        return view

    def _hosts(self) -> list[HostState]:
        if not self.only:
            return list(self.state.hosts)
        return [self.state.host(n) for n in self.only]

    def tcp_watched(self, alloc: Allocation, names: list[str]) -> list[str]:
        return [h.name for h in self.state.hosts] if self.only else names
    def slots(self) -> tuple[int, str] | None:
        # Every testbed host runs on this machine's cores, but a testbed exists to run a rank
        # on each of its emulated hosts: that many are always allowed (and flagged
        # oversubscribed where they outnumber the cores); beyond it the user must consent.
        hosts, cores = len(self._hosts()), cpu_count()
        if hosts > cores:
            return hosts, f"one per emulated host; this machine's {cores} cores are shared by them"
        return cores, "this machine's cores, shared by its hosts"

    def close(self) -> None:
        if self.ephemeral and self.state in _EPHEMERAL:
            _EPHEMERAL.remove(self.state)
            destroy(self.state)

    def allocation(self, run: PlannedRun) -> Allocation:
        st = self.state
        on_node = run.kernel.needs_mpi and run.transport.on_node
        placed = place_ranks([HostSlots(h.name) for h in self._hosts()], run.ranks, on_node)
        crosses = len(placed) > 1 or not run.kernel.needs_mpi
        ifname = st.hosts[0].ifname
        return Allocation(
            placed=placed, execs=testbed_execs(st), remote=True, crosses=crosses,
            launch_prefix=tuple(st.host(placed[0].name).enter),
            agent=str(st.agent), iface=ifname, subnet=st.subnet,
            # UCX would otherwise also offer loopback as a network device between hosts.
            extra_env={**({"UCX_NET_DEVICES": ifname} if crosses else {}),
                       # the hosts share this machine's /tmp: Open MPI's session directories
                       # (mpirun's and each host's orted's) under fabench's own temporary
                       # directory go with it even when mpirun is SIGKILLed
                       **({SESSION_BASE: own_session_base()} if run.kernel.needs_mpi
                          and SESSION_BASE not in os.environ else {})},
            # Every testbed host runs on this machine's cores: a host's slots say nothing
            # about them, and 4 busy-polling ranks on 2 cores take 100-1000x longer unless
            # they yield.
            oversubscribe=run.ranks > cpu_count())

    def counters(self, hosts: list[str]) -> dict[str, IfCounters]:
        by = {h.name: h for h in self.state.hosts if h.name in hosts}
        return on_each(lambda n: read_host_counters(by[n].enter, by[n].ifname), by)

    def counters_where(self) -> str:
        return self.state.hosts[0].ifname

    def run(self, run: PlannedRun, on_record: RecordCallback | None = None) -> LaunchResult:
        st = self.state
        links = LinkWatch(st)
        links.start()  # a testbed whose fb-link died is refused, not measured
        res = super().run(run, on_record)
        res.extra["testbed"] = {"name": st.name, "subnet": st.subnet, "mode": st.mode,
                                "mtu": st.config.mtu, "rate": st.config.rate,
                                "offloads": st.config.offloads, "sysctls": st.config.sysctls}
        # Which implementation carried each impaired link, fb-link's counters over the run,
        # and a flag when a link process died during it.
        link_extra, link_flags = links.finish()
        res.extra["testbed"].update(link_extra)
        res.flags.extend(link_flags)
        return res


@SCHEDULERS.register("auto")
class AutoScheduler(Scheduler):
    """A testbed when namespaces can be made here, else this host; it says which, and why."""

    description = "a testbed made for the run when namespaces work here, else local"
    usage = "auto"

    def __init__(self, starter: str | None = None) -> None:
        super().__init__(starter)
        try:
            self.inner: Scheduler = TestbedScheduler(starter=starter, use_default=False)
            self.why = ""
        except (FabenchError, OSError) as exc:
            self.inner = LocalScheduler(starter=starter)
            self.why = str(exc).splitlines()[0][:200]
            print(f"fabench: no testbed here ({self.why}); running locally", file=sys.stderr)

    @property
    def ranks_here(self) -> bool:  # type: ignore[override]
        return self.inner.ranks_here

    def slots(self) -> tuple[int, str] | None:
        return self.inner.slots()

    def check_ranks(self, run: PlannedRun) -> None:
        self.inner.oversubscribe = self.oversubscribe
        self.inner.check_ranks(run)

    def describe(self) -> str:
        if self.why:
            return f"local (auto: no testbed: {self.why})"
        return f"{self.inner.describe()} (auto)"

    def close(self) -> None:
        self.inner.close()

    def host_names(self) -> list[str] | None:
        return self.inner.host_names()

    def host_exec(self, name: str) -> HostExec:
        return self.inner.host_exec(name)

    def on_hosts(self, names: Sequence[str]) -> Scheduler:
        return self.inner.on_hosts(names)

    def link_impairments(self) -> tuple[str, ...]:
        return self.inner.link_impairments()

    def run(self, run: PlannedRun, on_record: RecordCallback | None = None) -> LaunchResult:
        return self.inner.run(run, on_record)
