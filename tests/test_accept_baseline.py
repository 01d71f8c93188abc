"""`fabench accept --baseline`: the matrix checks (flagged links and nodes appearing or
disappearing; latency and bandwidth medians over every direction and per host) and the
congestion impact factor against an earlier acceptance, with compare.py's verdicts. Stores
built with the real Store API: matrices judged by the real judge, congestion rounds as the
congestion test stores them."""

import json
import uuid
from pathlib import Path

import numpy as np
import pytest

from fabench.accept.baseline import attach_baseline, compare_congestion, saved_path
from fabench.accept.checks import parse_check
from fabench.accept.output import text_lines, verdict_table_html
from fabench.accept.verdict import PASS, Acceptance, Measured, Verdict
from fabench.congestion.victims import label
from fabench.matrix.judge import Matrix, judge
from fabench.matrix.stored import MatrixStore as Store
from fabench.records import PairRecord, ResultRecord

HOSTS = [f"h{i}" for i in range(1, 7)]
SIZE = 1 << 20
WINDOW = 4


def _pairs(rng: np.random.Generator, slow: str | None) -> list[PairRecord]:
    """Every direction of six hosts: ~20 us and ~1000 MB/s, each direction its own level
    (fixed per direction, so two clean matrices differ by sample noise only); a slow host's
    directions 3x slower both ways."""
    levels = np.random.default_rng(1).uniform(0.9, 1.1, (6, 6))
    out = []
    for i, a in enumerate(HOSTS):
        for j, b in enumerate(HOSTS):
            if i == j:
                continue
            f = levels[i, j] * (3.0 if slow in (a, b) else 1.0)
            lat = 20.0 * f * rng.lognormal(0, 0.03, 200)
            bw_us = (SIZE * WINDOW / 1000.0) * f * rng.lognormal(0, 0.03, 20)  # ~1000 MB/s
            out.append(PairRecord(i, j, a, b, 0, "concurrent", SIZE, WINDOW,
                                  float(SIZE * WINDOW), [float(x) for x in lat],
                                  [float(x) for x in bw_us]))
    return out


def _matrix(st: Store, rng: np.random.Generator, slow: str | None) -> int:
    """A matrix campaign as `fabench matrix` stores it: one first pass, its pairs, the judge's
    verdicts."""
    cid = st.begin_campaign("matrix", {})
    rid = st.begin_run(campaign_id=cid, key="k", kernel="mpi.matrix", transport="tcp",
                       mpi="openmpi", ranks=len(HOSTS), launcher="testbed", repeat=0,
                       settings={})
    pairs = _pairs(rng, slow)
    for p in pairs:
        st.add_matrix_pair(rid, p)
    st.finish_run(rid, status="ok")
    j = judge(Matrix.of(HOSTS, pairs)).to_json()
    j["passes"] = [{"run_id": rid, "mode": "concurrent", "role": "first", "status": "ok"}]
    st.save_matrix(cid, HOSTS, j)
    st.end_campaign(cid, "finished")
    return cid


def _congestion(st: Store, rng: np.random.Generator, factor: float, rounds: int = 3) -> int:
    """A congestion test's victim runs: the 8 B latency alone and under incast, per round."""
    cid = st.begin_campaign("congestion", {})
    for rnd in range(rounds):
        for phase, scale in (("isolated", 1.0), ("incast", factor)):
            times = [float(x) for x in 10.0 * scale * rng.lognormal(0, 0.05, 300)]
            rid = st.begin_run(campaign_id=cid, key=uuid.uuid4().hex, kernel="mpi.latency",
                               transport="tcp", mpi="openmpi", ranks=2, launcher="testbed",
                               repeat=rnd, settings={"label": label(phase), "repeat": rnd})
            st.add_result(rid, ResultRecord("mpi.latency", 8, len(times), 0, "us", times))
            st.finish_run(rid, status="ok")
    st.end_campaign(cid, "finished")
    return cid


def _acceptance(st: Store, matrix: int, congestion: int) -> Acceptance:
    cid = st.begin_campaign("acc", {})
    st.end_campaign(cid, "finished")
    verdicts = [Verdict(parse_check(text), PASS, Measured(0.0, campaign_ids=[c]))
                for text, c in (("no bad link", matrix), ("no slow node", matrix),
                                ("congestion.impact <= 10", congestion))]
    return Acceptance("acc", "acc.yaml", cid, "testbed", verdicts, 0)


def _accept_twice(tmp_path: Path, slow_then: str | None, slow_now: str | None,
                  factor_then: float, factor_now: float) -> tuple[Acceptance, int]:
    rng = np.random.default_rng(7)
    path = tmp_path / "fabench.sqlite"
    with Store(path) as st:
        before = _acceptance(st, _matrix(st, rng, slow_then), _congestion(st, rng, factor_then))
        now = _acceptance(st, _matrix(st, rng, slow_now), _congestion(st, rng, factor_now))
    saved_path(path, before.campaign_id).write_text(json.dumps(before.to_json()))
    attach_baseline(now, path, before.campaign_id)
    return now, before.campaign_id


