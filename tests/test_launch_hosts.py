"""The hosts launcher on an emulated cluster: fabench runs on h1 as on a login node, the
hostfile names h2 and h3, and the testbed's agent stands in for ssh.

What stops short of a real cluster: the agent enters a namespace instead of opening an ssh
session (no sshd, keys or remote shell start-up here), and every "node" shares this machine's
file system, so nothing checks that the kernels are installed on each node.
"""

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import own_testbeds
from fabench.errors import FabenchError
from fabench.host.placement import HostSlots, place_ranks
from fabench.kernels.transport_request import parse_transport
from fabench.report.campaign_summary import campaign_lines
from fabench.schedulers.hosts import parse_hostfile
from fabench.store.database import Store
from fabench.testbed import TestbedConfig, TestbedState, create


def test_hostfile_and_placement(tmp_path: Path) -> None:
    f = tmp_path / "hosts"
    f.write_text("# nodes\nnode1 slots=4\nnode2   # the second\n\nnode3 slots=2\n")
    hosts = parse_hostfile(f)
    assert hosts == [HostSlots("node1", 4), HostSlots("node2", 1), HostSlots("node3", 2)]
    assert place_ranks(hosts, 2, on_node=False) == [HostSlots("node1", 1),
                                                    HostSlots("node2", 1)]
    assert place_ranks(hosts, 4, on_node=False) == [HostSlots("node1", 2),
                                                    HostSlots("node2", 1),
                                                    HostSlots("node3", 1)]
    assert place_ranks(hosts, 4, on_node=True) == [HostSlots("node1", 4)]
    on_node = [parse_transport(t).on_node for t in ("shm", "ucx:posix,self", "ofi:shm", "tcp",
                                                       "ucx", "ucx:^tcp", "ofi:tcp;ofi_rxm")]
    assert on_node == [True, True, True, False, False, False, False]
    f.write_text("node1 cpus=4\n")
    with pytest.raises(FabenchError, match="line 1: unknown option 'cpus=4'"):
        parse_hostfile(f)


@pytest.fixture(scope="module")
def cluster() -> Iterator[TestbedState]:
    if os.geteuid() != 0:
        pytest.skip("runs on a root testbed (CI is root)")
    with own_testbeds(f"fbh{os.getpid() % 100000}"):
        yield create("hosts", TestbedConfig(hosts=3))


def _bench_on_login_node(cluster: TestbedState, hostfile: Path, out: Path,
                         orte_retries: int = 0) -> None:
    env = {**os.environ, "FABENCH_RSH_AGENT": str(cluster.agent), "FABENCH_IFACE": "eth0"}
    for attempt in range(orte_retries + 1):
        p = subprocess.run(
            [*cluster.hosts[0].enter, sys.executable, "-m", "fabench", "bench", "mpi.latency",
             "--on", "hosts", str(hostfile), "--transport", "tcp", "--sizes", "8,64K",
             "--iterations", "300", "--out", str(out)],
            env=env, capture_output=True, text=True, timeout=300, check=False)
        # Only Open MPI's own launch crash (exit 139 before any result) is retried.
        if p.returncode == 0 or "exit status 139" not in p.stderr or attempt == orte_retries:
            break
    assert p.returncode == 0, p.stdout + p.stderr


@pytest.mark.netns
@pytest.mark.alone  # as below: these hostfile launches ran alone in every CI before
def test_mpi_over_hostfile(openmpi: str, cluster: TestbedState, tmp_path: Path) -> None:
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("h2 slots=1\nh3 slots=1\n")
    _bench_on_login_node(cluster, hostfile, tmp_path)
    with Store(tmp_path / "fabench.sqlite") as st:
        run = st.runs(1)[0]
    assert run.status == "ok" and run.launcher == "hosts"
    assert run.selected_transport == "ob1/tcp"
    assert run.flags == []
    carried = run.provenance["interface_bytes"]["per_host"]
    assert set(carried) == {"h2", "h3"}
    assert min(c["tx_bytes"] for c in carried.values()) > 300 * 65536
    # mpirun ran on the "login node" h1; the ranks on h2 and h3 only.
    assert "--host h2:1,h3:1" in (run.command or "")


@pytest.mark.netns
@pytest.mark.alone  # beside another testbed test, Open MPI once failed to route to a
# host named twice in the hostfile (exit 213, 'target node: h2'); alone it never has
def test_duplicate_host_is_flagged(openmpi: str, cluster: TestbedState,
                                   tmp_path: Path) -> None:
    """A hostfile naming one node twice (by name and by address) looks like two nodes; both
    ranks land on h2 and talk through its loopback. The run succeeds, fast, and is flagged."""
    hostfile = tmp_path / "hostfile"
    hostfile.write_text(f"h2\n{cluster.host('h2').address}\n")
    # Two ORTE daemons on one node under two names: in 2 of 6 full CI runs here ORTE itself
    # crashed at launch (exit 139) though the test passes alone; one retry for that only.
    _bench_on_login_node(cluster, hostfile, tmp_path, orte_retries=1)
    with Store(tmp_path / "fabench.sqlite") as st:
        run = st.runs()[-1]
        summary = "\n".join(campaign_lines(st, run.campaign_id))
    assert run.status == "ok"
    # Both ranks on h2 over the tcp BTL: the traffic never crosses a link, and the on-node
    # pair talks through the NIC's stack instead of shared memory. Both are true; no other flag.
    kinds = sorted(f.split(":", 1)[0] for f in run.flags)
    assert kinds == ["intra-node-over-nic", "traffic-did-not-cross"], run.flags
    assert any(f.startswith("traffic-did-not-cross: h2+") for f in run.flags)
    assert "traffic-did-not-cross" in summary
