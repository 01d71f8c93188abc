"""The store on a real PostgreSQL server (tests/pgserver.py starts one in a temporary directory):
the same tables and migrations, concurrent campaigns, a server killed mid-campaign, refused
connections, and `store copy` between SQLite and PostgreSQL."""

import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, fabench_cli, fabench_run
from fabench.matrix.stored import MatrixStore
from fabench.records import PairRecord, ResultRecord
from fabench.store.copy import compare_stores
from fabench.store.database import Store
from fabench.store.schema import SCHEMA_VERSION, schema_columns
from pgserver import PgServer


@pytest.fixture
def pg_url(pg: PgServer) -> str:
    return pg.new_database()


def _fill(st: MatrixStore) -> int:
    cid = st.begin_campaign("c", {"x": 1}, {"host": "h"})
    rid = st.begin_run(campaign_id=cid, key="k", kernel="mpi.allreduce", transport="shm",
                       mpi="openmpi", ranks=4, launcher="local", repeat=0, settings={"a": 1})
    st.add_result(rid, ResultRecord(
        kernel="mpi.allreduce", size=64, iterations=3, warmup=1, unit="us",
        times=[1.5, 2.25, 3.0], times_min=[1.0, 1.0, 1.0], times_mean=[1.2, 1.3, 1.4],
        datatype="MPI_FLOAT", count=16, validated=True, bytes_per_sample=64))
    # a later round of the same size joins the stored result (INSERT OR REPLACE)
    st.append_samples(rid, ResultRecord(kernel="mpi.allreduce", size=64, iterations=1,
                                        warmup=0, unit="us", times=[0.1 + 0.2],
                                        times_min=[0.5], times_mean=[0.75],
                                        extra={"round": 1}))
    st.finish_run(rid, status="ok", selected_transport="ob1/vader", notes=["n"],
                  provenance={"load_start": {"loadavg": [0.5]}})
    st.add_flag(rid, "oversubscribed")
    st.add_matrix_pair(rid, PairRecord(src=0, dst=1, src_host="h1", dst_host="h2", round=0,
                                       mode="concurrent", size=8, window=4,
                                       bytes_per_sample=8.0, latency_us=[1.25, 1.5],
                                       bandwidth_us=[3.0]))
    st.save_matrix(cid, ["h1", "h2"], {"verdict": "ok"})
    st.save_matrix(cid, ["h1", "h2"], {"verdict": "again"})
    st.end_campaign(cid, "finished")
    return cid


def test_a_postgresql_store_keeps_every_sample_as_sqlite_does(pg_url: str) -> None:
    with MatrixStore(pg_url) as st:
        assert st.backend == "postgresql" and "fb-test-secret" not in str(st.path)
        cid = _fill(st)
    with MatrixStore(pg_url) as st:  # a second open finds the schema made, migrates nothing
        (run,) = st.runs(cid)
        assert run.status == "ok" and run.selected_transport == "ob1/vader"
        assert run.flags == ["oversubscribed"] and run.settings == {"a": 1}
        (back,) = list(st.results(run.id))
        assert back.times == [1.5, 2.25, 3.0, 0.1 + 0.2] and back.iterations == 4
        assert back.times_min == [1.0, 1.0, 1.0, 0.5]
        assert back.validated is True and back.count == 16
        (pair,) = st.matrix_pairs(run.id)
        assert pair.latency_us == [1.25, 1.5] and pair.window == 4
        assert st.matrix(cid) == (["h1", "h2"], {"verdict": "again"})
        assert st.completed_keys(cid) == {"k"}
        version = st.db.execute("SELECT value FROM meta WHERE key = 'schema_version'")
        assert int(version.fetchone()[0]) == SCHEMA_VERSION
        cols = {t: tuple(r[0] for r in st.db.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
            "ORDER BY ordinal_position", (t,))) for t in schema_columns()}
    assert cols == schema_columns()  # the same tables and columns, in the same order


