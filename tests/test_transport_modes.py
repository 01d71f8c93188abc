"""Transport kernels' modes on loopback: tcp.streams' time mode, tcp.latency --poll, and the
udp.reorder probe (issue 13 items 2 and 3, issue 16's reordering measurement)."""

import statistics

import pytest

from conftest import missing, planned
from fabench.analysis.streams import stream_results
from fabench.host.launched import LaunchResult
from fabench.host.native import native_root
from fabench.kernels import get_kernel
from fabench.metrics import BANDWIDTH
from fabench.starters.pair import run_pair

pytestmark = pytest.mark.serial  # measured rates set against a peer tool's: the CPUs to themselves


def run(name: str, *args: str, transport: str = "tcp") -> LaunchResult:
    if not (native_root() / "bin" / get_kernel(name).executable).is_file():
        missing(f"{name} not built here")
    return run_pair(planned(name, *args, transport=transport, timeout=120), None, hosts=None)


def test_streams_sample_intervals_of_a_duration() -> None:
    res = run("tcp.streams", "--sizes", "64K", "--streams", "3", "--duration", "0.6",
              "--interval", "0.1", "--omit", "0.1")
    assert res.returncode == 0, res.stderr
    meta = res.output.meta
    assert (meta["mode"], meta["duration_s"], meta["interval_s"], meta["omit_s"]) == (
        "time", 0.6, 0.1, 0.1)
    (rec,) = res.output.results
    # intervals close by the receiver's clock within the sender's 0.6 s; the one open when
    # the sender stops is dropped
    assert 3 <= rec.iterations <= 7 and len(rec.times) == rec.iterations
    x = rec.extra
    # every sample is an interval's time scaled to the mean interval's bytes, so the
    # samples' bytes add up to what the sampled intervals received
    assert rec.bytes_per_sample * rec.iterations == pytest.approx(x["received_bytes"])
    # the aggregate (iperf3's receiver total) is the bytes over the sampled time; the
    # median interval rate is of the same order (no absolute rate is asserted)
    agg = x["received_bytes"] / (x["sampled_s"] * 1e6)
    assert x["received_mb_per_s"] == pytest.approx(agg, rel=1e-3)
    med = statistics.median(BANDWIDTH.values(rec.times, rec.bytes_per_sample))
    assert 0.25 * agg < med < 4 * agg
    per = stream_results(rec)
    assert [p.extra["stream"] for p in per] == [0, 1, 2]
    assert all(len(p.times) == rec.iterations for p in per)
    # per interval the streams' rates add up to the total rate (their bytes do)
    for i in range(rec.iterations):
        parts = sum(p.bytes_per_sample / p.times[i] for p in per)
        assert parts == pytest.approx(rec.bytes_per_sample / rec.times[i], rel=0.02)


@pytest.mark.parametrize("args,why", [
    (["--validate"], "--validate needs the count mode"),
    (["--warmup", "2"], "--warmup counts iterations of the count mode"),
    (["--iterations", "3", "--interval", "0.1"], "apply to the time mode"),
    (["--duration", "0.05"], "shorter than one --interval"),
])
def test_streams_mode_options_are_checked(args: list[str], why: str) -> None:
    res = run("tcp.streams", "--sizes", "4K", *args)
    assert res.returncode == 2 and why in res.stderr, res.stderr


def test_streams_count_mode_is_kept() -> None:
    res = run("tcp.streams", "--sizes", "4K", "--iterations", "4", "--warmup", "1",
              "--window", "8", "--streams", "2")
    assert res.returncode == 0, res.stderr
    assert res.output.meta["mode"] == "count"
    (rec,) = res.output.results
    assert rec.iterations == 4 and rec.bytes_per_sample == 2 * 8 * 4096


@pytest.mark.parametrize("poll", [False, True])
def test_latency_states_its_receive_mode(poll: bool) -> None:
    res = run("tcp.latency", "--sizes", "8,4K", "--iterations", "200", "--warmup", "20",
              "--nodelay", "--validate", *(["--poll"] if poll else []))
    assert res.returncode == 0, res.stderr
    assert res.output.meta["receive_mode"] == ("poll" if poll else "blocking")
    assert [r.size for r in res.output.results] == [8, 4096]
    assert all(r.validated is True and len(r.times) == 200 for r in res.output.results)


def test_reorder_probe_on_loopback_sees_no_reordering() -> None:
    """Loopback delivers in order: RFC 4737's ratio is 0 and RFC 5236's density is all at
    displacement 0; the counts add up. (Metrics on known disorder: ctest t_reorder_metrics.)"""
    res = run("udp.reorder", "--sizes", "1K", "--iterations", "40", "--warmup", "2",
              "--window", "32", "--rcvbuf", "4M", "--validate", transport="udp")
    assert res.returncode == 0, res.stderr
    assert res.output.meta["displacement_threshold"] == 64
    (rec,) = res.output.results
    x = rec.extra
    assert x["datagrams_expected"] == 40 * 32
    assert x["datagrams_received"] + x["lost"] == x["datagrams_expected"]
    assert x["lost_rfc4737"] == x["lost"] and x["duplicates_rfc4737"] == x["duplicates"]
    assert x["reordered_ratio"] == 0 and x["reordered_rfc4737"] == 0
    assert x["reordering_extents"] == [] and x["reordering_extent_max"] == 0
    assert x["reordering_offsets"] == [] and x["reordering_offset_counts"] == []
    assert x["reordering_offset_max"] == 0
    assert x["reorder_density_displacements"] == [0] and x["reorder_density"] == [1.0]
    assert x["reorder_density_beyond"] == 0 and rec.validated is True
