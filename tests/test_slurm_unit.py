"""Slurm's pure pieces, without Slurm: the job script's #SBATCH lines, reading a job's state,
and the crossing check on copies of /proc/net/dev. test_slurm.py runs the real thing."""

from pathlib import Path

import pytest

from fabench.errors import FabenchError
from fabench.host.launched import LaunchResult
from fabench.records import KernelOutput, ResultRecord
from fabench.schedulers.slurm import is_active, parse_job_state, sbatch_lines
from fabench.schedulers.slurm_netdev import check_slurm_crossing, snapshot_line

NETDEV = """Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop \
fifo colls carrier compressed
    lo: {lo} 10 0 0 0 0 0 0 {lo} 10 0 0 0 0 0 0
  eth0: {rx} 100 0 0 0 0 0 0 {tx} 100 0 0 0 0 0 0
"""


def test_sbatch_lines_pair_options_with_values() -> None:
    assert sbatch_lines(["-N", "2", "--ntasks-per-node=1", "--exclusive", "-p", "debug"]) == [
        "#SBATCH -N 2", "#SBATCH --ntasks-per-node=1", "#SBATCH --exclusive",
        "#SBATCH -p debug"]
    assert sbatch_lines([]) == []


def test_sbatch_lines_refuse_a_line_break() -> None:
    # "\n" would end the #SBATCH comment and make the rest a command of the job script.
    with pytest.raises(FabenchError, match="control characters"):
        sbatch_lines(["-p", "debug\nrm -rf /tmp/x"])


def test_job_state_parsing() -> None:
    line = ("JobId=7 JobName=fabench-mpi.latency JobState=COMPLETED Reason=None "
            "ExitCode=0:0 NumNodes=2 NumCPUs=2")
    assert parse_job_state(line) == ("COMPLETED", 0, 2)
    assert parse_job_state("JobId=8 JobState=FAILED ExitCode=3:0 NumNodes=1") == ("FAILED", 3, 1)
    # killed by signal 9: a shell would say 137
    assert parse_job_state("JobId=9 JobState=CANCELLED ExitCode=0:9") == ("CANCELLED", 137, 0)
    assert parse_job_state("slurm_load_jobs error: Invalid job id specified") == ("UNKNOWN", 0, 0)
    assert is_active("PENDING") and is_active("COMPLETING") and not is_active("COMPLETED")


def _snap(wd: Path, stem: str, job: str, phase: str, node: str, rx: int, tx: int) -> None:
    (wd / f"{stem}.{job}.{phase}.{node}.netdev").write_text(NETDEV.format(lo=5, rx=rx, tx=tx))


def _result(nbytes: int) -> LaunchResult:
    rec = ResultRecord("mpi.bw", 1 << 20, 10, 0, "us", [1.0] * 10, bytes_per_sample=nbytes / 10)
    return LaunchResult(KernelOutput(results=[rec]), 0, ["sbatch"], "")


def test_crossing_check_flags_packed_ranks(tmp_path: Path) -> None:
    for node in ("n1", "n2"):
        _snap(tmp_path, "run-001", "42", "before", node, 1000, 1000)
        _snap(tmp_path, "run-001", "42", "after", node, 1000 + 50, 1000 + 50)  # ~nothing sent
    res = _result(10_000_000)
    check_slurm_crossing(res, wd=tmp_path, stem="run-001", job="42", alloc_nodes=2, ranks=2,
                         on_node=False, ifname="eth0")
    assert res.extra["interface_bytes"]["per_host"]["n1"]["tx_bytes"] == 50
    assert len(res.flags) == 1 and "traffic-did-not-cross" in res.flags[0]
    assert "-N 2 --ntasks-per-node=1" in res.flags[0]


def test_crossing_check_passes_a_run_that_crossed(tmp_path: Path) -> None:
    for node in ("n1", "n2"):
        _snap(tmp_path, "r", "1", "before", node, 0, 0)
        _snap(tmp_path, "r", "1", "after", node, 6_000_000, 6_000_000)
    res = _result(10_000_000)
    check_slurm_crossing(res, wd=tmp_path, stem="r", job="1", alloc_nodes=2, ranks=2,
                         on_node=False, ifname="eth0")
    assert res.flags == []


def test_crossing_check_on_node_and_missing_copies(tmp_path: Path) -> None:
    _snap(tmp_path, "r", "1", "before", "n1", 0, 0)
    _snap(tmp_path, "r", "1", "after", "n1", 0, 0)
    res = _result(10_000_000)
    check_slurm_crossing(res, wd=tmp_path, stem="r", job="1", alloc_nodes=1, ranks=2,
                         on_node=True, ifname=None)
    assert res.flags == [] and any("stays on one node" in n for n in res.notes)
    res = _result(1000)
    check_slurm_crossing(res, wd=tmp_path, stem="r", job="2", alloc_nodes=2, ranks=2,
                         on_node=False, ifname=None)
    assert res.flags == [] and any("counters of the allocation's nodes missing" in n
                                   for n in res.notes)


def test_snapshot_line_quotes_the_stem() -> None:
    assert snapshot_line("run-001-mpi.bw", "before") == "fabench_netdev run-001-mpi.bw before"
    assert snapshot_line("a b;c", "after") == "fabench_netdev 'a b;c' after"


def test_the_allocation_size_from_sbatch_options_and_sinfo() -> None:
    from fabench.schedulers.slurm import nodes_asked, sbatch_option, usable_nodes, without_options
    assert nodes_asked(["-N", "4", "-p", "batch"]) == 4
    assert nodes_asked(["--nodes=2-8"]) == 2  # a range: the least Slurm guarantees
    assert nodes_asked(["-N3"]) == 3 and nodes_asked(["-p", "x"]) is None
    with pytest.raises(FabenchError, match="a number of nodes"):
        nodes_asked(["-N", "many"])
    assert sbatch_option(["-p", "a", "--partition=b"], ("-p", "--partition")) == "b"
    assert without_options(["-N", "2", "--ntasks-per-node=4", "-p", "x", "-N3"],
                           ("-N", "--nodes", "--ntasks-per-node")) == ["-p", "x"]
    sinfo = ("n1 idle debug*\nn2 mix debug*\nn3 down* debug*\nn4 idle* debug*\n"
             "n5 drain debug*\nn1 idle big\nn6 alloc big\n")
    # the default partition's nodes that take jobs: n3 is down, n4 not responding, n5 drained
    assert usable_nodes(sinfo, None) == 2
    assert usable_nodes(sinfo, "big") == 2 and usable_nodes(sinfo, "none") == 0
