"""Open MPI 4.1 (Debian's ``mpirun.openmpi``)."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from ..host.leftovers import own_session_base
from ..host.placement import HostSlots
from ..host.process import is_root, run_capture
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
from .onnode import ob1_on_node_network, ucx_on_node_network

# Verbosity added to every launch so the selection can be read back. Each of these prints only
# while components are opened/selected and endpoints are created (MPI_Init, first contact with a
# peer); none prints per message, so the timed loop is untouched.
#   pml_base_verbose 10: "selected ob1 best priority 20" - the PML that won (levels < 10 print
#       nothing about selection).
#   btl_base_verbose 1: "mca: bml: Using vader btl for send to [[j,1],1] on node vm" - the BTL
#       per peer. Level 10 would add per-connection TCP chatter, 1 is the quietest level with it.
#   mtl_ofi_verbose 1: "mtl:ofi:prov: tcp;ofi_rxm" - the libfabric provider fi_getinfo returned.
#   UCX_LOG_LEVEL=info: "ep_cfg[1]: tag(posix/memory)" - UCX's lanes per endpoint config.
#       UCX logs to stdout by default, where the kernels write JSON, hence UCX_LOG_FILE=stderr.
PML_VERBOSE = ["--mca", "pml_base_verbose", "10"]
BTL_VERBOSE = ["--mca", "btl_base_verbose", "1"]
MTL_OFI_VERBOSE = ["--mca", "mtl_ofi_verbose", "1"]
UCX_VERBOSE_ENV = {"UCX_LOG_LEVEL": "info", "UCX_LOG_FILE": "stderr"}

SESSION_BASE = "OMPI_MCA_orte_tmpdir_base"
ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}

_PML_SELECTED_RE = re.compile(r"selected (\S+) best priority")
_BML_RE = re.compile(r"mca: bml: Using (\S+) btl for send to")
_MTL_SELECTED_RE = re.compile(r"mca:base:select:\(\s*mtl\) Selected component \[(\S+)\]")
_OFI_PROV_RE = re.compile(r"mtl:ofi:prov: (\S+)")
_OMPI_FAILURE_RE = re.compile(
    r"PML \S+ cannot be selected|No components were able to be opened|"
    r"init returned failure|MPI_INIT failed|An error occurred in MPI_Init"
)
_VERSION_RE = re.compile(r"\(Open(?:RTE| MPI)\)\s+(\S+)")


def transport_mca(transport: Transport) -> tuple[list[str], dict[str, str]]:
    """MCA arguments and environment that request ``transport`` from Open MPI 4.1."""
    if transport.kind == "auto":
        return [], {}
    if transport.kind == "shm":
        return ["--mca", "pml", "ob1", "--mca", "btl", "self,vader"], {}
    if transport.kind == "tcp":
        return ["--mca", "pml", "ob1", "--mca", "btl", "tcp,self"], {}
    if transport.kind == "ucx":
        # Without these two, pml ucx only accepts Mellanox devices and refuses to load here.
        args = ["--mca", "pml", "ucx", "--mca", "pml_ucx_tls", "any"]
        args += ["--mca", "pml_ucx_devices", "any"]
        env = {"UCX_TLS": transport.ucx_tls} if transport.ucx_tls else {}
        return args, env
    provider = transport.ofi_provider or ""
    if provider.split(";", 1)[0] == "shm":
        raise UnsupportedTransport(
            "ofi:shm does not work with Open MPI 4.1: mtl ofi asks libfabric for "
            "FI_REMOTE_COMM, which the shm provider lacks (fi_getinfo: 'Unsupported "
            "capabilities'), so pml cm cannot be selected. Use transport 'shm' (ob1/vader) for "
            "on-node shared memory."
        )
    # The include list alone steers fi_getinfo; FI_PROVIDER is not needed (it would also have
    # to name the utility provider, and the include list already overrides mtl ofi's default
    # exclude list of "shm,sockets,tcp,udp,rstream,usnic").
    args = ["--mca", "pml", "cm", "--mca", "mtl", "ofi"]
    args += ["--mca", "mtl_ofi_provider_include", provider]
    return args, {}


def _selection_verbosity(transport: Transport) -> tuple[list[str], dict[str, str]]:
    """The MCA arguments and environment that make the library report what it selected for
    ``transport`` (see the note on the verbosity levels above)."""
    if transport.kind in ("shm", "tcp"):
        return PML_VERBOSE + BTL_VERBOSE, {}
    if transport.kind == "auto":  # whichever PML wins, its own report must be there
        return PML_VERBOSE + BTL_VERBOSE + MTL_OFI_VERBOSE, dict(UCX_VERBOSE_ENV)
    if transport.kind == "ofi":
        return PML_VERBOSE + MTL_OFI_VERBOSE, {}
    return list(PML_VERBOSE), dict(UCX_VERBOSE_ENV)


def _grep(lines: Sequence[str], pattern: re.Pattern[str]) -> tuple[list[str], list[str]]:
    """Matching lines and the distinct first groups, in order of appearance."""
    hits = [(ln, m.group(1)) for ln in lines if (m := pattern.search(ln))]
    return [ln for ln, _ in hits], list(dict.fromkeys(v for _, v in hits))


def parse_openmpi_selection(stderr: str) -> SelectedTransport:
    """Selection from the stderr of an Open MPI run made with the verbosity in launch()."""
    lines = stderr.splitlines()
    pml_lines, pmls = _grep(lines, _PML_SELECTED_RE)
    if not pmls:
        failures = dedupe(ln for ln in lines if _OMPI_FAILURE_RE.search(ln))
        detail = "no PML selection reported"
        if failures:
            detail += "; the run failed: " + " | ".join(strip_rank_prefix(f) for f in failures[:3])
        return SelectedTransport(UNKNOWN, detail, failures)
    pml = "+".join(pmls)
    if pml == "ob1":
        bml_lines, btls = _grep(lines, _BML_RE)
        # Every rank reaches itself through "self"; the interesting BTLs are those to peers.
        peer_btls = [b for b in btls if b != "self"] or btls
        used = [ln for ln in bml_lines if any(f"Using {b} btl" in ln for b in peer_btls)]
        ev = dedupe(pml_lines + used)
        if not peer_btls:
            return SelectedTransport(UNKNOWN, "pml ob1 selected but no BTL reported", ev)
        return SelectedTransport(
            f"ob1/{'+'.join(peer_btls)}", f"pml ob1, BTLs to peers: {', '.join(peer_btls)}", ev
        )
    if pml == "ucx":
        lanes = parse_ucx_lanes(stderr)
        ev = dedupe(pml_lines + list(lanes.evidence) + list(lanes.failures))
        if not lanes.tls:
            detail = "pml ucx selected but UCX printed no ep_cfg"
            if lanes.failures:
                detail += "; UCX failed: " + strip_rank_prefix(lanes.failures[-1])
            return SelectedTransport(UNKNOWN, detail, ev)
        return SelectedTransport(
            f"ucx/{'+'.join(lanes.tls)}", f"pml ucx, UCX tag lanes: {' '.join(lanes.lanes)}", ev
        )
    if pml == "cm":
        mtl_lines, mtls = _grep(lines, _MTL_SELECTED_RE)
        prov_lines, provs = _grep(lines, _OFI_PROV_RE)
        ev = dedupe(pml_lines + mtl_lines + prov_lines)
        # pml_base_verbose says nothing about the MTL; mtl ofi's own "prov:" line (printed only
        # by that component) proves it was the one initialised.
        mtl = "+".join(mtls) or ("ofi" if provs else "?")
        if mtl == "?":
            return SelectedTransport(UNKNOWN, "pml cm selected but no MTL reported", ev)
        if mtl == "ofi":
            if not provs:
                return SelectedTransport(UNKNOWN, "mtl ofi selected but no provider reported", ev)
            prov = ",".join(provs)
            return SelectedTransport(
                f"cm/ofi:{prov}", f"pml cm, mtl ofi, libfabric provider {prov}", ev
            )
        return SelectedTransport(f"cm/{mtl}", f"pml cm, mtl {mtl}", ev)
    return SelectedTransport(pml, f"pml {pml}", dedupe(pml_lines))


@register_flavour
class OpenMpi(MpiFlavour):
    name = "openmpi"
    default_mpirun = "mpirun.openmpi"
    default_mpicc = "mpicc.openmpi"

    def _query_version(self) -> str:
        out = run_capture([self.mpirun, "--version"], timeout=20)
        if out.returncode in (124, 127):
            return f"unknown ({out.stderr.strip()})"
        m = _VERSION_RE.search(out.text)
        return f"Open MPI {m.group(1)}" if m else "Open MPI (unknown version)"

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
        mca, env = transport_mca(transport)
        notes: list[str] = []
        argv = [self.mpirun, "-np", str(ranks)]
        if hosts:
            argv += ["--host", ",".join(hosts)]
        over, why = self._oversubscription(ranks, hosts, oversubscribe)
        if over:
            # Busy-polling ranks that share a core starve each other; yielding keeps collectives
            # at tens of us instead of tens of ms (the numbers are still not latency figures).
            argv += ["--oversubscribe", "--mca", "mpi_yield_when_idle", "1"]
            env.update(SHARED_CORES_ENV)
            notes.append(why)
        # Binding: with a rank per core on one host, --bind-to core keeps the two ping-pong
        # ranks on different cores and stops migrations; measured here (2 vCPUs, KVM) it is as
        # fast as none and never lands both spinning ranks on one core. With a host list the
        # "hosts" may be namespaces on one machine, where each would bind its rank 0 to core 0
        # (~5 ms per message), and oversubscribed ranks must be free to move: --bind-to none.
        bind = "core" if not hosts and not over else "none"
        argv += ["--bind-to", bind]
        verbose_mca, verbose_env = _selection_verbosity(transport)
        argv += mca + verbose_mca
        env.update(verbose_env)
        # -x forwards the variables to remote ranks too; local ranks inherit them anyway.
        for key in dict.fromkeys([*env, *forward_env]):
            argv += ["-x", key]
        if is_root():
            env.update(ROOT_ENV)
        if not hosts and SESSION_BASE not in os.environ:
            # mpirun's session directory (TMPDIR/ompi.HOST.UID/...) stays when mpirun is
            # SIGKILLed with fabench; under fabench's own temporary directory it goes with
            # the sweep. Not forwarded (no -x): a remote host would make the path anew.
            env[SESSION_BASE] = own_session_base()
        argv += list(extra_mpirun_args)
        argv += [exe, *args]
        return MpiLaunch(argv=argv, env=env, notes=notes)

    # Debian's Open MPI 4.1 wires up through PMIx (its PMI-2 path aborts: not built in).
    pmi = "pmix"

    def direct_launch_env(self, transport: Transport) -> dict[str, str]:
        mca, env = transport_mca(transport)
        verbose_mca, verbose_env = _selection_verbosity(transport)
        mca += verbose_mca
        env.update(verbose_env)
        # "--mca KEY VALUE" is OMPI_MCA_KEY=VALUE for a rank that no mpirun started.
        env.update({f"OMPI_MCA_{k}": v for k, v in zip(mca[1::3], mca[2::3], strict=True)})
        return env

    def remote_args(self, *, rsh_agent: str | None = None, iface: str | None = None,
                    subnet: str | None = None) -> list[str]:
        args = ["--mca", "plm_rsh_agent", rsh_agent] if rsh_agent else []
        # Both the runtime's out-of-band wire-up and the TCP BTL would otherwise also try
        # every other interface (loopback, the host's own): a subnet is the precise choice.
        net = subnet or iface
        if net:
            args += ["--mca", "oob_tcp_if_include", net, "--mca", "btl_tcp_if_include", net]
        return args

    def on_node_network(self, stderr: str,
                        placed: Sequence[HostSlots] | None) -> str | None:
        return ob1_on_node_network(stderr, placed) or ucx_on_node_network(stderr, placed)

    def selected_transport(self, stderr: str, transport: Transport) -> SelectedTransport:
        sel = parse_openmpi_selection(stderr)
        return SelectedTransport(sel.summary, f"{sel.detail} (requested {transport})", sel.evidence)
