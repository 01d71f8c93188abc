"""`--impair` specs: what to do to one host's link, or to the path between two hosts.

    h3:rate=200mbit                        a slow host (both directions of its link)
    h2-h5:rate=50mbit                      a bad link between h2 and h5 only, both directions
    h2>h5:rate=50mbit                      ... one direction, h2 to h5
    h2:delay=200us,reorder=multipath:4:50us,reorder-window=32
    h4:rate=100mbit,queue=100,ecn=20       a bottleneck that CE-marks above 20 frames queued

Every value is checked here, strictly, before anything is made: a spec comes from a command
line that root runs. Units: durations ns/us/ms/s; probabilities as percentages (1%, 0.5%);
rates in tc's units (bit/s, `bps` = bytes/s); queues in frames (100) or bytes (64kb, tc's
1024-based units).
"""

import re
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ..errors import FabenchError
from ..util.units import rate_bits

PPB = 1_000_000_000
WINDOW_MAX = 1024  # fb-link's FBL_WINDOW_MAX: far below 32768, where 16-bit msg_ids wrap
# How long a reorder window may hold a hole before taking the missing packet as lost, when
# the spec does not say (Algorithm 1 itself has no timeout: a hole that fewer than W later
# packets follow would wait for the sender's retransmission): twice the most this link
# itself can put between two frames (the spread of its paths and jitter, or its delay when
# netem's model sends some frames without it). A frame later than that is not reordered
# but lost; the factor 2 leaves room for the link process's own scheduling. A window on a
# link that does not reorder needs reorder-hold= said.
HOLD_FACTOR = 2
# The queue of a rate carried by fb-link or netem when `queue=` is not given: netem's default
# `limit 1000` (tc-netem(8)).
DEFAULT_QUEUE_FRAMES = 1000
KEYS = ("rate", "delay", "jitter", "loss", "dup", "reorder", "reorder-window", "reorder-hold",
        "queue", "ecn", "dir")
_TARGET = re.compile(r"^(h[1-9][0-9]{0,2})(?:([->])(h[1-9][0-9]{0,2}))?\Z")
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ns|us|ms|s)\Z")
_PERCENT = re.compile(r"^(\d+(?:\.\d+)?)%\Z")
_BYTES = re.compile(r"^(\d+)(b|kb|mb|gb)\Z")
_NS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_BYTE_UNITS = {"b": 1, "kb": 1024, "mb": 1024**2, "gb": 1024**3}


@dataclass(frozen=True)
class Impairment:
    """One `--impair` spec, parsed; numbers in the units fb-link takes."""

    text: str
    host: str                 # the first host named
    peer: str | None = None   # the second host of a pair; None: every peer of `host`
    both: bool = True         # hA-hB and hN: both directions; hA>hB: hA to hB only
    direction: str = "both"   # hN only: both, out (from the host), in (to the host)
    rate: str | None = None   # tc's text, kept for tc
    rate_bps: int = 0
    delay_ns: int = 0
    jitter_ns: int = 0
    loss_ppb: int = 0
    dup_ppb: int = 0
    reorder_ppb: int = 0
    gap: int = 1
    paths: int = 1
    path_step_ns: int = 0
    queue_pkts: int = 0
    queue_bytes: int = 0
    ecn_k: int = 0
    window: int = 0
    hold_ns: int = 0
    keys: tuple[str, ...] = field(default_factory=tuple)

    @property
    def rate_only(self) -> bool:
        return set(self.keys) <= {"rate", "dir"}

    @property
    def needs_fb_link(self) -> bool:
        """What netem cannot do: multipath, Algorithm 1, CE marking, a queue in bytes."""
        return self.paths > 1 or self.window > 0 or self.ecn_k > 0 or self.queue_bytes > 0

    def rule_text(self, peer_address: str | None) -> str:
        """fb-link's `--rule` body (without the direction)."""
        parts = [f"peer={peer_address}"] if peer_address else []
        for key in ("delay_ns", "jitter_ns", "loss_ppb", "dup_ppb", "reorder_ppb", "gap",
                    "paths", "path_step_ns", "rate_bps", "queue_pkts", "queue_bytes",
                    "ecn_k", "window", "hold_ns"):
            value = getattr(self, key)
            if value and not (key in ("gap", "paths") and value == 1):
                parts.append(f"{key}={value}")
        return ",".join(parts)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _err(text: str, why: str) -> FabenchError:
    return FabenchError(f"--impair {text!r}: {why}")


