"""Prediction intervals in `model predict` and the small-to-large path from the command line
(`model calibrate --scale-runs`, then `model predict` at many nodes): known answers."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest

from conftest import ROOT, fabench_run
from fabench.model.catalog import load_fabric
from fabench.model.collectives import Prediction, algorithms
from fabench.model.cost import Cluster, Model
from fabench.model.decisions import library_choice
from fabench.model.fabric import Fabric, Segment
from fabench.model.families import in_network_defaults
from fabench.model.innetwork import in_network_time
from fabench.model.intervals import Score, add_intervals, fabric_sigma, interval
from fabench.model.scale import NIC_GAP_GRID, NOISE_GRID
from fabench.model.topology import TopologySpec
from fabench.model.validate import scale_observations
from fabench.records import ResultRecord
from fabench.store.database import Store

FIX = ROOT / "tests" / "fixtures" / "import"


def _scores(plain: list[float], normalised: list[float | None] | None = None,
            ppn: list[int] | None = None) -> list[Score]:
    norm = normalised or [None] * len(plain)
    ppns = ppn or [1] * len(plain)
    return [Score(f"g{i}", p, n, k, False) for i, (p, n, k) in
            enumerate(zip(plain, norm, ppns, strict=True))]


def test_interval_is_the_split_conformal_quantile() -> None:
    # 19 scores 0.1..1.9: at 90 % the ceil(20 x 0.9) = 18th smallest, 1.8
    sc = _scores([0.1 * k for k in range(1, 20)])
    iv = interval(sc, None, 0.9, signed=False)
    assert iv.q == pytest.approx(1.8) and iv.rows == 19
    assert iv.width == pytest.approx(math.exp(3.6))
    # 8 scores are too few for 90 % (ceil(9 x 0.9) = 9 > 8): an infinite band, said so
    assert math.isinf(interval(sc[:8], None, 0.9, signed=False).q)


def test_normalised_interval_scales_with_the_systems_own_fit_error() -> None:
    # normalised scores 1..19 (plain / sigma of their systems): the 18th smallest, 18,
    # times this fabric's sigma 0.2: q = 3.6
    sc = _scores([1.0] * 19, [float(k) for k in range(1, 20)])
    assert interval(sc, 0.2, 0.9, signed=False).q == pytest.approx(3.6)


def test_mondrian_interval_uses_the_class_when_it_holds_enough_rows() -> None:
    # 19 rows at 1 rank/node with small scores, 19 at 96 ranks/node with large ones
    sc = _scores([0.01 * k for k in range(1, 20)] + [1.0 + 0.1 * k for k in range(1, 20)],
                 ppn=[1] * 19 + [96] * 19)
    assert interval(sc, None, 0.9, ppn=1, mondrian=True, signed=False).q == pytest.approx(0.18)
    assert interval(sc, None, 0.9, ppn=64, mondrian=True, signed=False).q == pytest.approx(2.8)
    # the whole pool (38 rows): ceil(39 x 0.9) = 36th smallest = 1.0 + 1.7
    assert interval(sc, None, 0.9, ppn=1, signed=False).q == pytest.approx(2.7)
    # a class too small for the level falls back to the whole pool
    assert interval(sc[:19] + sc[19:24], None, 0.9, ppn=96, mondrian=True,
                    signed=False).rows == 24


def test_signed_interval_takes_each_side_from_its_own_tail() -> None:
    # 39 signed log residuals log(predicted / published): -3.0 .. -0.1 (30 rows where the
    # model was too fast) and 0.1 .. 0.9 (9 too slow). Each tail at (1 + 0.9) / 2 = 95 %:
    # ceil(40 x 0.95) = 38th smallest. Upper side: of -residual (0.1 .. 3.0 and -0.9 ..
    # -0.1) the 38th smallest is 2.9; lower side: of the residual, 0.8
    signed = [-0.1 * k for k in range(1, 31)] + [0.1 * k for k in range(1, 10)]
    sc = [Score(f"g{i}", abs(x), None, 1, False, x) for i, x in enumerate(signed)]
    iv = interval(sc, None, 0.9)
    assert (iv.down, iv.up) == (pytest.approx(0.8), pytest.approx(2.9))
    lo, hi = iv.factors
    assert lo == pytest.approx(math.exp(-0.8)) and hi == pytest.approx(math.exp(2.9))
    # narrower than the symmetric band over the same rows: |x|'s 36th smallest, 2.7
    assert iv.width < interval(sc, None, 0.9, signed=False).width
    assert interval(sc, None, 0.9, signed=False).q == pytest.approx(2.7)
    # normalised: each row's signed residual over its own sigma, times the fabric's
    nsc = [Score(s.group, s.plain, s.plain / 0.5, 1, False, s.log_ratio, 0.5) for s in sc]
    nv = interval(nsc, 0.2, 0.9)
    assert (nv.down, nv.up) == (pytest.approx(0.8 / 0.5 * 0.2), pytest.approx(2.9 / 0.5 * 0.2))
    pred = Prediction("allreduce", [8], {"ring": [10.0]}, chosen={})
    add_intervals(pred, iv)
    assert pred.bands["ring"].low[0] == pytest.approx(10.0 * math.exp(-0.8))
    assert pred.bands["ring"].high[0] == pytest.approx(10.0 * math.exp(2.9))
    assert "below" in pred.band_label and "above" in pred.band_label


def test_add_intervals_scales_every_column() -> None:
    pred = Prediction("allreduce", [8, 1024], {"ring": [10.0, 20.0], "openmpi": [5.0, 40.0]},
                      chosen={"openmpi": ["binomial", "ring"]})
    iv = interval(_scores([0.1 * k for k in range(1, 20)]), None, 0.9, signed=False)
    add_intervals(pred, iv)
    assert pred.bands["ring"].low[1] == pytest.approx(20.0 * math.exp(-1.8))
    assert pred.bands["openmpi"].high[0] == pytest.approx(5.0 * math.exp(1.8))
    assert pred.band_level == 0.9 and "90% prediction interval" in pred.band_label


def _osu_allreduce(path: Path, times: dict[int, float]) -> None:
    lines = ["", "# OSU MPI Allreduce Latency Test v7.4", "# Datatype: MPI_CHAR.",
             "# Size       Avg Latency(us)"]
    lines += [f"{s:<10} {t:>18.2f}" for s, t in sorted(times.items())]
    path.write_text("\n".join(lines) + "\n")


# slow: 99 s at load 15 (scale terms fitted over a grid); `make test` runs it
@pytest.mark.slow
def test_calibrate_scale_runs_then_predict_at_many_nodes(tmp_path: Path) -> None:
    """A user's small runs (8 and 16 nodes x 4 ranks) made by a machine whose scale terms are
    known (grid values): `model calibrate --scale-runs` finds them again from the imported
    OSU files, and `model predict -N 128` gives the same machine's 128-node time, with a
    90 % prediction interval normalised by the fit's own error."""
    store = str(tmp_path)
    fabench_run("import", "osu", str(FIX / "osu_latency_z.txt"), "--transport", "ib",
                "--store", store)
    fabench_run("model", "calibrate", "1", "--name", "base", "--family", "ib", "--out", store)
    truth = load_fabric("base", tmp_path)
    noise, gap = NOISE_GRID[9], NIC_GAP_GRID[5]  # 1.78 us per step, 0.1 us per message
    truth.noise_us, truth.nic_gap_us, truth.noise_exponent = noise, gap, 0.5
    ppn, sizes = 4, [8, 64, 1024, 8192, 65536, 1 << 20]
    spec = TopologySpec("fat-tree", 24)

    def t(nodes: int, m: int) -> float:
        cl = Cluster(nodes, ppn, spec.build(nodes))
        algo = library_choice("openmpi", "allreduce", nodes * ppn, ppn, m)
        return algorithms("allreduce")[algo][0](Model(truth, cl), float(m))
    files = []
    for nodes in (8, 16):
        p = tmp_path / f"ar{nodes}.txt"
        _osu_allreduce(p, {m: t(nodes, m) for m in sizes})
        files.append(p)
    fabench_run("import", "osu", str(files[0]), "--ranks", "32", "--mpi", "openmpi",
                "--store", store)
    fabench_run("import", "osu", str(files[1]), "--ranks", "64", "--mpi", "openmpi",
                "--store", store)
    out = fabench_run("model", "calibrate", "1", "--name", "mine", "--family", "ib",
                      "--scale-runs", "2", "3", "--scale-ppn", "4", "--out", store).stdout
    assert "scale terms fitted to runs 2, 3 (12 times)" in out
    mine = load_fabric("mine", tmp_path)
    assert (mine.noise_us, mine.nic_gap_us, mine.noise_exponent) == pytest.approx(
        (noise, gap, 0.5))
    assert mine.node_memory_MBps == 0.0
    assert mine.fit["scale"]["rms_log_error"] < 0.01
    assert mine.fit["scale"]["nics_per_node"] == 1  # the runs' nodes, as given (default)
    bad = fabench_run("model", "calibrate", "1", "--name", "bad", "--family", "ib",
                      "--scale-runs", "2", "--scale-nics-per-node", "0", "--out", store,
                      check=False)
    assert bad.returncode == 2 and "--scale-nics-per-node must be 1..64" in bad.stderr
    # fitted to the 8-node runs alone (one node count: no noise exponent), the 16-node runs
    # miss by a little: that extrapolation error is the fabric's difficulty
    extrap = mine.fit["scale"]["extrapolation_rms_log_error"]
    assert extrap > 0
    assert "collective runs 2, 3" in mine.provenance["noise_us"].source
    sigma = fabric_sigma(mine)
    assert sigma == pytest.approx(max(0.1, extrap))  # floored at 0.1

    res = fabench_run("model", "predict", "-f", "mine", "-N", "128", "--ppn", "4",
                      "-c", "allreduce", "--sizes", "8,1M", "--mpi", "openmpi", "--json",
                      "--out", store).stdout
    recs = [json.loads(x) for x in res.splitlines()]
    factors = []
    for rec in recs:
        assert rec["times_us"]["openmpi"] == pytest.approx(t(128, rec["size"]), rel=1e-3)
        lo, hi = rec["bands_us"]["openmpi"]
        assert rec["band_kind"] == "prediction interval" and rec["band_level"] == 0.9
        assert lo < rec["times_us"]["openmpi"] < hi
        factors.append((lo / rec["times_us"]["openmpi"], hi / rec["times_us"]["openmpi"]))
    # one relative interval at every size (signed: not symmetric in log, each side its own)
    assert factors[0] == pytest.approx(factors[1], rel=1e-6)
    text = fabench_run("model", "predict", "-f", "mine", "-N", "128", "--ppn", "4",
                       "-c", "allreduce", "--sizes", "8", "--out", store).stdout
    assert "90% prediction interval" in text and f"scale fit's difficulty {sigma:.2f}" in text
    # the parameter bands stay available under their own name
    par = fabench_run("model", "predict", "-f", "mine", "-N", "128", "--ppn", "4", "-c",
                      "allreduce", "--sizes", "8", "--bands", "parameters", "--json",
                      "--out", store).stdout
    assert json.loads(par.splitlines()[0])["band_kind"] == "parameters"


