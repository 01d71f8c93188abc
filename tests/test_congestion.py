"""`fabench congestion`: the impact factor's arithmetic and intervals, the rows the store's runs
make, the configuration's refusals, and the whole test on real testbeds (slow): victims over
Open MPI/TCP, aggressors as real kernels on other hosts, a rate-limited bottleneck in fb-link
with drop-tail and with ECN marking."""

import json
import os
import uuid
from pathlib import Path

import numpy as np
import pytest

from conftest import fabench_run, own_testbeds
from fabench.congestion import CongestionConfig, impact_factors, impact_rows
from fabench.congestion.aggressors import AggressorPlan
from fabench.congestion.impact import run_counters
from fabench.congestion.session import ecn_warning, layout
from fabench.congestion.victims import label, phase_of
from fabench.errors import FabenchError
from fabench.plan.spec import parse_spec
from fabench.records import ResultRecord
from fabench.report.congestion import html_section, text_lines
from fabench.report.html import render_html
from fabench.report.model import build_report
from fabench.store.database import Store
from fabench.util.stats import quantile_ratio_runs

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="testbeds with fb-link need root "
                                "(TAP devices)")


# -- the impact factor ------------------------------------------------------------------------

def _rounds(rng: np.random.Generator, scale: float, n: int = 400, k: int = 3,
            tail: float = 0.0) -> list[np.ndarray]:
    """k rounds of n latency-like samples (lognormal around `scale`); `tail`: the share of
    samples multiplied by 10 (a queue that sometimes builds)."""
    out = []
    for _ in range(k):
        a = scale * rng.lognormal(0.0, 0.1, n)
        hit = rng.random(n) < tail
        a[hit] *= 10
        out.append(a)
    return out


def test_impact_factor_is_congested_over_isolated_with_an_interval_around_it() -> None:
    rng = np.random.default_rng(1)
    iso, con = _rounds(rng, 10.0), _rounds(rng, 25.0)
    f = impact_factors(iso, con)
    med = f["median"]
    pooled_i, pooled_c = np.concatenate(iso), np.concatenate(con)
    assert med.factor == pytest.approx(np.median(pooled_c) / np.median(pooled_i))
    assert med.isolated_us == pytest.approx(np.median(pooled_i))
    assert med.low < 2.5 < med.high and not med.point_outside
    assert med.high - med.low < 0.3  # 1200 samples a side: a narrow interval
    p99 = f["p99"]
    assert p99.factor == pytest.approx(np.quantile(pooled_c, 0.99) / np.quantile(pooled_i, 0.99))
    # lognormal rounds scaled 10 -> 25: every quantile's true ratio is 2.5
    assert p99.low < 2.5 < p99.high and not p99.point_outside


def test_no_congestion_gives_an_interval_holding_one() -> None:
    rng = np.random.default_rng(2)
    f = impact_factors(_rounds(rng, 10.0), _rounds(rng, 10.0))
    for q in ("median", "p99"):
        assert f[q].low <= 1.0 <= f[q].high, f[q]


def test_a_tail_only_congestion_shows_at_p99_not_at_the_median() -> None:
    """A queue that builds for 5 % of the iterations (what a bursty aggressor does to a
    ping-pong) leaves the median alone and multiplies P99: the reason GPCNeT reports both."""
    rng = np.random.default_rng(3)
    f = impact_factors(_rounds(rng, 10.0), _rounds(rng, 10.0, tail=0.05))
    assert f["median"].low < 1.1
    assert f["p99"].factor > 5 and f["p99"].low > 3


def test_rounds_that_disagree_widen_the_interval() -> None:
    """The two-stage bootstrap draws rounds: a side whose rounds disagree (a noisy host) gets
    a wider interval than the same samples would give if they were one round."""
    rng = np.random.default_rng(4)
    iso = _rounds(rng, 10.0)
    con = [10.0 * rng.lognormal(0, 0.1, 400) * s for s in (1.5, 2.5, 3.5)]
    by_round = quantile_ratio_runs(iso, con, 0.5)
    pooled = quantile_ratio_runs([np.concatenate(iso)], [np.concatenate(con)], 0.5)
    assert by_round.ratio == pytest.approx(pooled.ratio)
    width = by_round.ratio_ci.high - by_round.ratio_ci.low
    assert width > 3 * (pooled.ratio_ci.high - pooled.ratio_ci.low)


