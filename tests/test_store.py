import csv
import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from array import array
from pathlib import Path

import pytest

from conftest import ROOT, fabench_run, missing
from fabench.errors import StoreDamagedError, StoreError, StoreVersionError
from fabench.host.proc_stat import proc_start
from fabench.host.process_identity import ProcessOwner
from fabench.host.provenance import VersionProbe, git_revision, run_environment
from fabench.records import ResultRecord
from fabench.store.database import Store, backup_path
from fabench.store.schema import MIGRATIONS, SCHEMA_VERSION, schema_columns, table_columns


def test_roundtrip_keeps_every_sample(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as st:
        cid = st.begin_campaign("c", {"x": 1}, {"host": "h"})
        rid = st.begin_run(campaign_id=cid, key="k", kernel="mpi.allreduce", transport="shm",
                           mpi="openmpi", ranks=4, launcher="local", repeat=0, settings={})
        rec = ResultRecord(kernel="mpi.allreduce", size=64, iterations=3, warmup=1, unit="us",
                           times=[1.5, 2.25, 3.0], times_min=[1.0, 1.0, 1.0],
                           times_mean=[1.2, 1.3, 1.4], datatype="MPI_FLOAT", count=16,
                           validated=True, bytes_per_sample=64)
        st.add_result(rid, rec)
        st.finish_run(rid, status="ok", selected_transport="ob1/vader", notes=["n"])
        st.end_campaign(cid, "finished")
    with Store(tmp_path / "s.sqlite") as st:
        (run,) = st.runs(cid)
        assert run.status == "ok" and run.selected_transport == "ob1/vader"
        (back,) = list(st.results(run.id))
        assert back.times == [1.5, 2.25, 3.0]
        assert back.times_min == [1.0, 1.0, 1.0] and back.times_mean == [1.2, 1.3, 1.4]
        assert back.validated is True and back.count == 16
        assert st.completed_keys(cid) == {"k"}


def test_git_revision_only_from_a_real_commit(tmp_path: Path) -> None:
    """Provenance stores a revision or nothing, never git's error message."""
    if shutil.which("git") is None:
        missing("git is not installed")
    plain = tmp_path / "plain"
    plain.mkdir()
    assert git_revision(plain) is None  # not a checkout (no .git above a pytest tmp dir)
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], check=True)
    assert git_revision(repo) is None  # a checkout without a commit: git describe fails
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "c"], check=True)
    rev = git_revision(repo / "sub" / "dir")  # found from below the top, like the package
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    assert rev is not None and rev.startswith(head) and "fatal" not in rev


