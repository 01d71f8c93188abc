"""A judged matrix as text: the verdict lines, the groups, and CSV."""

import csv
import io
from typing import Any


def summary_lines(j: dict[str, Any], where: str) -> list[str]:
    """One line per verdict (`bad link h2 -> h5: ...`), then the groups and the passes."""
    hosts = j["hosts"]
    lines = [f"fabench matrix: {len(hosts)} hosts on {where}; threshold: modified z-score > "
             f"{j['threshold']}"]
    for p in j.get("passes", []):
        took = "" if p.get("wall_s") is None else f" in {p['wall_s']:.1f} s"
        lines.append(f"# pass {p['mode']}: {p['directions']} directions{took} "
                     f"(run {p['run_id']}, {p['status']})")
    sus = j.get("suspects", {})
    nsus = len(sus.get("links", [])) + len(sus.get("nodes", [])) + len(sus.get("groups", []))
    if nsus:
        lines.append(f"# suspects: {nsus}, cleared by the retest: {len(j.get('cleared', []))}")
    topo = j.get("topology", {})
    groups = topo.get("groups") or [hosts]
    lines.append("# groups: " + " | ".join(" ".join(g) for g in groups))
    lines.extend(topo.get("misplaced", []))
    lines.extend(f"# warning: {w}" for w in j.get("warnings", []))
    lines.extend(v["line"] for v in j["verdicts"])
    if not j["verdicts"]:
        lines.append("no link or node flagged")
    return lines


def matrix_csv(j: dict[str, Any]) -> str:
    """One row per measured direction: hosts, latency, bandwidth, scores, retest values."""
    hosts = j["hosts"]
    lat = {(i, k): v for i, k, v in j.get("latency_us", [])}
    bw = {(i, k): v for i, k, v in j.get("bandwidth_MBps", [])}
    rlat = {(i, k): v for i, k, v in j.get("retest_latency_us", [])}
    rbw = {(i, k): v for i, k, v in j.get("retest_bandwidth_MBps", [])}
    scores = {(i, k): s for i, k, s in j.get("scores", [])}
    flagged = {(v["src"], v["dst"]): v["kind"] for v in j["verdicts"] if v["dst"]}
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["src", "dst", "latency_us", "bandwidth_MBps", "latency_score",
                "bandwidth_score", "retest_latency_us", "retest_bandwidth_MBps", "verdict"])
    for link in sorted(set(lat) | set(bw)):
        i, k = link
        s = scores.get(link, {})
        w.writerow([hosts[i], hosts[k], lat.get(link, ""), bw.get(link, ""),
                    _num(s.get("latency")), _num(s.get("bandwidth")), rlat.get(link, ""),
                    rbw.get(link, ""), flagged.get((hosts[i], hosts[k]), "")])
    return buf.getvalue()


def _num(v: float | None) -> str:
    return "" if v is None else f"{v:.3f}"
