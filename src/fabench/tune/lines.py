"""Terminal output of tune: findings, plans, reverts."""

import textwrap
from collections.abc import Iterable

from ..util.textable import Col, header, row
from .apply import Plan, RevertReport, show_value
from .findings import Finding

_MARK = {"ok": "ok", "differs": "DIFFERS", "no-op": "no-op", "info": "info",
         "unknown": "n/a"}


_FINDING_COLUMNS = (Col("status", 8, text=True), Col("item", 32, text=True),
                    Col("current", 40, text=True), Col("recommended", 24, text=True))


def finding_lines(findings: Iterable[Finding], verbose: bool = True) -> list[str]:
    lines: list[str] = []
    target = None
    for f in findings:
        if f.target != target:
            target = f.target
            lines.append(f"# target {target}")
            lines.append(header(_FINDING_COLUMNS, " scope"))
        lines.append(row(_FINDING_COLUMNS, [_MARK.get(f.status, f.status), f.item, f.current,
                                            f.recommended], f" {f.scope}"))
        if f.verdict:
            lines.append(f"           VERDICT: {f.verdict} ({_cut(f.current, 120)})")
        if verbose and (f.why or f.source or f.risk):
            text = "; ".join(x for x in (f.why, f"source: {f.source}" if f.source else "",
                                         f"risk: {f.risk}" if f.risk else "") if x)
            lines += textwrap.wrap(text, 96, initial_indent=" " * 11,
                                   subsequent_indent=" " * 11)
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.status] = counts.get(f.status, 0) + 1
    verdicts = [f.verdict for f in findings if f.verdict]
    lines.append("# " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) +
                 (f"; verdicts: {', '.join(dict.fromkeys(verdicts))}" if verdicts else ""))
    return lines


def _cut(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "~"


def plan_lines(plan: Plan, dry_run: bool) -> list[str]:
    verb = "would change" if dry_run else "changes"
    lines = [f"# profile {plan.profile}: {len(plan.changes)} {verb}"]
    for c in plan.changes:
        prev = show_value(c.previous) if c.kind != "offloads" else \
            show_value({k: c.previous.get(k) for k in c.new})
        lines.append(f"  {c.tgt.name}: {c.label}: {prev} -> {show_value(c.new)}")
    for s in plan.skipped:
        lines.append(f"  {s.target}: {s.label}: skipped ({s.reason})")
    if plan.unchanged:
        lines.append(f"# already as the profile wants: {len(plan.unchanged)}")
    return lines


def revert_lines(rep: RevertReport) -> list[str]:
    if rep.profile is None:
        return ["# nothing to revert (no journal)"]
    lines = [f"# reverted profile {rep.profile}: {len(rep.restored)} restored, "
             f"{len(rep.gone)} gone, {len(rep.failed)} failed"]
    lines += [f"  restored {_cut(x, 110)}" for x in rep.restored]
    lines += [f"  gone     {x}" for x in rep.gone]
    lines += [f"  FAILED   {x}" for x in rep.failed]
    if rep.retired:
        lines.append(f"# journal retired to {rep.retired}")
    return lines
