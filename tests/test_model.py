"""The analytic model: calibration recovers known parameters, predictions behave, HPL."""

import json
import math
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import fabench_cli, missing, own_testbeds
from fabench.errors import FabenchError
from fabench.model.calibrate import calibrate, fit_segments
from fabench.model.collectives import (
    ALGORITHMS,
    OPENMPI_TUNED,
    Cluster,
    not_applicable,
    predict,
    predict_all,
)
from fabench.model.fabric import Fabric, Segment, save_fabric
from fabench.model.hpl import HplParams, fit_node_cv, hpl_point, peak_gflops
from fabench.model.presets import PRESETS, load_fabric
from fabench.model.topology import FatTree, Torus, make_topology, torus_dims
from fabench.model.validate import run_algorithm
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
               messages: int, rng: np.random.Generator, ranks: int = 2,
               kernel_args: list[str] | None = None) -> int:
    rid = store.begin_run(campaign_id=None, key=kernel, kernel=kernel, transport="tcp",
                          mpi="openmpi", ranks=ranks, launcher="local", repeat=0,
                          settings={"kernel_args": kernel_args or []})
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


def test_calibrate_measures_half_duplex_exchanges_and_the_model_uses_them(
        tmp_path: Path) -> None:
    """mpi.bibw at half of 2 x one-way from 64 KiB on (Open MPI's tcp BTL does that): the
    calibration records the slowdown per size, exchange steps (recursive doubling) pay it,
    one-way steps (a ring of 4) do not; the link rate is the streaming rate, not a slope."""
    rng = np.random.default_rng(5)
    sizes, lat = two_segment_curve(noise=0.01)
    stream = [max(1.5, m / 2600.0) for m in sizes]
    # per message of either direction: both directions together at 2 x 2600 below 64 KiB,
    # at 2600 (each direction 1300) from it
    bibw = [max(0.75, m / (2 * 2600.0) if m < 65536 else m / 2600.0) for m in sizes]
    with Store(tmp_path / "fabench.sqlite") as store:
        ids = [_store_run(store, "mpi.latency", sizes, lat, 1, rng),
               _store_run(store, "mpi.bw", sizes, stream, 64, rng)]
        plain = calibrate(store, ids, "plain").fabric
        ids.append(_store_run(store, "mpi.bibw", sizes, bibw, 128, rng))
        duplex = calibrate(store, ids, "bibw").fabric
    assert plain.exchange_slowdown == [] and plain.exchange_factor(1 << 20) == 1.0
    assert duplex.exchange_factor(4096) == pytest.approx(1.0, abs=0.05)
    assert duplex.exchange_factor(1 << 20) == pytest.approx(2.0, rel=0.05)
    # SimGrid's links are full duplex: exchange algorithms get the slowdown as a bw factor
    from fabench.sim.platform import smpi_factors

    def last_bwf(**kw: bool) -> float:
        return float(smpi_factors(duplex, **kw)["smpi/bw-factor"].split(";")[-1].split(":")[1])
    assert last_bwf(exchanges=True) == pytest.approx(last_bwf() / 2, rel=0.05)
    assert duplex.link_bandwidth_MBps == pytest.approx(2600, rel=0.05)
    cluster = Cluster(4, 1, make_topology("single", 4))
    big = [1 << 20]
    rd_plain = predict(plain, cluster, "allreduce", "recursive_doubling", big)[0]
    rd_duplex = predict(duplex, cluster, "allreduce", "recursive_doubling", big)[0]
    # two exchange steps of 1 MiB, each paying its bytes once more (2500 MB/s ping-pong)
    assert rd_duplex - rd_plain == pytest.approx(2 * big[0] / 2500, rel=0.1)
    assert predict(duplex, cluster, "allreduce", "ring", big) == pytest.approx(
        predict(plain, cluster, "allreduce", "ring", big))
    small = [4096]
    assert predict(duplex, cluster, "allreduce", "recursive_doubling", small) == \
        pytest.approx(predict(plain, cluster, "allreduce", "recursive_doubling", small),
                      rel=0.05)


def test_ring_allreduce_of_fewer_elements_than_ranks_is_recursive_doubling() -> None:
    """Open MPI's ring cannot cut 2 floats into 4 chunks and runs recursive doubling."""
    f = PRESETS["tcp-40g"]()
    cluster = Cluster(4, 1, make_topology("single", 4))
    assert predict(f, cluster, "allreduce", "ring", [8]) == \
        predict(f, cluster, "allreduce", "recursive_doubling", [8])
    assert predict(f, cluster, "allreduce", "ring", [16])[0] > \
        predict(f, cluster, "allreduce", "recursive_doubling", [16])[0]


