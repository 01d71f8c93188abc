"""fabench matrix --kernel tcp: the all-pairs matrix for hosts without MPI (matrix/pairwise.py),
real tcp.latency and tcp.bw pair jobs between the hosts of real testbeds with real faults."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import (
    Procs,
    fabench_cli,
    fabench_run,
    kill_left,
    own_testbeds,
    wait_for_children,
    wait_gone,
)
from fabench.matrix.pairwise import tournament
from fabench.matrix.stored import MatrixStore as Store  # the store with the matrix's tables
from fabench.testbed import TestbedConfig, create

needs_root = pytest.mark.usefixtures("root")  # a root testbed


@pytest.mark.parametrize("n", range(2, 12))
def test_tournament_meets_every_pair_once_and_each_host_once_a_round(n: int) -> None:
    rounds = tournament(n)
    assert len(rounds) == (n if n % 2 else n - 1)  # odd: one bye per round
    assert sorted(p for r in rounds for p in r) == [(i, j) for i in range(n)
                                                     for j in range(i + 1, n)]
    for r in rounds:
        hosts = [h for p in r for h in p]
        assert len(hosts) == len(set(hosts)) and len(r) == n // 2


def test_tcp_matrix_needs_hosts_it_can_start_jobs_on(tmp_path: Path) -> None:
    p = fabench_run("matrix", "--kernel", "tcp", "--on", "local", "--hosts", "3", "--out",
                    str(tmp_path), check=False)
    assert p.returncode == 2 and "--kernel tcp needs two or more hosts" in p.stderr, p.stderr
    p = fabench_run("matrix", "--kernel", "udp", "--out", str(tmp_path), check=False)
    assert p.returncode == 2 and "invalid choice" in p.stderr


def _pair_runs(store: Path, cid: int) -> list:
    with Store(store) as st:
        return [(r, st.matrix_pairs(r.id)) for r in st.runs(cid)]


@pytest.mark.netns
@needs_root
@pytest.mark.slow
def test_tcp_matrix_finds_a_one_way_link(tmp_path: Path) -> None:
    with own_testbeds(f"fbt{os.getpid() % 100000}"):
        fabench_cli("testbed", "up", "--name", "ow", "--hosts", "5",
                    "--impair", "h2>h4:rate=50mbit")
        p = fabench_cli("matrix", "--kernel", "tcp", "--on", "testbed", "ow", "--size", "256K",
                        "--out", str(tmp_path), "--json", check=False, timeout=600)
    assert p.returncode == 3, p.stdout + p.stderr
    j = json.loads(p.stdout)
    assert sorted(v["line"].split(":")[0] for v in j["verdicts"]) == [
        "asymmetric link h2 -> h4", "bad link h2 -> h4"], p.stdout
    assert len(j["latency_us"]) == 20 and j["hosts"] == ["h1", "h2", "h3", "h4", "h5"]
    assert "round 5/5" in p.stderr  # progress, one line a round
    runs = _pair_runs(tmp_path / "fabench.sqlite", j["campaign_id"])
    first, pairs = runs[0]
    assert {r.kernel for r, _ in runs} == {"matrix.tcp"} and first.status == "ok"
    assert len(pairs) == 20 and {p.mode for p in pairs} == {"concurrent"}
    assert all(len(p.latency_us) == 200 and len(p.bandwidth_us) == 4 for p in pairs)
    assert pairs[0].bytes_per_sample == 4 * 256 * 1024
    assert "fb-tcp-bw" in (first.command or "") and "--role client" in (first.command or "")
    assert [r.settings["mode"] for r, _ in runs[1:]] == ["isolated"] * (len(runs) - 1)


AGENT = """#!/bin/sh
# {host} answers the reachability probe (`true`), then is gone
if [ "$1" = {host} ] && [ "$2" != true ]; then
  echo "{host}: Connection closed by remote host" >&2; exit 255