def duration_ns(text: str, spec: str, key: str) -> int:
    if text.startswith("-"):
        raise _err(spec, f"{key}={text}: must not be negative")
    m = _DURATION.match(text.lower())
    if not m:
        raise _err(spec, f"{key}={text!r}: a duration such as 200us, 1.5ms, 1s")
    ns = round(float(m.group(1)) * _NS[m.group(2)])
    if ns > 60 * _NS["s"]:
        raise _err(spec, f"{key}={text}: at most 60s")
    return ns


def percent_ppb(text: str, spec: str, key: str) -> int:
    if text.startswith("-"):
        raise _err(spec, f"{key}={text}: must not be negative")
    m = _PERCENT.match(text)
    if not m:
        raise _err(spec, f"{key}={text!r}: a percentage such as 1% or 0.05%")
    value = float(m.group(1))
    if value > 100:
        raise _err(spec, f"{key}={text}: a probability above 100%")
    return round(value / 100 * PPB)


def _int(text: str, spec: str, key: str, lo: int, hi: int) -> int:
    if not re.fullmatch(r"-?\d+", text):
        raise _err(spec, f"{key}={text!r}: an integer")
    value = int(text)
    if value < 0 and lo >= 0:
        raise _err(spec, f"{key}={text}: must not be negative")
    if not lo <= value <= hi:
        raise _err(spec, f"{key}={text}: must be {lo}..{hi}")
    return value


def _reorder(text: str, spec: str) -> dict[str, int]:
    """netem's model `P%[:GAP]`, or `multipath:K:STEP` (k paths, path i adding i * STEP)."""
    parts = text.split(":")
    if parts[0] == "multipath":
        if len(parts) != 3:
            raise _err(spec, f"reorder={text!r}: multipath:K:STEP, e.g. multipath:4:50us")
        k = _int(parts[1], spec, "reorder=multipath:K", 2, 64)
        return {"paths": k, "path_step_ns": duration_ns(parts[2], spec, "reorder step")}
    if len(parts) > 2:
        raise _err(spec, f"reorder={text!r}: P% or P%:GAP (netem's), or multipath:K:STEP")
    out = {"reorder_ppb": percent_ppb(parts[0], spec, "reorder")}
    if len(parts) == 2:
        out["gap"] = _int(parts[1], spec, "reorder gap", 1, 1_000_000)
    return out


def _queue(text: str, spec: str) -> dict[str, int]:
    if re.fullmatch(r"-?\d+", text):
        return {"queue_pkts": _int(text, spec, "queue", 1, 10_000_000)}
    m = _BYTES.match(text.lower())
    if not m:
        raise _err(spec, f"queue={text!r}: frames (100) or bytes (64kb, 1mb)")
    nbytes = int(m.group(1)) * _BYTE_UNITS[m.group(2)]
    if not 64 <= nbytes <= 2**34:
        raise _err(spec, f"queue={text}: 64 bytes .. 16gb")
    return {"queue_bytes": nbytes}


