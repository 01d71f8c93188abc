"""The analytic model: calibration recovers known parameters, predictions behave, HPL."""

import json
import math
import os
import re
import subprocess
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from conftest import fabench_run, missing, own_testbeds
from fabench.errors import FabenchError
from fabench.model.calibrate import calibrate, fit_segments
from fabench.model.catalog import load_fabric, save_fabric
from fabench.model.collectives import (
    ALGORITHMS,
    not_applicable,
    predict,
    predict_all,
)
from fabench.model.cost import Cluster, Model
from fabench.model.decisions import OPENMPI_RULES, OPENMPI_TUNED, openmpi_fallback
from fabench.model.fabric import Fabric, Segment
from fabench.model.families import NODE_MEMORY_MBPS
from fabench.model.hpl import HplParams, fit_node_cv, hpl_point, peak_gflops
from fabench.model.params import applicable
from fabench.model.presets import PRESETS
from fabench.model.schema import validate_dict
from fabench.model.topology import FatTree, Torus, make_topology, torus_dims
from fabench.model.trees import knomial_tree, tree_bcast
from fabench.model.uncertainty import add_bands
from fabench.model.validate import barrier_exit_skew, run_algorithm
from fabench.records import ResultRecord
from fabench.sim.platform import smpi_factors
from fabench.store.database import Store

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
               kernel_args: list[str] | None = None, transport: str = "tcp") -> int:
    rid = store.begin_run(campaign_id=None, key=kernel, kernel=kernel, transport=transport,
                          mpi="openmpi", ranks=ranks, launcher="local", repeat=0,
                          settings={"kernel_args": kernel_args or []})
    for m, t in zip(sizes, per_msg_us, strict=True):
        samples = list(t * messages * (1 + 0.01 * rng.standard_normal(50)))
        store.add_result(rid, ResultRecord(kernel=kernel, size=m, iterations=50, warmup=5,
                                           unit="us", times=samples, bytes_per_sample=m * messages,
                                           messages_per_sample=messages))
    store.finish_run(rid, status="ok",
                     selected_transport="ob1/vader" if transport == "shm" else "ob1/tcp")
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
    # the replicates refit resampled runs: they scatter around the fit, not on it
    alphas = [r.segments[0].alpha_us for r in again.replicates]
    assert len(alphas) >= 10 and min(alphas) < f.segments[0].alpha_us < max(alphas)
    assert max(alphas) / min(alphas) < 1.2
    # every fitted figure names the runs; what no run shows says "assumed"
    assert str(r_lat) in again.provenance["latency_us"].source
    assert again.provenance["hop_latency_us"].assumed  # no --family: an assumed range
    assert again.provenance["overhead_us"].assumed


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
        plain = calibrate(store, ids, "plain", gamma_MBps=5000).fabric
        ids.append(_store_run(store, "mpi.bibw", sizes, bibw, 128, rng))
        duplex = calibrate(store, ids, "bibw", gamma_MBps=5000).fabric
    assert plain.exchange_slowdown == [] and plain.exchange_factor(1 << 20) == 1.0
    assert duplex.exchange_factor(4096) == pytest.approx(1.0, abs=0.05)
    assert duplex.exchange_factor(1 << 20) == pytest.approx(2.0, rel=0.05)
    # SimGrid's links are full duplex: exchange algorithms get the slowdown as a bw factor
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
        plain = calibrate(store, [base], "plain", gamma_MBps=5000).fabric
        # 3x everywhere but one noisy size (5x): each protocol segment keeps its median
        busy = _store_run(store, "mpi.latency", sizes,
                          [(5 if i == 0 else 3) * t for i, t in enumerate(lat)], 1, rng, ranks=4)
        cont = calibrate(store, [base, busy], "cont", gamma_MBps=5000).fabric
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
    os_plain = smpi_factors(cont)["smpi/os"].split(";")[0].split(":")[1]
    os_cont = smpi_factors(cont, 4, 2)["smpi/os"].split(";")[0].split(":")[1]
    assert float(os_cont) / float(os_plain) == pytest.approx(3.0, rel=0.05)


