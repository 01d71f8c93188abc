"""The acceptance check grammar: one line of a spec becomes a typed `Check`, once, at the top.

    latency_us <= 1.2 @ 8            p2p latency at 8 B, us
    latency <= 1.2us @ 8             the same, the unit on the number
    bandwidth_MBps >= 11000 @ 4M     p2p bandwidth at 4 MiB, MB/s (MB = 1e6, as OSU)
    hpl.efficiency >= 0.9            every node's HPL Rmax / Rpeak (or >= 90%)
    hpl.spread_pct <= 1              (max - min) / median of the nodes' GFLOPS, in %
    no bad link | no slow node       the all-pairs matrix's verdicts
    allreduce <= 1.25 x predicted @ 8   a collective at the allocation's full size
    allreduce_us <= 50 @ 8           ... or against a fixed time
    congestion.impact <= 2           GPCNeT's impact factor (worst victim metric)
    no tune finding of severity differs   the tuning audit
    library choice loses nowhere     transport selection: the MPI's own choice is never beaten
    reorder_pct <= 1                 share of datagrams a path reorders, in %
    doctor                           the scheduler reaches its hosts and the kernels are built

Nothing below this module parses a check's text.
"""

import re
from dataclasses import dataclass
from enum import IntEnum

from ..errors import FabenchError
from ..metrics import Better
from ..util.units import format_size, parse_size


class Stage(IntEnum):
    """The order checks run in: a centre's acceptance order (document 000 measures node
    consistency before it compares fabrics)."""

    DOCTOR = 0
    NODES = 1
    MATRIX = 2
    P2P = 3
    COLLECTIVES = 4
    REST = 5


@dataclass(frozen=True)
class MetricDef:
    name: str  # canonical, as the JSON and the JUnit testcase name show it
    kind: str  # doctor, hpl, matrix, p2p, collective, congestion, tune, transport, reorder
    unit: str  # the unit thresholds are held in; "" where the metric is a pure number
    better: Better
    needs_size: bool = False
    count: bool = False  # an exact count (no interval, compared as is)

    @property
    def stage(self) -> Stage:
        return {"doctor": Stage.DOCTOR, "hpl": Stage.NODES, "matrix": Stage.MATRIX,
                "p2p": Stage.P2P, "collective": Stage.COLLECTIVES}.get(self.kind, Stage.REST)


LOWER, HIGHER = Better.LOWER, Better.HIGHER
COLLECTIVES = ("allreduce", "alltoall", "allgather", "bcast", "reduce", "gather")
SEVERITIES = ("unknown", "differs", "verdict")  # tune findings, weakest first

_DEFS = [
    MetricDef("doctor", "doctor", "", HIGHER, count=True),
    MetricDef("latency_us", "p2p", "us", LOWER, needs_size=True),
    MetricDef("bandwidth_MBps", "p2p", "MB/s", HIGHER, needs_size=True),
    MetricDef("hpl.efficiency", "hpl", "", HIGHER),
    MetricDef("hpl.spread_pct", "hpl", "%", LOWER),
    MetricDef("hpl.gflops", "hpl", "GFLOPS", HIGHER),
    MetricDef("matrix.bad_links", "matrix", "", LOWER, count=True),
    MetricDef("matrix.slow_nodes", "matrix", "", LOWER, count=True),
    *(MetricDef(f"{c}_us", "collective", "us", LOWER, needs_size=True) for c in COLLECTIVES),
    *(MetricDef(f"{c}_vs_predicted", "collective", "", LOWER, needs_size=True)
      for c in COLLECTIVES),
    MetricDef("congestion.impact", "congestion", "", LOWER),
    *(MetricDef(f"tune.findings[{s}]", "tune", "", LOWER, count=True) for s in SEVERITIES),
    MetricDef("transport.losses", "transport", "", LOWER, count=True),
    MetricDef("reorder_pct", "reorder", "%", LOWER),
]
METRIC_DEFS = {d.name: d for d in _DEFS}

# A metric written without its unit in the name takes it from the number (`latency <= 1.2us`).
_BARE = {"latency": "latency_us", "bandwidth": "bandwidth_MBps", "hpl.spread": "hpl.spread_pct",
         "reorder": "reorder_pct", **{c: f"{c}_us" for c in COLLECTIVES}}
# Units a number may carry, as (canonical unit, factor to it).
_UNITS = {"us": ("us", 1.0), "ns": ("us", 1e-3), "ms": ("us", 1e3), "s": ("us", 1e6),
          "MB/s": ("MB/s", 1.0), "MBps": ("MB/s", 1.0), "GB/s": ("MB/s", 1e3),
          "GBps": ("MB/s", 1e3), "Gbit/s": ("MB/s", 125.0), "Gbps": ("MB/s", 125.0),
          "%": ("%", 1.0), "GFLOPS": ("GFLOPS", 1.0), "Gflops": ("GFLOPS", 1.0),
          "TFLOPS": ("GFLOPS", 1e3)}
_OPS = ("<=", ">=", "==", "<", ">")

