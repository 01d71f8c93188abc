"""Runs across testbed hosts: MPI over tcp with interface counters proving the bytes crossed,
shared memory kept on one host, a rate limit measured, MTU 9000 against 1500."""

import os
import statistics
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import fabench_cli, fabench_run, own_testbeds
from fabench.host.netcounters import crossing_flag
from fabench.records import ResultRecord
from fabench.store.database import RunRow, Store
from fabench.testbed import TestbedConfig, create

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs on a root testbed (CI is "
                                "root); tests/test_testbed.py covers unprivileged mode")


@pytest.fixture(scope="module")
def prefix() -> Iterator[str]:
    with own_testbeds(f"fbl{os.getpid() % 100000}") as prefix:
        yield prefix


@pytest.fixture(scope="module")
def pair(prefix: str) -> str:
    create("pair", TestbedConfig(hosts=2))
    return "pair"


def _bench(out: Path, *args: str) -> RunRow:
    fabench_cli("bench", *args, "--out", str(out))
    with Store(out / "fabench.sqlite") as st:
        return st.runs(st.campaigns()[-1]["id"])[-1]


def _results(out: Path, run: RunRow) -> list[ResultRecord]:
    with Store(out / "fabench.sqlite") as st:
        return list(st.results(run.id))


@pytest.mark.netns
def test_mpi_latency_and_bw_cross_the_link(openmpi: str, pair: str, tmp_path: Path) -> None:
    for kernel in ("mpi.latency", "mpi.bw"):
        run = _bench(tmp_path, kernel, "--on", "testbed", pair, "--transport", "tcp",
                     "--sizes", "8,1M", "--iterations", "10", "--warmup", "2", "--window", "8")
        assert run.status == "ok", run.reason
        assert run.selected_transport == "ob1/tcp"
        assert run.flags == []
        assert "placement: h1:1, h2:1" in run.notes
        carried = run.provenance["interface_bytes"]["per_host"]
        moved = sum(r.bytes_per_sample * len(r.times) for r in _results(tmp_path, run))
        # h1 sends what h2 receives: the link carried at least the payload, each way it went.
        assert carried["h1"]["tx_bytes"] >= moved
        assert abs(carried["h1"]["tx_bytes"] - carried["h2"]["rx_bytes"]) < 0.01 * moved
        assert run.provenance["testbed"]["name"] == pair
        assert "nsenter" in (run.command or "") and "plm_rsh_agent" in (run.command or "")


@pytest.mark.netns
def test_shm_stays_on_one_host(openmpi: str, pair: str, tmp_path: Path) -> None:
    run = _bench(tmp_path, "mpi.latency", "--on", "testbed", pair, "--transport", "shm",
                 "--sizes", "8", "--iterations", "100")
    assert run.status == "ok", run.reason
    assert run.selected_transport == "ob1/vader"
    assert any(n.startswith("placement: h1:2") for n in run.notes)
    assert "interface_bytes" not in run.provenance


@pytest.mark.netns
def test_ranks_beyond_the_machines_cores_yield(openmpi: str, pair: str,
                                                tmp_path: Path) -> None:
    # Testbed hosts share this machine's cores: 4 ranks on h1 (shm) have 4 host slots but
    # only os.cpu_count() cores, and must be run (and flagged) as oversubscribed, with the
    # yield that keeps busy-polling ranks from starving each other; only when asked to
    # (without --oversubscribe more ranks than cores are refused).
    ranks = (os.cpu_count() or 1) + 2
    args = ("mpi.allreduce", "--on", "testbed", pair, "--transport", "shm", "--ranks",
            str(ranks), "--sizes", "8", "--iterations", "20", "--warmup", "2")
    refused = fabench_run("bench", *args, "--out", str(tmp_path / "no"), check=False)
    assert refused.returncode == 2 and f"has {os.cpu_count()} slots" in refused.stderr
    run = _bench(tmp_path, *args, "--oversubscribe")
    assert run.status == "ok", run.reason
    assert run.oversubscribed
    assert f"oversubscribed: {ranks} ranks on {os.cpu_count()} cores" in run.notes
    assert "mpi_yield_when_idle 1" in (run.command or "")


def test_crossing_rule() -> None:
    rec = ResultRecord(kernel="mpi.bw", size=1 << 20, iterations=10, warmup=0, unit="us",
                       times=[1.0] * 10, bytes_per_sample=64 << 20, messages_per_sample=64)
    moved = 10 * (64 << 20)
    crossed = {"h1": {"tx_bytes": moved + 10_000, "tx_packets": 50_000},
               "h2": {"tx_bytes": 20_000, "tx_packets": 9_000}}
    assert crossing_flag(crossed, [rec], ["h1", "h2"]) is None
    stayed = {"h1": {"tx_bytes": 12_000, "tx_packets": 80}, "h2": {"tx_bytes": 9_000,
                                                                   "tx_packets": 70}}
    flag = crossing_flag(stayed, [rec], ["h1", "h2"])
    assert flag and flag.startswith("traffic-did-not-cross:")
    barrier = ResultRecord(kernel="mpi.barrier", size=0, iterations=1000, warmup=0,
                           unit="us", times=[1.0] * 1000, messages_per_sample=1)
    assert crossing_flag(stayed, [barrier], ["h1", "h2"]) is not None
    assert crossing_flag({"h1": {"tx_bytes": 90_000, "tx_packets": 1400}}, [barrier],
                         ["h1"]) is None


