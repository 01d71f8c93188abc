"""hpccoutf.txt: what hpcc wrote, read into typed results.

Every figure is read from hpcc's own lines: HPL's result table and residual check, PTRANS's
WALL rows, the StarDGEMM and MPIFFT sections, b_eff's ring blocks, and the key=value Summary
section. hpcc does not fail on a bad input value: HPL prints "HPL ERROR" on stderr and hpcc
runs its built-in defaults instead (NB=80, N 2560 at 1 rank and 3520 at 2 here, Debian's
1.5.0), exit status 0. So the parameters HPL says it used are read back and compared with those
asked (:func:`check_parameters`): a run at other parameters than asked is refused, never stored.
hpcc prints those parameters at its start, before its other tests and HPL's own run, so
:func:`header_used` lets a run in progress be stopped there.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from ..errors import FabenchError
from .hpccinf import Asked


class HpccRunError(FabenchError):
    """hpcc ran but its output is not a result: a failed residual, parameters it did not
    use, a section missing."""


@dataclass(frozen=True)
class HplTest:
    variant: str  # HPL's T/V code, e.g. WR11C2R4
    n: int
    nb: int
    p: int
    q: int
    time_s: float  # as printed (2 decimals)
    gflops: float
    residual: float | None
    passed: bool

    @property
    def flops(self) -> float:
        """HPL's own operation count (HPL_pdtest.c): 2/3 N^3 + 3/2 N^2."""
        return 2.0 / 3.0 * self.n**3 + 1.5 * self.n**2

    @property
    def seconds(self) -> float:
        """The time from the rate (4 significant digits) rather than the 2-decimal time."""
        return self.flops / (self.gflops * 1e9) if self.gflops > 0 else self.time_s


@dataclass(frozen=True)
class RingResult:
    order: str  # "natural" or "random"
    size: int  # bytes per message
    latency_us: float
    bandwidth_MBps: float


@dataclass
class HpccResult:
    summary: dict[str, str]
    hpl: list[HplTest]
    hpl_used: dict[str, str]  # HPL's "The following parameter values will be used"
    ptrans_gbs: list[float]  # one per WALL row
    ptrans_n: int | None
    ptrans_passed: bool
    stardgemm: dict[str, float]  # min, avg, max Gflop/s per process
    mpifft: dict[str, float]  # n, gflops, max_err
    ring: list[RingResult] = field(default_factory=list)

    def number(self, key: str) -> float | None:
        v = self.summary.get(key)
        try:
            return float(v) if v is not None else None
        except ValueError:
            return None


_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_HPL_ROW = re.compile(rf"^(W\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+({_NUM})\s+({_NUM})\s*$")
_RESID = re.compile(rf"^\|\|Ax-b\|\|.*=\s*({_NUM}|nan|-?inf)\s*\.+\s*(PASSED|FAILED)",
                    re.IGNORECASE)
_USED = re.compile(r"^(N|NB|P|Q|PMAP)\s+:\s*(.*?)\s*$")
_THRESHOLD = re.compile(rf"scaled residuals are less than\s+({_NUM})")
_PTRANS_ROW = re.compile(
    rf"^WALL\s+(\d+)\s+(\d+)\s+\d+\s+\d+\s+\d+\s+\d+\s+{_NUM}\s+(PASSED|FAILED)\s+({_NUM})")
_MINMAX = re.compile(rf"^(Minimum|Average|Maximum) Gflop/s\s+({_NUM})")
_RING_SIZE = re.compile(r"^Message Size:\s+(\d+)\s+Byte")
_RING = re.compile(rf"^(Natural|Avg Random) Order (Latency|Bandwidth):\s+({_NUM})")


