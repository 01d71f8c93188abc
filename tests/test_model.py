"""The analytic model: calibration recovers known parameters, predictions behave, HPL."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from conftest import fabench_cli
from fabench.errors import FabenchError
from fabench.model.calibrate import calibrate, fit_segments
from fabench.model.collectives import ALGORITHMS, Cluster, applicable, predict, predict_all
from fabench.model.fabric import Fabric, Segment, load_fabric, save_fabric
from fabench.model.hpl import HplParams, fit_node_cv, hpl_point, peak_gflops
from fabench.model.presets import PRESETS
from fabench.model.topology import FatTree, Torus, make_topology, torus_dims
from fabench.records import ResultRecord
from fabench.store import Store

SIZES = [1 << k for k in range(0, 23)]  # 1 B .. 4 MiB, as mpi.latency sweeps


def two_segment_curve(noise: float, seed: int = 1) -> tuple[list[int], list[float]]:
    """Eager below 64 KiB (5 us + m / 1000 MB/s), rendezvous above (30 us + m / 2500 MB/s)."""
    rng = np.random.default_rng(seed)
    times = []
    for m in SIZES:
        t = 5.0 + m / 1000.0 if m < 65536 else 30.0 + m / 2500.0
        times.append(t * (1 + noise * rng.standard_normal()))
    return SIZES, times


def test_fit_recovers_breakpoint_and_parameters_from_a_noisy_curve() -> None:
    segs, quality = fit_segments(*two_segment_curve(noise=0.02))
    assert [s.start for s in segs] == [0, 65536]
    assert segs[0].alpha_us == pytest.approx(5.0, rel=0.05)
    assert segs[0].bandwidth_MBps == pytest.approx(1000, rel=0.05)
    assert segs[1].alpha_us == pytest.approx(30.0, rel=0.25)  # few points, large sizes
    assert segs[1].bandwidth_MBps == pytest.approx(2500, rel=0.05)
    assert quality["median_rel_err"] < 0.03


def test_fit_keeps_one_segment_when_the_curve_has_no_breakpoint() -> None:
    rng = np.random.default_rng(7)
    times = [(2.0 + m / 5000.0) * (1 + 0.01 * rng.standard_normal()) for m in SIZES]
    segs, _ = fit_segments(SIZES, times)
    assert len(segs) == 1
    assert segs[0].alpha_us == pytest.approx(2.0, rel=0.05)
    assert segs[0].bandwidth_MBps == pytest.approx(5000, rel=0.05)


def test_fit_refuses_too_few_points() -> None:
    with pytest.raises(FabenchError):
        fit_segments([8, 16], [1.0, 1.1])


def _store_run(store: Store, kernel: str, sizes: list[int], per_msg_us: list[float],
               messages: int, rng: np.random.Generator) -> int:
    rid = store.begin_run(campaign_id=None, key=kernel, kernel=kernel, transport="tcp",
                          mpi="openmpi", ranks=2, launcher="local", repeat=0, settings={})
    for m, t in zip(sizes, per_msg_us, strict=True):
        samples = list(t * messages * (1 + 0.01 * rng.standard_normal(50)))
        store.add_result(rid, ResultRecord(kernel=kernel, size=m, iterations=50, warmup=5,
                                           unit="us", times=samples, bytes_per_sample=m * messages,
                                           messages_per_sample=messages))
    store.finish_run(rid, status="ok", selected_transport="ob1/tcp")
    return rid


def test_calibrate_from_stored_runs_and_round_trip(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    sizes, lat = two_segment_curve(noise=0.01)
    # streaming: 1.5 us per small message, 2600 MB/s for large ones
    stream = [max(1.5, m / 2600.0) for m in sizes]
    with Store(tmp_path / "fabench.sqlite") as store:
        r_lat = _store_run(store, "mpi.latency", sizes, lat, 1, rng)
        r_bw = _store_run(store, "mpi.bw", sizes, stream, 64, rng)
        cal = calibrate(store, [r_lat, r_bw], "synthetic", calibrated_hops=1)
    f = cal.fabric
    assert f.fit["breakpoints"] == [65536]
    assert f.gap_us == pytest.approx(1.5, rel=0.05)
    assert f.overhead_us == pytest.approx(1.5, rel=0.05)  # o = min(g, alpha/2)
    assert f.wire_latency_us == pytest.approx(5.0 - 3.0, abs=0.3)
    assert f.fit["stream_bandwidth_MBps"] == pytest.approx(2600, rel=0.05)
    path = save_fabric(f, tmp_path)
    assert json.loads(path.read_text())["name"] == "synthetic"
    again = load_fabric("synthetic", tmp_path)
    assert again.time(1 << 20) == pytest.approx(f.time(1 << 20))


def test_calibrate_needs_a_latency_run(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    with Store(tmp_path / "fabench.sqlite") as store:
        r_bw = _store_run(store, "mpi.bw", SIZES, [1.0] * len(SIZES), 64, rng)
        with pytest.raises(FabenchError, match="mpi.latency"):
            calibrate(store, [r_bw], "x")


def test_presets_cite_sources_and_assumptions() -> None:
    for name, make in PRESETS.items():
        f = make()
        assert f.name == name
        assert "document" in f.source
        assert f.assumptions
        assert f.latency_us > 0 and f.peak_bandwidth_MBps > 0
    # doc 004's table survives into the presets
    assert PRESETS["tcp-1g"]().time(8) == pytest.approx(24.5, rel=0.01)
    assert PRESETS["ib-qdr"]().peak_bandwidth_MBps == pytest.approx(3400)
    # doc 000: RoCEv2 0.65 us above IB at every size
    ib, roce = PRESETS["ib-100g"](), PRESETS["roce-100g"]()
    for m in (8, 4096, 1 << 20):
        assert roce.time(m) - ib.time(m) == pytest.approx(0.65, abs=0.01) or m >= 12288


def test_topologies() -> None:
    ft = FatTree(240, 24)
    assert ft.step("xor", 1).hops == 1  # same leaf
    assert ft.step("xor", 32).hops == 3  # across the spine
    assert ft.levels() == 2 and FatTree(24, 24).levels() == 1
    over = FatTree(240, 24, oversubscription=3.0)
    assert over.step("xor", 128).congestion == pytest.approx(3.0)
    dims = torus_dims(240)
    assert math.prod(dims) >= 240 and max(dims) - min(dims) <= 3
    t = Torus(240, (6, 8, 5))
    assert t.step("xor", 1).hops == 2  # x neighbours: one link, two routers
    assert t.step("shift", 1).hops == 4  # rank + 1 wraps into the next row and plane
    far = t.step("xor", 128)
    assert far.hops > 2 and far.congestion >= 1.0
    with pytest.raises(FabenchError):
        make_topology("ring-of-rings", 8)


@pytest.mark.parametrize("fabric", ["roce-100g", "tcp-40g"])
@pytest.mark.parametrize("topology", ["fat-tree", "torus"])
def test_predictions_are_monotonic_in_size_and_scale(fabric: str, topology: str) -> None:
    f = PRESETS[fabric]()
    sizes = [8 << k for k in range(0, 18)]
    for coll, algos in ALGORITHMS.items():
        for algo in algos:
            prev_nodes: list[float] | None = None
            for nodes in (8, 64, 256):
                cluster = Cluster(nodes, 1, make_topology(topology, nodes))
                if not applicable(coll, algo, cluster):
                    continue
                t = predict(f, cluster, coll, algo, sizes)
                assert all(b >= a - 1e-9 for a, b in zip(t, t[1:], strict=False)), \
                    (coll, algo, nodes, t)
                if prev_nodes is not None:
                    assert all(b >= a - 1e-9 for a, b in zip(prev_nodes, t, strict=True)), \
                        (coll, algo, nodes)
                prev_nodes = t


def test_in_network_reduction_wins_small_messages_at_scale_not_on_a_torus() -> None:
    f = PRESETS["roce-100g"]()
    big = Cluster(240, 1, FatTree(240, 24))
    pred = predict_all(f, big, "allreduce", [8, 1 << 20])
    assert pred.winners()[0] == "in_network"
    # a host-based allreduce moves 2 (P-1)/P of the data; in-network once
    assert pred.times["in_network"][1] < pred.times["rabenseifner"][1]
    torus = Cluster(240, 1, Torus(240, (6, 8, 5)))
    assert "in_network" not in predict_all(f, torus, "allreduce", [8]).times


def test_ppn_puts_same_node_steps_on_shared_memory() -> None:
    f = PRESETS["ib-100g"]()
    one = predict(f, Cluster(4, 1, FatTree(4, 24)), "allreduce", "recursive_doubling", [8])[0]
    packed = predict(f, Cluster(1, 4, FatTree(1, 24)), "allreduce", "recursive_doubling", [8])[0]
    assert packed < one  # shared memory (0.45 us) beats the fabric (1 us) per step


def test_hpl_peak_and_trend() -> None:
    assert peak_gflops(2, 12, 2.7, 8) == pytest.approx(518.4)
    f = PRESETS["roce-100g"]()
    prm = HplParams()
    assert hpl_point(f, 1, prm).efficiency == pytest.approx(0.7727, abs=1e-4)
    effs = [hpl_point(f, n, prm).efficiency for n in (1, 8, 64, 240)]
    assert all(b < a for a, b in zip(effs, effs[1:], strict=False))
    cv = fit_node_cv(f, 240, 0.7299, prm)
    assert cv is not None and 0 < cv < 0.05
    from dataclasses import replace
    assert hpl_point(f, 240, replace(prm, node_cv=cv)).efficiency == pytest.approx(0.7299,
                                                                                   abs=1e-4)
    # a slower fabric loses more at scale
    tcp = hpl_point(PRESETS["tcp-1g"](), 240, prm).efficiency
    assert tcp < hpl_point(f, 240, prm).efficiency


def test_fabric_time_adds_hops_beyond_the_calibrated_path() -> None:
    f = Fabric("x", [Segment(0, 2.0, 0.001)], calibrated_hops=1, hop_latency_us=0.5)
    assert f.time(0, hops=3) - f.time(0, hops=1) == pytest.approx(1.0)


def test_cli_predict_and_hpl(tmp_path: Path) -> None:
    out = fabench_cli("model", "predict", "--fabric", "roce-100g", "--nodes", "240",
                      "--collective", "allreduce", "--sizes", "8,1M", "--json",
                      "--out", str(tmp_path)).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["size"] for r in rows] == [8, 1 << 20]
    assert set(rows[0]["times_us"]) >= {"ring", "recursive_doubling", "in_network"}
    hpl = fabench_cli("model", "hpl", "--fabric", "roce-100g", "--nodes", "1,240",
                      "--peak", "2,12,2.7,8", "--fit-at", "240:0.7299",
                      "--out", str(tmp_path)).stdout
    assert "518.4" in hpl and "72.99" in hpl and "77.27" in hpl
    bad = fabench_cli("model", "predict", "--fabric", "nope", "--nodes", "2",
                      "--out", str(tmp_path), check=False)
    assert bad.returncode == 2 and "unknown fabric" in bad.stderr