def parse_impair(text: str, host_names: list[str]) -> Impairment:
    """One spec, checked against the testbed's host names."""
    if len(text) > 400:
        raise _err(text[:40] + "...", "too long")
    target, sep, body = text.strip().partition(":")
    m = _TARGET.match(target)
    if not sep or not m:
        raise _err(text, "TARGET:KEY=VALUE[,KEY=VALUE...], TARGET hN, hA-hB (both "
                         "directions) or hA>hB (one direction)")
    host, kind, peer = m.group(1), m.group(2), m.group(3)
    for name in (host, peer):
        if name is not None and name not in host_names:
            raise _err(text, f"no host {name} in this testbed (hosts: {', '.join(host_names)})")
    if peer == host:
        raise _err(text, "a pair needs two different hosts")
    values: dict[str, Any] = {}
    keys: list[str] = []
    if not body:
        raise _err(text, "nothing to impair: give KEY=VALUE, e.g. rate=200mbit")
    for item in body.split(","):
        key, eq, value = item.strip().partition("=")
        if not eq or not value:
            raise _err(text, f"{item!r}: expected KEY=VALUE")
        if key not in KEYS:
            raise _err(text, f"unknown key {key!r} (keys: {', '.join(KEYS)})")
        if key in keys:
            raise _err(text, f"{key} given twice")
        keys.append(key)
        if key == "rate":
            try:
                bits = rate_bits(value)
            except ValueError:
                raise _err(text, f"rate={value!r}: tc units such as 100mbit, 1gbit") from None
            if not 8_000 <= bits <= 1e12:
                raise _err(text, f"rate={value}: 8kbit .. 1000gbit")
            values.update(rate=value.lower(), rate_bps=round(bits))
        elif key in ("delay", "jitter"):
            values[f"{key}_ns"] = duration_ns(value, text, key)
        elif key in ("loss", "dup"):
            values[f"{key}_ppb"] = percent_ppb(value, text, key)
        elif key == "reorder":
            values.update(_reorder(value, text))
        elif key == "reorder-window":
            values["window"] = _int(value, text, "reorder-window", 0, WINDOW_MAX)
        elif key == "reorder-hold":
            values["hold_ns"] = duration_ns(value, text, key)
            if values["hold_ns"] == 0:
                raise _err(text, "reorder-hold=0: the window would never hold anything")
        elif key == "queue":
            values.update(_queue(value, text))
        elif key == "ecn":
            values["ecn_k"] = _int(value, text, "ecn", 1, 10_000_000)
        elif key == "dir":
            if peer is not None:
                raise _err(text, "dir= is for one host; a pair says its direction with - or >")
            if value not in ("both", "in", "out"):
                raise _err(text, f"dir={value!r}: both, in (to the host) or out (from it)")
            values["direction"] = value
    if ("rate" in keys and "queue" not in keys and not set(keys) <= {"rate", "dir"}):
        values["queue_pkts"] = DEFAULT_QUEUE_FRAMES
    imp = Impairment(text=text.strip(), host=host, peer=peer, both=kind != ">",
                     keys=tuple(keys), **values)
    _check_combination(imp)
    if imp.window and not imp.hold_ns:
        spread = ((imp.paths - 1) * imp.path_step_ns + 2 * imp.jitter_ns
                  + (imp.delay_ns if imp.reorder_ppb else 0))
        if not spread:
            raise _err(text, "reorder-window= on a link that does not reorder: say how long "
                             "a hole may be held (reorder-hold=, e.g. 1ms)")
        imp = replace(imp, hold_ns=HOLD_FACTOR * spread)
    return imp


def _check_combination(imp: Impairment) -> None:
    t = imp.text
    if (imp.queue_pkts or imp.queue_bytes or imp.ecn_k) and not imp.rate_bps:
        raise _err(t, "queue= and ecn= size the queue of the link's rate: give rate= too")
    if imp.ecn_k and imp.queue_pkts and imp.ecn_k >= imp.queue_pkts:
        raise _err(t, f"ecn={imp.ecn_k} must be below the queue ({imp.queue_pkts} frames)")
    if imp.reorder_ppb and not imp.delay_ns:
        raise _err(t, "reorder=P% (netem's model) sends some packets without the delay: "
                      "give delay= too")
    if imp.reorder_ppb and imp.paths > 1:
        raise _err(t, "one reorder model at a time")
    if imp.jitter_ns and not imp.delay_ns:
        raise _err(t, "jitter= varies the delay: give delay= too")
    if "reorder-hold" in imp.keys and not imp.window:
        raise _err(t, "reorder-hold= is the reorder window's: give reorder-window= too")


def parse_impairs(texts: list[str], host_names: list[str]) -> list[Impairment]:
    """Every spec, checked; two specs for the same target (or a host's direction twice) are
    refused rather than one silently winning."""
    out = [parse_impair(t, host_names) for t in texts]
    seen: dict[tuple[str, str | None, str], str] = {}
    for imp in out:
        for key in _targets(imp):
            if key in seen:
                raise _err(imp.text, f"the same link as {seen[key]!r}")
            seen[key] = imp.text
    return out


def _targets(imp: Impairment) -> list[tuple[str, str | None, str]]:
    """(from host, to host or None, "") for each direction the spec covers; a host's own
    link is (host, None, out|in)."""
    if imp.peer is None:
        dirs = ["out", "in"] if imp.direction == "both" else [imp.direction]
        return [(imp.host, None, d) for d in dirs]
    pairs = [(imp.host, imp.peer, "")]
    if imp.both:
        pairs.append((imp.peer, imp.host, ""))
    return pairs