def sections(text: str) -> dict[str, list[str]]:
    """hpcc's "Begin of X section." ... "End of X section." blocks, by name."""
    out: dict[str, list[str]] = {}
    name: str | None = None
    for line in text.splitlines():
        m = re.match(r"^Begin of (\S+) section\.", line)
        if m:
            name = m.group(1)
            out[name] = []
            continue
        if name and re.match(rf"^End of {re.escape(name)} section\.", line):
            name = None
            continue
        if name:
            out[name].append(line)
    return out


def parse_output(text: str, source: str = "hpccoutf.txt") -> HpccResult:
    secs = sections(text)
    if "Summary" not in secs:
        raise HpccRunError(f"{source}: no Summary section: hpcc did not finish (its output "
                           "ends before 'Begin of Summary section.')")
    summary: dict[str, str] = {}
    for line in secs["Summary"]:
        k, sep, v = line.partition("=")
        if sep:
            summary[k.strip()] = v.strip()
    hpl, used = _hpl(secs.get("HPL", []))
    ptrans, ptrans_ok = _ptrans(secs.get("PTRANS", []))
    return HpccResult(
        summary=summary, hpl=hpl, hpl_used=used, ptrans_gbs=ptrans,
        ptrans_n=_int(summary.get("PTRANS_n")), ptrans_passed=ptrans_ok,
        stardgemm=_minmax(secs.get("StarDGEMM", [])), mpifft=_mpifft(summary),
        ring=_ring(secs.get("LatencyBandwidth", [])))


def _int(v: str | None) -> int | None:
    try:
        return int(v) if v is not None else None
    except ValueError:
        return None


def _hpl(lines: list[str]) -> tuple[list[HplTest], dict[str, str]]:
    tests: list[HplTest] = []
    used: dict[str, str] = {}
    pending: tuple[str, int, int, int, int, float, float] | None = None
    in_values = False  # between "The following parameter values will be used:" and "----"
    for raw in lines:
        line = raw.strip()
        if line.startswith("The following parameter values will be used"):
            in_values = not used
        elif line.startswith("----"):
            in_values = False
        elif (m := _THRESHOLD.search(line)) and "threshold" not in used:
            used["threshold"] = m.group(1)
        elif in_values and (m := _USED.match(line)) and m.group(1) not in used:
            used[m.group(1)] = m.group(2)
        elif m := _HPL_ROW.match(line):
            pending = (m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4)),
                       int(m.group(5)), float(m.group(6)), float(m.group(7)))
        elif (m := _RESID.match(line)) and pending is not None:
            try:
                resid: float | None = float(m.group(1))
            except ValueError:
                resid = None
            tests.append(HplTest(*pending, residual=resid, passed=m.group(2) == "PASSED"))
            pending = None
    if pending is not None:  # a row without its check line: never a pass
        tests.append(HplTest(*pending, residual=None, passed=False))
    return tests, used


def _ptrans(lines: list[str]) -> tuple[list[float], bool]:
    rates, ok = [], True
    for line in lines:
        if m := _PTRANS_ROW.match(line.strip()):
            rates.append(float(m.group(4)))
            ok = ok and m.group(3) == "PASSED"
    return rates, ok


def _minmax(lines: list[str]) -> dict[str, float]:
    names = {"Minimum": "min", "Average": "avg", "Maximum": "max"}
    return {names[m.group(1)]: float(m.group(2))
            for line in lines if (m := _MINMAX.match(line.strip()))}


def _mpifft(summary: dict[str, str]) -> dict[str, float]:
    out = {}
    for key, name in (("MPIFFT_N", "n"), ("MPIFFT_Gflops", "gflops"),
                      ("MPIFFT_maxErr", "max_err")):
        try:
            out[name] = float(summary[key])
        except (KeyError, ValueError):
            continue
    return out