def test_calibrate_needs_a_latency_run(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    with Store(tmp_path / "fabench.sqlite") as store:
        r_bw = _store_run(store, "mpi.bw", SIZES, [1.0] * len(SIZES), 64, rng)
        with pytest.raises(FabenchError, match="mpi.latency"):
            calibrate(store, [r_bw], "x")


OSU_P2P_SIZES = [0, *(1 << k for k in range(23))]


def test_doc000_presets_keep_the_published_latency_gap_at_every_size() -> None:
    """Document 000: RoCEv2's osu_latency is 0.6-0.7 us above IB's at every size, eager and
    rendezvous alike, with equal bandwidth. (The presets once put the gap into the rendezvous
    handshake three times: 1.95 us above the eager limit.)"""
    ib, roce = PRESETS["ib-100g"](), PRESETS["roce-100g"]()
    gaps = [roce.time(m) - ib.time(m) for m in OSU_P2P_SIZES]
    assert all(0.6 <= g <= 0.7 for g in gaps), gaps
    # the gap sits in the switch: a path across 3 switches pays it three times
    assert roce.time(8, hops=3) - ib.time(8, hops=3) == pytest.approx(3 * gaps[0], rel=0.01)
    # and the hosts are the same: per-message overhead and injection gap equal
    assert roce.gap_us == ib.gap_us and roce.overhead_us == ib.overhead_us


def test_every_preset_parameter_has_a_source_or_says_assumed() -> None:
    for name, make in PRESETS.items():
        f = make()
        missing = [p.name for p in applicable(f) if p.name not in f.provenance]
        assert not missing, (name, missing)
        for key, prov in f.provenance.items():
            # a range brackets the value it is the range of
            val = next(p for p in applicable(f) if p.name == key).get(f)
            if prov.low is not None and prov.high is not None:
                assert prov.low <= val <= prov.high, (name, key, prov, val)
            # nothing of this development host: no provenance cites it
            assert "this host" not in prov.source, (name, key)


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
                # (in-network reduction falls back to host-based above its maximum, which
                # can be faster on few nodes: test_in_network_reduction_as_measured_...)
                mono = [i for i in range(1, len(sizes)) if algo != "in_network" and (
                    algo != "rabenseifner" or sizes[i - 1] >= 8 * nodes)]
                assert all(t[i] >= t[i - 1] - 1e-9 for i in mono), (coll, algo, nodes, t)
                if prev_nodes is not None:
                    # Open MPI's ring allreduce runs recursive doubling below one float per
                    # rank, so more ranks can be faster there: compare above that only
                    keep = [i for i, m in enumerate(sizes)
                            if (coll, algo) != ("allreduce", "ring") or m >= 4 * nodes]
                    # Rabenseifner below 2 floats per rank cuts uneven blocks: a message
                    # with fewer elements than ranks moves whole, one just above it halves
                    keep = [i for i in keep if algo != "rabenseifner"
                            or sizes[i] >= 8 * nodes]
                    assert all(t[i] >= prev_nodes[i] - 1e-9 for i in keep), \
                        (coll, algo, nodes)
                prev_nodes = t


def test_in_network_reduction_as_measured_systems_behave() -> None:
    """SHARP-class reduction: host overhead and per-level latency (the tree's depth from the
    topology), fragments above the payload limit, the host-based fallback above the maximum,
    none below the minimum node count, none on a torus."""
    f = PRESETS["ib-100g"]()
    inn = f.in_network
    assert inn is not None

    def t(nodes: int, size: int, hosts_per_leaf: int = 24) -> float:
        c = Cluster(nodes, 1, FatTree(nodes, hosts_per_leaf, tree_levels=3))
        return predict(f, c, "allreduce", "in_network", [size])[0]
    # one level more (a 3-level tree) costs two more level crossings, nothing else
    assert t(4096, 8) - t(240, 8) == pytest.approx(2 * inn.level_us, rel=1e-6)
    # each fragment beyond the first costs fragment_us (a payload of fragment_bytes each)
    assert t(240, 4 * inn.fragment_bytes) - t(240, inn.fragment_bytes) == pytest.approx(
        3 * inn.fragment_us + 3 * inn.fragment_bytes * f.beta(1024), rel=0.05)
    # above the maximum the library runs its host-based algorithm
    big = Cluster(240, 1, FatTree(240, 24))
    above = 2 * inn.max_bytes
    host = min(predict(f, big, "allreduce", a, [above])[0]
               for a in ("recursive_doubling", "rabenseifner", "ring"))
    assert predict(f, big, "allreduce", "in_network", [above])[0] == pytest.approx(host)
    # below min_nodes no tree is built
    tiny = Cluster(inn.min_nodes - 1, 1, FatTree(inn.min_nodes - 1, 24))
    assert predict(f, tiny, "allreduce", "in_network", [8]) == pytest.approx(
        [min(predict(f, tiny, "allreduce", a, [8])[0]
             for a in ("recursive_doubling", "rabenseifner", "ring"))])
    torus = Cluster(240, 1, Torus(240, (6, 8, 5)))
    assert "in_network" not in predict_all(f, torus, "allreduce", [8]).times


def test_in_network_speedup_at_scale_stays_near_the_published_one() -> None:
    """[R20]: SHARP allreduce up to 5.1x faster than host-based at 7,861 nodes. The ideal tree
    (0.2 us per level, line rate) predicted 8.6-10x at 4096 nodes; the measured-systems model
    must stay within a factor of two of the publication (its exact error is in docs/model.md,
    `model validate --published`)."""
    f = PRESETS["ib-100g"]()
    c = Cluster(7861, 1, FatTree(7861, 40, tree_levels=3, leaves_per_pod=40))
    best = 0.0
    for size in (8, 64, 512, 2048):
        pred = predict_all(f, c, "allreduce", [size], libraries=("openmpi",))
        best = max(best, pred.times["openmpi"][0] / pred.times["in_network"][0])
    assert 5.1 / 2 <= best <= 5.1 * 2, best


def test_only_fabrics_whose_switches_reduce_offer_in_network_reduction(tmp_path: Path) -> None:
    """Document 000's in-network computing is a feature of its IB and RoCEv2 switches: the
    presets declare it, and a fabric without it gets no in-network column, but a note."""
    declared = {name for name, make in PRESETS.items() if make().in_network_reduction}
    assert declared == {"ib-100g", "roce-100g"}
    big = Cluster(240, 1, FatTree(240, 24))
    tcp = predict_all(PRESETS["tcp-100g"](), big, "allreduce", [8])
    assert "in_network" not in tcp.times and "recursive_doubling" in tcp.times
    assert any("tcp-100g" in n and "in_network" in n for n in tcp.notes)
    with pytest.raises(FabenchError, match="declares no"):
        predict(PRESETS["tcp-100g"](), big, "allreduce", "in_network", [8])
    # a file written before the schema: its old flag maps to the family's reduction
    d = PRESETS["roce-100g"]().to_dict()
    d.pop("in_network")
    d.pop("provenance")
    d["in_network_reduction"] = True
    assert validate_dict(dict(d), "old").in_network_reduction
    d["in_network_reduction"] = False
    assert not validate_dict(dict(d), "old").in_network_reduction
    out = fabench_run("model", "predict", "--fabric", "tcp-100g", "--nodes", "240",
                      "--collective", "allreduce", "reduce", "--sizes", "8,1M",
                      "--band-samples", "0", "--out", str(tmp_path)).stdout
    assert "in_network left out: fabric tcp-100g" in out
    rows = [json.loads(line) for line in fabench_run(
        "model", "predict", "--fabric", "tcp-100g", "--nodes", "240", "--collective",
        "allreduce", "--sizes", "8", "--json", "--band-samples", "0",
        "--out", str(tmp_path)).stdout.splitlines()]
    assert "in_network" not in rows[0]["times_us"] and "host_over_in_network" not in rows[0]
    assert any("tcp-100g" in n for n in rows[0]["notes"])
    only = fabench_run("model", "predict", "--fabric", "tcp-100g", "--nodes", "240",
                       "--collective", "allreduce", "--algorithm", "in_network",
                       "--out", str(tmp_path), check=False)
    assert only.returncode != 0 and "declares no" in only.stderr


def test_ppn_puts_same_node_steps_on_shared_memory() -> None:
    f = PRESETS["ib-100g"]()
    one = predict(f, Cluster(4, 1, FatTree(4, 24)), "allreduce", "recursive_doubling", [8])[0]
    packed = predict(f, Cluster(1, 4, FatTree(1, 24)), "allreduce", "recursive_doubling", [8])[0]
    assert packed < one  # shared memory (0.45 us) beats the fabric (1 us) per step


def test_hpl_peak_and_trend() -> None:
    assert peak_gflops(2, 12, 2.7, 8) == pytest.approx(518.4)
    f = PRESETS["roce-100g"]()
    prm = HplParams(518.4, 0.7727, 64.0)
    effs = [hpl_point(f, n, prm).efficiency for n in (1, 8, 64, 240)]
    assert all(b < a for a, b in zip(effs, effs[1:], strict=False))
    # The fit finds a spread planted in the model, not only the efficiency it was asked for
    # (which it reproduces by construction: the old check).
    planted = hpl_point(f, 240, replace(prm, node_cv=0.03)).efficiency
    assert fit_node_cv(f, 240, planted, prm) == pytest.approx(0.03, rel=1e-6)
    assert fit_node_cv(f, 240, 0.99, prm) is None  # above the no-spread efficiency
    # a slower fabric loses more at scale
    tcp = hpl_point(PRESETS["tcp-1g"](), 240, prm).efficiency
    assert tcp < hpl_point(f, 240, prm).efficiency


def test_hpl_point_is_netlibs_scalability_formula_by_hand() -> None:
    """netlib HPL's scalability analysis (www.netlib.org/benchmark/hpl/scalability.html):
    T = 2n^3/(3 PQ gamma) + beta n^2 (3P + Q)/(2PQ) + alpha n ((NB + 1) log2 P + P)/NB, the
    model with half the bandwidth term hidden (overlap 0.5) and 1.5 n^2 extra flops. Worked by
    hand for 4 nodes (P = Q = 2), n = 10,000, NB = 100, alpha 10 us, beta 1 ns/B (8 ns a
    double), 100 Gflop/s peak at 80 %:
      flops = 2/3 1e12 + 1.5e8 = 666,816,666,666.7
      T_comp = flops / (4 x 80e9) = 2.0838021 s
      T_bw = 8e-9 x 1e8 x 8/8 = 0.8 s, half of it hidden: 0.4 s
      T_lat = 1e-5 x 1e4 x (101 x 1 + 2)/100 = 0.103 s
      efficiency = flops / (2.5868021 s x 4 x 100e9) = 0.644441"""
    f = Fabric("hand", [Segment(0, 10.0, 0.001)], calibrated_hops=3, hop_latency_us=0.5)
    prm = HplParams(100.0, 0.8, 1.0, nb=100, overlap=0.5)
    pt = hpl_point(f, 4, prm, n=10_000)
    assert pt.efficiency == pytest.approx(0.644441, abs=1e-6)
    # with a spread of 2 % the 4 nodes wait for the slowest: gamma x (1 - 0.02 sqrt(2 ln 4))
    slow = 1 - 0.02 * math.sqrt(2 * math.log(4))  # 0.966697
    t = 2.0838021 / slow + 0.4 + 0.103
    assert hpl_point(f, 4, replace(prm, node_cv=0.02), n=10_000).efficiency == pytest.approx(
        666_816_666_666.7 / (t * 4e11), rel=1e-6)


def test_fabric_time_adds_hops_beyond_the_calibrated_path() -> None:
    f = Fabric("x", [Segment(0, 2.0, 0.001)], calibrated_hops=1, hop_latency_us=0.5)
    assert f.time(0, hops=3) - f.time(0, hops=1) == pytest.approx(1.0)


def test_cli_predict(tmp_path: Path) -> None:
    out = fabench_run("model", "predict", "--fabric", "roce-100g", "--nodes", "240",
                      "--collective", "allreduce", "--sizes", "8,1M", "--json",
                      "--out", str(tmp_path)).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["size"] for r in rows] == [8, 1 << 20]
    assert set(rows[0]["times_us"]) >= {"ring", "recursive_doubling", "in_network"}
    bad = fabench_run("model", "predict", "--fabric", "nope", "--nodes", "2",
                      "--out", str(tmp_path), check=False)
    assert bad.returncode == 2 and "unknown fabric" in bad.stderr
    # Open MPI before 4.1 as a column of its own: at 2 x 32 ranks and 1 MiB its rules run
    # the ring where 4.1's run Rabenseifner
    out = fabench_run("model", "predict", "--fabric", "roce-100g", "--nodes", "2", "--ppn",
                      "32", "--collective", "allreduce", "--sizes", "1M", "--mpi",
                      "openmpi,openmpi-4.0", "--json", "--band-samples", "0",
                      "--out", str(tmp_path)).stdout
    (row,) = [json.loads(line) for line in out.splitlines()]
    assert row["chosen"] == {"openmpi": "rabenseifner", "openmpi-4.0": "ring"}
    assert row["times_us"]["openmpi-4.0"] == row["times_us"]["ring"]
    bad = fabench_run("model", "predict", "--fabric", "roce-100g", "--nodes", "2", "--mpi",
                      "openmpi-3", "--out", str(tmp_path), check=False)
    assert bad.returncode == 2 and "openmpi-4.0" in bad.stderr
    # four NICs a node: a 2 x 4 alltoall of 1 MiB leaves through four links, not one (the
    # endpoints' rate, not the link's quarter, limits each flow); the shifts whose other
    # pairs copy on their node (8 GB/s assumed) still wait for those: 0.6 x, not 0.25 x.
    # Refused outside 1..64
    times = {}
    for nics in ("1", "4"):
        out = fabench_run("model", "predict", "--fabric", "roce-100g", "--nodes", "2", "--ppn",
                          "4", "--nics-per-node", nics, "--collective", "alltoall", "--sizes",
                          "1M", "--json", "--band-samples", "0", "--out", str(tmp_path)).stdout
        times[nics] = json.loads(out)["times_us"]["pairwise"]
    assert times["4"] < 0.7 * times["1"]
    for hostile in ("0", "65", "-1", "4;reboot"):
        bad = fabench_run("model", "predict", "--fabric", "roce-100g", "--nodes", "2",
                          f"--nics-per-node={hostile}", "--out", str(tmp_path), check=False)
        assert bad.returncode == 2 and "--nics-per-node" in bad.stderr


