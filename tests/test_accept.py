"""fabench accept: the check grammar, bad specs (exit 2 naming the line), verdicts from
intervals, dependencies, outputs (JUnit XML checked against the schema Jenkins reads), and
acceptances of real runs: locally, and on testbeds (clean, one slow host) with real faults."""

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import fabench_cli, fabench_run, own_testbeds
from fabench.accept.checks import METRIC_DEFS, Stage, parse_check
from fabench.accept.session import dependencies
from fabench.accept.spec import load_accept_spec, parse_accept_spec
from fabench.accept.verdict import (
    ERROR,
    FAIL,
    INCONCLUSIVE,
    PASS,
    SKIPPED,
    Acceptance,
    Measured,
    Verdict,
    decide,
)
from fabench.errors import FabenchError, SpecError
from fabench.store.database import Store
from junit_schema import junit_errors


# ---- the grammar, parsed once into typed checks -----------------------------------------------
def test_checks_parse_to_typed_thresholds_in_the_metrics_unit() -> None:
    c = parse_check("latency_us <= 1.2 @ 8")
    assert (c.metric.name, c.kind, c.op, c.threshold, c.size) == ("latency_us", "p2p", "<=",
                                                                  1.2, 8)
    c = parse_check("bandwidth >= 11GB/s @ 4M")
    assert (c.metric.name, c.threshold, c.size) == ("bandwidth_MBps", 11000.0, 4 << 20)
    assert parse_check("latency <= 500ns @ 8").threshold == pytest.approx(0.5)
    assert parse_check("hpl.efficiency >= 95%").threshold == pytest.approx(0.95)
    assert parse_check("hpl.efficiency >= 0.9").threshold == 0.9
    c = parse_check("allreduce <= 1.25 x predicted @ 8")
    assert c.relative and c.collective == "allreduce" and c.threshold == 1.25
    assert parse_check("no slow node").metric.name == "matrix.slow_nodes"
    assert parse_check("No tune finding of severity differs").metric.name == \
        "tune.findings[differs]"
    assert parse_check("library choice loses nowhere").metric.name == "transport.losses"
    assert parse_check("congestion.impact <= 2x").threshold == 2.0


@pytest.mark.parametrize("text, words", [
    ("latency <= 1.2 @ 8", "a threshold without a unit"),
    ("allreduce <= 50 @ 8", "a threshold without a unit"),
    ("latnecy_us <= 1.2 @ 8", "unknown metric 'latnecy_us'"),
    ("latency_us <= 1.2", "needs a message size"),
    ("hpl.efficiency >= 0.9 @ 8", "has no message size"),
    ("latency <= 1.2GB/s @ 8", "is in us, not GB/s"),
    ("latency_us <= 1.2 x predicted @ 8", "applies to a collective"),
    ("no bad link >= 3", "is not a check"),
    ("no tune finding of severity huge", "severity 'huge'"),
    ("matrix.bad_links >= 1", "is a count"),
])
def test_malformed_checks_say_what_is_wrong(text: str, words: str) -> None:
    with pytest.raises(FabenchError, match=words):
        parse_check(text)


