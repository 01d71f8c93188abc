"""Common interface of MPI flavours: building an ``mpirun`` command line for a transport and
reading back, from the library's own verbose output, which transport it actually selected."""

from __future__ import annotations

import re
import shutil
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, TypeVar

from ..host.placement import HostSlots, cpu_count, host_slots
from ..kernels.transport_request import Transport
from ..util.registry import Registry


class UnsupportedTransport(ValueError):
    """The flavour cannot run the requested transport on this build/host (message says why)."""


@dataclass
class MpiLaunch:
    """What to run: ``argv`` under ``os.environ | env``. ``env`` is already forwarded to the
    ranks by ``argv`` (``-x``/``-genvlist``), so it is enough to pass it to the mpirun process."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SelectedTransport:
    """What the library reported it uses: ``summary`` such as "ob1/vader", "ucx/posix",
    "cm/ofi:tcp;ofi_rxm", "ch4:ucx/tcp", or "unknown"; ``evidence`` are the log lines it came
    from (deduplicated across ranks)."""

    summary: str
    detail: str = ""
    evidence: tuple[str, ...] = ()

    @property
    def known(self) -> bool:
        return self.summary != "unknown"


UNKNOWN = "unknown"
MAX_EVIDENCE = 24
# What an oversubscribed launch (and a congestion test's victims, congestion/session.py) tells
# its ranks (native/mpi/fb_mpi_common.h): ranks that wait long in a measurement (the matrix's
# beside a pair across a slow link, a pong queued behind other traffic) nap between tests of
# their requests instead of spinning on cores the measured ranks and the links need.
SHARED_CORES_ENV = {"FABENCH_SHARED_CORES": "1"}

# "[vm:04853] " (Open MPI) or "[1795316358.149148] [vm:5022 :0] " (UCX) prefixes differ per
# rank; stripping them lets identical lines from several ranks count once.
_RANK_PREFIX_RE = re.compile(r"^(\[[0-9.]+\]\s+)?\[[^\]]*\]\s*")
# UCX >= 1.11 prints, at UCX_LOG_LEVEL=info, one line per endpoint configuration when the
# endpoint is created (in MPI_Init or at first contact with a peer, never per message):
#   ucp_worker.c:1763 UCX  INFO    ep_cfg[1]: tag(sysv/memory cma/memory) rma(...) am(...)
_UCX_EPCFG_RE = re.compile(r"UCX\s+INFO\s+ep_cfg\[(\d+)\]:\s*(.*)$")
_UCX_LANES_RE = re.compile(r"([a-z_]+)\(([^)]*)\)")
_UCX_FAILURE_RE = re.compile(
    r"UCX\s+ERROR|Destination is unreachable|no active messages transport|"
    r"no auxiliary transport"
)


def strip_rank_prefix(line: str) -> str:
    return _RANK_PREFIX_RE.sub("", line.strip())


def dedupe(lines: Iterable[str], limit: int = MAX_EVIDENCE) -> tuple[str, ...]:
    seen: set[str] = set()
    out: list[str] = []
    for line in lines:
        key = strip_rank_prefix(line)
        if key in seen:
            continue
        seen.add(key)
        out.append(line.rstrip())
        if len(out) >= limit:
            break
    return tuple(out)


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


@dataclass(frozen=True)
class UcxLanes:
    """UCX endpoint lanes to peers (self-only endpoints removed), as reported by UCX."""

    tls: tuple[str, ...]  # transport names of the tag lanes, e.g. ("sysv", "cma")
    lanes: tuple[str, ...]  # "tl/device" entries of the tag lanes, e.g. ("tcp/lo", "tcp/eth0")
    evidence: tuple[str, ...]
    failures: tuple[str, ...]


# UCX's own line prefix names the host of the process that printed it: "[vm:5022 :0]".
_UCX_HOST_RE = re.compile(r"^(?:\[[0-9.]+\]\s+)?\[([^:\]\s]+):\d+\s*:\d+\]")


@dataclass(frozen=True)
class UcxEpConfig:
    """One ``ep_cfg[N]`` line: the lanes per operation group ("tag", "rma", "am", ...), as
    "tl/device" entries, and the host of the process that printed it ("" when unknown)."""

    line: str
    host: str
    groups: dict[str, tuple[str, ...]]

    @property
    def entries(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(e for v in self.groups.values() for e in v))

    @property
    def is_self(self) -> bool:
        return any(e.startswith("self/") for e in self.entries)


def ucx_ep_configs(stderr: str) -> list[UcxEpConfig]:
    """Every ``ep_cfg[N]`` line UCX printed at info level, in order."""
    out = []
    for line in stderr.splitlines():
        m = _UCX_EPCFG_RE.search(line)
        if m:
            h = _UCX_HOST_RE.match(line.strip())
            groups = {k: tuple(v.split()) for k, v in _UCX_LANES_RE.findall(m.group(2))}
            out.append(UcxEpConfig(line, h.group(1) if h else "", groups))
    return out


def parse_ucx_lanes(stderr: str) -> UcxLanes:
    """Read the ``ep_cfg[N]`` lines UCX prints at info level.

    An endpoint to the process itself always carries the ``self`` transport (UCX cannot reach
    another process through ``self``), so configurations containing ``self/`` are the loopback
    endpoint and are ignored unless they are all there is (a 1-rank run).
    """
    peer_cfgs: list[tuple[str, dict[str, tuple[str, ...]]]] = []
    self_cfgs: list[tuple[str, dict[str, tuple[str, ...]]]] = []
    for cfg in ucx_ep_configs(stderr):
        (self_cfgs if cfg.is_self else peer_cfgs).append((cfg.line, cfg.groups))
    failures = [ln for ln in stderr.splitlines()
                if not _UCX_EPCFG_RE.search(ln) and _UCX_FAILURE_RE.search(ln)]
    cfgs = peer_cfgs or self_cfgs
    entries: list[str] = []
    for _, lanes in cfgs:
        # MPI point-to-point goes through UCP tag matching; fall back to AM lanes if a UCX
        # version prints no tag lanes.
        entries.extend(lanes.get("tag") or lanes.get("am") or ())
    entries = _unique(entries)
    tls = _unique(e.split("/", 1)[0] for e in entries)
    return UcxLanes(
        tls=tuple(tls),
        lanes=tuple(entries),
        evidence=dedupe(line for line, _ in cfgs),
        failures=dedupe(failures),
    )


class MpiFlavour(ABC):
    """One MPI implementation. Subclasses register themselves with :func:`register_flavour`."""

    name: ClassVar[str]
    default_mpirun: ClassVar[str]
    default_mpicc: ClassVar[str]

    def __init__(self, mpirun: str | None = None, mpicc: str | None = None) -> None:
        self.mpirun = mpirun or self.default_mpirun
        self.mpicc = mpicc or self.default_mpicc
        self._version: str | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(mpirun={self.mpirun!r})"

    def mpirun_path(self) -> str | None:
        return shutil.which(self.mpirun)

    def why_unavailable(self) -> str | None:
        """None when usable, else a sentence saying what is missing and how to get it."""
        if self.mpirun_path() is None:
            return f"{self.mpirun} not found on PATH"
        return None

    def available(self) -> bool:
        return self.why_unavailable() is None

    def version(self) -> str:
        if self._version is None:
            self._version = self._query_version()
        return self._version

    @abstractmethod
    def _query_version(self) -> str: ...

    @abstractmethod
    def launch(
        self,
        exe: str,
        args: Sequence[str],
        ranks: int,
        transport: Transport,
        *,
        hosts: Sequence[str] | None = None,
        extra_mpirun_args: Sequence[str] = (),
        oversubscribe: bool | None = None,
        forward_env: Sequence[str] = (),
    ) -> MpiLaunch:
        """Build the command line. ``oversubscribe=None`` decides from ranks vs cores/slots;
        ``forward_env`` names variables of the caller's environment the ranks must get on
        other hosts too (a run's own MCA/UCX settings)."""

    @abstractmethod
    def selected_transport(self, stderr: str, transport: Transport) -> SelectedTransport:
        """What the library reported selecting, parsed from the stderr of a launch() run.
        ``transport`` (the request) is only used to word the detail, never as the answer."""

    def on_node_network(self, stderr: str,
                        placed: Sequence[HostSlots] | None) -> str | None:
        """A flag text when the library's own report shows ranks on one host reaching each
        other over a network transport (fabench.mpi.onnode), else None. ``placed`` is where
        the ranks ran; None when the starter cannot know."""
        return None

    # The process-management interface its ranks wire up through when a resource manager
    # starts them directly (no mpirun): "pmix", "pmi2"; None when the build has none.
    pmi: ClassVar[str | None] = None

    def direct_launch_env(self, transport: Transport) -> dict[str, str]:
        """The environment that requests ``transport`` and the verbosity that reports the
        selection, for ranks started without mpirun (by a resource manager's own starter,
        which exports the environment to its tasks)."""
        raise UnsupportedTransport(f"{self.name}: ranks cannot be started without mpirun; "
                                   "use the mpirun starter")

    def remote_args(self, *, rsh_agent: str | None = None, iface: str | None = None,
                    subnet: str | None = None) -> list[str]:
        """Extra ``extra_mpirun_args`` for ranks on other hosts: ``rsh_agent`` starts them
        (an ssh stand-in called as ``AGENT HOST COMMAND...``), ``iface``/``subnet`` keep MPI's
        own traffic on one network. Flavours without such options return []."""
        return []

    @staticmethod
    def _check_ranks(ranks: int) -> None:
        if ranks < 1:
            raise ValueError(f"ranks must be >= 1, got {ranks}")

    @staticmethod
    def _oversubscription(ranks: int, hosts: Sequence[str] | None,
                          oversubscribe: bool | None) -> tuple[bool, str]:
        """Whether ranks outnumber what they run on (host slots, else this host's cores), and
        the words that say so."""
        if hosts and oversubscribe is None:
            capacity, unit = host_slots(hosts), "host slots"
        else:  # the caller judged from this machine's cores (e.g. testbed hosts share them)
            capacity, unit = cpu_count(), "cores"
        over = ranks > capacity if oversubscribe is None else oversubscribe
        return over, f"oversubscribed: {ranks} ranks on {capacity} {unit}"


F = TypeVar("F", bound=type[MpiFlavour])
FLAVOURS: Registry[type[MpiFlavour]] = Registry("MPI flavour", "fabench.mpi")


def register_flavour(cls: F) -> F:
    FLAVOURS.add(cls.name, cls)
    return cls


def flavour_names() -> list[str]:
    return FLAVOURS.names()


def get_flavour(name: str, **kwargs: str | None) -> MpiFlavour:
    return FLAVOURS.get(name)(**kwargs)


@dataclass(frozen=True)
class Mpi:
    """The MPI a run uses, by name: a registered flavour (openmpi, mpich, a plugin's), or an
    MPI that is no flavour of ours (SimGrid's SMPI under `fabench sim`; a transport kernel
    ignores it). Written as its name wherever a run is shown or stored."""

    name: str

    def __str__(self) -> str:
        return self.name

    @property
    def registered(self) -> bool:
        return self.name in FLAVOURS

    def flavour(self, **kwargs: str | None) -> MpiFlavour:
        return get_flavour(self.name, **kwargs)


def available_flavours() -> list[MpiFlavour]:
    return [f for f in (cls() for _, cls in FLAVOURS.items()) if f.available()]