def _hpl_cli(tmp_path: Path, *args: str, check: bool = True) -> tuple[str, dict[int, float]]:
    """(stdout, efficiency % per node count) of `fabench model hpl`."""
    proc = fabench_run("model", "hpl", "--fabric", "roce-100g", "--peak", "2,12,2.7,8", *args,
                       "--band-samples", "4", "--out", str(tmp_path), check=check)
    effs = {}
    for line in proc.stdout.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        cols = line.split()
        effs[int(cols[0])] = float(cols[3])
    return proc.stdout + proc.stderr, effs


def test_cli_hpl_declines_with_nodes_and_a_fit_at_one_point_predicts_another(
        tmp_path: Path) -> None:
    """Not the fitted value read back (it is hit by construction, and labelled so): the 1-node
    point is the given single-node efficiency (no fabric term, no spread), efficiency falls
    with nodes, and a spread fitted at one node count predicts another. The curve made with a
    known spread (1 %) is the truth; fitting its 64-node value must give back the spread and
    its 240-node value within 0.05 points (the table's rounding bounds the fit's error)."""
    base = ("--efficiency-1node", "0.8", "--mem-gb", "64")
    out, truth = _hpl_cli(tmp_path, "--nodes", "1,8,64,240", *base, "--node-cv", "0.01")
    assert "518.4" in out  # peak from sockets x cores x GHz x flops/cycle
    assert "FITTED" not in out
    assert truth[1] == pytest.approx(80.0, abs=0.005)
    effs = [truth[n] for n in (1, 8, 64, 240)]
    assert all(b < a for a, b in zip(effs, effs[1:], strict=False)), effs
    out, fitted = _hpl_cli(tmp_path, "--nodes", "1,8,64,240", *base,
                           "--fit-at", f"64:{truth[64] / 100:.4f}")
    assert "FITTED, NOT PREDICTED" in out
    spread = float(out.split("the node spread (")[1].split("%")[0])
    assert spread == pytest.approx(1.0, abs=0.05)
    assert fitted[240] == pytest.approx(truth[240], abs=0.05)
    assert fitted[8] == pytest.approx(truth[8], abs=0.05)
    assert fitted[1] == pytest.approx(80.0, abs=0.005)


