"""`fabench store check postgresql://...`: the checks of store/check.py that make sense on a
server, read in one read-only transaction.

Run there: the schema version, the tables and columns, the counts, orphan rows (results,
samples, runs, matrix pairs and matrices whose parent is gone: a server enforces the
store's foreign keys, so one found means they were dropped or a row was written around
them), rows written twice, statuses, results without their samples, `ok` runs without
results, and runs left `running`. Not run: SQLite's page check and the file's size and
write-ahead log (the server checks its own pages, with data checksums where the cluster was
made with them), and the sample bytes and JSON columns, which would pull every blob across
the network: `fabench store copy URL FILE` and a check of FILE reads them all.
"""

from typing import Any

from ..errors import StoreError
from .check import (
    SERVER_INVARIANTS,
    CheckReport,
    Finding,
    Reader,
    read_schema_version,
    run_invariants,
    schema_complete,
)
from .postgres import PgConnection, display_url


def _columns(db: PgConnection) -> dict[str, tuple[str, ...]]:
    out: dict[str, list[str]] = {}
    for r in db.execute("SELECT table_name, column_name FROM information_schema.columns "
                        "WHERE table_schema = current_schema() "
                        "ORDER BY table_name, ordinal_position").fetchall():
        out.setdefault(str(r[0]), []).append(str(r[1]))
    return {t: tuple(c) for t, c in out.items()}


def check_server_store(url: str) -> CheckReport:
    rep = CheckReport(display_url(url), server=True)
    try:
        db = PgConnection(url)
    except StoreError as exc:  # wrong password, no server: one line, exit 2
        rep.readable = False
        rep.findings.append(Finding("open", "problem", str(exc)))
        return rep
    try:
        # nothing this check sends can change the store: the server refuses any write
        db.raw.read_only = True
        _check(db, rep)
    except StoreError as exc:  # the server went away mid-check
        rep.readable = False
        rep.findings.append(Finding("open", "problem", str(exc)))
    finally:
        db.rollback()
        db.close()
    return rep


def _check(db: PgConnection, rep: CheckReport) -> None:
    errors: tuple[type[BaseException], ...] = (db.psycopg.Error,)
    have = _columns(db)
    if "meta" not in have:
        rep.readable = False
        what = f"tables: {', '.join(sorted(have))[:200]}" if have else "it is empty"
        rep.findings.append(Finding("open", "problem", f"a database, but not a fabench store "
                                                       f"(no `meta` table; {what})"))
        return
    row: Any = db.execute("SELECT pg_database_size(current_database())").fetchone()
    rep.counts["bytes"] = int(row[0])
    if not read_schema_version(db, rep, errors):
        db.rollback()  # a failed statement ends the transaction's use
        return
    if not schema_complete(have, rep):
        return
    run_invariants(_Rolling(db, have), rep, SERVER_INVARIANTS, errors)


class _Rolling(Reader):
    """A failed statement aborts a PostgreSQL transaction: roll back before the next, so one
    unreadable check does not fail every check after it."""

    def execute(self, sql: str, parameters: Any = ()) -> Any:
        try:
            return self.db.execute(sql, parameters)
        except self.db.psycopg.Error:
            self.db.rollback()
            raise
