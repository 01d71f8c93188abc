"""`fabench store check` on real stores: sound ones, damaged ones (bytes cut or overwritten),
ones that break fabench's own invariants, and ones whose writer was killed with SIGKILL."""

import json
import math
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from array import array
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import ROOT, descendant_pids, fabench_run
from fabench.store.check import OK, PROBLEMS, UNREADABLE, check_store
from fabench.store.database import Store
from fabench.store.schema import SCHEMA_VERSION

FIXTURE = ROOT / "tests" / "fixtures" / "store" / "v1-4d08b82.sqlite"


@pytest.fixture(scope="module")
def real_store(openmpi: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store written by this fabench: two real benchmarks (MPI ranks, TCP sockets)."""
    out = tmp_path_factory.mktemp("real")
    fabench_run("bench", "mpi.allreduce", "--sizes", "8,1024", "--iterations", "100",
                "--out", str(out))
    fabench_run("bench", "tcp.latency", "--sizes", "8,1024", "--iterations", "100",
                "--out", str(out))
    return out / "fabench.sqlite"


@pytest.fixture
def store(real_store: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "fabench.sqlite"
    shutil.copyfile(real_store, dst)
    return dst


def _sql(path: Path, *statements: str) -> None:
    db = sqlite3.connect(path)
    db.execute("PRAGMA foreign_keys = OFF")
    for s in statements:
        db.execute(s)
    db.commit()
    db.close()


def test_a_sound_store_passes_and_is_left_as_it_was(store: Path) -> None:
    before = store.read_bytes()
    proc = fabench_run("store", "check", "--store", str(store.parent), "--json", check=False)
    assert proc.returncode == OK, proc.stdout
    rep = json.loads(proc.stdout)
    assert rep["exit_status"] == 0 and rep["schema_version"] == SCHEMA_VERSION
    assert rep["counts"]["runs"] == 2 and rep["counts"]["campaigns"] == 2
    assert rep["counts"]["results"] == 4 and rep["counts"]["samples"] == 2 * 3 + 2 * 1
    assert [f for f in rep["findings"] if f["level"] == "problem"] == []
    assert store.read_bytes() == before
    assert sorted(p.name for p in store.parent.iterdir()) == ["fabench.sqlite"]


def test_the_previous_release_store_passes_without_being_migrated(tmp_path: Path) -> None:
    copy = tmp_path / "old.sqlite"
    shutil.copyfile(FIXTURE, copy)
    rep = check_store(copy)
    assert rep.exit_code == OK and rep.version == 1
    assert any("migrates it" in f.text for f in rep.findings)
    assert copy.read_bytes() == FIXTURE.read_bytes()


# Each breaks one invariant of a real store, as a bug, a hand edit or a bad restore could.
BROKEN = {
    "result of a deleted run": (("DELETE FROM runs WHERE id = 1",),
                                "refer to a run that does not exist"),
    "run of a deleted campaign": (("DELETE FROM campaigns WHERE id = 2",),
                                  "run(s) refer to a campaign that does not exist: 2 -> "
                                  "campaign 2"),
    "unknown run status": (("UPDATE runs SET status = 'done' WHERE id = 2",),
                           "1 run(s) with a status fabench does not write"),
    "unknown campaign status": (("UPDATE campaigns SET status = 'finished!' WHERE id = 1",),
                                "1 campaign(s) with a status fabench does not write"),
    "sample count and blob disagree": (
        ("UPDATE samples SET n = n + 1 WHERE rowid = (SELECT min(rowid) FROM samples)",),
        "sample blob(s) whose length disagrees with their count"),
    "iterations and samples disagree": (
        ("UPDATE results SET iterations = iterations - 1 WHERE id = 1",),
        "times series whose sample count differs from the result's iterations"),
    "settings not JSON": (("UPDATE runs SET settings = '{\"a\": ' WHERE id = 1",),
                          "runs.settings is not JSON in 1 row(s): ids 1"),
    "ok run without results": (("DELETE FROM samples WHERE result_id IN "
                                "(SELECT id FROM results WHERE run_id = 2)",
                                "DELETE FROM results WHERE run_id = 2"),
                               "1 run(s) marked ok hold no result: ids 2"),
    "result without its samples": (("DELETE FROM samples WHERE result_id = 1",),
                                   "1 result(s) without their times series: ids 1"),
    "column dropped": (("ALTER TABLE runs DROP COLUMN owner",), "table `runs` lacks owner"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_each_broken_invariant_is_found(store: Path, case: str) -> None:
    statements, expected = BROKEN[case]
    assert check_store(store).exit_code == OK  # the store was sound before the edit
    _sql(store, *statements)
    rep = check_store(store)
    assert rep.exit_code == PROBLEMS, [vars(f) for f in rep.findings]
    assert any(expected in f.text for f in rep.problems), [vars(f) for f in rep.findings]


def test_a_nan_sample_is_found(store: Path) -> None:
    db = sqlite3.connect(store)
    rid, series, blob = db.execute("SELECT result_id, series, data FROM samples LIMIT 1"
                                   ).fetchone()
    db.close()
    values = array("d")
    values.frombytes(blob)
    values[3] = math.nan
    # the writer's CRC cleared, as a store from before CRCs: the value itself is the problem
    _sql(store, f"UPDATE samples SET data = x'{values.tobytes().hex()}', crc32 = NULL "
                f"WHERE result_id = {rid} AND series = '{series}'")
    rep = check_store(store)
    assert rep.exit_code == PROBLEMS
    assert any("NaN, infinity or a negative time" in f.text for f in rep.problems)


def test_overwritten_sample_bytes_are_found(store: Path) -> None:
    db = sqlite3.connect(store)
    blob = db.execute("SELECT data FROM samples ORDER BY length(data) DESC LIMIT 1").fetchone()[0]
    db.close()
    raw = bytearray(store.read_bytes())
    off = bytes(raw).index(blob[16:48])
    raw[off + 5] ^= 0x04
    store.write_bytes(bytes(raw))
    proc = fabench_run("store", "check", "--store", str(store), check=False)
    assert proc.returncode == PROBLEMS, proc.stdout
    assert "differ from their checksum" in proc.stdout and "Traceback" not in proc.stderr


def test_a_truncated_store_is_unreadable_and_says_it_was_cut(store: Path) -> None:
    with open(store, "r+b") as fh:
        fh.truncate(store.stat().st_size * 2 // 3)
    proc = fabench_run("store", "check", "--store", str(store), check=False)
    assert proc.returncode in (PROBLEMS, UNREADABLE), proc.stdout
    assert "cut short" in proc.stdout and "Traceback" not in proc.stderr


def test_an_overwritten_btree_page_is_found(store: Path) -> None:
    db = sqlite3.connect(store)
    root = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'runs'").fetchone()[0]
    page = db.execute("PRAGMA page_size").fetchone()[0]
    db.close()
    raw = bytearray(store.read_bytes())
    raw[(root - 1) * page:(root - 1) * page + 64] = bytes(range(64))
    store.write_bytes(bytes(raw))
    rep = check_store(store)
    assert rep.exit_code in (PROBLEMS, UNREADABLE)
    assert any("malformed" in f.text or f.check == "sqlite integrity" for f in rep.problems)


@pytest.mark.parametrize("damage", ["header", "empty", "text", "newer"])
def test_what_is_not_a_readable_store_exits_2(store: Path, damage: str) -> None:
    if damage == "header":
        with open(store, "r+b") as fh:
            fh.write(b"\0" * 16)
    elif damage == "empty":
        store.write_bytes(b"")
    elif damage == "text":
        store.write_text("name: not a store\n")
    else:
        _sql(store, f"UPDATE meta SET value = '{SCHEMA_VERSION + 1}' "
                    "WHERE key = 'schema_version'")
    rep = check_store(store)
    assert rep.exit_code == UNREADABLE and not rep.readable, [vars(f) for f in rep.findings]
    if damage == "header":  # and as the user sees it
        proc = fabench_run("store", "check", "--store", str(store), check=False)
        assert proc.returncode == UNREADABLE, proc.stdout
        assert "Traceback" not in proc.stderr and "unreadable (exit status 2)" in proc.stdout
        assert "not an SQLite database" in proc.stdout


# -- SIGKILL mid-write ------------------------------------------------------------------

def _kill_tree(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process and every process it started (mpirun and its ranks): only ours."""
    tree = descendant_pids(proc.pid)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    for pid in tree + descendant_pids(proc.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _count(path: Path, sql: str) -> int:
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.OperationalError:
        return 0  # not made yet
    try:
        return int(db.execute(sql).fetchone()[0])
    except sqlite3.OperationalError:
        return 0  # tables not made yet
    finally:
        db.close()


@pytest.fixture
def killed(tmp_path: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for p in procs:
        if p.poll() is None:
            _kill_tree(p)


def test_sigkill_mid_campaign_leaves_a_sound_store_with_the_finished_runs(
        openmpi: str, tmp_path: Path, killed: list[subprocess.Popen[bytes]]) -> None:
    spec = tmp_path / "k.yaml"
    spec.write_text("name: killme\nruns:\n  - kernel: [mpi.latency, mpi.bw, mpi.allreduce, "
                    "mpi.bibw]\n    ranks: 2\n    sizes: '8,64K'\n    iterations: 3000\n")
    out = tmp_path / "out"
    db = out / "fabench.sqlite"
    proc = subprocess.Popen([sys.executable, "-m", "fabench", "run", str(spec), "--out",
                             str(out), "--no-progress"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    killed.append(proc)
    deadline = time.monotonic() + 240
    # kill once a run has finished and the next one is under way
    while (_count(db, "SELECT count(*) FROM runs WHERE status = 'ok'") < 1
           or _count(db, "SELECT count(*) FROM runs WHERE status = 'running'") < 1):
        assert time.monotonic() < deadline and proc.poll() is None, "no run finished"
        time.sleep(0.05)
    _kill_tree(proc)
    assert (out / "fabench.sqlite-wal").exists()  # killed with its log open
    proc_check = fabench_run("store", "check", "--store", str(out), check=False)
    assert proc_check.returncode == OK, proc_check.stdout
    with Store(db) as st:
        ok = st.runs(status="ok")
        assert ok
        for run in ok:
            results = list(st.results(run.id))
            assert [r.size for r in results] == [8, 65536]
            assert all(len(r.times) == 3000 for r in results)
        # the run in flight was the dead fabench's: interrupted now
        assert st.runs(status="running") == []
        (cut,) = st.runs(status="interrupted")
        assert f"pid {proc.pid}" in (cut.reason or "") and cut.id > max(r.id for r in ok)
        assert st.campaigns()[0]["status"] == "interrupted"
    assert fabench_run("store", "check", "--store", str(out), check=False).returncode == OK


WRITER = """
import sys
from fabench.records import ResultRecord
from fabench.store.database import Store
st = Store(sys.argv[1])
n = int(sys.argv[2])
cid = st.begin_campaign("w", {})
for i in range(100000):
    rid = st.begin_run(campaign_id=cid, key=f"k{i}", kernel="mpi.allreduce", transport="shm",
                       mpi="openmpi", ranks=2, launcher="local", repeat=0, settings={"i": i})
    for size in (8, 64, 512):
        t = [size + i + j / n for j in range(n)]
        st.add_result(rid, ResultRecord(kernel="mpi.allreduce", size=size, iterations=n,
                                        warmup=0, unit="us", times=t, times_min=t,
                                        times_mean=t))
    st.finish_run(rid, status="ok")
    print(i, flush=True)
"""


def test_sigkill_at_random_moments_never_tears_a_write(
        tmp_path: Path, killed: list[subprocess.Popen[bytes]]) -> None:
    """A writer of large sample blobs killed at seeded random moments, five times over the
    same store: each time the store checks sound and holds only whole results."""
    path = tmp_path / "fabench.sqlite"
    n = 40000  # 320 KB per series: a write spans many pages and WAL frames
    rng = random.Random(19)
    for _ in range(5):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(n)],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        killed.append(proc)
        assert proc.stdout is not None
        proc.stdout.readline()  # one run committed: the writer is in its loop
        time.sleep(rng.uniform(0.0, 0.5))
        _kill_tree(proc)
        rep = check_store(path)
        assert rep.exit_code == OK, [vars(f) for f in rep.findings]
    with Store(path) as st:
        runs = st.runs()
        assert sum(r.status == "ok" for r in runs) >= 5
        assert {r.status for r in runs} <= {"ok", "interrupted"}
        for run in runs:
            for rec in st.results(run.id):
                assert len(rec.times) == len(rec.times_min or []) == n
                assert rec.times[-1] == rec.size + run.settings["i"] + (n - 1) / n