def test_cli_hpl_takes_no_cluster_defaults_and_reads_a_node_table(tmp_path: Path) -> None:
    """No peak, memory or efficiency of one particular cluster stands in for missing input;
    a node-consistency table gives the 1-node efficiency (its median over the peak) and the
    node spread, which a larger spread in the table makes cost more at scale."""
    out, _ = _hpl_cli(tmp_path, "--nodes", "8", check=False)
    assert "--mem-gb" in out and "fabench assumes no cluster" in out
    out, _ = _hpl_cli(tmp_path, "--nodes", "8", "--mem-gb", "64", check=False)
    assert "--efficiency-1node or a node table" in out
    tight = tmp_path / "tight.json"
    tight.write_text(json.dumps({"nodes": {f"n{i}": 497.5 + 0.05 * i for i in range(8)}}))
    loose = tmp_path / "loose.csv"
    loose.write_text("node,gflops\n" + "".join(f"n{i},{497.5 * (1 + 0.02 * (i - 3.5))}\n"
                                              for i in range(8)))
    out_t, tight_eff = _hpl_cli(tmp_path, "--nodes", "1,240", "--mem-gb", "64",
                                "--node-table", str(tight))
    _, loose_eff = _hpl_cli(tmp_path, "--nodes", "1,240", "--mem-gb", "64",
                            "--node-table", str(loose))
    assert tight_eff[1] == pytest.approx(497.675 / 518.4 * 100, abs=0.01)
    assert "spread of 8 nodes" in out_t
    assert loose_eff[240] < tight_eff[240] - 1.0


# Open MPI's own names for the model's algorithms where they differ (ompi_info, 4.1).
_OMPI_NAMES = {("alltoall", "bruck"): "modified_bruck", ("gather", "linear"): "basic_linear",
               ("bcast", "scatter_allgather"): "scatter_allgather_ring",
               ("bcast", "scatter_rd_allgather"): "scatter_allgather",
               ("bcast", "linear"): "basic_linear", ("allreduce", "linear"): "basic_linear",
               ("allreduce", "binomial"): "nonoverlapping",
               ("allgather", "neighbor_exchange"): "neighbor",
               ("reduce", "binary_tree"): "binary"}


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
        # every algorithm the transcribed default rules choose exists in this Open MPI
        used = {alg for _, steps, above in OPENMPI_RULES[coll]
                for alg in [above, *(a for _, a in steps)]}
        assert used <= set(valid), (coll, used - set(valid))


def _testbed_prefix() -> str:
    return f"fbm{os.getpid() % 100000}"