def test_streaming_rate_is_a_fraction_of_the_fabrics_link_rate() -> None:
    # sharp2 on one leaf (1 level) of 16 nodes x 1 rank: from 16 KiB the streaming engine,
    # max(first trip, streaming_us) + m / (0.95 x link)
    inn, prov = in_network_defaults("ib", "sharp2")
    assert inn.streaming_fraction == 0.95
    assert "[G20]" in prov["in_network.streaming_fraction"].source
    assert "[NVSHARP]" in prov["in_network.streaming_fraction"].source
    m = float(1 << 20)
    times = {}
    for link in (12500.0, 25000.0):
        f = Fabric("t", [Segment(0, 1.0, 1 / 24000)], calibrated_hops=1, hop_latency_us=0.1,
                   link_bandwidth_MBps=link, in_network=copy.deepcopy(inn))
        cl = Cluster(16, 1, TopologySpec("fat-tree", 24).build(16))
        first = inn.host_overhead_us + 2 * 1 * inn.level_us
        expect = max(first, inn.streaming_us) + m / (0.95 * link)
        assert in_network_time(Model(f, cl), m) == pytest.approx(expect)
        times[link] = expect
    # [NVSHARP]'s 1 MiB (101.53 us) comes back on an HDR100 link within 1 %
    assert times[12500.0] == pytest.approx(101.53, rel=0.01)
    # without a fraction the fixed rate applies whatever the link
    inn0 = copy.deepcopy(inn)
    inn0.streaming_fraction = 0.0
    assert inn0.streaming_rate(25000.0) == inn.streaming_MBps