def _by(v: Verdict, **want: object) -> list[dict]:
    return [b for b in v.baseline if all(b.get(k) == x for k, x in want.items())]


def test_a_slow_host_after_maintenance_is_a_broken_verdict_and_worse_medians(
        tmp_path: Path) -> None:
    acc, base = _accept_twice(tmp_path, None, "h3", 2.0, 2.0)
    links, nodes, cong = acc.verdicts
    # the judge flags h3 now and did not then: a broken node; its links moved by more than
    # an outlier's score (changed), and no other link did
    assert [(b["verdict"], b["src"], b["campaign"]) for b in nodes.baseline if "line" in b] \
        == [("broken", "h3", base)]
    moved = [b for b in links.baseline if "line" in b]
    assert len(moved) == 10 and all("h3" in (b["src"], b["dst"]) for b in moved), moved
    assert {b["verdict"] for b in moved} <= {"broken", "changed"}
    assert all(b["latency_ratio"] > 2.5 and b["bandwidth_ratio"] < 0.4 for b in moved)
    # medians over all 30 directions: 10 of them (h3's) 3x slower moves the whole matrix
    [lat] = _by(links, scope="all directions", metric="latency")
    [bw] = _by(links, scope="all directions", metric="bandwidth")
    assert lat["directions"] == 30 and lat["verdict"] in ("worse", "inconclusive")
    assert lat["ratio_low"] <= lat["ratio"] <= lat["ratio_high"] and lat["ratio"] > 1
    assert bw["ratio"] < 1 and bw["verdict"] in ("worse", "inconclusive")
    # per host: h3 is 3x slower on every one of its 10 directions; a host that never talks
    # through h3 for most of its directions is not called better
    [h3l] = _by(nodes, host="h3", metric="latency")
    [h3b] = _by(nodes, host="h3", metric="bandwidth")
    assert h3l["verdict"] == "worse" and h3l["ratio_low"] > 2.5 and h3l["directions"] == 10
    assert h3b["verdict"] == "worse" and h3b["ratio_high"] < 0.4
    assert all(b["verdict"] != "better" for b in _by(nodes, metric="latency"))
    # the impact factor did not change: 2x then, 2x now
    [f] = cong.baseline
    assert f["label"] == "latency under incast" and f["metric"] == "impact_factor"
    assert f["median_a"] == pytest.approx(2.0, rel=0.1) and f["verdict"] != "worse"
    text = "\n".join(text_lines(acc))
    assert f"vs baseline c{base}: broken" in text and "h3's 10 directions: worse" in text
    assert any(s.startswith("matrix c") and "broken" in s for s in acc.baseline_summary)
    assert "vs baseline c" in verdict_table_html(acc)


def test_a_repaired_host_is_fixed_and_clean_matrices_are_equal(tmp_path: Path) -> None:
    acc, _ = _accept_twice(tmp_path, "h3", None, 2.0, 2.0)
    links, nodes, _ = acc.verdicts
    assert [(b["verdict"], b["src"]) for b in nodes.baseline if "line" in b] == \
        [("fixed", "h3")]
    [h3l] = _by(nodes, host="h3", metric="latency")
    assert h3l["verdict"] == "better"

    acc, _ = _accept_twice(tmp_path / "clean", None, None, 2.0, 2.0)
    links, nodes, _ = acc.verdicts
    assert [b for b in links.baseline + nodes.baseline if "line" in b] == []
    # the same directions, new samples: equal within the 5 % band, over all and per host
    assert {b["verdict"] for b in links.baseline + nodes.baseline} == {"equal"}


def test_impact_factor_against_the_baseline(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    with Store(tmp_path / "s.sqlite") as st:
        two, four, two_again = (_congestion(st, rng, f) for f in (2.0, 4.0, 2.0))
        [worse] = compare_congestion(st, two, four, 1)
        [same] = compare_congestion(st, two, two_again, 1)
        [better] = compare_congestion(st, four, two, 1)
    assert worse["verdict"] == "worse" and worse["ratio_low"] > 1.5
    assert worse["median_a"] == pytest.approx(2.0, rel=0.1)
    assert worse["median_b"] == pytest.approx(4.0, rel=0.1)
    assert worse["runs_a"] == worse["runs_b"] == 3  # the rounds stand for the repeats
    assert same["verdict"] == "equal" and same["ratio_low"] <= 1 <= same["ratio_high"]
    assert better["verdict"] == "better"


def test_without_the_saved_acceptance_only_its_runs_are_compared(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    path = tmp_path / "fabench.sqlite"
    with Store(path) as st:
        before = _acceptance(st, _matrix(st, rng, None), _congestion(st, rng, 2.0))
        now = _acceptance(st, _matrix(st, rng, None), _congestion(st, rng, 2.0))
    attach_baseline(now, path, before.campaign_id)  # no accept-cN.json written
    assert all(v.baseline == [] for v in now.verdicts)
    assert any("no saved acceptance" in s for s in now.baseline_summary)