@pytest.mark.netns
@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="makes a root testbed (CI is root)")
def test_calibrated_model_predicts_4_host_collectives_on_a_testbed(openmpi: str,
                                                                   tmp_path: Path) -> None:
    """Issue 7's validation, reduced (bench/model_validate.py is the full one, numbers in
    docs/model.md): calibrate from 2-host mpi.latency/bw/bibw over tcp on a rate-limited
    testbed, predict 4-host recursive-doubling allreduce and ring allgather (Open MPI pinned to
    the same algorithms), measure them at 1, 2 and 4 MiB.

    Those sizes because the link dominates there: a step is 20-80 ms on the 400 Mbit/s link.
    At 32 KiB (the sizes once judged were 32, 128, 512 KiB) a step is ~0.7 ms, as long as the
    time slices four ranks on two cores and the host's other jobs get: measured 32 KiB times
    ran 1.6-10x the prediction from run to run and 128 KiB ring times 20 or 74 ms in two runs
    minutes apart; the median of three sizes is the middle row, so it swung past the bound.
    512 KiB ring rows still measured 1.7-2.2x the prediction under load.

    The judge is the median over the sizes of the signed error (predicted - measured) /
    measured. The load and what the model lacks (sending and receiving at once costs 1.3-1.4x
    at >= 128 KiB: the ring) only make the measurement slower: the lower bound is the 2.4x
    the loaded full validation measured over the prediction (docs/model.md), -60 %. The other
    side is not zero: the calibration runs first, so a host busier then than during the
    collectives calibrates a slower link (recursive doubling came out +30 % in one full-suite
    run); +50 %. Three runs at load 12-23 (95-138 s each): recursive doubling -27, -21, +10 %,
    ring -38, -33, -33 %; a suite run: +30, -5 %. What it still catches: the same stored runs
    judged against the `tcp-40g` preset (100x the link) instead of the calibrated model fall
    far below the bound. (The `tcp-1g` preset, 2.5x the link, once gave -80 and -73 %, but on a
    quiet host, where the ring runs at the link's rate, it gives -59.2 to -59.8 %: inside the
    -60 % bound, which is loose on that side by design, so it could not make the test fail.)"""
    from fabench.testbed import TestbedConfig, create

    with own_testbeds(_testbed_prefix()):
        # A switch-sized queue: a 50 ms one bloats exchanges (ACKs wait behind data).
        create("val", TestbedConfig(hosts=4, rate="400mbit", burst="16kb", queue="5ms"))
        env = '{OMPI_MCA_mpi_yield_when_idle: "1"'
        pin = env + ', OMPI_MCA_coll_tuned_use_dynamic_rules: "1"'
        spec = tmp_path / "val.yaml"
        # 1 B..1 MiB: enough sizes for the breakpoint search; the judged sizes are all in the
        # rendezvous segment, so 20 ping-pongs a size do (200 took 47-76 s under load; 50,
        # with 10 bandwidth windows and 6 collective iterations, 125 s at load 17).
        # The collectives warm up with two calls: the settled warm-up's floor is sized for
        # microsecond messages, and a 4 MiB allreduce here takes ~270 ms (36 -> 25 s a run).
        # Recursive doubling, quiet host: +1 % with every default, +18 and +40 % with this,
        # +16, +20 and +42 % with 2-5 iterations for the calibration too: the spread is the
        # runs', not the warm-up's. So the ping-pong warms up with 3 calls a size too: its
        # settled warm-up runs at least 20 at every size >= 8 KiB, 84 ms a call summed over
        # 8 KiB..1 MiB here (7.9 -> 2.4 s a run; medians +6 and -11 % with it).
        spec.write_text(
            "name: val\nrepeats: 1\nmpi: openmpi\nruns:\n"
            "  - kernel: [mpi.latency]\n    transport: [tcp]\n"
            f'    ranks: [2]\n    sizes: "1:1M"\n    iterations: 20\n    warmup: 3\n'
            f"    env: {env}}}\n"
            "  - kernel: [mpi.bw, mpi.bibw]\n    transport: [tcp]\n"
            f'    ranks: [2]\n    sizes: "1:1M"\n    iterations: 5\n    window: 8\n'
            f"    env: {env}}}\n"
            "  - kernel: [mpi.allreduce]\n    transport: [tcp]\n    ranks: [4]\n"
            '    sizes: "1M,2M,4M"\n    iterations: 4\n    warmup: 2\n'
            f'    env: {pin}, OMPI_MCA_coll_tuned_allreduce_algorithm: "3"}}\n'
            "  - kernel: [mpi.allgather]\n    transport: [tcp]\n    ranks: [4]\n"
            '    sizes: "1M,2M,4M"\n    iterations: 4\n    warmup: 2\n'
            f'    env: {pin}, OMPI_MCA_coll_tuned_allgather_algorithm: "4"}}\n')
        out = str(tmp_path / "res")
        fabench_run("run", str(spec), "--on", "testbed", "val", "--out", out,
                    "--no-progress", timeout=1200)
    with Store(Path(out) / "fabench.sqlite") as store:
        runs = {r.kernel: r.id for r in store.runs()}
        assert all(r.status == "ok" for r in store.runs())
    fabench_run("model", "calibrate", *(str(runs[k]) for k in ("mpi.latency", "mpi.bw",
                                                                "mpi.bibw")),
                "--name", "tb", "--out", out)

    def median_errors(fabric: str) -> dict[str, float]:
        text = fabench_run("model", "validate", str(runs["mpi.allreduce"]),
                           str(runs["mpi.allgather"]), "--fabric", fabric, "--topology",
                           "single", "--cores", str(os.cpu_count()), "--out", out).stdout
        print(text)
        errors: dict[str, list[float]] = {}
        for block in re.split(r"^# run \d+: ", text, flags=re.M)[1:]:
            algo = block.split()[1]
            errors[algo] = [float(e) for e in re.findall(
                r"^\s+\d+[KM]\s+[\d,]+\s+[\d,]+\s+\S+\s+([-+\d.]+)%", block, re.M)]
        assert {a: len(e) for a, e in errors.items()} == {"recursive_doubling": 3, "ring": 3}, \
            text
        return {a: float(np.median(e)) for a, e in errors.items()}

    medians = median_errors("tb")
    assert all(-60.0 <= m <= 50.0 for m in medians.values()), medians
    # the same judge fails a model that does not describe this testbed (40 Gbit/s TCP), on
    # the same stored runs
    wrong = median_errors("tcp-40g")
    print(f"median signed errors: calibrated {medians}, tcp-40g {wrong}")
    assert not any(-60.0 <= m <= 50.0 for m in wrong.values()), wrong