def test_a_library_version_is_asked_once_until_its_program_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A probe's program runs once per process while it and the search paths stay as they
    were (each run leaves a line in `asked`); a program replaced, or another PATH, asks
    again."""
    asked = tmp_path / "asked"
    prog = tmp_path / "bin" / "fbv-info"
    prog.parent.mkdir()
    prog.write_text(f"#!/bin/sh\necho x >> {asked}\necho 'fbv 1.2.3'\n")
    prog.chmod(0o755)
    monkeypatch.setenv("PATH", f"{prog.parent}:{os.environ['PATH']}")
    probe = VersionProbe("fbv", (("fbv-info",),), r"fbv (\S+)")
    assert [probe.version(), probe.version()] == ["1.2.3", "1.2.3"]
    assert asked.read_text().count("x") == 1
    prog.write_text(f"#!/bin/sh\necho x >> {asked}\necho 'fbv 1.2.4'\n")  # reinstalled
    assert probe.version() == "1.2.4" and asked.read_text().count("x") == 2
    monkeypatch.setenv("PATH", f"{os.environ['PATH']}:/nonexistent")
    assert probe.version() == "1.2.4" and asked.read_text().count("x") == 3


def test_run_environment_keeps_what_was_set_and_what_was_inherited() -> None:
    inherited = {"UCX_TLS": "tcp", "FI_PROVIDER": "tcp", "MPIR_CVAR_CH4_NETMOD": "ofi",
                 "HOME": "/root", "PATH": "/bin", "OMPI_MCA_btl": "self,tcp"}
    env = run_environment({"OMPI_MCA_btl": "self,vader", "OMPI_ALLOW_RUN_AS_ROOT": "1"},
                          inherited)
    assert env["environment_set"] == {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_MCA_btl": "self,vader"}
    assert env["environment_inherited"] == {"FI_PROVIDER": "tcp", "MPIR_CVAR_CH4_NETMOD": "ofi",
                                            "OMPI_MCA_btl": "self,tcp", "UCX_TLS": "tcp"}
    # what the ranks saw: fabench's value wins, as in the launchers; no unrelated variables
    assert env["environment"] == {"FI_PROVIDER": "tcp", "MPIR_CVAR_CH4_NETMOD": "ofi",
                                  "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_MCA_btl": "self,vader",
                                  "UCX_TLS": "tcp"}


# -- schema versions and migration (issue 12) -------------------------------------------------

FIXTURE = ROOT / "tests" / "fixtures" / "store" / "v1-4d08b82.sqlite"
EXPECTED = json.loads(FIXTURE.with_suffix(".json").read_text())


def _old_store(tmp_path: Path) -> Path:
    """A copy of the store the previous release wrote: opening one migrates it in place."""
    dst = tmp_path / "old" / "fabench.sqlite"
    dst.parent.mkdir()
    shutil.copyfile(FIXTURE, dst)
    return dst


def _version_of(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        return int(db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0])
    finally:
        db.close()


def test_store_of_the_previous_release_reports_the_same_numbers(tmp_path: Path) -> None:
    store = _old_store(tmp_path)
    assert _version_of(store) == 1
    proc = fabench_run("report", "1", "2", "--store", str(store), "-o",
                       str(tmp_path / "r.html"))
    assert _version_of(store) == SCHEMA_VERSION
    assert (f"migrated the store {store} from schema version 1 to {SCHEMA_VERSION}; the store "
            f"as it was: {store}.schema1.bak") in proc.stderr
    rows = [r for r in csv.DictReader((tmp_path / "r.csv").open()) if r["scope"] == "run"]
    for run in EXPECTED["runs"]:
        for want in run["sizes"]:
            (got,) = [r for r in rows if r["run_ids"] == str(run["id"])
                      and int(r["size"]) == want["size"]]
            assert got["kernel"] == run["kernel"] and got["selected"] == run["selected_transport"]
            # the same samples through the same statistics: the same numbers, to the bit
            for key in ("median", "min", "max", "p5", "p95"):
                assert float(got[key]) == want[key], (run["id"], want["size"], key)
            assert int(got["n"]) == want["n"]
            assert float(got["mean"]) == pytest.approx(want["mean"], rel=1e-12)
    with Store(store) as st:
        assert [(r.id, r.kernel, r.status) for r in st.runs()] == [
            (r["id"], r["kernel"], r["status"]) for r in EXPECTED["runs"]]
        for run in EXPECTED["runs"]:
            got_sizes = {rec.size: rec for rec in st.results(run["id"])}
            for want in run["sizes"]:
                rec = got_sizes[want["size"]]
                digest = hashlib.sha256(repr(rec.times).encode()).hexdigest()
                assert digest == want["times_sha256"] and rec.iterations == want["iterations"]


def test_migration_keeps_a_backup_and_says_what_it_did(tmp_path: Path) -> None:
    store = _old_store(tmp_path)
    with Store(store) as st:
        assert st.migration is not None
        assert (st.migration.from_version, st.migration.to_version) == (1, SCHEMA_VERSION)
        backup = st.migration.backup
        note = json.loads(st.db.execute(
            "SELECT value FROM meta WHERE key = ?", (f"migration.{SCHEMA_VERSION}",)
        ).fetchone()[0])
    assert backup == store.with_name("fabench.sqlite.schema1.bak") and backup.is_file()
    assert note["from"] == SCHEMA_VERSION - 1 and note["backup"] == str(backup)
    # the backup is the old store as it was: version 1, the same rows, readable by SQLite
    assert _version_of(backup) == 1
    old = sqlite3.connect(backup)
    try:
        assert old.execute("SELECT count(*) FROM runs").fetchone()[0] == len(EXPECTED["runs"])
        assert "owner" not in table_columns(old)["runs"]
    finally:
        old.close()
    with Store(store) as st:  # a second open finds nothing to do and makes no second copy
        assert st.migration is None
    assert sorted(p.name for p in store.parent.iterdir() if p.name.endswith(".bak")) == [
        "fabench.sqlite.schema1.bak"]


def test_new_and_migrated_stores_have_one_schema(tmp_path: Path) -> None:
    assert [m.to_version for m in MIGRATIONS] == list(range(2, SCHEMA_VERSION + 1))
    with Store(tmp_path / "new.sqlite") as st:
        new = table_columns(st.db)
    with Store(_old_store(tmp_path)) as st:
        migrated = table_columns(st.db)
    assert new == migrated == schema_columns(SCHEMA_VERSION)


def test_a_newer_store_is_refused_and_left_untouched(tmp_path: Path) -> None:
    store = _old_store(tmp_path)
    db = sqlite3.connect(store)
    db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
               (str(SCHEMA_VERSION + 1),))
    db.commit()
    db.close()
    before = hashlib.sha256(store.read_bytes()).hexdigest()
    with pytest.raises(StoreVersionError) as err:
        Store(store)
    text = str(err.value)
    assert f"version {SCHEMA_VERSION + 1}" in text and f"up to {SCHEMA_VERSION}" in text
    assert "newer fabench" in text and str(store) in text
    proc = fabench_run("report", "--store", str(store), "-o", str(tmp_path / "r.html"),
                       check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"schema version {SCHEMA_VERSION + 1}" in proc.stderr
    assert hashlib.sha256(store.read_bytes()).hexdigest() == before
    assert not list(store.parent.glob("*.bak"))


def test_rows_are_read_by_column_name_not_position(tmp_path: Path) -> None:
    """The same table with its columns in another order (as a rebuilt or hand-repaired store
    may have): every field still lands where it belongs."""
    path = tmp_path / "s.sqlite"
    with Store(path) as st:
        cid = st.begin_campaign("c", {"x": 1})
        rid = st.begin_run(campaign_id=cid, key="k", kernel="mpi.bw", transport="tcp",
                           mpi="mpich", ranks=3, launcher="local", repeat=2,
                           settings={"s": 1})
        st.finish_run(rid, status="ok", reason="why", selected_transport="tcp",
                      notes=["n1"], command="cmd", flags=["f"], kernel_meta={"m": 1})
        st.add_result(rid, ResultRecord(kernel="mpi.bw", size=8, iterations=2, warmup=0,
                                        unit="us", times=[1.0, 2.0], count=8))
        cols = table_columns(st.db)["runs"]
    db = sqlite3.connect(path)
    db.execute("PRAGMA foreign_keys = OFF")
    rev = ", ".join(reversed(cols))
    db.executescript(f"CREATE TABLE runs2 AS SELECT {rev} FROM runs; DROP TABLE runs; "
                     "ALTER TABLE runs2 RENAME TO runs;")
    db.close()
    with Store(path) as st:
        assert table_columns(st.db)["runs"] == tuple(reversed(cols))
        (run,) = st.runs()
        assert (run.id, run.campaign_id, run.kernel, run.transport, run.mpi, run.ranks,
                run.repeat, run.status, run.reason, run.selected_transport, run.command) == (
                    rid, cid, "mpi.bw", "tcp", "mpich", 3, 2, "ok", "why", "tcp", "cmd")
        assert run.settings == {"s": 1} and run.notes == ["n1"] and run.flags == ["f"]
        assert [r.times for r in st.results(rid)] == [[1.0, 2.0]]


def test_an_sqlite_file_that_is_not_a_store_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="not a fabench store"):
        Store(path)


# -- damaged stores (issue 19) ----------------------------------------------------------------

def _truncate(path: Path) -> None:
    size = path.stat().st_size
    with open(path, "r+b") as fh:
        fh.truncate(size // 2)


def test_a_truncated_store_is_one_message_naming_the_file_the_check_and_the_backup(
        tmp_path: Path) -> None:
    store = _old_store(tmp_path)
    with Store(store) as st:  # a campaign start leaves a backup of the sound store
        cid = st.begin_campaign("c", {})
        st.end_campaign(cid, "finished")
    _truncate(store)
    proc = fabench_run("report", "--store", str(store), "-o", str(tmp_path / "r.html"),
                       check=False)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"the store {store} is damaged" in proc.stderr
    assert f"fabench store check --store {store}" in proc.stderr
    assert f"backup: {backup_path(store)}" in proc.stderr
    assert f"backup: {store}.schema1.bak" in proc.stderr


def test_a_damaged_store_never_replaces_the_backup(tmp_path: Path) -> None:
    store = _old_store(tmp_path)
    with Store(store) as st:
        st.end_campaign(st.begin_campaign("c", {}), "finished")
    good = backup_path(store).read_bytes()
    raw = bytearray(store.read_bytes())
    db = sqlite3.connect(store)
    root = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'results'").fetchone()[0]
    page = db.execute("PRAGMA page_size").fetchone()[0]
    db.close()
    raw[(root - 1) * page:(root - 1) * page + 40] = b"\x0f" + b"\xff" * 39  # not a b-tree page
    store.write_bytes(bytes(raw))
    with pytest.raises(StoreDamagedError, match="damaged"), Store(store) as st:
        st.begin_campaign("d", {})
    assert backup_path(store).read_bytes() == good


def test_a_changed_sample_byte_is_found_not_reported(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    times = [1.0 + i / 1000 for i in range(500)]
    with Store(path) as st:
        rid = st.begin_run(campaign_id=None, key="k", kernel="mpi.latency", transport="shm",
                           mpi="openmpi", ranks=2, launcher="local", repeat=0, settings={})
        st.add_result(rid, ResultRecord(kernel="mpi.latency", size=8, iterations=500,
                                        warmup=0, unit="us", times=times))
    raw = bytearray(path.read_bytes())
    off = bytes(raw).index(array_bytes(times[100:108]))
    raw[off + 3] ^= 0x10  # one bit of one sample: still a plausible, finite time
    path.write_bytes(bytes(raw))
    with Store(path) as st, pytest.raises(StoreDamagedError, match="checksum"):
        list(st.results(rid))


def array_bytes(values: list[float]) -> bytes:
    return array("d", values).tobytes()


# -- runs left `running` by a dead fabench (issue 19) --------------------------------------

WRITER = """
import sys, time
from fabench.store.database import Store
st = Store(sys.argv[1])
cid = st.begin_campaign("c", {})
rid = st.begin_run(campaign_id=cid, key="k", kernel="mpi.latency", transport="shm",
                   mpi="openmpi", ranks=2, launcher="local", repeat=0, settings={})