def _gbit(out: Path, run: RunRow) -> float:
    """A bandwidth kernel's median at its one size, in Gbit/s."""
    rec = _results(out, run)[0]
    return rec.bytes_per_sample / statistics.median(rec.times) * 8 / 1000


@pytest.mark.netns
@pytest.mark.slow
@pytest.mark.alone  # 1 Gbit/s is near what a loaded CPU carries through veth (CI: 0.80-0.85)
def test_rate_limit_holds(openmpi: str, prefix: str, tmp_path: Path) -> None:
    create("rate", TestbedConfig(hosts=2, rate="1gbit"))
    gbits = []
    for _ in range(3):
        # 64 MiB a sample (mpi.bw's default window of 64 keeps the link full on a loaded
        # host, 8 did not: 0.58 Gbit/s) is half a second at the limit: 4 samples a run (6
        # measured the same, 0.94-0.95; mpirun's start is most of a run's 5-6 s)
        run = _bench(tmp_path, "mpi.bw", "--on", "testbed", "rate", "--transport", "tcp",
                     "--sizes", "1M", "--iterations", "4", "--warmup", "1")
        assert run.status == "ok" and run.flags == []
        gbits.append(_gbit(tmp_path, run))
    med = statistics.median(gbits)
    print(f"mpi.bw 1 MiB at --rate 1gbit: {', '.join(f'{g:.3f}' for g in gbits)} Gbit/s")
    # Issue 4: 0.9-1.0 Gbit/s (1 % above for rounding). The payload ceiling is 1448/1514 of
    # the wire rate, 0.956 Gbit/s at MTU 1500: measured here 0.91-0.94 under load (MPI's
    # rendezvous costs a few %). Never above the limit (a too large tbf bucket lets 1 MiB
    # messages through at 2x); a too small one starves on a loaded host (0.73 at 128 kbit).
    assert med <= 1.01 and max(gbits) <= 1.01
    # The transport layer below MPI sees the same limit (client in h1, server in h2).
    # Window 16: 4 streams x 16 x 1 MiB, 64 MiB a sample as mpi.bw's (the default window
    # of 64 moved 256 MiB a sample, 11 s for the four; 16 measured 0.957, the same ceiling)
    run = _bench(tmp_path, "tcp.streams", "--on", "testbed", "rate", "--sizes", "1M",
                 "--iterations", "3", "--warmup", "1", "--window", "16")
    assert run.status == "ok" and run.flags == [], run.reason
    streams = _gbit(tmp_path, run)
    print(f"tcp.streams 1 MiB at --rate 1gbit: {streams:.3f} Gbit/s")
    assert streams <= 1.01  # 0.955 measured: the ceiling
    # A starving bucket caps every run (0.73 at 128 kbit). A loaded host loses rate in any one
    # run, MPI's or the streams' (CI: MPI 0.853, 0.795, 0.845 in one run; MPI 0.894-0.949 and
    # streams 0.863 in another, bucket right both times): the best of the four must reach 0.85.
    assert max(*gbits, streams) >= 0.85, (gbits, streams)


@pytest.mark.netns
@pytest.mark.slow
@pytest.mark.alone  # offloads off: the CPU sets both rates, so another test's load would too
def test_jumbo_frames_help_without_offloads(openmpi: str, prefix: str,
                                            tmp_path: Path) -> None:
    create("m1500", TestbedConfig(hosts=2, mtu=1500, offloads=False))
    create("m9000", TestbedConfig(hosts=2, mtu=9000, offloads=False))
    by_mtu: dict[str, list[float]] = {"m1500": [], "m9000": []}
    # interleaved, so a burst of load elsewhere hits both alike; two rounds, not three: the
    # contrast read 3.5-5x (2.4-2.6 against 8.6-12.6 Gbit/s), the bound is 1.15x
    for _ in range(2):
        for name, vals in by_mtu.items():
            # 10 windows of 64 MiB a run, not 20 (a quiet host read 2.4-2.6 against 8.6-12.6
            # Gbit/s with 10; the fixed second of a run's start is what remains)
            run = _bench(tmp_path, "mpi.bw", "--on", "testbed", name, "--transport", "tcp",
                         "--sizes", "1M", "--iterations", "10", "--warmup", "2")
            assert run.status == "ok" and run.flags == []
            vals.append(_gbit(tmp_path, run))
    m1500, m9000 = (statistics.median(v) for v in by_mtu.values())
    print(f"mpi.bw 1 MiB, offloads off: mtu 1500 {by_mtu['m1500']}, mtu 9000 "
          f"{by_mtu['m9000']} Gbit/s")
    # Without segmentation offloads every frame costs a trip through the stack: 6x fewer
    # frames must show (1.28x measured here under load with MPI over TCP; iperf3 shows
    # more). (With offloads on, 64 KB GSO frames make MTU nearly irrelevant.)
    assert m9000 > 1.15 * m1500
