"""Importers on real output: iperf3 and sockperf run here (Debian packages) on loopback;
OSU and IMB (not in Debian) from small files they printed on this kind of host (see
tests/fixtures/import/README.md)."""

import json
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import ROOT, fabench_run, missing
from fabench.metrics import BANDWIDTH, LATENCY
from fabench.store.database import Store

FIX = ROOT / "tests" / "fixtures" / "import"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for p in procs:  # only the servers this test started, by PID
        p.kill()
        p.wait(timeout=10)


def _import(tmp_path: Path, tool: str, *args: str) -> Store:
    fabench_run("import", tool, *args, "--store", str(tmp_path))
    return Store(tmp_path / "fabench.sqlite")


def _rows(name: str) -> list[list[str]]:
    """The data rows of a fixture: lines that start with a message size."""
    return [ln.split() for ln in (FIX / name).read_text().splitlines()
            if ln.strip() and ln.split()[0].isdigit()]


def test_osu_latency_with_tail_columns_stores_the_p50(tmp_path: Path) -> None:
    with _import(tmp_path, "osu", str(FIX / "osu_latency_z.txt"), "--transport", "ib") as st:
        [run] = st.runs()
        assert (run.kernel, run.transport, run.launcher) == ("mpi.latency", "ib", "import:osu")
        recs = list(st.results(run.id))
    rows = _rows("osu_latency_z.txt")
    assert [r.size for r in recs] == [int(row[0]) for row in rows]
    assert recs[-1].size == 4 << 20
    row8 = next(row for row in rows if row[0] == "8")
    mean, p50 = float(row8[1]), float(row8[2])
    r8 = next(r for r in recs if r.size == 8)
    # The P50 (OSU -z) is kept as the median, the mean beside it: in this real file the two
    # differ by an order of magnitude at 8 B (a preemption during the timed loop).
    assert r8.times == [p50] and r8.extra["osu_mean"] == mean
    assert r8.extra["statistic"].startswith("median")


def test_osu_bandwidth_and_full_collective(tmp_path: Path) -> None:
    with _import(tmp_path, "osu", str(FIX / "osu_bw.txt"), str(FIX / "osu_allreduce_f.txt"),
                 "--ranks", "4") as st:
        bw, ar = st.runs()
        bw_recs, ar_recs = list(st.results(bw.id)), list(st.results(ar.id))
    last = _rows("osu_bw.txt")[-1]
    r = bw_recs[-1]
    assert r.size == int(last[0])
    assert BANDWIDTH.values(r.times, r.bytes_per_sample)[0] == pytest.approx(float(last[1]))
    assert ar.kernel == "mpi.allreduce" and ar.ranks == 4
    ar_rows = _rows("osu_allreduce_f.txt")
    assert len(ar_recs) == len(ar_rows)
    assert ar_recs[0].iterations == int(ar_rows[0][4])
    assert ar_recs[0].extra["Min Latency(us)"] == float(ar_rows[0][2])


def test_imb_blocks_time_out_rows_and_skipped_benchmarks(tmp_path: Path) -> None:
    with _import(tmp_path, "imb", str(FIX / "imb_mpi1.txt")) as st:
        runs = {r.kernel: r for r in st.runs()}
        res = {k: list(st.results(r.id)) for k, r in runs.items()}
    assert set(runs) == {"mpi.latency", "mpi.allreduce", "mpi.barrier"}
    assert any("Sendrecv" in n for n in runs["mpi.latency"].notes)
    # This real run hit IMB's time limit: PingPong at 128 B, Allreduce at 256 KiB. Those rows
    # and the sizes after them have no result, and the runs say so.
    lat_sizes = [r.size for r in res["mpi.latency"]]
    assert lat_sizes == [0, 1, 2, 4, 8, 16, 32, 64]
    ar = runs["mpi.allreduce"]
    ar_sizes = [r.size for r in res["mpi.allreduce"]]
    assert ar_sizes[-1] == 128 << 10 and 256 << 10 not in ar_sizes
    assert sum("time-out" in n for n in ar.notes) == 1 and ar.flags
    assert runs["mpi.latency"].flags
    # Collectives keep IMB's t_max, the slowest rank's mean, as the collective's time.
    r16 = next(r for r in res["mpi.allreduce"] if r.size == 16)
    assert r16.times == [162.68] and r16.extra["t_min[usec]"] == 0.97
    assert res["mpi.barrier"][0].size == 0 and res["mpi.barrier"][0].times == [91.98]
    assert res["mpi.latency"][0].extra["Mbytes/sec"] == 0.0


