"""SimGrid: generated platforms and real smpirun runs of the C kernels."""

import shutil
from pathlib import Path

import pytest

from conftest import fabench_run, missing
from fabench.host.native import native_root
from fabench.model.catalog import save_fabric
from fabench.model.collectives import predict
from fabench.model.cost import Cluster
from fabench.model.fabric import Fabric, Segment
from fabench.model.presets import PRESETS
from fabench.model.topology import FatTree, TopologySpec
from fabench.sim.platform import make_platform, smpi_factors
from fabench.store.database import Store


@pytest.fixture(scope="module")
def simgrid() -> None:
    if shutil.which("smpirun") is None:
        missing("smpirun not found (Debian: apt-get install libsimgrid-dev)")
    if not (native_root() / "simgrid" / "fb-mpi-latency").is_file():
        missing("kernels not built with smpicc (SimGrid was missing at build time)")


def test_platforms_follow_facts() -> None:
    f = PRESETS["roce-100g"]()
    ft = make_platform(f, TopologySpec("fat-tree", 24), 240)
    assert 'topo_parameters="2;24,10;1,24;1,1"' in ft.xml and len(ft.hosts) == 240
    torus = make_platform(f, TopologySpec("torus", dims=(6, 8, 5)), 240)
    assert 'topology="TORUS" topo_parameters="6,8,5"' in torus.xml
    small = make_platform(f, TopologySpec("fat-tree", 24), 8)
    assert "FAT_TREE" not in small.xml and len(small.hosts) == 8


def test_three_level_and_dragonfly_platforms_match_the_model() -> None:
    """The generator builds the tree the analytic model prices: 7,861 nodes on 24-port-down
    leaves are 14 pods of 24 leaves, not 328 leaves under one spine; tapering halves the
    leaf uplinks; a dragonfly takes SimGrid's groups;chassis;routers;hosts form."""
    f = PRESETS["ib-100g"]()
    spec = TopologySpec("fat-tree", 24)
    big = make_platform(f, spec, 7861)
    assert 'topo_parameters="3;24,24,14;1,24,24;1,1,1"' in big.xml
    assert spec.build(7861).levels() == 3 and len(big.hosts) >= 7861
    tapered = make_platform(f, TopologySpec("fat-tree", 16, (2.0, 4.0), levels=3), 4096)
    assert 'topo_parameters="3;16,16,16;1,8,4;1,1,1"' in tapered.xml
    fly = make_platform(f, TopologySpec("dragonfly", dragonfly=(4, 2, 4, 4)), 128)
    assert 'topology="DRAGONFLY" topo_parameters="4,1;2,1;4,1;4"' in fly.xml
    assert len(fly.hosts) == 128


def test_smpi_factors_split_alpha_into_wire_and_endpoint() -> None:
    f = Fabric("x", [Segment(0, 5.0, 1 / 1000), Segment(65536, 20.0, 1 / 2000)],
               calibrated_hops=1, hop_latency_us=0.5, link_bandwidth_MBps=4000)
    cfg = smpi_factors(f)
    # wire = 2 links x 0.5 us; endpoint = alpha - wire, half on each side
    assert cfg["smpi/os"] == "0:2e-06:0;65535:9.5e-06:0"
    assert cfg["smpi/bw-factor"] == "0:0.25;65535:0.5"
    assert cfg["smpi/lat-factor"] == "0:1"


def _medians(store: Store, run_id: int) -> dict[int, float]:
    import numpy as np

    return {r.size: float(np.median(r.times)) for r in store.results(run_id)}


