"""What the library itself says it does per message size, read from its own tools.

- UCX: ``ucx_info -u FEATURES -e -P intra|inter`` prints, under the run's UCX_* environment, the
  endpoint UCX would build to a peer on the same node or another node: its lanes
  (``lane[1]: 5:cma/memory.0 ... rma_bw#0``) and the protocol per size range
  (``tag_send: 0..<egr/short>..93..<egr/bcopy>..8256..<rndv>..(inf)``). With UCX's newer protocol
  layer switched on (``UCX_PROTO_ENABLE=y``, the default from UCX 1.16 on) ``UCX_PROTO_INFO=y``
  adds a table per size (``| 0..92 | eager short | sysv/memory |``): that table is read when
  present, since it names the lane per range directly.
- Open MPI ob1: ``ompi_info --param btl NAME --level 9 --parsable`` under the run's OMPI_MCA_*
  environment gives the limits that switch protocol (``btl_vader_eager_limit``) and vader's
  single-copy mechanism, with the source of each value (default or environment).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..host.process import run_capture

INF = 1 << 62

_LANE_RE = re.compile(r"lane\[(\d+)\]:\s+\d+:(\S+?)(?:\.\d+)?\s+md\[\d+\].*?->\s+\S+\s*(.*)$")
_RANGE_RE = re.compile(r"^#?\s*(tag_send|tag_send_nbr|tag_send_sync):\s+(\S+)\s*$")
_PROTO_ROW_RE = re.compile(r"\|\s*(\d+)\.\.(\d+|inf)\s*\|\s*(.*?)\s*\|\s*(.*?)\s*\|")
_PARSABLE_RE = re.compile(r"^mca:btl:(\w+):param:(\w+):(value|source):(.*)$")

PROTO_WORDS = {"egr/short": "eager short", "egr/bcopy": "eager copy", "egr/zcopy":
               "eager zero-copy", "rndv": "rendezvous", "egr/single": "eager single",
               "egr/multi": "eager multi"}


@dataclass(frozen=True)
class Band:
    """Sizes ``low`` .. ``high`` - 1 and what the library does with them."""

    low: int
    high: int
    protocol: str
    lanes: tuple[str, ...] = ()

    def text(self) -> str:
        lanes = f" {'+'.join(self.lanes)}" if self.lanes else ""
        return f"{self.protocol}{lanes}"


@dataclass
class LibraryChoice:
    """The library's per-size choice for one path, and where it was read."""

    source: str
    bands: list[Band] = field(default_factory=list)
    # UCX only: the protocol of a blocking send (tag_send_nbr) where it differs
    blocking: list[Band] = field(default_factory=list)
    settings: dict[str, str] = field(default_factory=dict)
    error: str = ""

    def at(self, size: int) -> Band | None:
        return next((b for b in self.bands if b.low <= size < b.high), None)

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "settings": self.settings, "error": self.error,
                "bands": [vars(b) | {"lanes": list(b.lanes)} for b in self.bands],
                "blocking": [vars(b) | {"lanes": list(b.lanes)} for b in self.blocking]}


# -- UCX ----------------------------------------------------------------------------------------
def _ranges(spec: str) -> list[tuple[int, int, str]]:
    """``0..<egr/short>..93..<egr/bcopy>..8256..<rndv>..(inf)`` as (low, high, protocol)."""
    parts = spec.split("..")
    out = []
    for i in range(0, len(parts) - 2, 2):
        lo, proto, hi = parts[i], parts[i + 1], parts[i + 2]
        low = int(lo) if lo.isdigit() else 0
        high = int(hi) if hi.isdigit() else INF
        out.append((low, high, proto.strip("<>")))
    return out