@pytest.mark.sim
def test_simulation_gets_the_barrier_exit_skew_only_when_asked(tmp_path: Path) -> None:
    """A simulated collective's ranks leave its barrier together; on emulated nodes sharing
    cores the measured record holds a rank's wait for the last, so validation adds the model's
    skew to the simulated times too, and says so."""
    from fabench.model.validate import Validation, simulated_as_prediction

    with Store(tmp_path / "fabench.sqlite") as store:
        rid = store.begin_run(campaign_id=None, key="s", kernel="mpi.allreduce",
                              transport="sim:x", mpi="simgrid", ranks=4, launcher="simgrid",
                              repeat=0, settings={})
        for size, t in ((8, 70.0), (4096, 200.0)):
            store.add_result(rid, ResultRecord(kernel="mpi.allreduce", size=size,
                                               iterations=3, warmup=1, unit="us",
                                               times=[t, t, t]))
        store.finish_run(rid, status="ok", flags=["simulated"])
        comp = Validation(1, "mpi.allreduce", "recursive_doubling", False, [8, 4096],
                          [110.0, 240.0], [100.0, 230.0])
        plain = simulated_as_prediction(store, comp, rid)
        skewed = simulated_as_prediction(store, comp, rid, skew=38.0)
    assert plain.predicted == [70.0, 200.0] and not any("skew" in n for n in plain.notes)
    assert skewed.predicted == [108.0, 238.0]
    assert any("38.0 us barrier exit skew" in n for n in skewed.notes)


# -- the fabric file ---------------------------------------------------------------------------
def test_fabric_file_rejects_unknown_keys_with_their_line(tmp_path: Path) -> None:
    """A misspelled key (hop_latncy_us) once dropped the hop latency and in-network support
    silently; now the file is refused, naming the line and the key."""
    good = save_fabric(PRESETS["ib-100g"](), tmp_path)
    lines = good.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if '"hop_latency_us"' in line)
    lines[at] = lines[at].replace("hop_latency_us", "hop_latncy_us")
    bad = tmp_path / "bad.json"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(FabenchError) as exc:
        load_fabric(str(bad))
    msg = str(exc.value)
    assert f"line {at + 1}: hop_latncy_us: unknown key" in msg
    assert "hop_latency_us: required key is missing" in msg
    # a YAML fabric file (comments allowed) reads like the JSON one
    yml = tmp_path / "ib.yaml"
    yml.write_text("# hand-written\n" + good.read_text())
    assert load_fabric(str(yml)).time(1 << 20) == pytest.approx(PRESETS["ib-100g"]().time(1 << 20))
    # a provenance entry for a parameter that does not exist is refused too
    d = json.loads(good.read_text())
    d["provenance"]["hop_latency"] = {"source": "x"}
    bad.write_text(json.dumps(d, indent=1))
    with pytest.raises(FabenchError, match="unknown parameter"):
        load_fabric(str(bad))


def test_define_writes_a_fabric_from_published_figures_and_show_lists_every_parameter(
        tmp_path: Path) -> None:
    out = fabench_run("model", "define", "mylink", "--family", "ib", "--latency-us", "0.9:1.1",
                      "--bandwidth-MBps", "24000", "--in-network", "sharp2",
                      "--source", "vendor brief X", "--out", str(tmp_path)).stdout
    assert "written" in out
    f = load_fabric("mylink", tmp_path)
    assert f.origin == "defined" and f.family == "ib"
    assert f.latency_us == pytest.approx(1.0 + 8 / 24000)
    assert f.provenance["latency_us"].low == 0.9 and f.provenance["latency_us"].high == 1.1
    show = fabench_run("model", "show", "mylink", "--out", str(tmp_path)).stdout
    rows = {line.split()[0]: line for line in show.splitlines()
            if line.startswith("  ") and line.split()[0] in {p.name for p in applicable(f)}}
    assert set(rows) == {p.name for p in applicable(f)}
    assert "vendor brief X" in rows["latency_us"] and "[SUNIB]" in rows["hop_latency_us"]
    assert "assumed" in rows["shm_latency_us"] and "assumed" in rows["gamma_MBps"]
    assert "[NVSHARP]" in rows["in_network.streaming_MBps"]
    # the NIC's gap per message: LogGP's g, here the assumed one (g = o), as calibrate takes
    # its measured g; collectives on a few nodes fit it
    assert f.nic_gap_us == f.gap_us == f.overhead_us > 0
    assert f.provenance["nic_gap_us"].assumed
    # the node's memory: the corpus's prior, said as assumed with its range, unless given
    assert f.node_memory_MBps == NODE_MEMORY_MBPS.value
    assert "assumed" in rows["node_memory_MBps"] and "corpus" in rows["node_memory_MBps"]
    assert f.provenance["node_memory_MBps"].low == 10000.0
    fabench_run("model", "define", "stream", "--family", "ib", "--latency-us", "1",
                "--bandwidth-MBps", "24000", "--node-memory-MBps", "150000:250000",
                "--source", "STREAM triad", "--out", str(tmp_path))
    given = load_fabric("stream", tmp_path)
    assert given.node_memory_MBps == 200000.0  # the middle of the range
    assert given.provenance["node_memory_MBps"].source == "STREAM triad"
    bad = fabench_run("model", "define", "../evil", "--family", "ib", "--latency-us", "1",
                      "--bandwidth-MBps", "1", "--out", str(tmp_path), check=False)
    assert bad.returncode == 2 and "fabric name" in bad.stderr
    for hostile in ("0", "-1", "nan", "1e400"):
        bad = fabench_run("model", "define", "x", "--family", "ib", "--latency-us", "1",
                          "--bandwidth-MBps", "1", f"--node-memory-MBps={hostile}",
                          "--out", str(tmp_path), check=False)
        assert bad.returncode == 2 and "--node-memory-MBps" in bad.stderr, hostile


# -- calibration -----------------------------------------------------------------------------
def test_rounded_imports_buy_no_spurious_breakpoint() -> None:
    """OSU and IMB print 2 decimals: a run of identical rounded small-message values fits a
    line exactly, which bought a breakpoint (at 1 KiB here) before the rounding was taken
    into account. The true curve has one, at the 8 KiB eager limit."""
    times = [round(1.58 + m / 12000 if m < 8192 else 4.74 + m / 12000, 2) for m in SIZES]
    naive, _ = fit_segments(SIZES, times, step=0.0)
    aware, quality = fit_segments(SIZES, times)
    assert [s.start for s in naive][1:] == [1024, 8192]  # what the rounding fooled
    assert [s.start for s in aware][1:] == [8192]
    assert quality["rounding_step"] == 0.01