@pytest.mark.sim
def test_simulated_ping_pong_reproduces_the_fabric(simgrid: None, tmp_path: Path) -> None:
    """The SMPI settings derived from a fabric give back its point-to-point curve: the
    simulator and the analytic model share one calibration."""
    fab = Fabric("two-seg", [Segment(0, 4.0, 1 / 3000), Segment(65536, 16.0, 1 / 7000)],
                 origin="calibrated", calibrated_hops=1, hop_latency_us=0.4,
                 link_bandwidth_MBps=7000)
    save_fabric(fab, tmp_path)
    fabench_run("sim", "mpi.latency", "--fabric", "two-seg", "--nodes", "2", "--topology",
                "single", "--sizes", "8,32K,64K,1M", "--iterations", "3",
                "--out", str(tmp_path), timeout=120)
    with Store(tmp_path / "fabench.sqlite") as store:
        (run,) = store.runs()
        assert run.launcher == "simgrid" and "simulated" in run.flags
        assert run.mpi == "simgrid" and run.kernel_meta["flavour"] == "simgrid"
        sim = _medians(store, run.id)
        assert run.provenance["simulation"]["peak_rss_anon_mb"] > 0
        timed_us = sum(sum(r.times) for r in store.results(run.id))
        elapsed = run.provenance["kernel_elapsed_s"]
    for size, t in sim.items():
        assert t == pytest.approx(fab.time(size), rel=0.02), size
    # The kernel's own clock, simulated from MPI_Init on: never negative (it was -11000 s when
    # the start was read before MPI_Init, from the host's clock) and spanning the timed calls.
    assert isinstance(elapsed, float) and elapsed * 1e6 >= timed_us > 0


@pytest.mark.sim
def test_simulated_allreduce_on_a_fat_tree_against_the_model(simgrid: None,
                                                             tmp_path: Path) -> None:
    """16 ranks on two leaves, recursive doubling pinned: the simulated times are stored as a
    run and agree with the analytic prediction on the same fabric (within 25 %: SimGrid
    shares links by max-min fairness where the model assumes whole-link steps)."""
    # SMPI does not charge the local reduction's compute (it runs inside the simulated MPI
    # call, outside any benchmarked user code), so the model is compared with gamma = 0.
    f = PRESETS["roce-100g"]()
    f.name, f.reduce_us_per_byte = "roce-no-gamma", 0.0
    save_fabric(f, tmp_path)
    proc = fabench_run("sim", "mpi.allreduce", "--fabric", f.name, "--nodes", "16",
                       "--hosts-per-leaf", "8", "--algorithm", "recursive_doubling",
                       "--sizes", "8,4K,256K", "--iterations", "3", "--out", str(tmp_path),
                       timeout=180)
    assert "smpi/allreduce:rdb" in proc.stdout
    with Store(tmp_path / "fabench.sqlite") as store:
        (run,) = store.runs()
        sim = _medians(store, run.id)
        assert run.provenance["simulation"]["cfg"]["smpi/allreduce"] == "rdb"
    cluster = Cluster(16, 1, FatTree(16, 8))
    pred = predict(f, cluster, "allreduce", "recursive_doubling", sorted(sim))
    for (size, t), p in zip(sorted(sim.items()), pred, strict=True):
        assert t == pytest.approx(p, rel=0.25), (size, t, p)
    # and the simulation is monotonic in size
    times = [sim[s] for s in sorted(sim)]
    assert times == sorted(times)
    # the HTML report draws the prediction for exactly this simulated setup beside it
    from fabench.report.model import build_report
    from fabench.report.prediction import prediction_section

    with Store(tmp_path / "fabench.sqlite") as store:
        html = prediction_section(build_report(store, store.runs()).series)
    assert "predicted (roce-no-gamma, recursive_doubling)" in html
    assert "simulated (roce-no-gamma, recursive_doubling)" in html and "<svg" in html


@pytest.mark.sim
def test_pairwise_alltoall_at_a_rank_count_that_is_no_power_of_two(simgrid: None,
                                                                  tmp_path: Path) -> None:
    """Open MPI's pairwise alltoall (send to rank + k, receive from rank - k) runs at any P;
    SimGrid's "pair" (rank XOR k) refuses P = 6, so the model's pairwise is pinned to SimGrid's
    "ring", the same exchange order. P - 1 steps of one message each: at least 5 latencies."""
    f = PRESETS["roce-100g"]()
    save_fabric(f, tmp_path)
    proc = fabench_run("sim", "mpi.alltoall", "--fabric", f.name, "--nodes", "6",
                       "--algorithm", "pairwise", "--sizes", "8", "--iterations", "2",
                       "--out", str(tmp_path), timeout=180)
    assert "smpi/alltoall:ring" in proc.stdout
    with Store(tmp_path / "fabench.sqlite") as store:
        (run,) = store.runs()
        (t,) = _medians(store, run.id).values()
    pred = predict(f, Cluster(6, 1, FatTree(6, 24)), "alltoall", "pairwise", [8])[0]
    assert t == pytest.approx(pred, rel=0.25)