_EXPR = re.compile(
    r"^(?P<metric>[A-Za-z_][\w.]*(?:\[\w+\])?)\s*(?P<op><=|>=|==|<|>)\s*"
    r"(?P<num>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*"
    r"(?:(?P<pred>[x×*])\s*predicted|(?P<unit>[A-Za-z/%]+))?\s*"
    r"(?:@\s*(?P<size>\S+))?$")
_PHRASES = {
    "doctor": ("doctor", "==", 0.0),
    "no bad link": ("matrix.bad_links", "==", 0.0),
    "no bad links": ("matrix.bad_links", "==", 0.0),
    "no slow node": ("matrix.slow_nodes", "==", 0.0),
    "no slow nodes": ("matrix.slow_nodes", "==", 0.0),
    "library choice loses nowhere": ("transport.losses", "==", 0.0),
}
_TUNE_PHRASE = re.compile(r"^no tune findings? of severity (?P<sev>\w+)$")


@dataclass(frozen=True)
class Check:
    """One expectation, typed: what to measure, how to judge it, and where the spec said it."""

    text: str
    metric: MetricDef
    op: str
    threshold: float  # in metric.unit (a fraction for hpl.efficiency)
    size: int | None = None  # bytes (p2p, collectives)
    line: int = 0
    ident: str = ""  # the name other checks' `after:` refer to

    @property
    def kind(self) -> str:
        return self.metric.kind

    @property
    def stage(self) -> Stage:
        return self.metric.stage

    @property
    def relative(self) -> bool:
        return self.metric.name.endswith("_vs_predicted")

    @property
    def collective(self) -> str:
        return self.metric.name.partition("_")[0]

    def threshold_text(self) -> str:
        unit = self.metric.unit
        at = f" @ {format_size(self.size)}" if self.size is not None else ""
        if self.relative:
            return f"{self.op} {self.threshold:g} x predicted{at}"
        return f"{self.op} {self.threshold:g}{(' ' + unit) if unit and unit != '%' else unit}{at}"


def parse_check(text: str, line: int = 0) -> Check:
    """`text` as a check; a FabenchError says what is wrong (the caller adds the line)."""
    t = " ".join(text.split())
    low = t.lower().rstrip(".")
    if low in _PHRASES:
        name, op, thr = _PHRASES[low]
        return Check(t, METRIC_DEFS[name], op, thr, None, line)
    m = _TUNE_PHRASE.match(low)
    if m:
        sev = m["sev"]
        if sev not in SEVERITIES:
            raise FabenchError(f"tune finding severity {sev!r}: one of {', '.join(SEVERITIES)}")
        return Check(t, METRIC_DEFS[f"tune.findings[{sev}]"], "==", 0.0, None, line)
    m = _EXPR.match(t)
    if not m:
        raise FabenchError(f"{t[:80]!r} is not a check: METRIC OP NUMBER[UNIT] [x predicted] "
                           "[@ SIZE] (latency_us <= 1.2 @ 8), or a phrase (no bad link, no "
                           "slow node, no tune finding of severity S, library choice loses "
                           "nowhere, doctor); see docs/accept.md")
    name, op, num = m["metric"], m["op"], float(m["num"])
    unit = m["unit"]
    if m["pred"]:
        if name not in COLLECTIVES:
            raise FabenchError(f"'x predicted' applies to a collective ({', '.join(COLLECTIVES)}),"
                               f" not {name}")
        if unit:
            raise FabenchError(f"{name}: a ratio to the prediction has no unit")
        d = METRIC_DEFS[f"{name}_vs_predicted"]
    else:
        if name in _BARE:
            if not unit:
                want = METRIC_DEFS[_BARE[name]].unit
                raise FabenchError(f"{name} {op} {m['num']}: a threshold without a unit (write "
                                   f"{_BARE[name]} {op} {m['num']}, or {m['num']}{want})")
            name = _BARE[name]
        if name not in METRIC_DEFS or name == "doctor":
            raise FabenchError(f"unknown metric {name!r}; known: "
                               f"{', '.join(n for n in METRIC_DEFS if n != 'doctor')}")
        d = METRIC_DEFS[name]
        if unit:
            num = _convert(d, num, unit)
    size = None
    if m["size"] is not None:
        if not d.needs_size:
            raise FabenchError(f"{d.name} has no message size (drop '@ {m['size']}')")
        try:
            size = parse_size(m["size"])
        except ValueError as exc:
            raise FabenchError(f"size {m['size']!r}: {exc}") from None
    elif d.needs_size:
        raise FabenchError(f"{d.name} needs a message size: '@ 8', '@ 4M'")
    if d.count and op not in ("==", "<=", "<"):
        raise FabenchError(f"{d.name} is a count: ==, <= or <")
    return Check(t, d, op, num, size, line)


def _convert(d: MetricDef, num: float, unit: str) -> float:
    if d.name == "hpl.efficiency" and unit == "%":
        return num / 100.0
    if unit == "x" and d.name == "congestion.impact":
        return num
    if unit not in _UNITS:
        raise FabenchError(f"unit {unit!r}: one of {', '.join(_UNITS)}")
    canon, factor = _UNITS[unit]
    if canon != d.unit:
        raise FabenchError(f"{d.name} is in {d.unit or 'no unit'}, not {unit}")
    return num * factor