fi
exec {agent} "$@"
"""


@pytest.mark.netns
@needs_root
@pytest.mark.slow
def test_tcp_matrix_host_lost_mid_pass_then_resumed(tmp_path: Path) -> None:
    """A host of a hostfile that answers the probe and then fails every job: its directions
    are marked unreachable after it failed with two partners (not waited on with all), the
    others are measured and stored, and --resume measures only what is missing (and finds
    the bad link of the lost host)."""
    with own_testbeds(f"fbl{os.getpid() % 100000}"):
        # every link shaped (1 Gbit/s), so that healthy directions measure the shaper, not
        # where the scheduler put five hosts' processes on two cores: unshaped, a CI run read
        # 1.4-3.3 GB/s and 5.8 or 9 us between healthy hosts and named one of them slow
        tb = create("hl", TestbedConfig(hosts=5, rate="1gbit", impairs=["h3-h4:rate=50mbit"]))
        hostfile = tmp_path / "hostfile"
        hostfile.write_text("h1\nh2\nh3\nh4\nh5\n")
        dying = tmp_path / "agent"
        dying.write_text(AGENT.format(host="h3", agent=tb.agent))
        dying.chmod(0o755)
        out = tmp_path / "out"

        def matrix(agent: Path, *args: str) -> subprocess.CompletedProcess[str]:
            env = {**os.environ, "FABENCH_RSH_AGENT": str(agent), "FABENCH_IFACE": "eth0"}
            return subprocess.run([*tb.hosts[0].enter, sys.executable, "-m", "fabench",
                                   "matrix", "--kernel", "tcp", "--on", "hosts", str(hostfile),
                                   "--size", "64K", "--lat-iterations", "50", "--out", str(out),
                                   "--json", *args], env=env, capture_output=True, text=True,
                                  timeout=600, check=False)

        t0 = time.monotonic()
        p = matrix(dying)
        lost_s = time.monotonic() - t0
        assert p.returncode == 3, p.stdout + p.stderr
        assert "hosts given up: h3" in p.stderr and "Connection closed" in p.stderr, p.stderr
        assert "--resume" in p.stderr
        j = json.loads(p.stdout)
        assert [v["line"] for v in j["verdicts"]] == ["unreachable h3"], p.stdout
        assert len(j["latency_us"]) == 12  # every direction among h1, h2, h4, h5
        p = matrix(Path(tb.agent), "--resume", str(j["campaign_id"]))
        assert p.returncode == 3, p.stdout + p.stderr
        j2 = json.loads(p.stdout)
        lines = sorted(v["line"].split(":")[0] for v in j2["verdicts"])
        # the fault on the lost host's link shows once it is measured, and nothing else: its
        # 8 directions, measured in a pass of their own, are judged with the other 12
        assert lines == ["bad link h3 -> h4", "bad link h4 -> h3"], p.stdout
        assert len(j2["latency_us"]) == 20
        assert j2["passes"][0]["role"] == "first" and j2["passes"][0]["directions"] == 8
        # the lost host cost no rendezvous timeouts (60 s each)
        assert lost_s < 60, lost_s


@pytest.mark.netns
@needs_root
@pytest.mark.slow
def test_tcp_matrix_interrupted_ends_its_jobs(tmp_path: Path) -> None:
    """SIGINT while the pair jobs of a round run in threads: each job's processes end (the
    pass has no handle on them but their PIDs below fabench), the pass and the matrix are
    stored as interrupted."""
    with own_testbeds(f"fbi{os.getpid() % 100000}"):
        fabench_cli("testbed", "up", "--name", "ti", "--hosts", "4",
                    "--impair", "h1-h2:rate=20mbit")
        fb = subprocess.Popen([sys.executable, "-m", "fabench", "matrix", "--kernel", "tcp",
                               "--on", "testbed", "ti", "--size", "4M", "--iterations", "100",
                               "--out", str(tmp_path)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, start_new_session=True)
        tree: Procs = []
        try:
            tree = wait_for_children(fb, "fb-tcp-bw", 2)  # the slow pair's stream runs
            os.kill(fb.pid, signal.SIGINT)
            _, err = fb.communicate(timeout=60)
            assert fb.returncode == 128 + signal.SIGINT, err
            assert "Traceback" not in err, err
            wait_gone(tree)
            with Store(tmp_path / "fabench.sqlite") as st:
                runs = st.runs()
                camps = [tuple(r) for r in st.db.execute("SELECT status FROM campaigns")]
            assert [(r.status, r.reason) for r in runs] == [("interrupted",
                                                             "interrupted by SIGINT")]
            assert camps == [("interrupted",)]
        finally:
            kill_left(fb, tree)


@pytest.mark.netns
@needs_root
@pytest.mark.slow
def test_tcp_matrix_out_of_time_blames_no_host(tmp_path: Path) -> None:
    """--timeout running out in a slow link's job: the directions left are unreachable for
    --resume, the reason names the timeout, and no host is given up for it."""
    with own_testbeds(f"fbo{os.getpid() % 100000}"):
        fabench_cli("testbed", "up", "--name", "to", "--hosts", "3",
                    "--impair", "h1-h2:rate=20mbit")
        p = fabench_cli("matrix", "--kernel", "tcp", "--on", "testbed", "to", "--size", "1M",
                        "--timeout", "3", "--out", str(tmp_path), "--json", check=False)
    assert p.returncode == 3, p.stdout + p.stderr
    assert "--timeout of 3 s ran out" in p.stderr and "given up" not in p.stderr, p.stderr
    lines = [v["line"] for v in json.loads(p.stdout)["verdicts"]]
    assert "unreachable h1 -> h2" in lines and all(ln.startswith("unreachable") for ln in lines)