def test_empty_and_constant_sides() -> None:
    nothing = quantile_ratio_runs([], [[1.0, 2.0]], 0.5)
    assert np.isnan(nothing.ratio) and not nothing.ratio_ci.defined
    const = quantile_ratio_runs([[2.0] * 10], [[4.0] * 10], 0.99)
    assert const.ratio == 2.0 and not const.ratio_ci.defined
    with pytest.raises(ValueError):
        quantile_ratio_runs([[1.0]], [[1.0]], 1.0)


# -- rows from the store ----------------------------------------------------------------------

def _store_run(store: Store, cid: int, kernel: str, size: int, phase: str, rnd: int,
               times: list[float], provenance: dict[str, object]) -> int:
    rid = store.begin_run(campaign_id=cid, key=uuid.uuid4().hex, kernel=kernel,
                          transport="tcp", mpi="openmpi", ranks=2, launcher="testbed",
                          repeat=rnd, settings={"label": label(phase), "repeat": rnd})
    store.add_result(rid, ResultRecord(kernel, size, len(times), 0, "us", times,
                                       bytes_per_sample=float(size) * 4))
    store.finish_run(rid, status="ok", provenance=provenance)
    return rid


def test_rows_from_stored_runs_with_their_counters(tmp_path: Path) -> None:
    """Runs labelled congestion:isolated / congestion:incast in one campaign become one row
    per victim metric and aggressor; the counters of the congested runs are summed over every
    host's TCP and every fb-link rule; runs of other campaigns and unlabelled runs stay out."""
    rng = np.random.default_rng(5)
    prov = {"tcp_counters": {"h1": {"retrans_segs": 3, "delivered_ce": 5},
                             "h3": {"retrans_segs": 4, "delivered_ce": 0}},
            "testbed": {"links": [{"host": "h2", "specs": ["h2:rate=100mbit,ecn=20,dir=in"]}],
                        "link_counters": {"h2": {"in": {"rules": [
                            {"ce_marked": 7, "queue_drops": 2, "ect_seen": 9}]},
                            "out": {"limit_drops": 1, "rules": []}}}}}
    with Store(tmp_path / "s.sqlite") as store:
        cid = store.begin_campaign("congestion", {}, {})
        other = store.begin_campaign("other", {}, {})
        for rnd in range(2):
            _store_run(store, cid, "mpi.latency", 8, "isolated", rnd,
                       list(rng.normal(10, 0.5, 200)), {})
            _store_run(store, cid, "mpi.latency", 8, "incast", rnd,
                       list(rng.normal(30, 0.5, 200)), prov)
            _store_run(store, cid, "mpi.bw", 1 << 20, "isolated", rnd,
                       list(rng.normal(1000, 10, 20)), {})
            _store_run(store, cid, "mpi.bw", 1 << 20, "incast", rnd,
                       list(rng.normal(4000, 10, 20)), prov)
        _store_run(store, other, "mpi.latency", 8, "incast", 0, [500.0] * 10, prov)
        runs = store.runs()
        rows = impact_rows(runs, {r.id: list(store.results(r.id)) for r in runs})
        # the report computes the same rows for the runs it selects
        report = build_report(store, store.runs(cid))
        assert [(r.victim, r.aggressor) for r in report.congestion] == [
            ("bandwidth", "incast"), ("latency", "incast")]
        assert "<h2>Congestion</h2>" in render_html(report)
    assert [(r.campaign_id, r.victim, r.aggressor) for r in rows] == [
        (cid, "bandwidth", "incast"), (cid, "latency", "incast")]
    bw, lat = rows
    assert lat.rounds == 2 and lat.bottleneck == "h2:rate=100mbit,ecn=20,dir=in"
    assert 2.8 < lat.impact_factor["median"].factor < 3.2
    assert lat.counters["retrans_segs"] == 2 * 7 and lat.counters["delivered_ce"] == 2 * 5
    assert lat.counters["ce_marked"] == 14 and lat.counters["queue_drops"] == 4
    assert lat.counters["limit_drops"] == 2 and lat.isolated_counters["ce_marked"] == 0
    # bandwidth: the times' ratio is isolated / congested bandwidth
    assert 3.8 < bw.impact_factor["median"].factor < 4.2
    assert bw.isolated_bandwidth_mbs is not None and bw.congested_bandwidth_mbs is not None
    assert bw.isolated_bandwidth_mbs / bw.congested_bandwidth_mbs == pytest.approx(
        bw.impact_factor["median"].factor, rel=0.02)
    rec = json.loads(json.dumps(lat.to_json(), allow_nan=False))
    assert set(rec["impact_factor"]) == {"median", "p99"}
    assert rec["impact_factor"]["median"]["ci"][0] <= rec["impact_factor"]["median"]["factor"]
    text = "\n".join(text_lines(rows))
    assert "incast" in text and "latency" in text and "h2:rate=100mbit" in text
    assert "<h2>Congestion</h2>" in html_section(rows) and html_section([]) == ""