def test_cores_shared_by_emulated_nodes_stretch_latency_not_link_bytes() -> None:
    f = PRESETS["tcp-40g"]()
    own = Cluster(4, 1, make_topology("single", 4))
    shared = Cluster(4, 1, make_topology("single", 4), cores=2)
    small, big = [8], [1 << 22]
    t_own = predict(f, own, "allgather", "ring", small + big)
    t_shared = predict(f, shared, "allgather", "ring", small + big)
    assert t_shared[0] == pytest.approx(2 * t_own[0], rel=1e-3)  # 4 ranks on 2 cores
    # the bytes of a large message are the link's: only the latency part (3 steps) doubles
    assert t_shared[1] - t_own[1] == pytest.approx(3 * f.alpha(big[0], hops=1))


def test_contended_ping_pong_calibrates_how_shared_cores_stretch_steps(tmp_path: Path) -> None:
    """A 4-rank mpi.latency (ranks 2 and 3 waiting) at 3x the 2-rank times: the calibration
    keeps the factor per size, and on 4 ranks sharing 2 cores a small step costs 3x, not the
    2x that active ranks / cores assumes; with a core per rank nothing changes."""
    rng = np.random.default_rng(9)
    sizes, lat = two_segment_curve(noise=0.0)
    with Store(tmp_path / "fabench.sqlite") as store:
        base = _store_run(store, "mpi.latency", sizes, lat, 1, rng)
        plain = calibrate(store, [base], "plain").fabric
        # 3x everywhere but one noisy size (5x): each protocol segment keeps its median
        busy = _store_run(store, "mpi.latency", sizes,
                          [(5 if i == 0 else 3) * t for i, t in enumerate(lat)], 1, rng, ranks=4)
        cont = calibrate(store, [base, busy], "cont").fabric
    assert cont.segments[0].alpha_us == pytest.approx(plain.segments[0].alpha_us)
    assert cont.contention_ranks == 4
    assert cont.contention_factor(8) == pytest.approx(3.0, rel=0.05)
    assert cont.contention_factor(sizes[0]) == pytest.approx(3.0, rel=0.05)
    assert cont.contention_share(4, 2, 8) == pytest.approx(3.0, rel=0.05)
    assert cont.contention_share(3, 2, 8) == pytest.approx(2.0, rel=0.05)  # linear in ranks
    assert cont.contention_share(2, 2, 8) == 1.0 and plain.contention_share(4, 2, 8) == 2.0
    shared = Cluster(4, 1, make_topology("single", 4), cores=2)
    own = Cluster(4, 1, make_topology("single", 4))
    # All pairs busy (mpi.mbw_mr, window 1: a message and a 1-byte reply per pair and sample,
    # the slowest pair's round trip): 4x the 2-rank half round trip; it takes precedence.
    with Store(tmp_path / "fabench.sqlite") as store:
        mr = _store_run(store, "mpi.mbw_mr", sizes, [4 * t for t in lat], 2, rng,
                        ranks=4, kernel_args=["--window", "1"])
        busier = calibrate(store, [base, busy, mr], "mr").fabric
        wide = _store_run(store, "mpi.mbw_mr", sizes, lat, 2, rng, ranks=4)
        with pytest.raises(FabenchError, match="--window 1"):
            calibrate(store, [base, wide], "bad")
    assert busier.contention_factor(8) == pytest.approx(4.0, rel=0.05)
    t_plain = predict(plain, shared, "allreduce", "recursive_doubling", [8])[0]
    t_cont = predict(cont, shared, "allreduce", "recursive_doubling", [8])[0]
    assert t_cont / t_plain == pytest.approx(1.5, rel=0.05)
    assert predict(cont, own, "allreduce", "recursive_doubling", [8]) == \
        pytest.approx(predict(plain, own, "allreduce", "recursive_doubling", [8]))
    # SimGrid gets the same stretch on its endpoint overheads
    from fabench.sim.platform import smpi_factors
    os_plain = smpi_factors(cont)["smpi/os"].split(";")[0].split(":")[1]
    os_cont = smpi_factors(cont, 4, 2)["smpi/os"].split(";")[0].split(":")[1]
    assert float(os_cont) / float(os_plain) == pytest.approx(3.0, rel=0.05)


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
                if not_applicable(f, coll, algo, cluster):
                    continue
                t = predict(f, cluster, coll, algo, sizes)
                assert all(b >= a - 1e-9 for a, b in zip(t, t[1:], strict=False)), \
                    (coll, algo, nodes, t)
                if prev_nodes is not None:
                    # Open MPI's ring allreduce runs recursive doubling below one float per
                    # rank, so more ranks can be faster there: compare above that only
                    keep = [i for i, m in enumerate(sizes)
                            if (coll, algo) != ("allreduce", "ring") or m >= 4 * nodes]
                    assert all(t[i] >= prev_nodes[i] - 1e-9 for i in keep), \
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