print(cid, rid, flush=True)
time.sleep(600)
"""


def _start_writer(path: Path) -> tuple[subprocess.Popen[str], int, int]:
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    cid, rid = (int(x) for x in proc.stdout.readline().split())
    return proc, cid, rid


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP])
def test_runs_of_a_dead_fabench_become_interrupted(tmp_path: Path, sig: int) -> None:
    path = tmp_path / "s.sqlite"
    proc, cid, rid = _start_writer(path)
    try:
        with Store(path) as st:  # the writer lives: its run is left alone
            assert st.recovered == [] and st.run(rid).status == "running"
            assert st.run(rid).owner == ProcessOwner(
                pid=proc.pid, start=proc_start(proc.pid), host=ProcessOwner.current().host,
                boot_id=ProcessOwner.current().boot_id, pid_ns=ProcessOwner.current().pid_ns)
        proc.send_signal(sig)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    with Store(path) as st:
        run = st.run(rid)
        assert run.status == "interrupted"
        assert run.reason and f"pid {proc.pid}" in run.reason
        assert st.campaign(cid).status == "interrupted"
        assert len(st.recovered) == 2
    with Store(path) as st:  # once is enough
        assert st.recovered == []


def test_a_reused_pid_or_another_host_is_told_apart(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    me = ProcessOwner.current()
    with Store(path) as st:
        ids = [st.begin_run(campaign_id=None, key=f"k{i}", kernel="mpi.latency",
                            transport="shm", mpi="openmpi", ranks=2, launcher="local",
                            repeat=0, settings={}) for i in range(4)]
        owners = [
            # this very pid, but a process that started at another time: the pid was reused
            {**me.to_json(), "start": (me.start or 0) + 1},
            {**me.to_json(), "host": me.host + "-elsewhere"},  # cannot tell: left alone
            "not json {",  # a damaged owner: left alone
            me.to_json(),  # alive
        ]
        for rid, owner in zip(ids, owners, strict=True):
            st.db.execute("UPDATE runs SET owner = ? WHERE id = ?",
                          (owner if isinstance(owner, str) else json.dumps(owner), rid))
        st.db.commit()
    with Store(path) as st:
        assert [st.run(i).status for i in ids] == ["interrupted", "running", "running",
                                                   "running"]


# -- write-ahead log and checkpoints -------------------------------------------------------

def test_the_database_file_alone_holds_every_finished_run(tmp_path: Path) -> None:
    """WAL keeps commits in the -wal file; the checkpoint after each run moves them into the
    .sqlite, so a copy of that file alone (as `scp` of the store would make) has them."""
    path = tmp_path / "s.sqlite"
    with Store(path) as st:
        assert st.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        rid = st.begin_run(campaign_id=None, key="k", kernel="mpi.latency", transport="shm",
                           mpi="openmpi", ranks=2, launcher="local", repeat=0, settings={})
        st.add_result(rid, ResultRecord(kernel="mpi.latency", size=8, iterations=3, warmup=0,
                                        unit="us", times=[1.0, 2.0, 3.0]))
        st.finish_run(rid, status="ok")
        assert (tmp_path / "s.sqlite-wal").exists()  # the writer is still open
        shutil.copyfile(path, tmp_path / "copy.sqlite")
    with Store(tmp_path / "copy.sqlite") as st:
        assert st.run(rid).status == "ok"
        assert [r.times for r in st.results(rid)] == [[1.0, 2.0, 3.0]]


def test_each_campaign_start_refreshes_the_backup(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with Store(path) as st:
        c1 = st.begin_campaign("one", {})
        st.end_campaign(c1, "finished")
        c2 = st.begin_campaign("two", {})
        st.end_campaign(c2, "finished")
    with Store(backup_path(path)) as bak:  # taken as campaign two began
        assert [c["name"] for c in bak.campaigns()] == ["one"]


# -- run --resume [ID] -----------------------------------------------------------------------

SMALL = ("name: small\nruns:\n  - kernel: [mpi.latency, mpi.gather]\n    ranks: 2\n"
         "    sizes: '8'\n    iterations: 20\n")

OPENER = """
import sys
from fabench.store.database import Store
with Store(sys.argv[1]) as st:
    print(st.begin_campaign("small", {}), st.begin_campaign("small", {}),
          st.begin_campaign("other", {}))
