"""The testbed launcher: MPI across the hosts of a namespace testbed, transport kernels started
inside two of its hosts, and the interface counters of every host around each run.

`--on testbed NAME` uses a testbed made by `fabench testbed up --name NAME`; `--on testbed`
alone makes a 2-host testbed for this process and removes it at exit (also on Ctrl-C and
SIGTERM; after a kill -9, `fabench testbed down --all` finds it by its name prefix).
`--on auto` does the same when namespaces can be made here and falls back to local.
"""

import atexit
import os
import signal
import sys
from types import FrameType

from ..errors import FabenchError
from ..mpi.base import cpu_count
from ..testbed import TestbedConfig, TestbedState, create, destroy, load_state
from ..testbed.counters import IfCounters, read_counters
from ..testbed.links import LinkWatch
from .base import (
    HostExec,
    Launcher,
    LaunchRequest,
    LaunchResult,
    RecordCallback,
    get_launcher,
    register_launcher,
)
from .hosts import HostSlots, on_node_transport, place_ranks, run_across

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


@register_launcher("testbed")
class TestbedLauncher(Launcher):
    ranks_here = True  # namespaces on this machine's CPUs

    def __init__(self, testbed: str | None = None, hosts: int = 2) -> None:
        if testbed:
            self.state = load_state(testbed)
            if not self.state.complete:
                raise FabenchError(f"testbed {testbed!r} was not fully made (a crash during "
                                   f"`up`?); `fabench testbed down {testbed}` and make it again")
            self.ephemeral = False
        else:
            self.state = make_ephemeral(hosts)
            self.ephemeral = True

    def describe(self) -> str:
        s, c = self.state, self.state.config
        rate = f", rate {c.rate}" if c.rate else ""
        kind = ", made for this run" if self.ephemeral else ""
        return (f"testbed {s.name} ({len(s.hosts)} hosts, {s.subnet}, mtu {c.mtu}{rate}, "
                f"{s.mode}{kind})")

    def close(self) -> None:
        if self.ephemeral and self.state in _EPHEMERAL:
            _EPHEMERAL.remove(self.state)
            destroy(self.state)

    def run(self, req: LaunchRequest, on_record: RecordCallback | None = None) -> LaunchResult:
        st = self.state
        on_node = on_node_transport(req.transport) if req.kernel.needs_mpi else False
        placed = place_ranks([HostSlots(h.name) for h in st.hosts], req.ranks, on_node)
        crosses = len(placed) > 1 or not req.kernel.needs_mpi

        def counters(names: list[str]) -> dict[str, IfCounters]:
            return read_counters(st, names)

        ifname = st.hosts[0].ifname
        links = LinkWatch(st)
        links.start()  # a testbed whose fb-link died is refused, not measured
        res = run_across(
            req, on_record, placed=placed, execs=testbed_execs(st), crosses=crosses,
            counters=counters, mpirun_prefix=tuple(st.host(placed[0].name).enter),
            remote={"agent": str(st.agent), "iface": ifname, "subnet": st.subnet},
            # UCX would otherwise also offer loopback as a network device between hosts.
            extra_env={"UCX_NET_DEVICES": ifname} if crosses else {},
            where=ifname,
            # Every testbed host runs on this machine's cores: a host's slots say nothing
            # about them, and 4 busy-polling ranks on 2 cores take 100-1000x longer unless
            # they yield.
            oversubscribe=req.ranks > cpu_count())
        res.extra["testbed"] = {"name": st.name, "subnet": st.subnet, "mode": st.mode,
                                "mtu": st.config.mtu, "rate": st.config.rate,
                                "offloads": st.config.offloads, "sysctls": st.config.sysctls}
        # Which implementation carried each impaired link, fb-link's counters over the run,
        # and a flag when a link process died during it.
        link_extra, link_flags = links.finish()
        res.extra["testbed"].update(link_extra)
        res.flags.extend(link_flags)
        return res


@register_launcher("auto")
class AutoLauncher(Launcher):
    """A testbed made for this process when namespaces can be made here, else local; it says
    which, and why."""

    def __init__(self) -> None:
        try:
            self.inner: Launcher = TestbedLauncher()
            self.why = ""
        except (FabenchError, OSError) as exc:
            self.inner = get_launcher("local")
            self.why = str(exc).splitlines()[0][:200]
            print(f"fabench: no testbed here ({self.why}); running locally", file=sys.stderr)
        self.ranks_here = self.inner.ranks_here

    def describe(self) -> str:
        if self.why:
            return f"local (auto: no testbed: {self.why})"
        return f"{self.inner.describe()} (auto)"

    def run(self, req: LaunchRequest, on_record: RecordCallback | None = None) -> LaunchResult:
        return self.inner.run(req, on_record)