def test_wrong_password_or_no_server_is_one_message(pg: PgServer, pg_url: str,
                                                    tmp_path: Path) -> None:
    db = pg_url.split("?")[0].rsplit("/", 1)[1]
    cases = [pg.url(db, password="wrong"),
             pg.url(db).replace(str(pg.dir), str(tmp_path)),  # no server on that socket
             "postgresql://fabench@[::1]:1/none?connect_timeout=2"]
    for url in cases:
        proc = fabench_run("report", "--store", url, "--output", str(tmp_path / "r.html"),
                           check=False)
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr and proc.stdout == ""
        # every fabench start reaps what a dead fabench left (cli.py): in the shared pass a
        # killed one of another test's can be reaped here, and says so on a line of its own
        lines = [ln for ln in proc.stderr.strip().splitlines()
                 if not ln.startswith("fabench: cleaned up after a fabench that is gone")]
        assert len(lines) == 1 and lines[0].startswith("fabench: error: cannot open the store")
        assert ":wrong@" not in proc.stderr and "fb-test-secret" not in proc.stderr
        print(lines[0])
    assert "password authentication failed" in fabench_run(
        "report", "--store", cases[0], check=False).stderr


SPEC = """\
name: {name}
runs:
  - kernel: [mpi.latency]
    transport: [shm]
    ranks: 2
    sizes: "8,1K"
    iterations: {iterations}
    warmup: 5
repeats: {repeats}
"""


def _spec(tmp_path: Path, name: str, iterations: int = 40, repeats: int = 2) -> Path:
    spec = tmp_path / f"{name}.yaml"
    spec.write_text(SPEC.format(name=name, iterations=iterations, repeats=repeats))
    return spec