def test_only_fabrics_whose_switches_reduce_offer_in_network_reduction(tmp_path: Path) -> None:
    """Document 000's in-network computing is a feature of its IB and RoCEv2 switches: the
    presets declare it, and a fabric without it gets no in-network column, but a note."""
    declared = {name for name, make in PRESETS.items() if make().in_network_reduction}
    assert declared == {"ib-100g", "roce-100g"}
    big = Cluster(240, 1, FatTree(240, 24))
    tcp = predict_all(PRESETS["tcp-100g"](), big, "allreduce", [8])
    assert "in_network" not in tcp.times and "recursive_doubling" in tcp.times
    assert any("tcp-100g" in n and "in_network" in n for n in tcp.notes)
    with pytest.raises(FabenchError, match="does not declare"):
        predict(PRESETS["tcp-100g"](), big, "allreduce", "in_network", [8])
    # a calibration stored before the field existed reads as "cannot"; the flag round-trips
    f = PRESETS["roce-100g"]()
    d = f.to_dict()
    assert Fabric.from_dict(d).in_network_reduction
    del d["in_network_reduction"]
    assert not Fabric.from_dict(d).in_network_reduction
    out = fabench_cli("model", "predict", "--fabric", "tcp-100g", "--nodes", "240",
                      "--collective", "allreduce", "reduce", "--sizes", "8,1M",
                      "--out", str(tmp_path)).stdout
    assert "in_network left out: fabric tcp-100g" in out
    rows = [json.loads(line) for line in fabench_cli(
        "model", "predict", "--fabric", "tcp-100g", "--nodes", "240", "--collective",
        "allreduce", "--sizes", "8", "--json", "--out", str(tmp_path)).stdout.splitlines()]
    assert "in_network" not in rows[0]["times_us"] and "host_over_in_network" not in rows[0]
    assert any("tcp-100g" in n for n in rows[0]["notes"])
    only = fabench_cli("model", "predict", "--fabric", "tcp-100g", "--nodes", "240",
                       "--collective", "allreduce", "--algorithm", "in_network",
                       "--out", str(tmp_path), check=False)
    assert only.returncode != 0 and "does not declare" in only.stderr


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


def test_cli_predict(tmp_path: Path) -> None:
    out = fabench_cli("model", "predict", "--fabric", "roce-100g", "--nodes", "240",
                      "--collective", "allreduce", "--sizes", "8,1M", "--json",
                      "--out", str(tmp_path)).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["size"] for r in rows] == [8, 1 << 20]
    assert set(rows[0]["times_us"]) >= {"ring", "recursive_doubling", "in_network"}
    bad = fabench_cli("model", "predict", "--fabric", "nope", "--nodes", "2",
                      "--out", str(tmp_path), check=False)
    assert bad.returncode == 2 and "unknown fabric" in bad.stderr


def _hpl_cli(tmp_path: Path, *args: str) -> tuple[str, dict[int, float]]:
    """(stdout, efficiency % per node count) of `fabench model hpl`."""
    out = fabench_cli("model", "hpl", "--fabric", "roce-100g", "--peak", "2,12,2.7,8", *args,
                      "--out", str(tmp_path)).stdout
    effs = {}
    for line in out.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        cols = line.split()
        effs[int(cols[0])] = float(cols[3])
    return out, effs