def parse_ucx_info_endpoint(text: str) -> tuple[list[Band], list[Band]]:
    """(tag_send bands, tag_send_nbr bands) from ``ucx_info -e`` output."""
    lanes: list[tuple[str, list[str]]] = []
    ranges: dict[str, list[tuple[int, int, str]]] = {}
    for raw in text.splitlines():
        line = raw.strip()
        m = _LANE_RE.search(line)
        if m:
            lanes.append((m.group(2), m.group(3).split()))
            continue
        r = _RANGE_RE.match(line)
        if r:
            ranges[r.group(1)] = _ranges(r.group(2))

    def lanes_for(proto: str) -> tuple[str, ...]:
        if proto == "rndv":
            roles = ("rma_bw", "am_bw")
        else:
            roles = ("tag", "am")
        for role in roles:
            hit = [tl for tl, rs in lanes if any(x == role or x.startswith(role + "#")
                                                  for x in rs)]
            if hit:
                return tuple(hit)
        return ()

    def bands(name: str) -> list[Band]:
        return [Band(lo, hi, PROTO_WORDS.get(p, p), lanes_for(p))
                for lo, hi, p in ranges.get(name, [])]

    return bands("tag_send"), bands("tag_send_nbr")


def parse_proto_info(text: str) -> list[Band]:
    """UCX_PROTO_INFO's table for tagged sends from host memory (UCX's v2 protocols)."""
    out: list[Band] = []
    in_tag = False
    for line in text.splitlines():
        if "ep_cfg[" in line and "|" in line:
            in_tag = "tag_send" in line and "host memory" in line
            continue
        m = _PROTO_ROW_RE.search(line)
        if in_tag and m:
            high = INF if m.group(2) == "inf" else int(m.group(2)) + 1
            proto = re.sub(r"^\(\?\)\s*", "", m.group(3))
            out.append(Band(int(m.group(1)), high, proto, tuple(m.group(4).split())))
    # one table per endpoint configuration: keep the first (ucx_info builds one endpoint)
    first: list[Band] = []
    for b in out:
        if first and b.low == 0:
            break
        first.append(b)
    return first


def ucx_choice(env: Mapping[str, str], peer: str, features: str = "t",
               prefix: Sequence[str] = ()) -> LibraryChoice:
    """UCX's per-size protocol and lanes toward a peer ``intra`` (same node) or ``inter``."""
    ucx_env = {k: v for k, v in env.items() if k.startswith("UCX_")
               and k not in ("UCX_LOG_LEVEL", "UCX_LOG_FILE")}
    proto_v2 = ucx_env.get("UCX_PROTO_ENABLE", "").lower() in ("y", "yes", "1", "on")
    run_env = {**_base_env(), **ucx_env, **({"UCX_PROTO_INFO": "y"} if proto_v2 else {})}
    argv = _on_host(prefix, run_env, ["ucx_info", "-u", features, "-e", "-P", peer])
    out = run_capture(argv, timeout=60, env=run_env)
    shown = " ".join(f"{k}={v}" for k, v in sorted(ucx_env.items()))
    src = f"ucx_info -u {features} -e -P {peer}" + (f" under {shown}" if shown else "")
    if not out.ok:
        return LibraryChoice(src, settings=ucx_env,
                             error=f"exit {out.returncode}: {out.stderr.strip()[-300:]}")
    bands, blocking = parse_ucx_info_endpoint(out.stdout)
    if proto_v2:
        table = parse_proto_info(out.stdout + "\n" + out.stderr)
        if table:
            return LibraryChoice(src + " (UCX_PROTO_INFO)", table, [], ucx_env)
    if not bands:
        return LibraryChoice(src, settings=ucx_env, error="no tag_send line in its output")
    return LibraryChoice(src, bands, blocking if blocking != bands else [], ucx_env)


def ucx_proto_v2_default(prefix: Sequence[str] = ()) -> bool | None:
    """Whether this UCX uses its v2 protocols (and so UCX_PROTO_INFO) by default."""
    out = run_capture([*prefix, "ucx_info", "-c"], timeout=30, env=_base_env())
    m = re.search(r"^UCX_PROTO_ENABLE=(\S+)", out.stdout, re.M)
    return None if not m else m.group(1).lower() in ("y", "yes", "1", "on")