def test_four_concurrent_campaigns_lose_and_duplicate_nothing(
        openmpi: str, pg_url: str, tmp_path: Path) -> None:
    procs = [subprocess.Popen(
        [sys.executable, "-m", "fabench", "run", str(_spec(tmp_path, f"c{i}")), "--store",
         pg_url, "--out", str(tmp_path / f"out{i}"), "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(4)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, outs
    for out, err in outs:  # the store named, its password not
        assert "# results: postgresql://fabench:***@/" in out and "fb-test-secret" not in out + err
    with Store(pg_url) as st:
        camps = st.campaigns()
        assert sorted(c["name"] for c in camps) == ["c0", "c1", "c2", "c3"]
        assert all(c["status"] == "finished" for c in camps)
        ids = [r.id for r in st.runs()]
        assert len(ids) == len(set(ids)) == 4 * 2
        for c in camps:
            runs = st.runs(c["id"])
            assert sorted(r.repeat for r in runs) == [0, 1]
            for r in runs:
                res = list(st.results(r.id))
                assert [x.size for x in res] == [8, 1024]
                assert all(len(x.times) == x.iterations == 40 for x in res)
        (n,) = st.db.execute("SELECT count(*) FROM samples").fetchone()
        assert n == 4 * 2 * 2  # one `times` series per size, run and campaign: once each


def _ok_runs(url: str) -> int:
    import psycopg
    try:
        with psycopg.connect(url, connect_timeout=5) as conn:
            row = conn.execute("SELECT count(*) FROM runs WHERE status = 'ok'").fetchone()
            return int(row[0]) if row else 0
    except psycopg.Error:
        return 0


@pytest.mark.slow
def test_a_server_killed_mid_campaign_keeps_its_runs_and_resume_finishes(
        openmpi: str, pg: PgServer, pg_url: str, tmp_path: Path) -> None:
    spec = _spec(tmp_path, "night", iterations=2000, repeats=8)
    fb = subprocess.Popen(
        [sys.executable, "-m", "fabench", "run", str(spec), "--store", pg_url, "--out",
         str(tmp_path / "out"), "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while _ok_runs(pg_url) < 2 and fb.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert fb.poll() is None, fb.communicate()
        pg.crash()
        _, err = fb.communicate(timeout=300)
    finally:
        if fb.poll() is None:
            fb.kill()
        pg.start()
    assert fb.returncode == 2, err
    assert "Traceback" not in err and "lost the store" in err and "--resume" in err
    with Store(pg_url) as st:  # the writer is gone: its campaign and run become interrupted
        (camp,) = st.campaigns()
        assert camp["status"] == "interrupted"
        before = [r for r in st.runs(camp["id"]) if r.status == "ok"]
        assert len(before) >= 2 and len(before) < 8
        for r in before:
            assert all(len(x.times) == 2000 for x in st.results(r.id))
    fabench_cli("run", str(spec), "--resume", "--store", pg_url, "--out",
                str(tmp_path / "out"), "--no-progress")
    with Store(pg_url) as st:
        (camp,) = st.campaigns()
        assert camp["status"] == "finished"
        ok = [r for r in st.runs(camp["id"]) if r.status == "ok"]
        assert sorted(r.repeat for r in ok) == list(range(8))  # each once
        assert {r.id for r in before} <= {r.id for r in ok}


def _all_samples(st: Store) -> dict[tuple[int, int], tuple[Any, ...]]:
    return {(r.id, rec.size): (rec.times, rec.times_min, rec.times_mean, rec.iterations,
                               rec.extra)
            for r in st.runs() for rec in st.results(r.id)}


def test_store_copy_both_ways_keeps_every_sample(pg_url: str, tmp_path: Path) -> None:
    sqlite = tmp_path / "a" / "fabench.sqlite"
    sqlite.parent.mkdir()
    shutil.copy(ROOT / "tests" / "fixtures" / "store" / "v1-4d08b82.sqlite", sqlite)
    with MatrixStore(sqlite) as st:  # a real store of the previous release, migrated, and more
        _fill(st)
        before = _all_samples(st)
    assert len(before) >= 5 and sum(len(v[0]) for v in before.values()) > 800
    proc = fabench_run("store", "copy", str(sqlite.parent), pg_url)
    assert "compared row by row: identical" in proc.stdout
    back = tmp_path / "b" / "fabench.sqlite"
    fabench_run("store", "copy", pg_url, str(back))
    with MatrixStore(sqlite) as a, Store(pg_url) as p, MatrixStore(back) as b:
        assert _all_samples(p) == before and _all_samples(b) == before
        assert compare_stores(a, b) == [] and compare_stores(a, p) == []
        assert [(r.id, r.status, r.provenance) for r in b.runs()] == \
            [(r.id, r.status, r.provenance) for r in a.runs()]
        assert b.matrix(max(b.matrices())) == a.matrix(max(a.matrices()))
    with Store(pg_url) as p:  # new runs go on after the copied ids
        rid = p.begin_run(campaign_id=None, key="n", kernel="mpi.latency", transport="shm",
                          mpi="openmpi", ranks=2, launcher="local", repeat=0, settings={})
        assert rid == max(before)[0] + 1
    # into a store that holds rows: refused, the target unchanged
    proc = fabench_run("store", "copy", str(sqlite), pg_url, check=False)
    assert proc.returncode == 2 and "only into an empty store" in proc.stderr


def test_a_report_of_a_server_store_reads_the_numbers_of_the_file(pg_url: str,
                                                                   tmp_path: Path) -> None:
    sqlite = tmp_path / "fabench.sqlite"
    shutil.copy(ROOT / "tests" / "fixtures" / "store" / "v1-4d08b82.sqlite", sqlite)
    fabench_run("store", "copy", str(sqlite), pg_url)
    for store, name in ((sqlite, "file"), (pg_url, "server")):
        fabench_run("report", "--store", str(store), "-o", str(tmp_path / f"{name}.html"))
    file_csv = (tmp_path / "file.csv").read_text()
    assert file_csv == (tmp_path / "server.csv").read_text() and file_csv.count("\n") >= 5


def test_import_and_history_read_and_write_a_server_store(pg_url: str) -> None:
    """The commands that take --store take a URL: an import is one transaction there too
    (both files or neither), and history reads the series from the server."""
    fix = ROOT / "tests" / "fixtures" / "import"
    bad = fabench_run("import", "osu", str(fix / "osu_latency_z.txt"), str(fix / "imb_mpi1.txt"),
                      "--store", pg_url, check=False)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "imb_mpi1.txt: no osu results found" in bad.stderr
    with Store(pg_url) as st:
        assert st.campaigns() == [] and st.runs() == []  # nothing of the first file stayed
    for _ in range(2):
        fabench_run("import", "osu", str(fix / "osu_latency_z.txt"), "--store", pg_url)
    with Store(pg_url) as st:
        # PostgreSQL's sequences do not roll back: the failed import's id is a gap, not reused
        a, b = (r.id for r in st.runs())
        (first, second) = (list(st.results(a)), list(st.results(b)))
        assert [x.times for x in first] == [x.times for x in second] and len(first) > 10
    with Store(pg_url) as st:
        name = st.campaigns()[0]["name"]
    proc = fabench_run("history", name, "--store", pg_url, check=False)
    assert proc.returncode == 0 and "2 campaigns" in proc.stdout
