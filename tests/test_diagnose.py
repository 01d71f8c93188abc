"""`fabench diagnose transports`: the library's per-size report read from its own tools, the
paths that exist here, and a small real sweep through the CLI (JSON records with size, path,
chosen, best; the NIC path flagged; a recommendation drawn from the measured table)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import fabench_cli, missing
from fabench.diagnose.libchoice import (
    INF,
    ob1_choice,
    parse_proto_info,
    parse_ucx_info_endpoint,
    ucx_choice,
)
from fabench.diagnose.paths import Capabilities, discover, parse_ucx_devices, sweep_paths
from fabench.diagnose.session import QUICK_SIZES, Progress, transports_options
from fabench.kernels.transport_request import parse_transport
from fabench.mpi.onnode import FLAG
from fabench.mpi.openmpi import OpenMpi


def need(tool: str) -> None:
    if shutil.which(tool) is None:
        missing(f"{tool} not installed (make deps installs it)")


def test_ucx_reports_its_per_size_choice_and_follows_the_environment() -> None:
    need("ucx_info")
    shm = ucx_choice({"UCX_TLS": "posix"}, "intra")
    assert not shm.error, shm.error
    assert all(b.lanes == ("posix/memory",) for b in shm.bands)
    assert shm.bands[0].low == 0 and shm.bands[-1].high == INF
    assert shm.bands[-1].protocol == "rendezvous"
    # forcing tcp between on-node peers: UCX's own report names the network lanes
    tcp = ucx_choice({"UCX_TLS": "tcp"}, "intra")
    assert all(lane.startswith("tcp/") for b in tcp.bands for lane in b.lanes)
    # a rendezvous threshold moved by the environment moves UCX's reported band edge
    moved = ucx_choice({"UCX_TLS": "posix", "UCX_RNDV_THRESH": "65536"}, "intra")
    assert moved.bands[-1].low == 65536 != shm.bands[-1].low


def test_ucx_info_endpoint_text() -> None:
    text = """# lane[0]: 3:sysv/memory.0 md[2] -> md[2]/sysv/sysdev[255] am am_bw#0
#                 lane[1]:  5:cma/memory.0 md[4]            -> md[4]/cma/sysdev[255] rma_bw#0
#                tag_send: 0..<egr/short>..93..<egr/bcopy>..8256..<rndv>..(inf)
#            tag_send_nbr: 0..<egr/short>..93..<egr/bcopy>..262144..<rndv>..(inf)
"""
    bands, blocking = parse_ucx_info_endpoint(text)
    assert [(b.low, b.high, b.protocol, b.lanes) for b in bands] == [
        (0, 93, "eager short", ("sysv/memory",)), (93, 8256, "eager copy", ("sysv/memory",)),
        (8256, INF, "rendezvous", ("cma/memory",))]
    assert blocking[-1].low == 262144


def test_proto_info_table() -> None:
    text = """[1.0] [vm:1:0] | 0x56 ep_cfg[0] | tagged message by ucp_tag_send*() from host memory |