def test_cli_hpl_declines_with_nodes_and_a_fit_at_one_point_predicts_another(
        tmp_path: Path) -> None:
    """Not the fitted value read back (it is hit by construction): the 1-node point is the
    given single-node efficiency (no fabric term, no spread), efficiency falls with nodes, and
    a spread fitted at one node count predicts another. The curve made with a known spread
    (1 %) is the truth; fitting its 64-node value must give back the spread and its 240-node
    value within 0.05 points (the table's rounding to 0.01 points bounds the fit's error)."""
    out, truth = _hpl_cli(tmp_path, "--nodes", "1,8,64,240", "--efficiency-1node", "0.8",
                          "--node-cv", "0.01")
    assert "518.4" in out  # peak from sockets x cores x GHz x flops/cycle
    assert truth[1] == pytest.approx(80.0, abs=0.005)
    effs = [truth[n] for n in (1, 8, 64, 240)]
    assert all(b < a for a, b in zip(effs, effs[1:], strict=False)), effs
    out, fitted = _hpl_cli(tmp_path, "--nodes", "1,8,64,240", "--efficiency-1node", "0.8",
                           "--fit-at", f"64:{truth[64] / 100:.4f}")
    spread = float(out.split("fitted node-to-node spread:")[1].split("%")[0])
    assert spread == pytest.approx(1.0, abs=0.05)
    assert fitted[240] == pytest.approx(truth[240], abs=0.05)
    assert fitted[8] == pytest.approx(truth[8], abs=0.05)
    assert fitted[1] == pytest.approx(80.0, abs=0.005)
    # doc 000's trend: fitted at 240 nodes, every intermediate size lies strictly between the
    # two published points, and a larger spread is needed than the per-node HPL table shows
    out, doc = _hpl_cli(tmp_path, "--nodes", "1,8,64,240", "--fit-at", "240:0.7299")
    assert doc[1] == pytest.approx(77.27, abs=0.005)
    assert 72.99 < doc[64] < doc[8] < 77.27
    spread = float(out.split("fitted node-to-node spread:")[1].split("%")[0])
    assert 0.5 < spread < 5.0
    # the fabric alone (no spread) costs less than the published drop
    _, fabric_only = _hpl_cli(tmp_path, "--nodes", "240", "--node-cv", "0")
    assert 72.99 < fabric_only[240] < 77.27


# Open MPI's own names for the model's algorithms where they differ (ompi_info, 4.1).
_OMPI_NAMES = {("alltoall", "bruck"): "modified_bruck", ("gather", "linear"): "basic_linear",
               ("bcast", "scatter_allgather"): "scatter_allgather_ring"}


def test_openmpi_tuned_numbers_are_distinct_and_read_back_from_a_run(tmp_path: Path) -> None:
    for coll, nums in OPENMPI_TUNED.items():
        assert len(set(nums.values())) == len(nums), (coll, nums)
        assert set(nums) <= set(ALGORITHMS[coll])
    with Store(tmp_path / "fabench.sqlite") as store:
        for name, num in OPENMPI_TUNED["bcast"].items():
            env = {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
                   "OMPI_MCA_coll_tuned_bcast_algorithm": str(num)}
            rid = store.begin_run(campaign_id=None, key="b", kernel="mpi.bcast",
                                  transport="tcp", mpi="openmpi", ranks=4, launcher="local",
                                  repeat=0, settings={"env": env})
            assert run_algorithm(store.run(rid), "bcast") == name