# -- Open MPI ob1 -------------------------------------------------------------------------------
def ompi_params(btl: str, env: Mapping[str, str],
                prefix: Sequence[str] = ()) -> tuple[dict[str, str], dict[str, str], str]:
    """(values, sources, error) of one BTL's parameters, as ompi_info reads them under env."""
    mca = {k: v for k, v in env.items() if k.startswith("OMPI_MCA_")}
    run_env = {**_base_env(), **mca}
    out = run_capture(_on_host(prefix, mca, ["ompi_info", "--param", "btl", btl, "--level",
                                             "9", "--parsable"]), timeout=60, env=run_env)
    values: dict[str, str] = {}
    sources: dict[str, str] = {}
    for line in out.stdout.splitlines():
        m = _PARSABLE_RE.match(line.strip())
        if m and m.group(1) == btl:
            (values if m.group(3) == "value" else sources)[m.group(2)] = m.group(4)
    err = "" if values else f"ompi_info printed no btl {btl} parameter (exit {out.returncode})"
    return values, sources, err


def vader_single_copy_values(prefix: Sequence[str] = ()) -> list[str]:
    """The single-copy mechanisms this Open MPI's vader was built with (cma, xpmem, knem,
    none, emulated)."""
    out = run_capture([*prefix, "ompi_info", "--param", "btl", "vader", "--level", "9",
                       "--parsable"], timeout=60, env=_base_env())
    vals = re.findall(r"btl_vader_single_copy_mechanism:enumerator:value:\d+:(\S+)", out.stdout)
    return list(dict.fromkeys(vals))


def ob1_choice(btl: str, env: Mapping[str, str], prefix: Sequence[str] = ()) -> LibraryChoice:
    """ob1's per-size protocol over one BTL: eager up to its eager limit, then rendezvous
    (vader: single copy by its mechanism, or copy in/out when that is none)."""
    values, sources, err = ompi_params(btl, env, prefix)
    src = f"ompi_info --param btl {btl}"
    if err:
        return LibraryChoice(src, error=err)
    keys = [f"btl_{btl}_eager_limit", f"btl_{btl}_single_copy_mechanism",
            f"btl_{btl}_max_send_size"]
    settings = {k: f"{values[k]} ({sources.get(k, '?')})" for k in keys if k in values}
    try:
        eager = int(values[f"btl_{btl}_eager_limit"])
    except (KeyError, ValueError):
        return LibraryChoice(src, settings=settings, error=f"no btl_{btl}_eager_limit")
    mech = values.get(f"btl_{btl}_single_copy_mechanism")
    if btl == "vader" and mech in ("none", "emulated"):
        large = f"rendezvous, copy in/out (single copy {mech})"
    elif mech:
        large = f"rendezvous, single copy by {mech}"
    else:
        large = "rendezvous"
    # the limit counts ob1's match header, so the payload that still goes eager is smaller;
    # the band edge is the limit itself, as the library states it
    return LibraryChoice(src, [Band(0, eager, "eager copy", (btl,)),
                               Band(eager, INF, large, (btl,))], [], settings)


# What a steering value may hold when it travels on another host's command line (an ssh
# agent hands its words to a shell there): transport lists, sizes, names.
_SAFE_VALUE = re.compile(r"^[A-Za-z0-9_,.:^/+-]*\Z")


def _on_host(prefix: Sequence[str], env: Mapping[str, str], cmd: list[str]) -> list[str]:
    """``cmd`` on the host ``prefix`` reaches; there the steering variables go by ``env``
    (an agent such as ssh does not carry this process's environment)."""
    if not prefix:
        return cmd
    steer = {k: v for k, v in env.items() if k.startswith(("UCX_", "OMPI_MCA_"))}
    for k, v in steer.items():
        if not _SAFE_VALUE.match(v):
            raise ValueError(f"{k}={v!r}: not sent to another host (unexpected characters)")
    return [*prefix, "env", *(f"{k}={v}" for k, v in sorted(steer.items())), *cmd]


def _base_env() -> dict[str, str]:
    """This process's environment without UCX/MCA settings: the path's own replace them."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("UCX_", "OMPI_MCA_"))}