def _spec_file(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "spec.yaml"
    p.write_text(text)
    return p


@pytest.mark.parametrize("body, line, words", [
    ("checks:\n  - doctor\n  - latnecy_us <= 1.2 @ 8\n", 3, "unknown metric"),
    ("name: x\nchecks:\n  - doctor\n  - check: latency <= 1.2 @ 8\n    transport: tcp\n", 4,
     "a threshold without a unit"),
    ("checks:\n  - doctor\n  - congestion.impact <= 2\n", 3, "cannot run on --on hosts"),
    ("checks:\n  - allreduce <= 1.2 x predicted @ 8\n", 2, "needs the spec's `fabric:`"),
    ("checks:\n  - doctor\n  - check: no bad link\n    after: nothing\n", 3,
     "'nothing' is not a check before"),
    ("checks:\n  - doctor\n  - check: no bad link\n    transprot: tcp\n", 4, "unknown key"),
    ("fabric: tcp-1g\nnics_per_node: 0\nchecks:\n  - doctor\n", 2, "nics_per_node"),
    ("fabric: tcp-1g\nnics_per_node: 4;reboot\nchecks:\n  - doctor\n", 2, "nics_per_node"),
])
def test_a_bad_spec_exits_2_naming_its_line(tmp_path: Path, body: str, line: int,
                                            words: str) -> None:
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("n1\nn2\n")
    spec = _spec_file(tmp_path, body)
    p = fabench_run("accept", str(spec), "--on", "hosts", str(hosts), "--out",
                    str(tmp_path / "out"), check=False, timeout=60)
    assert p.returncode == 2, p.stdout + p.stderr
    assert f"{spec} line {line}:" in p.stderr and words in p.stderr, p.stderr
    assert "Traceback" not in p.stderr
    assert not (tmp_path / "out" / "fabench.sqlite").exists()  # nothing ran


# ---- order, dependencies, verdicts --------------------------------------------------------------
SPEC = """name: order
fabric: tcp-1g
checks:
  - allreduce <= 1.25 x predicted @ 8
  - congestion.impact <= 2
  - check: latency_us <= 1.2 @ 8
    id: lat
  - no slow node
  - check: bandwidth_MBps >= 100 @ 1M
    after: lat
  - hpl.spread_pct <= 1
  - doctor
"""


def test_checks_run_in_stages_with_their_dependencies() -> None:
    spec = parse_accept_spec(SPEC, "order.yaml", "testbed")
    stages = [c.check.stage for c in spec.checks]
    assert stages == sorted(stages)
    assert [c.ident for c in spec.checks] == [
        "doctor", "hpl.spread_pct <= 1", "no slow node", "lat", "bandwidth_MBps >= 100 @ 1M",
        "allreduce <= 1.25 x predicted @ 8", "congestion.impact <= 2"]
    assert [c.check.line for c in spec.checks] == [12, 11, 8, 6, 9, 4, 5]
    deps = {c.ident: dependencies(c, list(spec.checks[:i])) for i, c in enumerate(spec.checks)}
    assert deps["doctor"] == []
    assert deps["hpl.spread_pct <= 1"] == ["doctor"]
    # a fabric check waits for node consistency (document 000's order); congestion does not
    assert deps["no slow node"] == ["doctor", "hpl.spread_pct <= 1"]
    assert deps["bandwidth_MBps >= 100 @ 1M"] == ["lat", "doctor", "hpl.spread_pct <= 1"]
    assert deps["congestion.impact <= 2"] == ["doctor"]


def test_after_may_not_point_at_a_later_stage() -> None:
    text = "checks:\n  - check: no bad link\n    id: m\n  - check: doctor\n    after: m\n"
    with pytest.raises(SpecError, match="line 4.*later stage"):
        parse_accept_spec(text, "x.yaml")


def test_a_window_is_taken_by_bandwidth_checks_only() -> None:
    bw = "checks:\n  - check: bandwidth_MBps >= 5 @ 1M\n    window: 8\n"
    assert parse_accept_spec(bw, "x.yaml").checks[0].item.window == 8
    with pytest.raises(SpecError, match="line 2.*window: applies to bandwidth_MBps"):
        parse_accept_spec(bw.replace("bandwidth_MBps >= 5", "latency_us <= 9"), "x.yaml")
    with pytest.raises(SpecError, match="window"):
        parse_accept_spec(bw.replace("8", "0"), "x.yaml")


def test_verdict_is_pass_only_when_the_whole_interval_is_on_the_good_side() -> None:
    lat = parse_check("latency_us <= 10 @ 8")
    assert decide(lat, Measured(8.0, 7.0, 9.0)) == PASS
    assert decide(lat, Measured(12.0, 11.0, 13.0)) == FAIL
    assert decide(lat, Measured(9.5, 8.0, 11.0)) == INCONCLUSIVE
    assert decide(lat, Measured(10.0, 10.0, 10.0)) == PASS  # <= holds at the edge
    bw = parse_check("bandwidth_MBps >= 100 @ 1M")
    assert decide(bw, Measured(120.0, 101.0, 130.0)) == PASS
    assert decide(bw, Measured(90.0, 80.0, 99.0)) == FAIL
    assert decide(bw, Measured(105.0, 95.0, 110.0)) == INCONCLUSIVE
    # no interval (one HPL run per node): the value decides; a count is compared as it is
    assert decide(parse_check("hpl.spread_pct <= 1"), Measured(0.5)) == PASS
    assert decide(parse_check("no bad link"), Measured(1.0)) == FAIL
    assert decide(parse_check("no bad link"), Measured(0.0, 0.0, 3.0)) == PASS
    assert METRIC_DEFS["latency_us"].stage == Stage.P2P


# ---- real acceptances -----------------------------------------------------------------------
def _local_spec(tmp_path: Path, strict_us: float, extra: str = "",
                strict_iterations: int = 300) -> Path:
    return _spec_file(tmp_path, f"""name: local-acc
fabric: tcp-1g
repeats: 2
checks:
  - doctor
  - check: latency_us <= 1000 @ 8
    transport: shm
    iterations: 300
  - check: latency_us <= {strict_us} @ 8
    transport: shm
    iterations: {strict_iterations}
    id: strict
  - check: allreduce <= 10000 x predicted @ 8
    transport: shm
    ranks_per_node: 2
    iterations: 200
{extra}""")


def _accept(tmp_path: Path, spec: Path, *args: str, out: str = "out",
            timeout: float = 600) -> tuple[int, dict, str]:
    junit = tmp_path / f"{out}.xml"
    p = fabench_run("accept", str(spec), "--out", str(tmp_path / out), "--junit", str(junit),
                    "--json", *args, check=False, timeout=timeout)
    assert p.returncode in (0, 3, 4), p.stdout + p.stderr
    assert junit_errors(junit.read_text()) == []
    return p.returncode, json.loads(p.stdout), junit.read_text()


@pytest.mark.timing
def test_local_acceptance_passes_fails_and_shows_its_evidence(openmpi: str,
                                                               tmp_path: Path) -> None:
    rc, j, junit = _accept(tmp_path, _local_spec(tmp_path, 0.001))
    by = {c["id"]: c for c in j["checks"]}
    assert rc == 3 and j["outcome"] == "fail"
    assert [c["status"] for c in j["checks"]] == ["pass", "pass", "fail", "pass"]
    lat, strict, coll = by["latency_us <= 1000 @ 8"], by["strict"], \
        by["allreduce <= 10000 x predicted @ 8"]
    lo, hi = lat["interval"]
    assert lo <= hi < 1000 and lat["runs"] == 2
    # a two-stage bootstrap over 2 runs may miss the pooled median: then it says so
    assert (lo <= lat["value"] <= hi) != ("misses the median" in lat["method"])
    assert strict["value"] == lat["value"] and strict["run_ids"] == lat["run_ids"]  # one sweep
    assert coll["value"] > 0 and any("predicted" in e for e in coll["evidence"])
    with Store(tmp_path / "out" / "fabench.sqlite") as st:
        for rid in lat["run_ids"] + coll["run_ids"]:
            run = st.run(rid)
            assert run.status == "ok" and run.campaign_id == j["campaign_id"]
        assert st.run(coll["run_ids"][0]).ranks == 2
    # the failure carries its evidence; the passes are testcases without one
    assert junit.count("<testcase") == 4 and junit.count("<failure") == 1
    assert f"run ids: {', '.join(map(str, strict['run_ids']))}" in junit
    html = (tmp_path / "out" / f"accept-c{j['campaign_id']}.html").read_text()
    assert html.index("Acceptance: FAIL") < html.index("<h2>Warnings</h2>")
    assert html.index("Acceptance: FAIL") < html.index("<h2>Summary</h2>")


def test_a_failed_dependency_skips_what_depends_on_it(openmpi: str, tmp_path: Path) -> None:
    spec = _spec_file(tmp_path, """checks:
  - check: latency_us <= 0.001 @ 8
    transport: shm
    iterations: 100
    warmup: 7
    id: gate
  - check: bandwidth_MBps >= 1 @ 1K
    transport: shm
    iterations: 20
    after: gate
""")
    rc, j, junit = _accept(tmp_path, spec)
    assert rc == 3 and [c["status"] for c in j["checks"]] == ["fail", "skipped"]
    assert "depends on 'gate' (fail)" in j["checks"][1]["reason"]
    assert junit.count("<skipped") == 1 and j["checks"][1]["run_ids"] == []
    # the check's warm-up reached the kernel: exactly 7, not the settled default (>= 200)
    with Store(tmp_path / "out" / "fabench.sqlite") as st:
        for rid in j["checks"][0]["run_ids"]:
            [rec] = st.results(rid)
            assert (rec.warmup, rec.extra["warmup_mode"]) == (7, "fixed"), rec.extra


@pytest.mark.timing
@pytest.mark.slow
def test_a_threshold_at_the_measured_value_is_inconclusive_then_measured_more(
        openmpi: str, tmp_path: Path) -> None:
    _, j, _ = _accept(tmp_path, _local_spec(tmp_path, 1000), out="first")
    value = j["checks"][1]["value"]
    # The threshold at the value measured before. Whether the next acceptance's first
    # interval holds it depends on how far the host drifted between the two (measured here
    # under load: 2.5x between two acceptances a minute apart), so each try takes the last
    # value measured; the budget is then spent on the check that came out inconclusive.
    # 8 samples a run, not 30: runs of 30 gave intervals 3-15 % wide under load while the
    # median moved 10-20 % between tries (2 of 7 tries inconclusive; CI once had none in 6);
    # runs of 8 gave intervals 19-38 % wide, 6 of 7 tries inconclusive on the same loaded host.
    budget = 20
    tries = []
    for attempt in range(10):
        rc, j, junit = _accept(tmp_path, _local_spec(tmp_path, value, strict_iterations=8),
                               "--budget", str(budget), out=f"try{attempt}")
        strict = next(c for c in j["checks"] if c["id"] == "strict")
        tries.append((strict["first_verdict"], strict["status"], strict["interval"], value))
        if strict["first_verdict"] == INCONCLUSIVE:
            break
        value = strict["value"]
    assert strict["first_verdict"] == INCONCLUSIVE, tries
    # more runs, pooled with the first two, until it decided or the budget ran out (a run is
    # started only when it would end within the budget, so an exhausted one is over half spent)
    assert strict["extra_runs"] >= 1 and strict["runs"] == 2 + strict["extra_runs"]
    assert len(strict["run_ids"]) == strict["runs"] and j["budget_spent_s"] > 0
    assert strict["status"] in (PASS, FAIL) or strict["extra_runs"] == 20 or \
        j["budget_spent_s"] > budget / 2
    assert rc == {INCONCLUSIVE: 4, FAIL: 3, PASS: 0}[strict["status"]]
    assert ("inconclusive" in junit) == (strict["status"] == INCONCLUSIVE)


def test_exit_status_is_3_on_a_fail_else_4_on_an_inconclusive_else_0() -> None:
    lat = parse_check("latency_us <= 10 @ 8")

    def acc(*statuses: str) -> Acceptance:
        return Acceptance("x", "x.yaml", 1, "local", [Verdict(lat, s) for s in statuses], 0)
    assert acc(PASS, PASS).exit_code == 0
    assert acc(PASS, INCONCLUSIVE).exit_code == 4
    assert acc(INCONCLUSIVE, FAIL).exit_code == 3
    assert acc(PASS, ERROR).exit_code == 3
    assert acc(SKIPPED, PASS).exit_code == 0


@pytest.mark.timing
def test_baseline_compares_each_metric_with_an_earlier_acceptance(openmpi: str,
                                                                   tmp_path: Path) -> None:
    spec = _local_spec(tmp_path, 1000)
    _, first, _ = _accept(tmp_path, spec)
    rc, j, _ = _accept(tmp_path, spec, "--baseline", f"c{first['campaign_id']}")
    lat = j["checks"][1]
    assert j["baseline"] == first["campaign_id"] and lat["baseline"]
    b = lat["baseline"][0]
    assert b["verdict"] in ("better", "worse", "equal", "inconclusive") and b["size"] == 8
    assert b["ratio_low"] <= b["ratio"] <= b["ratio_high"]
    assert any("mpi.latency" in s for s in j["baseline_summary"])
    p = fabench_run("accept", str(spec), "--out", str(tmp_path / "out"), "--baseline", "c999",
                    check=False, timeout=60)
    assert p.returncode == 2 and "no campaign 999" in p.stderr


# ---- on testbeds: a clean cluster passes, a slow host fails exactly what it should -------------
needs_root = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mpirun.openmpi") is None,
                                reason="a root testbed and Open MPI")

