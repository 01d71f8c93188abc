"""Campaigns end to end: a spec, real runs, the store, Ctrl-C / kill -9 and --resume."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import descendant_pids, fabench_cli, fabench_run
from fabench.store.database import Store

SPEC = """\
name: killme
runs:
  - kernel: [mpi.latency, mpi.bw, mpi.allreduce]
    transport: [shm, tcp]
    ranks: 2
    sizes: "8,64K"
    iterations: 200
    warmup: 10
"""


def test_campaign_runs_and_summarises(openmpi: str, tmp_path: Path) -> None:
    spec = tmp_path / "c.yaml"
    spec.write_text("name: small\nruns:\n  - kernel: [mpi.latency, mpi.gather]\n"
                    "    ranks: 2\n    sizes: '8,1K'\n    iterations: 50\n")
    proc = fabench_cli("run", str(spec), "--out", str(tmp_path / "out"))
    assert "campaign 1 (small)" in proc.stdout
    assert proc.stdout.count(" ok ") == 2
    assert (tmp_path / "out" / "campaign-1-tables.txt").is_file()
    with Store(tmp_path / "out" / "fabench.sqlite") as st:
        runs = st.runs(1)
        assert {r.kernel for r in runs} == {"mpi.latency", "mpi.gather"}
        prov = runs[0].provenance
        assert "loadavg" in prov["load_start"] and "loadavg" in prov["load_end"]
        assert runs[0].command and "mpirun" in runs[0].command
        camp = st.campaigns()[0]
        assert camp["status"] == "finished"


def test_spec_error_is_reported_without_traceback(tmp_path: Path) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text("runs:\n  - kernel: mpi.latency\n    rankz: 2\n")
    proc = fabench_run("run", str(spec), "--out", str(tmp_path), check=False)
    assert proc.returncode == 2
    assert f"{spec} line 3: runs[0].rankz: unknown key" in proc.stderr
    assert "Traceback" not in proc.stderr


def _wait_for_ok_runs(db: Path, n: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if db.exists():
            with Store(db) as st:
                if len(st.runs(status="ok")) >= n:
                    return
        time.sleep(0.2)
    raise AssertionError(f"fewer than {n} runs finished within {timeout} s")


def test_kill_keeps_finished_runs_and_resume_finishes(openmpi: str, tmp_path: Path) -> None:
    spec = tmp_path / "k.yaml"
    spec.write_text(SPEC)
    out = tmp_path / "out"
    db = out / "fabench.sqlite"
    proc = subprocess.Popen([sys.executable, "-m", "fabench", "run", str(spec), "--out",
                             str(out), "--no-progress"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        _wait_for_ok_runs(db, 2, timeout=240)
        strays = descendant_pids(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        # kill -9 leaves the mpirun we started orphaned: end exactly those processes.
        for pid in descendant_pids(proc.pid) + locals().get("strays", []):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if proc.poll() is None:
            proc.kill()
    with Store(db) as st:
        finished = st.runs(status="ok")
        assert len(finished) >= 2
        for run in finished:
            results = list(st.results(run.id))
            assert [r.size for r in results] == [8, 65536]
            assert all(len(r.times) == 200 for r in results)
        first_ids = {r.id for r in finished}
    res = fabench_cli("run", str(spec), "--out", str(out), "--resume", timeout=600)
    assert "finished" in res.stdout
    with Store(db) as st:
        ok = st.runs(status="ok")
        assert len({r.key for r in ok}) == 6  # every planned run done exactly once ...
        assert first_ids <= {r.id for r in ok}  # ... and the ones before the kill kept
        assert len(ok) == 6