def test_calibrate_scale_runs_from_fabench_runs_then_predict(openmpi: str,
                                                              tmp_path: Path) -> None:
    """The same path with fabench's own runs (2 ranks over tcp on this host, one per
    'node'): the kernels' records (barrier exit skew included) feed the scale fit, the
    fabric keeps it, and `model predict` at 64 nodes prints a 90 % interval."""
    spec = tmp_path / "c.yaml"
    spec.write_text("name: small\nruns:\n  - kernel: [mpi.latency, mpi.allreduce]\n"
                    "    transport: tcp\n    ranks: 2\n    sizes: '8,1K,64K'\n"
                    "    iterations: 100\n")
    out = tmp_path / "out"
    fabench_run("run", str(spec), "--out", str(out))
    with Store(out / "fabench.sqlite") as st:
        ids = {r.kernel: r.id for r in st.runs(1)}
    cal = fabench_run("model", "calibrate", str(ids["mpi.latency"]), "--name", "here",
                      "--scale-runs", str(ids["mpi.allreduce"]), "--out", str(out)).stdout
    assert f"scale terms fitted to runs {ids['mpi.allreduce']} (3 times)" in cal
    f = load_fabric("here", out)
    assert f.fit["scale"]["observations"] == 3 and f.fit["scale"]["ppn"] == 1
    assert math.isfinite(f.fit["scale"]["rms_log_error"])
    # one node count: nothing to extrapolate to, the fit's own error is the difficulty
    assert f.fit["scale"]["extrapolation_rms_log_error"] is None
    assert fabric_sigma(f) == pytest.approx(max(0.1, f.fit["scale"]["rms_log_error"]))
    res = fabench_run("model", "predict", "-f", "here", "-N", "64", "-c", "allreduce",
                      "--sizes", "8", "--json", "--out", str(out)).stdout
    rec = json.loads(res.splitlines()[0])
    assert rec["band_kind"] == "prediction interval" and rec["band_level"] == 0.9
    lo, hi = rec["bands_us"]["openmpi"]
    assert lo < rec["times_us"]["openmpi"] < hi


