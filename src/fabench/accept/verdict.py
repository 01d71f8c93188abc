"""A check's verdict from a measured value and its 95 % interval.

pass: the whole interval lies on the good side of the threshold; fail: the whole interval on
the bad side; inconclusive: it straddles the threshold (more measurement may decide it).
A count (bad links, findings) has no interval: it is compared as it is.
"""

import math
from dataclasses import dataclass, field
from typing import Any

from .checks import Check

PASS, FAIL, INCONCLUSIVE, SKIPPED, ERROR = "pass", "fail", "inconclusive", "skipped", "error"


@dataclass
class Measured:
    """What a check measured: the value, its interval, and the evidence behind them."""

    value: float | None
    low: float | None = None  # None: no interval (a count, or a single measurement)
    high: float | None = None
    method: str = ""
    run_ids: list[int] = field(default_factory=list)
    campaign_ids: list[int] = field(default_factory=list)
    detail: list[str] = field(default_factory=list)  # evidence lines (the flagged link, ...)
    runs: int = 0  # measurements pooled (repeats and the budget's extra runs)


@dataclass
class Verdict:
    check: Check
    status: str
    measured: Measured | None = None
    reason: str = ""
    wall_s: float = 0.0
    baseline: list[dict[str, Any]] = field(default_factory=list)  # analysis/compare.py's verdicts
    first: str = ""  # the verdict before the budget's extra runs ("" when none were made)
    extra_runs: int = 0  # runs the budget added

    def value_text(self) -> str:
        m = self.measured
        if m is None or m.value is None:
            return "-"
        unit = self.check.metric.unit
        if self.check.relative:
            unit = "x predicted"
        v = _num(m.value)
        if m.low is None or m.high is None:
            return f"{v} {unit}".strip()
        return f"{v} [{_num(m.low)}, {_num(m.high)}] {unit}".strip()

    def evidence_text(self) -> str:
        m = self.measured
        if m is None:
            return ""
        parts = []
        if m.run_ids:
            parts.append("runs " + ", ".join(map(str, m.run_ids)))
        if m.campaign_ids:
            parts.append("campaigns " + ", ".join(f"c{c}" for c in m.campaign_ids))
        return "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        m = self.measured
        c = self.check
        return {"check": c.text, "id": c.ident, "line": c.line, "kind": c.kind,
                "metric": c.metric.name, "unit": c.metric.unit, "op": c.op,
                "threshold": c.threshold, "size": c.size, "status": self.status,
                "value": _finite(m.value) if m else None,
                "interval": [_finite(m.low), _finite(m.high)] if m and m.low is not None
                else None,
                "method": m.method if m else "", "runs": m.runs if m else 0,
                "run_ids": m.run_ids if m else [], "campaign_ids": m.campaign_ids if m else [],
                "evidence": m.detail if m else [], "reason": self.reason,
                "wall_s": round(self.wall_s, 3), "first_verdict": self.first or self.status,
                "extra_runs": self.extra_runs, "baseline": self.baseline}


def _finite(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) else None


def _num(v: float) -> str:
    if not math.isfinite(v):
        return str(v)
    a = abs(v)
    return f"{v:.0f}" if a >= 1000 else f"{v:.4g}"


def _holds(op: str, x: float, t: float) -> bool:
    return {"<=": x <= t, "<": x < t, ">=": x >= t, ">": x > t, "==": x == t}[op]


def decide(check: Check, m: Measured) -> str:
    """pass, fail or inconclusive for `m` against the check's threshold."""
    if m.value is None or not math.isfinite(m.value):
        return ERROR
    op, t = check.op, check.threshold
    if m.low is None or m.high is None or check.metric.count:
        return PASS if _holds(op, m.value, t) else FAIL
    lo, hi = m.low, m.high
    if op in ("<=", "<"):
        good, bad = _holds(op, hi, t), not _holds(op, lo, t)
    elif op in (">=", ">"):
        good, bad = _holds(op, lo, t), not _holds(op, hi, t)
    else:  # == on a measured value: the interval must hold the threshold and nothing else
        good, bad = lo == hi == t, not lo <= t <= hi
    return PASS if good else FAIL if bad else INCONCLUSIVE


# `fabench accept`'s exit statuses (docs/accept.md)
EXIT_PASS, EXIT_FAIL, EXIT_INCONCLUSIVE = 0, 3, 4


@dataclass
class Acceptance:
    name: str
    source: str
    campaign_id: int
    where: str
    verdicts: list[Verdict]
    budget_s: float
    spent_s: float = 0.0  # of the budget, on extra measurements
    wall_s: float = 0.0
    baseline: int | None = None
    baseline_summary: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        st = {v.status for v in self.verdicts}
        if st & {FAIL, ERROR}:
            return EXIT_FAIL
        if INCONCLUSIVE in st:
            return EXIT_INCONCLUSIVE
        return EXIT_PASS

    @property
    def outcome(self) -> str:
        return {EXIT_PASS: "pass", EXIT_FAIL: "fail", EXIT_INCONCLUSIVE: "inconclusive"}[
            self.exit_code]

    def campaign_ids(self) -> list[int]:
        ids = {self.campaign_id}
        for v in self.verdicts:
            if v.measured:
                ids.update(v.measured.campaign_ids)
        return sorted(ids)

    def to_json(self) -> dict[str, Any]:
        return {"type": "acceptance", "name": self.name, "spec": self.source,
                "campaign_id": self.campaign_id, "campaign_ids": self.campaign_ids(),
                "on": self.where, "outcome": self.outcome, "exit_status": self.exit_code,
                "budget_s": self.budget_s, "budget_spent_s": round(self.spent_s, 3),
                "wall_s": round(self.wall_s, 3), "baseline": self.baseline,
                "baseline_summary": self.baseline_summary,
                "counts": {s: sum(v.status == s for v in self.verdicts)
                           for s in (PASS, FAIL, INCONCLUSIVE, SKIPPED, ERROR)},
                "checks": [v.to_json() for v in self.verdicts]}