def test_run_counters_ignore_what_is_not_a_count() -> None:
    class R:
        provenance = {"testbed": {"link_counters": {"h2": {"in": {"rules": [
            {"ce_marked": True, "queue_drops": "7", "params": {"ecn_k": 20}}]}}}}}
    c = run_counters(R())  # type: ignore[arg-type]
    assert c["ce_marked"] == 0 and c["queue_drops"] == 0


def test_labels() -> None:
    assert phase_of(label("incast")) == "incast" and phase_of("x") is None


# -- configuration ----------------------------------------------------------------------------

HOSTS = ["h1", "h2", "h3", "h4"]


def test_layout_defaults_and_refusals() -> None:
    lay = layout(CongestionConfig(), HOSTS)
    assert (lay.victims, lay.aggressors, lay.target) == (("h1", "h2"), ("h3", "h4"), "h2")
    for cfg, why in (
            (CongestionConfig(victim_hosts=("h1", "h3"), aggressor_hosts=("h3", "h4")),
             "both victims and aggressors"),
            (CongestionConfig(victim_hosts=("h1",)), "at least two"),
            (CongestionConfig(target="h9"), "not one of the testbed's"),
    ):
        with pytest.raises(FabenchError, match=why):
            layout(cfg, HOSTS)
    with pytest.raises(FabenchError, match="no host left"):
        layout(CongestionConfig(), ["h1", "h2"])
    for kw, why in (({"aggressors": ("storm",)}, "one of incast"),
                    ({"aggressors": ("incast", "incast")}, "twice"),
                    ({"victims": ("jitter",)}, "one of latency"),
                    ({"rounds": 0}, "rounds")):
        with pytest.raises(FabenchError, match=why):
            CongestionConfig(**kw)  # type: ignore[arg-type]
    with pytest.raises(FabenchError, match="one of its senders"):
        AggressorPlan("incast", ("h3", "h2"), "h2")
    with pytest.raises(FabenchError, match="needs 2"):
        AggressorPlan("alltoall", ("h3",), "h2")


def test_ecn_warning_names_a_congestion_control_deaf_to_marks() -> None:
    bbr = {"h1": {"tcp_congestion_control": "bbr", "tcp_ecn": "1"}}
    reno = {"h1": {"tcp_congestion_control": "reno", "tcp_ecn": "1"}}
    assert "bbr" in (ecn_warning(bbr, True) or "")
    assert ecn_warning(bbr, False) is None and ecn_warning(reno, True) is None


def test_cli_refuses_before_anything_runs(tmp_path: Path) -> None:
    r = fabench_run("congestion", "--aggressor", "storm", "--out", str(tmp_path), check=False)
    assert r.returncode == 2 and "invalid choice" in r.stderr
    r = fabench_run("congestion", "--on", "local", "--out", str(tmp_path), check=False)
    assert r.returncode != 0 and "places victims and aggressors on hosts" in r.stderr
    assert "not --on local" in r.stderr