def test_scale_runs_are_predicted_with_the_rules_of_their_recorded_open_mpi(
        tmp_path: Path) -> None:
    """A stored 2 x 32-rank allreduce at 1 MiB: the Open MPI its campaign recorded decides the
    algorithm its observation is predicted with (4.0.3's rules run the ring there, 4.1's
    Rabenseifner; docs/model.md, "What your MPI will do")."""
    f = Fabric("t", [Segment(0, 2.0, 1e-3)], calibrated_hops=1, hop_latency_us=0.3,
               intra=[Segment(0, 0.5, 1e-4)], reduce_us_per_byte=2e-4)
    cluster = Cluster(2, 32, TopologySpec("fat-tree", 24).build(2))
    want = {v: algorithms("allreduce")[a][0](Model(f, cluster), float(1 << 20))
            for v, a in (("4.0.3", "ring"), ("4.1.4", "rabenseifner"))}
    assert want["4.0.3"] != pytest.approx(want["4.1.4"])
    with Store(tmp_path / "s.sqlite") as st:
        for version in want:
            cid = st.begin_campaign(f"ompi {version}", {}, {
                "libraries": {"openmpi": f"mpirun (Open MPI) {version}"}})
            rid = st.begin_run(campaign_id=cid, key=version, kernel="mpi.allreduce",
                               transport="tcp", mpi="openmpi", ranks=64, launcher="import:osu",
                               repeat=0, settings={})
            st.add_result(rid, ResultRecord(kernel="mpi.allreduce", size=1 << 20, iterations=3,
                                            warmup=0, unit="us", times=[900.0] * 3))
            st.finish_run(rid, status="ok")
            st.end_campaign(cid, "finished")
            (obs,) = scale_observations(st, [rid], 32, TopologySpec("fat-tree", 24))
            assert obs.predict(f) == pytest.approx(want[version]), version