def test_shared_memory_runs_calibrate_the_same_node_segment_and_gamma_is_measured_here(
        tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    sizes, lat = two_segment_curve(noise=0.01)
    shm = [0.3 + m / 9000.0 for m in sizes]
    with Store(tmp_path / "fabench.sqlite") as store:
        r_lat = _store_run(store, "mpi.latency", sizes, lat, 1, rng)
        r_shm = _store_run(store, "mpi.latency", sizes, shm, 1, rng, transport="shm")
        cal = calibrate(store, [r_lat, r_shm], "node").fabric
        # the same runs as if imported from another cluster: gamma cannot be measured here
        other = calibrate(store, [r_lat], "other", measure_gamma=False).fabric
    assert cal.intra[0].alpha_us == pytest.approx(0.3, rel=0.1)
    assert cal.intra[-1].bandwidth_MBps == pytest.approx(9000, rel=0.1)
    assert str(r_shm) in cal.provenance["shm_latency_us"].source
    assert not cal.provenance["gamma_MBps"].assumed
    assert "in-place float32 sum" in cal.provenance["gamma_MBps"].source
    assert cal.reduce_us_per_byte > 0
    assert other.provenance["gamma_MBps"].assumed and other.provenance["shm_latency_us"].assumed


# -- algorithms and what the libraries choose --------------------------------------------------
def test_rabenseifner_with_fewer_elements_than_ranks_moves_whole_messages() -> None:
    """MPICH's (and SimGrid's rab_rdb) split leaves every block empty but the last when the
    vector has fewer elements than ranks: each halving step then moves the whole message one
    way, as recursive doubling would (4096 ranks at 4-8 KiB read 21-35 % low against SimGrid
    before); with enough elements the steps halve. Open MPI's coll/base runs basic linear
    instead (decisions.openmpi_fallback)."""
    f = PRESETS["roce-100g"]()
    f.reduce_us_per_byte = 0.0
    c = Cluster(4096, 1, FatTree(4096, 24, tree_levels=3))
    few = predict(f, c, "allreduce", "rabenseifner", [8192])[0]  # 2048 floats < 4096 ranks
    many = predict(f, c, "allreduce", "rabenseifner", [16384])[0]  # 4096 floats
    rd = predict(f, c, "allreduce", "recursive_doubling", [8192])[0]
    assert many < few  # more data, yet faster: the halving works again
    assert few > 1.5 * rd  # 2 log2 P whole-message steps, against recursive doubling's log2 P
    assert openmpi_fallback("allreduce", "rabenseifner", 8192, 4096) == "linear"
    assert openmpi_fallback("allreduce", "rabenseifner", 16384, 4096) == "rabenseifner"


def test_library_columns_run_the_chosen_algorithm_at_each_size() -> None:
    f = PRESETS["ib-100g"]()
    c = Cluster(256, 1, FatTree(256, 24))
    sizes = [8, 4096, 65536, 1 << 20]
    pred = predict_all(f, c, "allreduce", sizes, libraries=("openmpi", "mpich"))
    for lib in ("openmpi", "mpich"):
        for i, algo in enumerate(pred.chosen[lib]):
            assert pred.times[lib][i] == pytest.approx(pred.times[algo][i])
    # Open MPI 4.1 at 256 ranks: below 4 KiB nonoverlapping (reduce + bcast), above it
    # Rabenseifner; MPICH 4.0: recursive doubling at 8 B, then Rabenseifner
    assert pred.chosen["openmpi"] == ["binomial", "rabenseifner", "rabenseifner",
                                      "rabenseifner"]
    assert pred.chosen["mpich"][0] == "recursive_doubling"
    # several ranks per node: MPICH composes hierarchically. Flat Rabenseifner halves the
    # vector with distance doubling (ranks 1, 2, 4 apart first): its big halves stay on the
    # node and each node's link carries about m / 2 per phase, where the leaders' allreduce
    # carries about m: the flat algorithm is the faster one for large messages
    packed = Cluster(32, 8, FatTree(32, 24))
    pp = predict_all(f, packed, "allreduce", [8, 1 << 20], libraries=("mpich",))
    assert pp.chosen["mpich"] == ["hierarchical", "hierarchical"]
    assert pp.times["rabenseifner"][1] < pp.times["hierarchical"][1]


def test_tree_algorithms_follow_their_shapes() -> None:
    f = PRESETS["ib-100g"]()
    c = Cluster(64, 1, FatTree(64, 24))
    small = [8]
    t = {a: predict(f, c, "bcast", a, small)[0]
         for a in ("binomial", "knomial", "binary_tree", "chain", "pipeline", "linear")}
    # small messages: depth decides; a pipeline of 63 hops and a linear fan-out of 63 sends
    # are the slowest, the log-depth trees the fastest
    assert max(t["binomial"], t["knomial"], t["binary_tree"]) < t["chain"] < t["pipeline"]
    assert t["knomial"] < t["linear"]
    # the step-level binomial and the tree-level k-nomial with radix 2 agree
    md = Model(f, c)
    assert tree_bcast(md, 8.0, "k2", lambda p: knomial_tree(p, 2)) == pytest.approx(
        t["binomial"], rel=0.05)


# -- bands --------------------------------------------------------------------------------------
def test_bands_contain_the_prediction_and_widen_with_wider_ranges() -> None:
    f = PRESETS["roce-40g"]()  # doc 004: 1.4-1.9 us, 4300-4613 MB/s
    c = Cluster(64, 1, FatTree(64, 24))
    pred = predict_all(f, c, "allreduce", [8, 1 << 20], libraries=("openmpi",))
    add_bands(pred, f, c, 24)
    b = pred.bands["openmpi"]
    for i in range(2):
        assert b.low[i] < pred.times["openmpi"][i] < b.high[i]
    narrow = PRESETS["roce-40g"]()
    narrow.provenance["latency_us"].low, narrow.provenance["latency_us"].high = 1.6, 1.7
    p2 = predict_all(narrow, c, "allreduce", [8], libraries=("openmpi",))
    add_bands(p2, narrow, c, 24)
    assert (p2.bands["openmpi"].high[0] - p2.bands["openmpi"].low[0]
            < b.high[0] - b.low[0])


# -- topologies ---------------------------------------------------------------------------------
def test_three_level_fat_tree_and_tapering() -> None:
    """7,861 nodes are no longer 328 leaves under one spine: pods of 24 leaves, 5 switches
    across pods; tapering at the pod uplinks loads the steps that cross pods only."""
    big = make_topology("fat-tree", 7861)
    assert isinstance(big, FatTree) and big.tree_levels == 3 and big.levels() == 3
    assert big.step("xor", 1).hops == 1 and big.step("xor", 32).hops == 3
    assert big.step("xor", 1024).hops == 5
    tapered = make_topology("fat-tree", 4096, hosts_per_leaf=16, levels=3,
                            oversubscription=(1.0, 4.0))
    assert tapered.step("xor", 64).congestion == pytest.approx(1.0)  # inside a pod
    assert tapered.step("xor", 1024).congestion == pytest.approx(4.0)  # across pods


@pytest.mark.sim
def test_dragonfly_routes_as_simgrid_does() -> None:
    d = make_topology("dragonfly", 128, dragonfly=(4, 2, 4, 4))
    assert d.pair_hops(0, 1) == 1  # same router
    assert d.pair_hops(0, 4) == 2  # same chassis: one green link
    assert d.pair_hops(0, 16) == 2  # same group, other chassis: one black link
    assert d.pair_hops(0, 32) == 3  # router 0 holds group 1's link: blue, then... one
    assert d.pair_hops(0, 127) == 5  # green, blue, green, black: the longest
    # all 32 nodes of a group to the next group share one blue link
    assert d.step("xor", 32).congestion == pytest.approx(32.0)
    assert d.levels() == 3


# -- validation ---------------------------------------------------------------------------------
def test_validate_runs_of_several_rank_counts_in_one_call(tmp_path: Path) -> None:
    """Each run is compared on its own cluster (its ranks / ppn nodes), with the prediction's
    band, in one table."""
    rng = np.random.default_rng(2)
    f = PRESETS["roce-100g"]()
    save_fabric(f, tmp_path)

    env = {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
           "OMPI_MCA_coll_tuned_allreduce_algorithm": "3"}
    with Store(tmp_path / "fabench.sqlite") as store:
        ids = []
        for ranks in (4, 16):
            c = Cluster(ranks, 1, make_topology("single", ranks))
            skew = barrier_exit_skew(f, c)
            truth = [t + skew for t in predict(f, c, "allreduce", "recursive_doubling",
                                               [8, 4096])]
            rid = store.begin_run(campaign_id=None, key=f"a{ranks}", kernel="mpi.allreduce",
                                  transport="tcp", mpi="openmpi", ranks=ranks,
                                  launcher="import:test", repeat=0, settings={"env": env})
            for size, t in zip((8, 4096), truth, strict=True):
                samples = list(1.25 * t * (1 + 0.01 * rng.standard_normal(20)))
                store.add_result(rid, ResultRecord(kernel="mpi.allreduce", size=size,
                                                   iterations=20, warmup=1, unit="us",
                                                   times=samples))
            store.finish_run(rid, status="ok")
            ids.append(rid)
    out = fabench_run("model", "validate", *map(str, ids), "--fabric", "roce-100g",
                      "--topology", "single", "--band-samples", "8", "--out",
                      str(tmp_path)).stdout
    summary = [line.split() for line in out.splitlines()
               if line.startswith("  mpi.allreduce")]
    assert sorted(int(r[2]) for r in summary) == [4, 16]
    # measured 25 % above the prediction (with its barrier exit skew): |error| 20 %
    assert all(18.0 < float(r[4].rstrip("%")) < 22.0 for r in summary), out


# slow: 122 s at load 15 (the whole published corpus fitted and simulated); `make test` runs it
@pytest.mark.slow
def test_published_validation_reports_fit_and_test_rows() -> None:
    """`model validate --published` as a user reads it, and the leave-one-system-out figures
    it prints as a regression guard (bounds with margin around docs/model.md's values, not
    the result itself; one corpus run for both: it is 6-7 CPU-s)."""
    out = fabench_run("model", "validate", "--published", "--band-samples", "4").stdout
    test_set = re.search(r"^# test set, times and ratios: (\d+) cases, median \|error\| "
                         r"([\d.]+) %", out, re.M)
    band = re.search(r"achieved (\d+)/(\d+) =", out)
    assert test_set and band, out[-3000:]
    cases, median = int(test_set[1]), float(test_set[2])
    assert cases >= 50 and median < 26  # 22.3 % (issue 30's fifth round)
    loso = out.split("# leave-one-system-out, test rows")[1].split("# error contributors")[0]
    classes = dict(re.findall(r"^#   (host-based alltoall|>= 32 ranks/node) +\d+ +([\d.]+)%",
                              loso, re.M))
    assert float(classes["host-based alltoall"]) < 29  # 25.1 %
    assert float(classes[">= 32 ranks/node"]) < 29  # 26.0 %
    assert "4 NICs per node [ALPSHW]" in out
    # a system without small runs of its own takes the other groups' median node memory;
    # [EXC]'s systems have no group among the fitted ones: all 7 fits, the product's prior
    prior = re.search(r"^# node memory of csd3-cclake-ib-ompi .*: ([\d.e+]+) MB/s, the "
                      r"median of (\d+) other", out, re.M)
    assert prior and prior[2] == "7" and float(prior[1]) == float(
        f"{NODE_MEMORY_MBPS.value:.3g}")
    inside, rows = int(band[1]), int(band[2])
    assert rows == cases and 0.75 <= inside / rows <= 1.0  # nominal 90 %
    # every system whose series starts small got its scale terms from those runs only
    fitted = set(re.findall(r"^# scale terms of (\S+),", out, re.M))
    assert {"aws-hpc6a-eks", "google-c2d-gce"} <= fitted
    assert "azure-hbv3-aks" not in fitted  # one job: nothing small to fit
    rows = [line for line in out.splitlines() if line.startswith("  ")]
    assert any(r.split()[0] == "fit" for r in rows) and any(r.split()[0] == "test"
                                                            for r in rows)
    # the fit rows reproduce what they were fitted to (SHArP on 128 hosts, [G16])
    g16 = [r for r in rows if r.startswith("  fit   switchib2-edr")]
    assert g16 and all(r.rstrip().endswith("+0.0%") for r in g16)
    assert "median |error|" in out and "[PS24]" in out and "[R20]" in out
