"""`fabench diagnose reorder` (issue 16): the window recommended from udp.reorder's offsets on
real testbeds (a multipath link that reorders, a plain one that does not), and the sweep's
TCP trade-off on copies of the path."""

import json
import os
from pathlib import Path

import pytest

from conftest import fabench_cli, fabench_run
from fabench.diagnose.reorder import Histogram
from fabench.diagnose.reorder_sweep import path_specs, with_window
from fabench.testbed.impair import parse_impair

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="namespaces and TAP devices as root "
                                "(CI is root)")


def test_percentile_is_the_smallest_value_covering_the_share() -> None:
    h = Histogram()
    h.add([1, 3, 60], [90, 9, 1])
    assert h.total == 100 and h.max == 60
    assert h.percentile(90) == 1 and h.percentile(90.5) == 3
    assert h.percentile(99) == 3 and h.percentile(99.5) == 60 and h.percentile(100) == 60
    assert h.covered(3) == 99
    assert Histogram().percentile(99) == 0


def test_the_sweep_copies_the_path_with_its_window_and_loss() -> None:
    impairs = ["h3:rate=1gbit", "h2:delay=50us,reorder=multipath:4:20us,reorder-window=8,dir=in",
               "h5>h2:rate=10mbit", "h1-h2:jitter=10us,delay=1ms"]
    specs = path_specs(impairs, "h5", "h2")  # h5 -> h2 becomes h1 -> h2
    assert specs == ["h2:delay=50us,reorder=multipath:4:20us,dir=in", "h1>h2:rate=10mbit"]
    lossy = with_window(specs, 64, "1%")
    assert lossy[0] == "h2:delay=50us,reorder=multipath:4:20us,dir=in,reorder-window=64,loss=1%"
    assert lossy[1] == "h1>h2:rate=10mbit"
    assert parse_impair(lossy[0], ["h1", "h2"]).window == 64
    assert with_window(specs, 0, "0%") == specs


@pytest.mark.parametrize(("args", "why"), [
    (["--percentile", "0"], "--percentile 0: above 0"),
    (["--percentile", "150"], "at most 100"),
    (["--sweep-windows", "0,-8"], "--sweep-windows -8: a window W is 0..1024"),
    (["--sweep-windows", "2000"], "a window W is 0..1024"),
    (["--hosts", "h1"], "SENDER,RECEIVER"),
])
def test_bad_parameters_exit_2_with_the_reason(args: list[str], why: str,
                                               tmp_path: Path) -> None:
    p = fabench_run("diagnose", "reorder", "--out", str(tmp_path), *args, check=False)
    assert p.returncode == 2 and why in p.stderr and "Traceback" not in p.stderr, p.stderr


def _diagnose(name: str, out: Path, *extra: str) -> tuple[int, list[dict]]:
    p = fabench_cli("diagnose", "reorder", "--on", "testbed", name, "--out", str(out),
                    "--json", *extra, check=False)
    assert p.returncode in (0, 3), p.stderr
    return p.returncode, [json.loads(ln) for ln in p.stdout.splitlines()]


@pytest.mark.netns
@needs_root
def test_multipath_gets_a_window_and_a_plain_link_none(tb: str, tmp_path: Path) -> None:
    fabench_cli("testbed", "up", "--name", "mp", "--impair",
                "h2:delay=50us,reorder=multipath:4:20us,dir=in")
    rc, recs = _diagnose("mp", tmp_path, "--rounds", "2", "--iterations", "50")
    rec = recs[-1]
    assert rec["type"] == "recommendation" and rc == 3
    assert rec["reordered"] > 0 and rec["sender"] == "h1" and rec["receiver"] == "h2"
    # 4 paths 20 us apart, datagrams sent faster than that: a frame on a slow path falls at
    # least 3 numbers behind (the next frames on the 3 faster ones overtake it)
    assert rec["window"] >= 3
    # the window covers the stated share of the reordered datagrams, and no smaller one does
    offsets = next(r for r in recs if r.get("metric") == "offset")
    h = Histogram()
    h.add(offsets["values"], offsets["counts"])
    assert h.covered(rec["window"]) >= 0.99 * rec["reordered"]
    assert h.covered(rec["window"] - 1) < 0.99 * rec["reordered"]
    assert rec["window"] <= rec["offset_max"] == h.max
    probes = [r for r in recs if r["type"] == "probe"]
    assert len(probes) == 2 and all(r["reordered_ratio"] > 0 for r in probes)

    fabench_cli("testbed", "up", "--name", "plain")
    rc, recs = _diagnose("plain", tmp_path, "--rounds", "1", "--iterations", "50", "--sweep")
    assert rc == 0 and recs[-1]["window"] == 0 and recs[-1]["reordered"] == 0
    assert "no window needed" in recs[-1]["sentence"]
    assert "no sweep" in recs[-1]["sweep_note"]
    text = fabench_cli("diagnose", "reorder", "--on", "testbed", "plain", "--out",
                       str(tmp_path), "--rounds", "1", "--iterations", "20").stdout
    assert "# recommendation: W=0" in text
    fabench_cli("testbed", "down", "--all")


@pytest.mark.netns
@needs_root
@pytest.mark.slow
def test_the_sweep_shows_the_window_cutting_reorder_events(tb: str, tmp_path: Path) -> None:
    fabench_cli("testbed", "up", "--name", "sw", "--impair",
                "h2:delay=50us,reorder=multipath:4:20us,dir=in")
    rc, recs = _diagnose("sw", tmp_path, "--rounds", "1", "--sweep", "--sweep-windows", "0",
                         "--sweep-streams", "1", "--sweep-loss", "0%", "--sweep-seconds", "2")
    w = recs[-1]["window"]
    pts = {p["window"]: p for p in recs if p["type"] == "sweep"}
    assert set(pts) == {0, w} and rc == 3
    # TCP at W=0 meets the link's reordering; the recommended window puts it back
    assert pts[0]["reorder_events_per_s"] > 0
    assert pts[w]["reorder_events_per_s"] < 0.5 * pts[0]["reorder_events_per_s"], pts
    fabench_cli("testbed", "down", "sw")


def test_bench_udp_reorder_json_carries_loss_and_reordering(tmp_path: Path) -> None:
    # the figures the terminal's detail table prints (loss, reorder) and `diagnose reorder`
    # reads (RFC 4737's reordered count and ratio) ride in every JSON summary too
    out = fabench_cli("bench", "udp.reorder", "--transport", "udp", "--sizes", "1K",
                      "--iterations", "20", "--json", "--out", str(tmp_path)).stdout
    recs = [json.loads(line) for line in out.splitlines()]
    assert {r["metric"] for r in recs} == {"bandwidth", "message_rate"}
    for r in recs:
        assert r["datagrams_received"] + r["lost"] == r["datagrams_expected"]
        assert r["loss_ratio"] == pytest.approx(r["lost"] / r["datagrams_expected"], abs=1e-5)
        assert r["reordered_rfc4737"] >= 0 and 0 <= r["reordered_ratio"] <= 1
        assert "reordered" in r and "duplicates" in r
    table = fabench_cli("bench", "udp.reorder", "--transport", "udp", "--sizes", "1K",
                        "--iterations", "20", "--out", str(tmp_path)).stdout
    assert "loss" in table and "reorder" in table
