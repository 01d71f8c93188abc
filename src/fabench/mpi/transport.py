"""Transport requests: what the user asks an MPI library to use.

A :class:`Transport` is only a request. What the library really picked is reported by
:meth:`fabench.mpi.base.MpiFlavour.selected_transport`, which reads the library's own
verbose output.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

TransportKind = Literal["shm", "tcp", "ucx", "ofi"]

ACCEPTED_FORMS = (
    "shm",
    "tcp",
    "ucx",
    "ucx:TLS[,TLS...] (e.g. ucx:posix, ucx:tcp, ucx:sysv,self, ucx:^tcp)",
    "ofi:PROVIDER (e.g. ofi:tcp;ofi_rxm, ofi:shm, ofi:tcp)",
)

# UCX transport names: "posix", "rc_x", "sm", "tcp"; a leading "^" negates the whole list.
_TLS_RE = re.compile(r"^\^?[a-z0-9_]+(,[a-z0-9_]+)*$")
# libfabric provider names; ";" stacks a utility provider on a core one ("tcp;ofi_rxm").
_PROVIDER_RE = re.compile(r"^[a-z0-9_]+(;[a-z0-9_]+)*$")


@dataclass(frozen=True)
class Transport:
    """A requested transport; ``str(t)`` gives back the string it was parsed from."""

    kind: TransportKind
    # UCX_TLS value for "ucx", provider for "ofi"; None means "library default" for ucx.
    spec: str | None = None

    def __post_init__(self) -> None:
        if self.kind in ("shm", "tcp") and self.spec is not None:
            raise ValueError(f"transport {self.kind!r} takes no ':' argument")
        if self.kind == "ofi" and not self.spec:
            raise ValueError("transport 'ofi' needs a provider, e.g. ofi:tcp;ofi_rxm")

    def __str__(self) -> str:
        return self.kind if self.spec is None else f"{self.kind}:{self.spec}"

    @property
    def ucx_tls(self) -> str | None:
        """The UCX_TLS value requested, or None for UCX's own default ("all")."""
        return self.spec if self.kind == "ucx" else None

    @property
    def ofi_provider(self) -> str | None:
        return self.spec if self.kind == "ofi" else None


def _error(s: str, why: str) -> ValueError:
    forms = "; ".join(ACCEPTED_FORMS)
    return ValueError(f"bad transport {s!r}: {why}. Accepted forms: {forms}")


def parse_transport(s: str) -> Transport:
    """Parse ``shm``, ``tcp``, ``ucx``, ``ucx:TLS[,TLS]`` or ``ofi:PROVIDER``."""
    text = s.strip()
    kind, sep, spec = text.partition(":")
    kind = kind.lower()
    if kind in ("shm", "tcp"):
        if sep:
            raise _error(s, f"{kind!r} takes no ':' argument")
        return Transport("shm" if kind == "shm" else "tcp")
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
