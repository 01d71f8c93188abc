"""What a testbed is made of, written down before it is made, so `down` can undo a crash."""

import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..choices import TESTBED_QUEUE
from ..errors import FabenchError
from ..util.units import rate_bits
from .impair import parse_impairs

DEFAULT_PREFIX = "fbtb"
DEFAULT_QUEUE = TESTBED_QUEUE
# What testbeds recorded before the queue was a setting got; not DEFAULT_QUEUE, which may move.
LEGACY_QUEUE = "50ms"
NAME_RE = re.compile(r"^[a-z][a-z0-9]{0,15}\Z")


def name_prefix() -> str:
    """The tool's own prefix on every namespace it makes (tests give theirs a private one)."""
    prefix = os.environ.get("FABENCH_TESTBED_PREFIX", DEFAULT_PREFIX)
    if not re.match(r"^[a-z][a-z0-9]{1,11}$", prefix):
        raise FabenchError(f"FABENCH_TESTBED_PREFIX={prefix!r}: 2-12 lower-case letters/digits")
    return prefix


def run_dir() -> Path:
    """Where state files live. /run is right for root: namespaces die with a reboot, and so
    do the files that describe them."""
    override = os.environ.get("FABENCH_RUN_DIR")
    if override:
        return Path(override)
    if os.geteuid() == 0:
        return Path("/run/fabench")
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    return Path(xdg) / "fabench" if xdg else Path(f"/tmp/fabench-{os.geteuid()}")


@dataclass
class TestbedConfig:
    __test__ = False  # not a pytest class, despite the name
    hosts: int = 2
    mtu: int = 1500
    rate: str | None = None  # tc rate, e.g. "1gbit"; None = unlimited
    burst: str | None = None  # tbf bucket; None: one millisecond at the rate (burst_for)
    queue: str = DEFAULT_QUEUE  # tbf `latency` of every rate-limited link end
    offloads: bool | None = None  # TSO/GSO/GRO on both veth ends; None leaves the defaults
    sysctls: dict[str, str] = field(default_factory=dict)
    switches: int = 1  # leaf switches; hosts split evenly, leaves joined through a spine
    uplink_rate: str | None = None  # tc rate of each leaf's uplink, both directions
    impairs: list[str] = field(default_factory=list)  # --impair specs (testbed/impair.py)
    link_impl: str = "auto"  # auto (netem where the kernel has it), netem, fb-link
    sshd: bool = False  # OpenSSH's sshd in every host, with keys made for the testbed

    def validate(self) -> None:
        if not 1 <= self.hosts <= 250:
            raise FabenchError(f"--hosts must be 1..250, got {self.hosts}")
        if not 68 <= self.mtu <= 65535:
            raise FabenchError(f"--mtu must be 68..65535, got {self.mtu}")
        if self.rate is not None and not re.match(r"^\d+(\.\d+)?[kmgt]?(bit|bps)$",
                                                  self.rate.lower()):
            raise FabenchError(f"--rate {self.rate!r}: use tc units such as 100mbit, 1gbit")
        queue_us(self.queue)
        if self.burst is not None:
            # tc's size units (tc(8) "SIZES"); the value goes onto a tc line in a host script.
            if self.rate is None:
                raise FabenchError("--burst is the rate limit's bucket: give --rate too")
            if not re.match(r"^\d+(\.\d+)?([kmg]?(b|bit)?|[kmg]ib(it)?)$", self.burst.lower()):
                raise FabenchError(f"--burst {self.burst!r}: a size in tc units such as "
                                   "15k, 64kb, 1mbit")
        if not 1 <= self.switches <= min(self.hosts, 16):
            raise FabenchError(f"--switches must be 1..{min(self.hosts, 16)} (at most one per "
                               f"host, at most 16), got {self.switches}")
        if self.uplink_rate is not None:
            if self.switches < 2:
                raise FabenchError("--uplink-rate is the rate between switches: give "
                                   "--switches 2 or more")
            if not re.match(r"^\d+(\.\d+)?[kmgt]?(bit|bps)$", self.uplink_rate.lower()):
                raise FabenchError(f"--uplink-rate {self.uplink_rate!r}: use tc units such "
                                   "as 100mbit, 1gbit")
        if self.link_impl not in ("auto", "netem", "fb-link"):
            raise FabenchError(f"--link-impl {self.link_impl!r}: auto, netem or fb-link")
        parse_impairs(self.impairs, [f"h{i}" for i in range(1, self.hosts + 1)])
        for key in self.sysctls:
            if not re.match(r"^net\.[a-z0-9_.]+$", key):
                raise FabenchError(f"--sysctl {key!r}: only per-namespace net.* keys apply "
                                   "to a testbed host")




_TIME_UNITS = {"s": 1_000_000, "ms": 1000, "us": 1}
MAX_QUEUE_US = 10_000_000


def queue_us(queue: str) -> int:
    """A tbf queue length given as a duration (5ms, 500us, 0.5ms, 1s), in microseconds: the
    unit tc reads back (`tc -j qdisc show` prints `lat` in us)."""
    m = re.match(r"^(\d+(?:\.\d+)?)(s|ms|us)$", queue.strip().lower())
    us = round(float(m.group(1)) * _TIME_UNITS[m.group(2)]) if m else 0
    if not 0 < us <= MAX_QUEUE_US:
        raise FabenchError(f"--queue {queue!r}: a duration such as 5ms or 500us, "
                           "above 0 and at most 10s")
    return us


