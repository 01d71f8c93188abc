"""An acceptance as text, JSON, JUnit XML and HTML (the verdict table first).

JUnit XML: one <testsuite> named after the spec, one <testcase> per check (classname
"fabench.accept.KIND", name the check's text); a fail is a <failure>, a check that could not
measure an <error>, a skipped or inconclusive check <skipped> (inconclusive is not a pass, and
Jenkins shows skipped tests apart). The evidence (value, interval, threshold, run ids) is in
the failure's message and text, and in <system-out> for every check. The elements and
attributes are those Jenkins' JUnit plugin reads (tests/junit_schema.py checks them).
"""

from __future__ import annotations

import datetime as _dt
import xml.etree.ElementTree as ET
from html import escape
from pathlib import Path

from ..errors import FabenchError
from ..report.build import report_for
from ..report.html import render_html
from ..store.database import Store
from ..util.textable import Col, header, row
from .baseline import baseline_text, shown
from .verdict import ERROR, FAIL, INCONCLUSIVE, PASS, SKIPPED, Acceptance, Verdict

_COLS = (Col("verdict", 12, text=True), Col("check", 38, text=True),
         Col("measured [95% CI]", 34, text=True), Col("evidence", 24, text=True))


def text_lines(acc: Acceptance) -> list[str]:
    out = [f"# fabench accept {acc.source} on {acc.where}: campaign {acc.campaign_id}",
           header(_COLS)]
    for v in acc.verdicts:
        out.append(row(_COLS, [v.status.upper(), v.check.text, v.value_text(),
                               v.evidence_text() or "-"]))
        m = v.measured
        if v.reason:
            out.append(f"#   {v.reason}")
        if v.extra_runs:
            out.append(f"#   first {v.first}; {v.extra_runs} more run(s) within the budget")
        if m is not None and v.status in (FAIL, ERROR, INCONCLUSIVE):
            out += [f"#   {d}" for d in m.detail[:6]]
        out += [f"#   {baseline_text(b)}" for b in shown(v.baseline)]
    counts = ", ".join(f"{sum(v.status == s for v in acc.verdicts)} {s}"
                       for s in (PASS, FAIL, INCONCLUSIVE, SKIPPED, ERROR)
                       if any(v.status == s for v in acc.verdicts))
    out.append(f"# {acc.outcome.upper()}: {counts}; {acc.wall_s:.1f} s, "
               f"{acc.spent_s:.1f} of {acc.budget_s:g} s budget spent measuring more")
    for s in acc.baseline_summary:
        out.append(f"# baseline: {s}")
    return out


def _evidence(v: Verdict) -> str:
    m = v.measured
    lines = [f"check: {v.check.text} (spec line {v.check.line})",
             f"threshold: {v.check.threshold_text()}",
             f"measured: {v.value_text()}", f"verdict: {v.status}"]
    if m is not None:
        if m.method:
            lines.append(f"method: {m.method}")
        if m.run_ids:
            lines.append("run ids: " + ", ".join(map(str, m.run_ids)))
        if m.campaign_ids:
            lines.append("campaigns: " + ", ".join(map(str, m.campaign_ids)))
        lines += m.detail
    if v.reason:
        lines.append(v.reason)
    return "\n".join(lines)


def junit_xml(acc: Acceptance) -> str:
    suite = ET.Element("testsuite", {
        "name": f"fabench accept {acc.name}", "tests": str(len(acc.verdicts)),
        "failures": str(sum(v.status == FAIL for v in acc.verdicts)),
        "errors": str(sum(v.status == ERROR for v in acc.verdicts)),
        "skipped": str(sum(v.status in (SKIPPED, INCONCLUSIVE) for v in acc.verdicts)),
        "time": f"{acc.wall_s:.3f}",
        "timestamp": _dt.datetime.now().replace(microsecond=0).isoformat(),
        "hostname": "fabench"})
    props = ET.SubElement(suite, "properties")
    for k, val in (("spec", acc.source), ("on", acc.where), ("campaign", str(acc.campaign_id)),
                   ("outcome", acc.outcome)):
        ET.SubElement(props, "property", {"name": k, "value": val})
    for v in acc.verdicts:
        tc = ET.SubElement(suite, "testcase", {"classname": f"fabench.accept.{v.check.kind}",
                                               "name": v.check.text,
                                               "time": f"{v.wall_s:.3f}"})
        message = f"{v.check.text}: measured {v.value_text()}, threshold " \
                  f"{v.check.threshold_text()}"
        if v.status == FAIL:
            el = ET.SubElement(tc, "failure", {"message": message, "type": "threshold"})
            el.text = _evidence(v)
        elif v.status == ERROR:
            el = ET.SubElement(tc, "error", {"message": v.reason[:500] or message,
                                             "type": "measurement"})
            el.text = _evidence(v)
        elif v.status in (SKIPPED, INCONCLUSIVE):
            why = v.reason if v.status == SKIPPED else \
                f"inconclusive: the 95 % interval straddles the threshold; {message}"
            ET.SubElement(tc, "skipped", {"message": why[:500]})
        out = ET.SubElement(tc, "system-out")
        out.text = _evidence(v)
    ET.indent(suite)
    return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + ET.tostring(suite, "unicode") + "\n"


_CSS = ("td.pass{color:#2a7;font-weight:600}td.fail,td.error{color:#c22;font-weight:600}"
        "td.inconclusive{color:#b80;font-weight:600}td.skipped{color:#777}")


def verdict_table_html(acc: Acceptance) -> str:
    rows = []
    for v in acc.verdicts:
        m = v.measured
        ev = escape(v.evidence_text() or "-")
        notes = [*(m.detail[:4] if m else []), *([v.reason] if v.reason else []),
                 *(baseline_text(b) for b in shown(v.baseline))]
        rows.append(
            f"<tr><td class='l {escape(v.status)}'>{escape(v.status.upper())}</td>"
            f"<td class=l>{escape(v.check.text)}</td>"
            f"<td>{escape(v.check.threshold_text())}</td><td>{escape(v.value_text())}</td>"
            f"<td class=l>{ev}</td><td class=l>{'<br>'.join(escape(n) for n in notes)}</td></tr>")
    return (f"<style>{_CSS}</style><h2>Acceptance: {escape(acc.outcome.upper())}</h2>"
            f"<p>{escape(acc.source)} on {escape(acc.where)}; {acc.wall_s:.1f} s. Pass: the 95 % "
            "interval lies on the good side of the threshold; fail: on the bad side; "
            "inconclusive: it straddles it.</p>"
            "<table><tr><th class=l>verdict</th><th class=l>check</th><th>threshold</th>"
            "<th>measured [95 % CI]</th><th class=l>evidence</th><th class=l>notes</th></tr>"
            + "".join(rows) + "</table>")


def write_html(acc: Acceptance, store: Store, path: Path) -> Path:
    """The report of every campaign the acceptance ran, its verdict table first."""
    table = verdict_table_html(acc)
    title = f"fabench acceptance: {acc.name}"
    try:
        page = render_html(report_for(store, [f"c{c}" for c in acc.campaign_ids()], title))
    except FabenchError:  # nothing measured (a doctor-only spec): the table alone
        page = (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>"
                f"{escape(title)}</title></head><body><h1>{escape(title)}</h1></body></html>\n")
    marker = "<h2>Warnings</h2>"
    if marker in page:
        page = page.replace(marker, table + marker, 1)
    else:
        page = page.replace("</h1>", "</h1>" + table, 1)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path