def test_openmpi_tuned_numbers_match_ompi_info() -> None:
    """The numbers pin measured runs to the modelled algorithm: check them against the
    installed Open MPI's own list."""
    import shutil

    if shutil.which("ompi_info") is None:
        missing("ompi_info not found (Open MPI not installed)")
    out = subprocess.run(["ompi_info", "--param", "coll", "tuned", "--level", "9"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    for coll, nums in OPENMPI_TUNED.items():
        m = re.search(rf'"coll_tuned_{coll}_algorithm".*?Valid values: ([^\n]*)', out, re.S)
        assert m, coll
        valid = {int(k): v for k, v in re.findall(r'(\d+):"([^"]+)"', m.group(1))}
        for name, num in nums.items():
            assert valid.get(num) == _OMPI_NAMES.get((coll, name), name), (coll, name, num)


def _testbed_prefix() -> str:
    return f"fbm{os.getpid() % 100000}"


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="makes a root testbed (CI is root)")
def test_calibrated_model_predicts_4_host_collectives_on_a_testbed(openmpi: str,
                                                                   tmp_path: Path) -> None:
    """Issue 7's validation, reduced (bench/model_validate.py is the full one, numbers in
    docs/model.md): calibrate from 2-host mpi.latency/bw/bibw over tcp on a rate-limited
    testbed, predict 4-host recursive-doubling allreduce and ring allgather (Open MPI pinned to
    the same algorithms) at sizes where the link dominates, measure them. The full run gave
    2-33 % per size there; three runs of this one (~50 s each, 2-core host shared with other
    jobs) gave medians up to 30 % (recursive doubling) and 13-17 % (ring), hence the 40 %
    bound on the median over the sizes. Fewer point-to-point sizes or iterations broke it: the
    breakpoint search then cut at 128 KiB instead of the 64 KiB eager limit."""
    from fabench.testbed import TestbedConfig, create

    with own_testbeds(_testbed_prefix()):
        # A switch-sized queue: a 50 ms one bloats exchanges (ACKs wait behind data).
        create("val", TestbedConfig(hosts=4, rate="400mbit", burst="16kb", queue="5ms"))
        env = '{OMPI_MCA_mpi_yield_when_idle: "1"'
        pin = env + ', OMPI_MCA_coll_tuned_use_dynamic_rules: "1"'
        spec = tmp_path / "val.yaml"
        spec.write_text(
            "name: val\nrepeats: 1\nmpi: openmpi\nruns:\n"
            # 1 B..1 MiB: enough sizes for the breakpoint search to find the eager limit
            "  - kernel: [mpi.latency]\n    transport: [tcp]\n"
            f'    ranks: [2]\n    sizes: "1:1M"\n    iterations: 200\n    env: {env}}}\n'
            "  - kernel: [mpi.bw, mpi.bibw]\n    transport: [tcp]\n"
            f'    ranks: [2]\n    sizes: "1:1M"\n    iterations: 10\n    window: 8\n'
            f"    env: {env}}}\n"
            "  - kernel: [mpi.allreduce]\n    transport: [tcp]\n    ranks: [4]\n"
            '    sizes: "32K,128K,512K"\n    iterations: 20\n'
            f'    env: {pin}, OMPI_MCA_coll_tuned_allreduce_algorithm: "3"}}\n'
            "  - kernel: [mpi.allgather]\n    transport: [tcp]\n    ranks: [4]\n"
            '    sizes: "32K,128K,512K"\n    iterations: 20\n'
            f'    env: {pin}, OMPI_MCA_coll_tuned_allgather_algorithm: "4"}}\n')
        out = str(tmp_path / "res")
        fabench_cli("run", str(spec), "--on", "testbed", "val", "--out", out,
                    "--no-progress", timeout=1200)
    with Store(Path(out) / "fabench.sqlite") as store:
        runs = {r.kernel: r.id for r in store.runs()}
        assert all(r.status == "ok" for r in store.runs())
    fabench_cli("model", "calibrate", *(str(runs[k]) for k in ("mpi.latency", "mpi.bw",
                                                                "mpi.bibw")),
                "--name", "tb", "--out", out)
    text = fabench_cli("model", "validate", str(runs["mpi.allreduce"]),
                       str(runs["mpi.allgather"]), "--fabric", "tb", "--topology", "single",
                       "--cores", str(os.cpu_count()), "--out", out).stdout
    print(text)
    errors = {m.group(1): float(m.group(2)) for m in re.finditer(
        r"^\s+mpi\.\w+\s+(\w+)\s+\d+\s+([\d.]+)%", text, re.M)}
    assert set(errors) == {"recursive_doubling", "ring"}, text
    assert all(e <= 40.0 for e in errors.values()), errors


def test_simulation_gets_the_barrier_exit_skew_only_when_asked(tmp_path: Path) -> None:
    """A simulated collective's ranks leave its barrier together; on emulated nodes sharing
    cores the measured record holds a rank's wait for the last, so validation adds the model's
    skew to the simulated times too, and says so."""
    from fabench.model.validate import Comparison, simulated_as_prediction

    with Store(tmp_path / "fabench.sqlite") as store:
        rid = store.begin_run(campaign_id=None, key="s", kernel="mpi.allreduce",
                              transport="sim:x", mpi="simgrid", ranks=4, launcher="simgrid",
                              repeat=0, settings={})
        for size, t in ((8, 70.0), (4096, 200.0)):
            store.add_result(rid, ResultRecord(kernel="mpi.allreduce", size=size,
                                               iterations=3, warmup=1, unit="us",
                                               times=[t, t, t]))
        store.finish_run(rid, status="ok", flags=["simulated"])
        comp = Comparison(1, "mpi.allreduce", "recursive_doubling", False, [8, 4096],
                          [110.0, 240.0], [100.0, 230.0])
        plain = simulated_as_prediction(store, comp, rid)
        skewed = simulated_as_prediction(store, comp, rid, skew=38.0)
    assert plain.predicted == [70.0, 200.0] and not any("skew" in n for n in plain.notes)
    assert skewed.predicted == [108.0, 238.0]
    assert any("38.0 us barrier exit skew" in n for n in skewed.notes)