def test_spec_block() -> None:
    spec = parse_spec(Path(__file__).parent.parent.joinpath(
        "examples", "congestion.yaml").read_text())
    assert spec.congestion is not None and spec.congestion.aggressor == [
        "incast", "alltoall", "bcast", "bulk"]
    with pytest.raises(FabenchError, match="aggressor"):
        parse_spec("runs:\n  - kernel: mpi.latency\ncongestion:\n  aggressor: storm\n")


# -- on testbeds ------------------------------------------------------------------------------

def _json_rows(stdout: str) -> list[dict[str, object]]:
    return [json.loads(x) for x in stdout.splitlines() if x.startswith("{")]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.netns
@needs_root
@pytest.mark.slow
def test_incast_on_a_shared_bottleneck_drop_tail_and_ecn(tmp_path: Path, openmpi: str) -> None:
    """Four hosts; h2's link toward h2 at 100 Mbit/s through fb-link. Victims h1-h2 (8 B
    ping-pong), incast from h3 and h4 into h2. Drop-tail (60 frames): the victim's latency
    under incast is more than its latency alone (the queue it waits behind), the queue drops
    and TCP retransmits, and nothing is CE-marked; the same with ECN marking above 10 frames
    queued: CE marks counted by fb-link and delivered to the receivers' TCP. Every aggressor
    process is gone afterwards, and the runs are in the store with their labels."""
    with own_testbeds("fbcg" + uuid.uuid4().hex[:4]):
        for name, impair, ecn in (("dt", "h2:rate=100mbit,queue=60,dir=in", False),
                                  ("ecn", "h2:rate=100mbit,queue=60,ecn=10,dir=in", True)):
            fabench_run("testbed", "up", "--name", name, "--hosts", "4", "--impair", impair)
            out = tmp_path / name
            # Two rounds of 300 (the rounds alternate which phase runs first). One round of
            # 200 took half the time, but at host load 9-12 with two busy loops 2 of 4 runs
            # failed (likely the 2 cores starving fb-link and the ranks): an isolated phase
            # measured 4.2 ms instead of 30 us, the factor fell to 0.98-1.0 (two rounds under the
            # same load: interval low ends 1.55 and 19.6, both passed).
            r = fabench_run("congestion", "--on", "testbed", name, "--victim", "latency",
                            "--aggressor", "incast", "--rounds", "2", "--iterations", "300",
                            "--json", "--out", str(out), timeout=600)
            (row,) = _json_rows(r.stdout)
            f = row["impact_factor"]["median"]  # type: ignore[index]
            print(f"{name}: median factor {f['factor']:.1f}, interval {f['ci']}, "
                  f"counters {row['counters']}")
            assert f["factor"] > 1 and f["ci"][0] > 1, row
            c = row["counters"]  # type: ignore[index]
            if ecn:
                assert c["ce_marked"] > 0 and c["delivered_ce"] > 0, c
            else:
                assert c["ce_marked"] == 0 and c["queue_drops"] > 0, c
                assert c["retrans_segs"] > 0, c
            with Store(out / "fabench.sqlite") as store:
                runs = store.runs()
                assert sorted(phase_of(r.settings["label"]) or "" for r in runs) == [
                    "incast", "incast", "isolated", "isolated"]
                pids = [int(p) for r in runs for n in r.notes if n.startswith("aggressor")
                        for p in n.split("pids ")[1].split(", ")[0].split(",")]
                assert pids and not [p for p in pids if _alive(p)]
                assert all(r.status == "ok" and not r.flags for r in runs), \
                    [(r.status, r.flags) for r in runs]
                # four hosts on this machine's cores: the victim's ranks nap in long waits,
                # in both phases alike (fabench sets it; the record says so)
                shared = "1" if len(os.sched_getaffinity(0)) < 4 else None
                assert {r.provenance["environment_set"].get("FABENCH_SHARED_CORES")
                        for r in runs} == {shared}
            fabench_run("testbed", "down", name)