TESTBED_SPEC = """name: tb-acc
repeats: 2
timeout_s: 300
checks:
  - doctor
  - check: latency_us <= 1000 @ 8
    transport: tcp
    iterations: 200
    warmup: 20
  - check: bandwidth_MBps >= 5 @ 1M
    transport: tcp
    iterations: 5
    window: 8
  - check: allreduce_us <= 2500 @ 8
    transport: tcp
    iterations: 100
    warmup: 10
"""
# warm-ups of 20 and 10: the defaults (200 ping-pongs, 100 allreduces) were half of each run's
# time on the 5 ms host (4.6 and 3.7 s a run)
# a window of 8: the default 64 moved 64 MiB a sample through the 5 ms host's link


@needs_root
@pytest.mark.netns
@pytest.mark.slow
def test_testbed_clean_passes_and_one_slow_host_fails_exactly_its_checks(
        openmpi: str, tmp_path: Path) -> None:
    spec = _spec_file(tmp_path, TESTBED_SPEC)
    with own_testbeds(f"fba{os.getpid() % 100000}"):
        fabench_cli("testbed", "up", "--name", "clean", "--hosts", "3")
        rc, j, _ = _accept(tmp_path, spec, "--on", "testbed", "clean", out="clean")
        assert rc == 0, j
        assert {c["status"] for c in j["checks"]} == {"pass"}

        fabench_cli("testbed", "up", "--name", "slow", "--hosts", "3",
                    "--impair", "h2:delay=5ms")
        rc, j, junit = _accept(tmp_path, spec, "--on", "testbed", "slow", out="slow")
    assert rc == 3
    failed = {c["id"] for c in j["checks"] if c["status"] == "fail"}
    # h2 is one end of the point-to-point pair (h1, h2) and a rank of the allreduce (whose
    # every call waits for a message through h2's link: >= 5 ms); a delay costs no bandwidth
    # at 1 MiB within this threshold (47-56 MB/s measured with 2 ms, 122-260 without)
    assert failed == {"latency_us <= 1000 @ 8", "allreduce_us <= 2500 @ 8"}, j["checks"]
    lat = next(c for c in j["checks"] if c["id"] == "latency_us <= 1000 @ 8")
    assert lat["interval"][0] > 1000 and any("h2:delay=5ms" in e for e in lat["evidence"])
    assert junit.count("<failure") == 2
    bw = next(c for c in j["checks"] if c["id"] == "bandwidth_MBps >= 5 @ 1M")
    with Store(tmp_path / "slow" / "fabench.sqlite") as st:
        assert all("h2:delay=5ms" in str(st.run(r).provenance.get("launcher"))
                   for r in lat["run_ids"])
        assert [st.run(r).settings["kernel_settings"].get("window") for r in bw["run_ids"]] \
            == [8, 8]


@pytest.mark.parametrize("name, on", [("accept-000.yaml", "hosts"),
                                      ("accept-testbed.yaml", "testbed")])
def test_the_examples_are_valid_specs(name: str, on: str) -> None:
    spec = load_accept_spec(Path(__file__).resolve().parent.parent / "examples" / name, on)
    assert spec.checks[0].ident == "doctor" and len(spec.checks) >= 6
