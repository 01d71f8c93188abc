"""The paths a message can take between two ranks, as far as they exist on the hosts at hand.

A path is an MPI flavour, a transport request and the environment that forces one choice
(``UCX_TLS``, ``OMPI_MCA_btl_vader_single_copy_mechanism``, ``UCX_RNDV_THRESH``). The one path
that forces nothing (transport ``auto``) is the library's own choice, the reference every other
path is measured against. What exists is asked of the libraries' own tools: ``ucx_info -d``
(UCX transports; rc/ud/dc only where an HCA exists), ``ompi_info`` (vader's single-copy
mechanisms: xpmem and knem only where built and loaded), ``mpichversion`` (MPICH's device).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from ..host.process import run_capture
from ..mpi.base import get_flavour
from ..mpi.mpich import Mpich
from .libchoice import vader_single_copy_values

Placement = Literal["intra", "inter"]
# UCX transports on an InfiniBand/RoCE HCA (any of their mlx5/verbs variants)
HCA_FAMILIES = ("rc", "ud", "dc")
SHM_SETS = ("posix", "sysv", "posix,cma", "sysv,cma")
VADER_MECH = "OMPI_MCA_btl_vader_single_copy_mechanism"


@dataclass(frozen=True)
class SweepPath:
    name: str  # what tables and records call it: "ucx:posix", "vader/none", "auto"
    mpi: str
    transport: str
    env: tuple[tuple[str, str], ...] = ()
    default: bool = False  # nothing forced: the library's own choice
    why: str = ""  # what the path forces, in words
    base: str = ""  # the path this one changes one protocol switch of (thresholds)

    @property
    def env_dict(self) -> dict[str, str]:
        return dict(self.env)


@dataclass
class Capabilities:
    """What the libraries here can run."""

    ucx_tls: list[str] = field(default_factory=list)  # transport names, e.g. tcp, posix
    hca_tls: list[str] = field(default_factory=list)  # rc_mlx5, ud_verbs, dc_mlx5, ...
    vader_mechanisms: list[str] = field(default_factory=list)
    mpich_device: str = ""
    flavours: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def parse_ucx_devices(text: str) -> list[str]:
    """Transport names from ``ucx_info -d`` (``#      Transport: posix``)."""
    return list(dict.fromkeys(re.findall(r"^#\s+Transport:\s+(\S+)", text, re.M)))


def discover(flavours: Sequence[str], prefix: Sequence[str] = ()) -> Capabilities:
    caps = Capabilities()
    out = run_capture([*prefix, "ucx_info", "-d"], timeout=60)
    caps.ucx_tls = parse_ucx_devices(out.stdout) if out.ok else []
    if not out.ok:
        caps.notes.append(f"ucx_info -d failed (exit {out.returncode}): no UCX path swept")
    caps.hca_tls = [t for t in caps.ucx_tls if t.split("_", 1)[0] in HCA_FAMILIES]
    if not caps.hca_tls:
        caps.notes.append("no HCA transport (rc/ud/dc) in ucx_info -d: none swept")
    for name in flavours:
        flavour = get_flavour(name)
        why = flavour.why_unavailable()
        if why:
            caps.notes.append(f"{name}: {why}")
            continue
        caps.flavours.append(name)
        if isinstance(flavour, Mpich):
            caps.mpich_device = flavour.device()
    if "openmpi" in caps.flavours:
        caps.vader_mechanisms = [m for m in vader_single_copy_values(prefix) if m != "emulated"]
        for m in ("xpmem", "knem"):
            if m not in caps.vader_mechanisms:
                caps.notes.append(f"vader single copy {m}: not built into this Open MPI")
    if caps.mpich_device and caps.mpich_device != "ch4:ucx":
        caps.notes.append(f"MPICH device {caps.mpich_device}: only ch4:ucx is swept")
    elif caps.mpich_device:
        caps.notes.append("MPICH ch4 netmods: this MPICH is built with ch4:ucx only, so its "
                          "paths are UCX transport sets")
    return caps


def _ucx_sets(caps: Capabilities, placement: Placement) -> list[str]:
    have = set(caps.ucx_tls)
    sets: list[str] = []
    if placement == "intra":
        sets += [s for s in SHM_SETS if set(s.split(",")) <= have]
    if "tcp" in have:
        sets.append("tcp")  # intra-node: the NIC for on-node peers, flagged by the run
    sets += caps.hca_tls
    return sets


def sweep_paths(caps: Capabilities, placement: Placement,
                thresholds: bool = True) -> list[SweepPath]:
    """Every path to measure, the library's own choice first for each flavour."""
    paths: list[SweepPath] = []
    for mpi in caps.flavours:
        tag = "" if len(caps.flavours) == 1 else f"{mpi} "
        paths.append(SweepPath(f"{tag}auto", mpi, "auto", default=True,
                               why="nothing forced: the library's own choice"))
        if mpi == "openmpi":
            if placement == "intra":
                for m in caps.vader_mechanisms:
                    paths.append(SweepPath(f"{tag}vader/{m}", mpi, "shm", ((VADER_MECH, m),),
                                           why=f"ob1 + vader, single copy {m}"))
            else:
                paths.append(SweepPath(f"{tag}ob1/tcp", mpi, "tcp", why="ob1 + tcp BTL"))
        for tls in _ucx_sets(caps, placement):
            paths.append(SweepPath(f"{tag}ucx:{tls}", mpi, f"ucx:{tls}",
                                   why=f"UCX_TLS={tls}" + (" (pml ucx)" if mpi == "openmpi"
                                                           else "")))
        if thresholds and caps.ucx_tls:
            # UCX's own choice with one protocol switch moved: where eager copies beat the
            # rendezvous (or zero copy) UCX picked, these show it and locate the crossover.
            base = "ucx" if mpi == "openmpi" else "auto"
            base_name = f"{tag}{base}"
            paths.append(SweepPath(f"{tag}ucx rndv=inf", mpi, base,
                                   (("UCX_RNDV_THRESH", "inf"),),
                                   why="UCX's choice of transports, rendezvous off",
                                   base=base_name))
            paths.append(SweepPath(f"{tag}ucx zcopy=inf", mpi, base,
                                   (("UCX_ZCOPY_THRESH", "inf"),),
                                   why="UCX's choice of transports, zero copy off",
                                   base=base_name))
            if mpi == "openmpi":
                paths.append(SweepPath(f"{tag}ucx", mpi, "ucx",
                                       why="pml ucx, UCX's own transports"))
    return paths