def burst_for(rate: str, mtu: int) -> str:
    """A tbf bucket of 1 ms at the rate (never below 128 kbit or two frames). Measured here
    under load at 1gbit: a 128 kbit bucket gave 0.46 Gbit/s (the qdisc timer wakes too late
    to refill a 16 KB bucket every 131 us), 1 ms (1 mbit) gave 0.95; a bucket of a whole
    message (1 MB) lets 1 MiB messages through at twice the rate."""
    bits = max(rate_bits(rate) / 1000, 128_000, 2 * (mtu + 64) * 8)
    return f"{int(bits // 1000)}kbit"


@dataclass
class HostState:
    name: str  # "h1": hostname inside the host, the name launchers and hostfiles use
    index: int
    netns: str
    address: str
    ifname: str = "eth0"
    port: str = ""  # the bridge port in the switch namespace
    holder_pid: int | None = None  # unprivileged mode: the process holding the namespaces
    holder_start: int | None = None
    enter: list[str] = field(default_factory=list)  # argv prefix that runs a command here
    switch: int = 1  # the leaf switch its link goes to
    link: str = "veth"  # what its eth0 is: veth, or tap (fb-link forwards to the switch)


@dataclass
class SwitchState:
    index: int
    netns: str
    bridge: str = "br0"
    uplink: str = ""  # this leaf's port toward the spine ("" with one switch)
    spine_port: str = ""  # the spine's port toward this leaf


@dataclass
class LinkState:
    """Who carries one host's impairments, so every run can say which implementation did."""

    host: str
    impl: str  # "tbf" or "htb" (tc rate limits), "netem", "fb-link" (user space, TAP)
    specs: list[str] = field(default_factory=list)  # the --impair texts it carries
    detail: list[str] = field(default_factory=list)  # fb-link --rule args, or tc commands
    pid: int | None = None  # fb-link's process
    start: int | None = None
    status_file: str = ""
    seed: int | None = None  # fb-link's random numbers: the same seed repeats its choices


@dataclass
class TestbedState:
    __test__ = False
    name: str
    prefix: str
    mode: str  # "root" (named netns + bind-mounted ns files) or "userns" (unshare -r)
    subnet: str  # "10.77.3.0/24"
    switch_ns: str
    config: TestbedConfig
    hosts: list[HostState] = field(default_factory=list)
    bridge: str = "br0"
    holder_pid: int | None = None  # userns mode: the outer user+mount namespace
    holder_start: int | None = None
    created_by: int = 0
    complete: bool = False
    switches: list[SwitchState] = field(default_factory=list)
    spine_ns: str = ""  # with two switches or more: the namespace joining their uplinks
    links: list[LinkState] = field(default_factory=list)
    netem: bool | None = None  # whether this kernel had sch_netem when the testbed was made

    @property
    def full_name(self) -> str:
        return f"{self.prefix}-{self.name}"

    @property
    def dir(self) -> Path:
        return run_dir() / "testbeds" / self.full_name

    @property
    def state_file(self) -> Path:
        return state_path(self.prefix, self.name)

    @property
    def agent(self) -> Path:
        return self.dir / "agent"

    def host(self, name: str) -> HostState:
        for h in self.hosts:
            if name in (h.name, h.address, h.netns):
                return h
        raise FabenchError(f"testbed {self.name} has no host {name!r} "
                           f"(hosts: {', '.join(h.name for h in self.hosts)})")

    def save(self) -> None:
        path = self.state_file
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=1) + "\n")
        tmp.replace(path)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "TestbedState":
        data = dict(data)
        config = dict(data["config"])
        config.setdefault("queue", LEGACY_QUEUE)
        data["config"] = TestbedConfig(**config)
        data["hosts"] = [HostState(**h) for h in data.get("hosts", [])]
        data["switches"] = [SwitchState(**s) for s in data.get("switches", [])]
        data["links"] = [LinkState(**ln) for ln in data.get("links", [])]
        return cls(**data)

    def switch_of(self, host: HostState) -> SwitchState:
        """The leaf a host hangs off (testbeds made before --switches had one: switch_ns)."""
        for sw in self.switches:
            if sw.index == host.switch:
                return sw
        return SwitchState(1, self.switch_ns, self.bridge)


def state_path(prefix: str, name: str) -> Path:
    return run_dir() / "testbeds" / f"{prefix}-{name}.json"


def load_state(name: str, prefix: str | None = None) -> TestbedState:
    prefix = prefix or name_prefix()
    path = state_path(prefix, name)
    try:
        return TestbedState.from_json(json.loads(path.read_text()))
    except FileNotFoundError:
        known = ", ".join(s.name for s in list_states()) or "none"
        raise FabenchError(f"no testbed named {name!r} (testbeds: {known}); "
                           "create one with `fabench testbed up`") from None
    except (ValueError, TypeError, KeyError) as exc:
        raise FabenchError(f"unreadable testbed state {path}: {exc}") from exc


def list_states(prefix: str | None = None) -> list[TestbedState]:
    prefix = prefix or name_prefix()
    out = []
    for path in sorted((run_dir() / "testbeds").glob(f"{prefix}-*.json")):
        try:
            out.append(TestbedState.from_json(json.loads(path.read_text())))
        except (OSError, ValueError, TypeError, KeyError):
            continue
    return out