def _ring(lines: list[str]) -> list[RingResult]:
    """b_eff's ring blocks ("Message Size: 8 Byte" then natural and random latency and
    bandwidth)."""
    out: list[RingResult] = []
    size: int | None = None
    vals: dict[tuple[str, str], float] = {}

    def flush() -> None:
        if size is None:
            return
        for order, key in (("natural", "Natural"), ("random", "Avg Random")):
            lat, bw = vals.get((key, "Latency")), vals.get((key, "Bandwidth"))
            if lat is not None and bw is not None:
                out.append(RingResult(order, size, lat * 1e3, bw))  # msec -> us

    for raw in lines:
        line = raw.strip()
        if m := _RING_SIZE.match(line):
            flush()
            size, vals = int(m.group(1)), {}
        elif (m := _RING.match(line)) and size is not None:
            vals[(m.group(1), m.group(2))] = float(m.group(3))
        elif line.startswith("Execution time"):
            flush()
            size = None
    flush()
    return out


def check_parameters(res: HpccResult, asked: Asked, stderr: str = "") -> None:
    """Refuse a run whose HPL did not use what was asked (hpcc's silent fallback on a bad
    input value), naming HPL's own complaint when it printed one."""
    why = rejection(res.hpl_used, asked, stderr)
    if why is not None:
        raise HpccRunError(why)


def rejection(used: dict[str, str], asked: Asked, stderr: str = "") -> str | None:
    """Why HPL's parameters (its "will be used" block) are not what was asked, or None."""
    complaint = _hpl_error(stderr)
    want = {"N": " ".join(map(str, asked.sizes)), "NB": str(asked.nb), "P": str(asked.p),
            "Q": str(asked.q)}
    got = {k: " ".join(used.get(k, "").split()) for k in want}
    wrong = [f"{k} {got[k] or '?'} (asked {want[k]})" for k in want if got[k] != want[k]]
    if not wrong and not complaint:
        return None
    why = f"HPL rejected hpccinf.txt: {complaint}; " if complaint else ""
    return (f"{why}HPL ran {', '.join(wrong) or 'other parameters'} instead - hpcc falls back "
            "to its built-in defaults on a bad input value; the run is failed and nothing is "
            "stored")


def header_used(text: str) -> dict[str, str] | None:
    """HPL's "The following parameter values will be used" block as hpcc prints it at its
    start, before any test section (HPL itself runs last, after all the others), once the
    block's closing "----" line is there; {} when a test section began without one, None
    while neither is written yet."""
    lines: list[str] = []
    for line in text.splitlines(keepends=True):
        if line.startswith("Begin of "):
            return {}
        if not line.endswith("\n"):  # a line hpcc is still writing
            break
        lines.append(line)
        if line.startswith("----") and any(
                x.strip().startswith("The following parameter values") for x in lines):
            used = _hpl(lines)[1]
            return used if used else {}
    return None


def _hpl_error(stderr: str) -> str:
    """HPL's own message: "HPL ERROR from process # 0, on line 388 of function HPL_pdinfo:"
    followed by ">>> Value of NB less than 1 <<<"."""
    lines = stderr.splitlines()
    for i, line in enumerate(lines):
        if "HPL ERROR" in line:
            nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
            msg = nxt.strip("<> ").strip() if nxt.startswith(">>>") else line.strip()
            return msg
    return ""


def check_hpl(res: HpccResult) -> list[HplTest]:
    """HPL's tests that passed; an error for no test or a failed residual (a failed residual
    is a wrong answer, whatever its rate)."""
    if not res.hpl:
        raise HpccRunError("HPL ran no test (hpcc's HPL section has no result row)")
    failed = [t for t in res.hpl if not t.passed]
    if failed:
        t = failed[0]
        resid = "missing" if t.residual is None or math.isnan(t.residual) else f"{t.residual:g}"
        thr = res.hpl_used.get("threshold", "HPL's threshold")
        raise HpccRunError(
            f"HPL FAILED its residual check at N={t.n} NB={t.nb} {t.p}x{t.q}: scaled residual "
            f"{resid} (must be below {thr}); {t.gflops:g} Gflops of a wrong answer is not a "
            "result - the run is failed and nothing is stored")
    return res.hpl