"""


def test_resume_finishes_the_campaign_named_by_its_id(openmpi: str, tmp_path: Path) -> None:
    spec = tmp_path / "small.yaml"
    spec.write_text(SMALL)
    out = tmp_path / "out"
    db = out / "fabench.sqlite"
    out.mkdir()
    # three campaigns begun by a fabench that then ended without finishing them
    opened = subprocess.run([sys.executable, "-c", OPENER, str(db)], capture_output=True,
                            text=True, check=True)
    c1, c2, other = (int(x) for x in opened.stdout.split())
    res = fabench_run("run", str(spec), "--out", str(out), "--resume", str(c1),
                      "--no-progress")
    assert f"# campaign {c1} (small)" in res.stdout
    with Store(db) as st:
        assert st.campaign(c1).status == "finished"
        assert st.campaign(c2).status == "interrupted"  # not the newest: the one named
        assert {r.kernel for r in st.runs(c1, status="ok")} == {"mpi.latency", "mpi.gather"}
        assert st.runs(c2) == []
    for args, message in (
            ((str(spec), "--resume", str(c1)), f"(#{c1}) already finished"),
            ((str(spec), "--resume", str(other)), f"campaign {other} in {db} is 'other'"),
            ((str(spec), "--resume", "99"), "no campaign 99"),
            ((str(spec), "--resume", "-3"), "--resume takes a campaign id")):
        proc = fabench_run("run", *args, "--out", str(out), "--no-progress", check=False)
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
    # the form from before ids, `--resume SPEC`, still names the spec; no id: the newest
    res = fabench_run("run", "--resume", str(spec), "--out", str(out), "--no-progress")
    assert f"# campaign {c2} (small)" in res.stdout


def test_resume_checks_the_store_before_running_anything(openmpi: str, tmp_path: Path) -> None:
    spec = tmp_path / "small.yaml"
    spec.write_text(SMALL)
    out = tmp_path / "out"
    db = out / "fabench.sqlite"
    out.mkdir()
    subprocess.run([sys.executable, "-c", OPENER, str(db)], check=True, capture_output=True)
    sound = db.read_bytes()
    page = len(sound) // 4096
    damaged = bytearray(sound)
    damaged[(page - 1) * 4096:(page - 1) * 4096 + 64] = bytes(64)  # a zeroed page header
    db.write_bytes(bytes(damaged))
    proc = fabench_run("run", str(spec), "--out", str(out), "--resume", "--no-progress",
                       check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"the store {db} is damaged" in proc.stderr and "fabench store check" in proc.stderr
    assert "mpirun" not in proc.stdout + proc.stderr and "# campaign" not in proc.stdout