def test_iperf3_json_from_a_real_loopback_run(tmp_path: Path, server: list) -> None:
    if shutil.which("iperf3") is None:
        missing("iperf3 not installed")
    port = free_port()
    server.append(subprocess.Popen(["iperf3", "-s", "-B", "127.0.0.1", "-p", str(port)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    out = tmp_path / "iperf3.json"
    for _ in range(50):
        client = subprocess.run(["iperf3", "-c", "127.0.0.1", "-p", str(port), "-t", "2",
                                 "-i", "0.25", "-J"], capture_output=True, text=True,
                                timeout=60, check=False)
        if client.returncode == 0 and json.loads(client.stdout).get("intervals"):
            break
        time.sleep(0.1)  # server not listening yet
    assert client.returncode == 0, client.stdout[-500:]
    out.write_text(client.stdout)
    doc = json.loads(client.stdout)
    with _import(tmp_path, "iperf3", str(out)) as st:
        [run] = st.runs()
        [rec] = list(st.results(run.id))
    assert run.kernel == "tcp.bw" and run.transport == "tcp"
    assert rec.size == doc["start"]["test_start"]["blksize"]
    assert len(rec.times) == len(doc["intervals"]) >= 6
    first = doc["intervals"][0]["sum"]["bits_per_second"] / 8e6
    assert BANDWIDTH.values(rec.times[:1], rec.bytes_per_sample)[0] == pytest.approx(first)
    # A run iperf3 itself reports as failed is refused with iperf3's own words.
    bad = tmp_path / "failed.json"
    bad.write_text(json.dumps({"start": {}, "intervals": [], "end": {},
                               "error": "unable to connect to server"}))
    p = fabench_run("import", "iperf3", str(bad), "--store", str(tmp_path), check=False)
    assert p.returncode != 0 and "unable to connect to server" in p.stderr


def test_sockperf_full_log_and_summary_from_a_real_loopback_run(tmp_path: Path,
                                                                server: list) -> None:
    if shutil.which("sockperf") is None:
        missing("sockperf not installed")
    port = free_port()
    server.append(subprocess.Popen(["sockperf", "server", "--tcp", "-i", "127.0.0.1", "-p",
                                    str(port)], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL))
    log, summary = tmp_path / "full.csv", tmp_path / "stdout.txt"
    for _ in range(50):
        pp = subprocess.run(["sockperf", "ping-pong", "--tcp", "-i", "127.0.0.1", "-p",
                             str(port), "-t", "1", "-m", "64", f"--full-log={log}"],
                            capture_output=True, text=True, timeout=60, check=False)
        if pp.returncode == 0 and "percentile 50" in pp.stdout:
            break
        time.sleep(0.1)
    summary.write_text(pp.stdout + pp.stderr)
    observations = int(re.search(r"Total (\d+) observations", summary.read_text()).group(1))
    p50 = float(re.search(r"percentile 50\.000 =\s*([\d.]+)", summary.read_text()).group(1))
    with _import(tmp_path, "sockperf", str(log), "--transport", "tcp") as st:
        [run] = st.runs()
        [rec] = list(st.results(run.id))
    assert run.kernel == "tcp.latency" and rec.size == 64
    assert len(rec.times) == observations
    med = float(sorted(rec.times)[len(rec.times) // 2])
    assert med == pytest.approx(p50, rel=0.02)
    fabench_run("import", "sockperf", str(summary), "--size", "64", "--store", str(tmp_path))
    with Store(tmp_path / "fabench.sqlite") as st:
        agg = st.runs()[-1]
        [arec] = list(st.results(agg.id))
    assert agg.kernel == "tcp.latency" and arec.times == [p50] and arec.size == 64
    assert LATENCY.values(arec.times)[0] == p50
    # The two imports compare: one side is a single aggregate, held fixed.
    cmp = fabench_run("compare", str(run.id), str(agg.id), "--json", "--store",
                      str(tmp_path))
    [c] = json.loads(cmp.stdout)
    assert "one side is a single aggregate" in c["sizes"][0]["note"]
