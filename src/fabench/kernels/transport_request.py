"""Transport requests: what the user asks a library to carry a kernel's messages over.

Parsed once, where the spec or the command line is read (:func:`transport_for`), and carried
down typed: the MPI flavours turn it into MCA/UCX settings, transport kernels into their own
selection option, placement into "all ranks on one host" for shared memory. A
:class:`Transport` is only a request: what the library really picked is read back from the
library's own verbose output (:meth:`fabench.mpi.base.MpiFlavour.selected_transport`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..errors import FabenchError

if TYPE_CHECKING:  # annotations only: kernels never need this module at run time
    from . import Kernel

# shm/tcp/ucx/ofi are MPI requests; a transport kernel's own family (tcp, udp, ucx, ofi, verbs)
# means "that library's default" for it; "sim" names a simulated setup (fabench sim).
# "auto" forces nothing: the library picks its own PML/BTL or UCX transports (what a user
# gets with no setting at all), and fabench reads back what it picked.
TransportKind = Literal["auto", "shm", "tcp", "ucx", "ofi", "udp", "verbs", "sim"]

ACCEPTED_FORMS = (
    "auto (nothing forced: the library's own choice)",
    "shm",
    "tcp",
    "ucx",
    "ucx:TLS[,TLS...] (e.g. ucx:posix, ucx:tcp, ucx:sysv,self, ucx:^tcp)",
    "ofi:PROVIDER (e.g. ofi:tcp;ofi_rxm, ofi:shm, ofi:tcp)",
)

# UCX transport names: "posix", "rc_x", "sm", "tcp"; a leading "^" negates the whole list.
_TLS_RE = re.compile(r"^\^?[a-z0-9_]+(,[a-z0-9_]+)*\Z")
# libfabric provider names; ";" stacks a utility provider on a core one ("tcp;ofi_rxm").
_PROVIDER_RE = re.compile(r"^[a-z0-9_]+(;[a-z0-9_]+)*\Z")


@dataclass(frozen=True)
class Transport:
    """A requested transport; ``str(t)`` gives back the string it was parsed from."""

    kind: TransportKind
    # UCX_TLS value for "ucx", provider for "ofi"; None means "library default" for ucx.
    spec: str | None = None

    def __post_init__(self) -> None:
        if self.kind in ("auto", "shm", "tcp") and self.spec is not None:
            raise ValueError(f"transport {self.kind!r} takes no ':' argument")

    def __str__(self) -> str:
        return self.kind if self.spec is None else f"{self.kind}:{self.spec}"

    @property
    def ucx_tls(self) -> str | None:
        """The UCX_TLS value requested, or None for UCX's own default ("all")."""
        return self.spec if self.kind == "ucx" else None

    @property
    def ofi_provider(self) -> str | None:
        return self.spec if self.kind == "ofi" else None

    @property
    def on_node(self) -> bool:
        """Whether it only reaches processes of the same host (so all ranks go on one)."""
        if self.kind == "shm":
            return True
        if self.kind == "ucx" and self.spec and not self.spec.startswith("^"):
            return set(self.spec.split(",")) <= ON_NODE_TLS
        if self.kind == "ofi" and self.spec:
            return self.spec.split(";", 1)[0] == "shm"
        return False

    def kernel_args(self) -> list[str]:
        """A transport kernel's own selection option (--tls, --provider); [] for defaults."""
        if self.kind == "ucx" and self.spec:
            return ["--tls", self.spec]
        if self.kind == "ofi" and self.spec:
            return ["--provider", self.spec]
        return []


# UCX transports that only reach processes of the same host.
ON_NODE_TLS = frozenset({"sm", "posix", "sysv", "cma", "knem", "xpmem", "self", "shm"})


def _error(s: str, why: str) -> ValueError:
    forms = "; ".join(ACCEPTED_FORMS)
    return ValueError(f"bad transport {s!r}: {why}. Accepted forms: {forms}")


def parse_transport(s: str) -> Transport:
    """Parse ``auto``, ``shm``, ``tcp``, ``ucx``, ``ucx:TLS[,TLS]`` or ``ofi:PROVIDER``."""
    text = s.strip()
    kind, sep, spec = text.partition(":")
    kind = kind.lower()
    if kind in ("auto", "shm", "tcp"):
        if sep:
            raise _error(s, f"{kind!r} takes no ':' argument")
        return Transport("auto" if kind == "auto" else "shm" if kind == "shm" else "tcp")
    if kind == "ucx":
        if not sep:
            return Transport("ucx")
        if not _TLS_RE.match(spec):
            raise _error(s, "UCX_TLS must be a comma-separated list of transport names")
        return Transport("ucx", spec)
    if kind == "ofi":
        if not sep or not spec:
            raise _error(s, "'ofi' needs a libfabric provider")
        if not _PROVIDER_RE.match(spec):
            raise _error(s, "a provider is a name, or names joined by ';' (tcp;ofi_rxm)")
        return Transport("ofi", spec)
    raise _error(s, f"unknown transport kind {kind!r}")


def transport_for(kernel: Kernel, text: str | None) -> Transport:
    """The transport a run of ``kernel`` asks for, validated against the kernel.

    MPI kernels take every MPI form (default shm). A transport kernel takes its own family
    (the library's default; "shm", a campaign's default, means the same), or ``ucx:TLS`` /
    ``ofi:PROVIDER`` for its own library.
    """
    t = (text or "").strip()
    if kernel.needs_mpi:
        try:
            return parse_transport(t or kernel.default_transport)
        except ValueError as exc:
            raise FabenchError(str(exc)) from None
    fam = kernel.family
    if t in ("", "shm", fam):
        return Transport(fam)  # type: ignore[arg-type]
    if fam in ("ucx", "ofi") and t.startswith(f"{fam}:") and t[len(fam) + 1:]:
        try:
            return parse_transport(t)
        except ValueError as exc:
            raise FabenchError(str(exc)) from None
    hint = {"ucx": " (use ucx:TLS, e.g. ucx:posix)",
            "ofi": " (use ofi:PROVIDER, e.g. 'ofi:tcp;ofi_rxm')"}.get(fam, "")
    raise FabenchError(f"{kernel.name}: transport {text!r} does not apply to this kernel{hint}")