@pytest.mark.sim
def test_in_network_cannot_be_simulated(simgrid: None, tmp_path: Path) -> None:
    bad = fabench_run("sim", "mpi.allreduce", "--fabric", "roce-100g", "--nodes", "4",
                      "--algorithm", "in_network", "--out", str(tmp_path), check=False)
    assert bad.returncode != 0
    assert "switches cannot compute" in bad.stdout + bad.stderr


def _sim_allreduce(tmp_path: Path, sync: str) -> tuple[dict[int, float], list[str]]:
    out = tmp_path / sync
    fabench_run("sim", "mpi.allreduce", "--fabric", "roce-100g", "--nodes", "48",
                "--hosts-per-leaf", "8", "--algorithm", "rabenseifner", "--sizes", "8,64K",
                "--iterations", "2", "--warmup-sync", sync, "--out", str(out), timeout=180)
    with Store(out / "fabench.sqlite") as store:
        (run,) = store.runs()
        return _medians(store, run.id), run.settings["kernel_args"]


@pytest.mark.sim
def test_clock_started_warmups_give_the_barrier_started_results(simgrid: None,
                                                                tmp_path: Path) -> None:
    """`fabench sim` starts warm-up calls at one instant of the simulated clock instead of
    after a barrier (far fewer simulated messages); the timed calls, still after a barrier,
    read the same. The choice is kept in the stored run. (Rabenseifner: without a warm-up its
    first call reads 3 % high, so the warm-up must leave the ranks as a timed call does.)"""
    clock, args = _sim_allreduce(tmp_path, "clock")
    barrier, args_b = _sim_allreduce(tmp_path, "barrier")
    assert args[args.index("--warmup-sync") + 1] == "clock"
    assert args_b[args_b.index("--warmup-sync") + 1] == "barrier"
    for size, t in barrier.items():
        assert clock[size] == pytest.approx(t, abs=0.01), size



@pytest.mark.sim
@pytest.mark.parametrize(("topology", "algorithm", "sizes"), [
    (["--topology", "fat-tree", "--hosts-per-leaf", "4", "--levels", "3",
      "--leaves-per-pod", "4", "--oversubscription", "1,2"], "recursive_doubling",
     "8,4K,256K"),
    (["--topology", "dragonfly", "--dragonfly", "4x2x4x2"], "recursive_doubling",
     "8,4K,256K"),
    # fewer floats than ranks (16 and 32 < 64): Rabenseifner's uneven blocks
    (["--topology", "fat-tree", "--hosts-per-leaf", "8"], "rabenseifner", "64,128,64K"),
])
def test_simulated_allreduce_on_three_level_trees_and_dragonflies_against_the_model(
        simgrid: None, tmp_path: Path, topology: list[str], algorithm: str,
        sizes: str) -> None:
    """The platform generator and the analytic model build the same topology: a 64-node
    three-level tree with tapered pod uplinks, a 64-node dragonfly, and Rabenseifner with
    fewer elements than ranks agree within 25 % per size (the model's steps wait for the
    busiest link; SimGrid shares by max-min fairness)."""
    f = PRESETS["ib-100g"]()
    f.name, f.reduce_us_per_byte = "ib-no-gamma", 0.0
    save_fabric(f, tmp_path)
    fabench_run("sim", "mpi.allreduce", "--fabric", f.name, "--nodes", "64", *topology,
                "--algorithm", algorithm, "--sizes", sizes, "--out", str(tmp_path),
                timeout=300)
    with Store(tmp_path / "fabench.sqlite") as store:
        (run,) = store.runs()
        sim = _medians(store, run.id)
        spec = TopologySpec.from_dict(run.provenance["simulation"]["topology_spec"])
    cluster = Cluster(64, 1, spec.build(64))
    pred = predict(f, cluster, "allreduce", algorithm, sorted(sim))
    for (size, t), p in zip(sorted(sim.items()), pred, strict=True):
        assert t == pytest.approx(p, rel=0.25), (size, t, p)
