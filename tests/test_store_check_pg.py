"""`fabench store check` on a PostgreSQL store: a real server (tests/pgserver.py), a store
written through the Store API, then damaged the ways a server store can be (orphan rows with
the foreign keys bypassed, a result written twice, a run left `running` by a writer that is
gone, an older schema version); the check finds each, reads only, and refuses a wrong
password with one message."""

import json
import subprocess
import sys
from typing import Any

from conftest import fabench_cli
from fabench.records import ResultRecord
from fabench.store.check_server import check_server_store
from fabench.store.database import Store
from fabench.store.schema import SCHEMA_VERSION
from pgserver import PgServer


def _fill(url: str) -> tuple[int, int]:
    with Store(url) as st:
        cid = st.begin_campaign("c", {}, {})
        rid = st.begin_run(campaign_id=cid, key="k", kernel="mpi.latency", transport="shm",
                           mpi="openmpi", ranks=2, launcher="local", repeat=0, settings={})
        st.add_result(rid, ResultRecord("mpi.latency", 8, 3, 0, "us", [1.0, 1.5, 2.0]))
        st.finish_run(rid, status="ok")
        st.end_campaign(cid, "finished")
    return cid, rid


def _sql(url: str, *statements: str) -> None:
    import psycopg
    with psycopg.connect(url) as conn:
        for s in statements:
            conn.execute(s.encode())


def _check(url: str) -> tuple[int, dict[str, Any], str]:
    p = fabench_cli("store", "check", "--store", url, "--json", check=False, timeout=120)
    assert "Traceback" not in p.stderr, p.stderr
    return p.returncode, (json.loads(p.stdout) if p.stdout.strip() else {}), p.stderr


def _problems(rep: dict[str, Any], check: str) -> list[str]:
    return [f["text"] for f in rep["findings"] if f["check"] == check and
            f["level"] == "problem"]


def test_a_sound_server_store_passes(pg: PgServer) -> None:
    url = pg.new_database()
    _fill(url)
    rc, rep, _ = _check(url)
    assert rc == 0, rep
    assert rep["backend"] == "postgresql" and rep["schema_version"] == SCHEMA_VERSION
    assert "fb-test-secret" not in rep["store"]  # the password is not shown
    assert rep["counts"]["runs"] == 1 and rep["counts"]["samples"] == 1
    assert rep["counts"]["bytes"] > 0
    assert {"schema version", "references", "duplicates", "running runs"} <= \
        set(rep["checks"])
    assert "samples" not in rep["checks"]  # blobs are not pulled across the network
    text = fabench_cli("store", "check", "--store", url).stdout
    assert "# sound (exit status 0)" in text and "sample bytes and JSON columns" in text


def test_orphans_duplicates_and_a_dead_writers_run_are_found_read_only(pg: PgServer) -> None:
    url = pg.new_database()
    cid, rid = _fill(url)
    # orphans: rows whose parent is gone, written around the foreign keys (a superuser's
    # replica mode skips their triggers, as a restore of a partial dump would)
    _sql(url, "SET session_replication_role = replica",
         f"DELETE FROM campaigns WHERE id = {cid}",
         "INSERT INTO results (run_id, size, iterations, warmup, unit) "
         "VALUES (4242, 8, 1, 0, 'us')")
    # the same result written twice (a retried write), with its samples
    with Store(url) as st:
        st.db.execute("INSERT INTO results (run_id, size, iterations, warmup, unit) "
                      "VALUES (?, 8, 3, 0, 'us')", (rid,))
        st.db.commit()
    # a run left `running` by a writer that is gone (a process that exits without finishing)
    code = ("import sys; from fabench.store.database import Store\n"
            "st = Store(sys.argv[1]); st.begin_run(campaign_id=None, key='x', "
            "kernel='mpi.latency', transport='shm', mpi='openmpi', ranks=2, launcher='local', "
            "repeat=0, settings={})\nimport os; os._exit(0)")
    subprocess.run([sys.executable, "-c", code, url], check=True, timeout=120)

    rc, rep, _ = _check(url)
    assert rc == 3, rep
    refs = " ".join(_problems(rep, "references"))
    assert f"run(s) refer to a campaign that does not exist: {rid} -> campaign {cid}" in refs
    assert "-> run 4242" in refs
    [dup] = _problems(rep, "duplicates")
    assert f"(run_id {rid}, size 8) x2" in dup
    running = [f["text"] for f in rep["findings"] if f["check"] == "running runs"]
    assert len(running) == 1 and "which is gone" in running[0]
    # the check only read: the dead writer's run is still `running` (a Store open would
    # have marked it interrupted), the orphans are still there
    rc, again, _ = _check(url)
    assert again["findings"] == rep["findings"]


def test_an_older_schema_is_said_and_a_wrong_password_is_one_line(pg: PgServer) -> None:
    url = pg.new_database()
    _fill(url)
    _sql(url, f"UPDATE meta SET value = '{SCHEMA_VERSION - 1}' WHERE key = 'schema_version'")
    rep = check_server_store(url)
    assert rep.version == SCHEMA_VERSION - 1 and rep.exit_code == 0
    assert any("older than this fabench" in f.text and "transaction" in f.text
               for f in rep.findings)
    _sql(url, f"UPDATE meta SET value = '{SCHEMA_VERSION + 1}' WHERE key = 'schema_version'")
    assert check_server_store(url).exit_code == 2  # a newer fabench's store

    db = url.split("?")[0].rsplit("/", 1)[1]
    rc, rep, err = _check(pg.url(db, password="wrong"))
    assert rc == 2 and not rep.get("readable", False)
    assert "password authentication failed" in json.dumps(rep) and "wrong" not in rep["store"]
    empty = pg.new_database()
    rc, rep, _ = _check(empty)
    assert rc == 2 and "not a fabench store" in json.dumps(rep)