[1.0] [vm:1 :0] | 0..92 | eager short | sysv/memory |
[1.0] [vm:1 :0] | 93..7245 | eager copy-in copy-out | sysv/memory |
[1.0] [vm:1 :0] | 7246..inf | (?) rendezvous zero-copy read from remote | cma/memory |
"""
    bands = parse_proto_info(text)
    assert [(b.low, b.high, b.lanes) for b in bands] == [
        (0, 93, ("sysv/memory",)), (93, 7246, ("sysv/memory",)), (7246, INF, ("cma/memory",))]


def test_open_mpi_reports_vader_limits_and_the_mechanism_from_the_environment(
        openmpi: str) -> None:
    need("ompi_info")
    forced = ob1_choice("vader", {"OMPI_MCA_btl_vader_single_copy_mechanism": "none"})
    assert not forced.error
    assert "copy in/out" in forced.bands[-1].protocol
    assert forced.settings["btl_vader_single_copy_mechanism"] == "none (environment)"
    assert forced.bands[0].high == forced.bands[1].low > 0


def test_paths_here_have_no_hca_and_sweep_the_shared_memory_sets(openmpi: str) -> None:
    need("ucx_info")
    caps = discover(["openmpi"])
    assert "tcp" in caps.ucx_tls and not caps.hca_tls
    names = [p.name for p in sweep_paths(caps, "intra")]
    assert names[0] == "auto" and "ucx:tcp" in names and "ucx:posix" in names
    assert all(not n.startswith(("ucx:rc", "ucx:ud", "ucx:dc")) for n in names)
    inter = [p.name for p in sweep_paths(caps, "inter")]
    assert "ucx:posix" not in inter and "ob1/tcp" in inter


def test_hca_transports_are_swept_where_ucx_lists_them() -> None:
    # No HCA here: the list is what `ucx_info -d` prints on a host with one.
    text = "#      Transport: posix\n#      Transport: rc_mlx5\n#      Transport: dc_mlx5\n"
    caps = Capabilities(ucx_tls=parse_ucx_devices(text), flavours=["mpich"])
    caps.hca_tls = ["rc_mlx5", "dc_mlx5"]
    assert {"ucx:rc_mlx5", "ucx:dc_mlx5"} <= {p.name for p in sweep_paths(caps, "inter")}


@pytest.mark.timing
@pytest.mark.slow
def test_cli_sweep_records_chosen_best_and_flags_the_nic(tmp_path: Path, openmpi: str) -> None:
    proc = fabench_cli(
        "diagnose", "transports", "--mpi", "openmpi", "--path", "ucx:posix", "--path", "ucx:tcp",
        "--no-thresholds", "--sizes", "8,64K", "--iterations", "30", "--rounds", "2",
        "--no-prove", "--json", "--out", str(tmp_path), check=False, timeout=900)
    assert proc.returncode in (0, 3), proc.stderr
    recs = [json.loads(x) for x in proc.stdout.splitlines()]
    paths = [r for r in recs if r["type"] == "path"]
    assert {r["size"] for r in paths} == {8, 65536}
    assert {r["path"] for r in paths} == {"auto", "ucx:posix", "ucx:tcp"}
    for r in paths:
        assert {"size", "path", "chosen", "best"} <= set(r)
        assert r["best"] in {"auto", "ucx:posix", "ucx:tcp"}
        assert r["chosen"].startswith("ob1/vader")  # Open MPI's own choice on one host
    info = {r["path"]: r for r in recs if r["type"] == "path_info"}
    assert any(f.startswith(FLAG) for f in info["ucx:tcp"]["flags"])
    assert not info["auto"]["flags"] and not info["ucx:posix"]["flags"]
    assert all(r["intra_node_over_nic"] == (r["path"] == "ucx:tcp") for r in paths)
    for rec in (r for r in recs if r["type"] == "recommendation"):
        assert rec["path"] != "ucx:tcp"  # never recommends on-node traffic over the NIC
        assert rec["helps"]  # only a path measured better somewhere is recommended


def test_transport_auto_forces_nothing_and_keeps_the_selection_report() -> None:
    t = parse_transport("auto")
    assert str(t) == "auto" and not t.on_node
    launch = OpenMpi(mpirun="mpirun.openmpi").launch("exe", [], 2, t)
    args = " ".join(launch.argv)
    assert "--mca pml " not in args and "--mca btl " not in args
    assert "pml_base_verbose" in args and "btl_base_verbose" in args
    assert launch.env["UCX_LOG_LEVEL"] == "info"  # pml ucx, if it wins, reports its lanes


def test_run_environment_reaches_remote_ranks() -> None:
    launch = OpenMpi(mpirun="mpirun.openmpi").launch(
        "exe", [], 2, parse_transport("shm"), hosts=["a", "b"],
        forward_env=["OMPI_MCA_btl_vader_single_copy_mechanism", "UCX_RNDV_THRESH"])
    xs = [launch.argv[i + 1] for i, a in enumerate(launch.argv) if a == "-x"]
    assert {"OMPI_MCA_btl_vader_single_copy_mechanism", "UCX_RNDV_THRESH"} <= set(xs)


def test_transports_default_answers_at_a_users_pace_and_exhaustive_sweeps_all() -> None:
    fast = transports_options(False, placement="intra", rounds=None, sizes=None)
    assert fast.quick and not fast.thresholds and fast.sizes == QUICK_SIZES
    assert fast.ab_ranks == (2,) and fast.ab_rounds == 2 and fast.rounds == 1
    full = transports_options(True, placement="intra", rounds=None, sizes=None)
    assert not full.quick and full.thresholds and full.sizes is None
    assert full.ab_ranks == (2, 4) and full.ab_rounds == 3 and full.rounds == 2
    # what a user names wins either way
    named = transports_options(False, placement="intra", sizes="8,64K", thresholds=None,
                               ab_ranks=(2, 4))
    assert named.sizes == "8,64K" and named.ab_ranks == (2, 4) and named.quick


def test_progress_estimates_the_time_left() -> None:
    said: list[str] = []
    p = Progress(4, said.append)
    p.step("one")
    p.step("two")
    assert said[0].startswith("[1/4, ") and "s left] one" in said[0]
    assert said[1].startswith("[2/4, ")


def test_cli_default_says_its_plan_and_the_time_left(tmp_path: Path, openmpi: str) -> None:
    proc = fabench_cli(
        "diagnose", "transports", "--mpi", "openmpi", "--path", "ucx:posix", "--sizes", "8",
        "--rounds", "1", "--no-prove", "--out", str(tmp_path), check=False, timeout=600)
    assert proc.returncode in (0, 3), proc.stderr
    assert "2 paths x 2 kernels x 1 rounds" in proc.stderr
    assert "more with --exhaustive" in proc.stderr
    steps = [ln for ln in proc.stderr.splitlines() if ln.startswith("fabench: [")]
    assert [ln.split(",")[0] for ln in steps] == [f"fabench: [{k}/4" for k in range(1, 5)]
    assert all(" s left] " in ln for ln in steps)
