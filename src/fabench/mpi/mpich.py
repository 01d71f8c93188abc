"""MPICH 4.0 as Debian builds it: device ch4:ucx, so every transport is a UCX_TLS choice."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..host.placement import HostSlots
from ..host.process import run_capture
from ..kernels.transport_request import Transport
from .base import (
    SHARED_CORES_ENV,
    UNKNOWN,
    MpiFlavour,
    MpiLaunch,
    SelectedTransport,
    UnsupportedTransport,
    dedupe,
    parse_ucx_lanes,
    register_flavour,
    strip_rank_prefix,
)
from .onnode import ucx_on_node_network

# Debian's MPICH has no ch4 shared-memory module in the path: with UCX_TLS=tcp the 8 B latency
# between two ranks on one host goes from ~0.4 us to ~5 us, so on-node traffic is UCX's too and
# "shm"/"tcp" are UCX transport choices. "sm" lets UCX pick among posix/sysv/cma (it picks
# sysv+cma here); "self" keeps each rank's endpoint to itself off the socket path.
TLS_FOR = {"shm": "self,sm", "tcp": "tcp,self"}

# UCX's ep_cfg lines (see fabench.mpi.base.parse_ucx_lanes) are printed when endpoints are
# created in MPI_Init; UCX logs to stdout by default, which belongs to the kernels' JSON.
UCX_VERBOSE_ENV = {"UCX_LOG_LEVEL": "info", "UCX_LOG_FILE": "stderr"}

_VERSION_RE = re.compile(r"MPICH Version:\s*(\S+)")
_DEVICE_RE = re.compile(r"MPICH Device:\s*(\S+)")


def parse_mpich_selection(stderr: str, device: str) -> SelectedTransport:
    lanes = parse_ucx_lanes(stderr)
    ev = dedupe(list(lanes.evidence) + list(lanes.failures))
    if not lanes.tls:
        detail = f"device {device}, but UCX printed no ep_cfg lines"
        if lanes.failures:
            detail += "; UCX failed: " + strip_rank_prefix(lanes.failures[0])
        return SelectedTransport(UNKNOWN, detail, ev)
    return SelectedTransport(
        f"{device}/{'+'.join(lanes.tls)}",
        f"device {device}, UCX tag lanes: {' '.join(lanes.lanes)}",
        ev,
    )


@register_flavour
class Mpich(MpiFlavour):
    name = "mpich"
    default_mpirun = "mpirun.mpich"
    default_mpicc = "mpicc.mpich"
    default_mpichversion = "mpichversion"

    def __init__(
        self, mpirun: str | None = None, mpicc: str | None = None, mpichversion: str | None = None
    ) -> None:
        super().__init__(mpirun, mpicc)
        self.mpichversion = mpichversion or self.default_mpichversion
        self._info: tuple[str, str] | None = None

    def _query_info(self) -> tuple[str, str]:
        """(version, device) from ``mpichversion``; mpirun -info only describes hydra."""
        if self._info is None:
            text = run_capture([self.mpichversion], timeout=20).text
            v, d = _VERSION_RE.search(text), _DEVICE_RE.search(text)
            self._info = (v.group(1) if v else UNKNOWN, d.group(1) if d else UNKNOWN)
        return self._info

    def device(self) -> str:
        return self._query_info()[1]

    def _query_version(self) -> str:
        version, device = self._query_info()
        return f"MPICH {version} ({device})"

    def transport_env(self, transport: Transport) -> dict[str, str]:
        device = self.device()
        if transport.kind == "ofi":
            raise UnsupportedTransport(
                f"ofi:{transport.ofi_provider} needs MPICH built with device ch4:ofi; "
                f"{self.mpichversion} reports 'MPICH Device: {device}'. Use ucx, ucx:TLS, shm "
                f"or tcp with this MPICH, or Open MPI (pml cm + mtl ofi) for libfabric."
            )
        if device != "ch4:ucx":
            raise UnsupportedTransport(
                f"fabench drives MPICH through UCX (device ch4:ucx); this MPICH reports device "
                f"{device!r}"
            )
        if transport.kind == "auto":
            return {}
        if transport.kind in TLS_FOR:
            return {"UCX_TLS": TLS_FOR[transport.kind]}
        return {"UCX_TLS": transport.ucx_tls} if transport.ucx_tls else {}

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
        self._check_ranks(ranks)
        env = self.transport_env(transport)
        env.update(UCX_VERBOSE_ENV)
        notes: list[str] = []
        argv = [self.mpirun, "-np", str(ranks)]
        if hosts:
            argv += ["-hosts", ",".join(hosts)]
        over, why = self._oversubscription(ranks, hosts, oversubscribe)
        if over:
            # Hydra starts the extra ranks without being asked, but ch4 busy-polls with no
            # yield option: collectives take 13-55 ms at 4 ranks on 2 cores. Run, but say so.
            notes.append(f"{why} (MPICH busy-polls; timings are not latency figures)")
            env.update(SHARED_CORES_ENV)
        # Same reasoning as Open MPI: pin one rank per core on a single host, never bind when
        # ranks share cores or the "hosts" may be namespaces of one machine.
        argv += ["-bind-to", "core" if not hosts and not over else "none"]
        # Hydra passes the whole environment to local ranks; -genvlist makes sure remote
        # ranks (ssh launcher) get the UCX settings as well.
        argv += ["-genvlist", ",".join(dict.fromkeys([*env, *forward_env]))]
        argv += list(extra_mpirun_args)
        argv += [exe, *args]
        return MpiLaunch(argv=argv, env=env, notes=notes)

    # MPICH's own PMI client speaks the PMI-2 wire protocol.
    pmi = "pmi2"

    def direct_launch_env(self, transport: Transport) -> dict[str, str]:
        return {**self.transport_env(transport), **UCX_VERBOSE_ENV}

    def remote_args(self, *, rsh_agent: str | None = None, iface: str | None = None,
                    subnet: str | None = None) -> list[str]:
        args = ["-launcher", "ssh", "-launcher-exec", rsh_agent] if rsh_agent else []
        # Hydra takes an interface name, not a subnet; UCX's own choice is UCX_NET_DEVICES.
        if iface:
            args += ["-iface", iface]
        return args

    def on_node_network(self, stderr: str,
                        placed: Sequence[HostSlots] | None) -> str | None:
        return ucx_on_node_network(stderr, placed)

    def selected_transport(self, stderr: str, transport: Transport) -> SelectedTransport:
        sel = parse_mpich_selection(stderr, self.device())
        return SelectedTransport(sel.summary, f"{sel.detail} (requested {transport})", sel.evidence)
