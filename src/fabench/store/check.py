"""`fabench store check`: is a store sound, and does it hold what fabench wrote?

Two layers: SQLite's own integrity check (pages, b-trees, indexes), then fabench's invariants
(results belong to runs, runs to campaigns, each sample blob holds the count it claims, every
status is one fabench writes, every JSON column parses, an `ok` run has results). The file is
only read: no migration, no recovery, so a damaged store is examined as it was found.
"""

import json
import math
import os
import re
import sqlite3
import zlib
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from ..host.process_identity import ProcessOwner
from ..records import SERIES
from .database import CAMPAIGN_STATUSES, RUN_STATUSES
from .schema import SCHEMA_VERSION, schema_columns, table_columns

SQLITE_MAGIC = b"SQLite format 3\x00"
OK, PROBLEMS, UNREADABLE = 0, 3, 2
_SHOWN = 5  # ids named per finding; the count says how many more

_FINISHED_WITH = re.compile(r"finished with \d+ failed")
_JSON_COLUMNS = {"campaigns": ("spec", "provenance", "owner"),
                 "runs": ("settings", "notes", "kernel_meta", "provenance", "flags", "owner"),
                 "results": ("extra",)}


class Reader:
    """What the invariants read through: a connection's `execute` (`?` parameters, rows by
    column name) and the store's tables with their columns, read once."""

    def __init__(self, db: Any, cols: dict[str, tuple[str, ...]]) -> None:
        self.db = db
        self.cols = cols

    def execute(self, sql: str, parameters: Any = ()) -> Any:
        return self.db.execute(sql, parameters)


@dataclass
class Finding:
    check: str
    level: str  # "problem" or "note"
    text: str


@dataclass
class CheckReport:
    path: Path | str  # a file, or a server store's URL without its password
    readable: bool = True
    server: bool = False  # a PostgreSQL store
    version: int | None = None
    counts: dict[str, int] = field(default_factory=dict)
    checks: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def problems(self) -> list[Finding]:
        return [f for f in self.findings if f.level == "problem"]

    @property
    def exit_code(self) -> int:
        if not self.readable:
            return UNREADABLE
        return PROBLEMS if self.problems else OK

    def to_json(self) -> dict[str, object]:
        return {"store": str(self.path), "backend": "postgresql" if self.server else "sqlite",
                "readable": self.readable,
                "schema_version": self.version, "reads_up_to": SCHEMA_VERSION,
                "counts": self.counts, "checks": self.checks,
                "findings": [vars(f) for f in self.findings], "exit_status": self.exit_code}


def _ids(ids: list[object]) -> str:
    shown = ", ".join(str(i) for i in ids[:_SHOWN])
    return shown + (f" and {len(ids) - _SHOWN} more" if len(ids) > _SHOWN else "")


def check_store(path: Path) -> CheckReport:
    rep = CheckReport(path)
    if not _readable_file(rep):
        return rep
    try:
        db = _connect(path)
    except sqlite3.Error as exc:
        return _unreadable(rep, f"SQLite cannot open it ({exc})")
    try:
        _check(db, rep)
    finally:
        db.close()
    return rep


def _unreadable(rep: CheckReport, text: str) -> CheckReport:
    rep.readable = False
    rep.findings.append(Finding("open", "problem", text))
    return rep


def _readable_file(rep: CheckReport) -> bool:
    p = rep.path
    if not p.is_file():
        _unreadable(rep, "no such file" if not p.exists() else "not a regular file")
        return False
    try:
        with open(p, "rb") as fh:
            head = fh.read(100)
    except OSError as exc:
        _unreadable(rep, f"cannot read it ({exc.strerror})")
        return False
    if not head:
        _unreadable(rep, "the file is empty (0 bytes): not a store")
        return False
    if not head.startswith(SQLITE_MAGIC):
        _unreadable(rep, "not an SQLite database: its first bytes are not SQLite's header "
                         "(overwritten, or another kind of file)")
        return False
    rep.counts["bytes"] = p.stat().st_size
    if len(head) == 100:
        _header_size_check(rep, head)
    return True


def _header_size_check(rep: CheckReport, head: bytes) -> None:
    """A store cut short: the header's page count is more than the file holds. The count is
    valid only when the header's change counter matches its version-valid-for field."""
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(head[28:32], "big")
    valid = head[24:28] == head[92:96]
    wal = rep.path.with_name(rep.path.name + "-wal")
    if valid and pages and page_size and not (wal.exists() and wal.stat().st_size > 0):
        want = pages * page_size
        if rep.counts["bytes"] < want:
            rep.findings.append(Finding(
                "file size", "problem",
                f"the file is {rep.counts['bytes']} bytes but its header says {pages} pages of "
                f"{page_size} bytes ({want}): it was cut short (copy or disk filled up)"))


def _connect(path: Path) -> sqlite3.Connection:
    # query_only: no statement of the check can change the store. Not SQLite's read-only
    # mode where the store can be written: that mode leaves an empty -wal and a -shm beside
    # the file, where a normal last close folds the log in and removes both, as any fabench
    # command does.
    if os.access(path, os.W_OK) and os.access(path.parent, os.W_OK):
        db = sqlite3.connect(str(path))
        db.execute("PRAGMA query_only = ON")
    else:
        db = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    return db


def _check(db: sqlite3.Connection, rep: CheckReport) -> None:
    try:
        lines = [str(r[0]) for r in db.execute("PRAGMA integrity_check(100)")]
    except sqlite3.DatabaseError as exc:
        _unreadable(rep, f"SQLite cannot read it: {exc}")
        return
    rep.checks.append("sqlite integrity")
    if lines != ["ok"]:
        for line in lines[:20]:
            rep.findings.append(Finding("sqlite integrity", "problem", line))
        if len(lines) > 20:
            rep.findings.append(Finding("sqlite integrity", "problem",
                                        f"... {len(lines) - 20} more"))
    try:
        have = table_columns(db)
    except sqlite3.DatabaseError as exc:
        _unreadable(rep, f"SQLite cannot read its list of tables: {exc}")
        return
    if "meta" not in have:
        _unreadable(rep, "an SQLite database, but not a fabench store (no `meta` table)")
        return
    if not read_schema_version(db, rep):
        return
    if not schema_complete(have, rep):
        return  # the invariants below name those columns
    run_invariants(Reader(db, have), rep, INVARIANTS)
    _wal_note(rep)


def schema_complete(have: dict[str, tuple[str, ...]], rep: CheckReport) -> bool:
    """Every table and column of the store's schema version is there (a finding each that
    is not)."""
    want = schema_columns(rep.version or SCHEMA_VERSION)
    rep.checks.append("tables and columns")
    complete = True
    for table, cols in want.items():
        missing = [c for c in cols if c not in have.get(table, ())]
        if table not in have:
            rep.findings.append(Finding("tables and columns", "problem",
                                        f"table `{table}` is missing"))
            complete = False
        elif missing:
            rep.findings.append(Finding("tables and columns", "problem",
                                        f"table `{table}` lacks {', '.join(missing)}"))
            complete = False
    return complete


Invariant = tuple[str, Callable[[Reader, CheckReport], None]]


def run_invariants(db: Reader, rep: CheckReport, checks: tuple[Invariant, ...],
                   errors: tuple[type[BaseException], ...] = (sqlite3.DatabaseError,)) -> None:
    for name, fn in checks:
        rep.checks.append(name)
        try:
            fn(db, rep)
        except errors as exc:
            rep.findings.append(Finding(name, "problem", f"could not be read: {exc}"))


def read_schema_version(db: Any, rep: CheckReport,
                        errors: tuple[type[BaseException], ...] = (sqlite3.DatabaseError,)
                        ) -> bool:
    rep.checks.append("schema version")
    try:
        row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except errors as exc:
        rep.findings.append(Finding("schema version", "problem", f"meta unreadable: {exc}"))
        return False
    if row is None:
        rep.findings.append(Finding("schema version", "problem",
                                    "no schema_version in `meta`"))
        return False
    try:
        rep.version = int(str(row[0]))
    except ValueError:
        rep.findings.append(Finding("schema version", "problem",
                                    f"schema_version is {str(row[0])[:40]!r}, not a number"))
        return False
    if rep.version > SCHEMA_VERSION:
        _unreadable(rep, f"schema version {rep.version} was written by a newer fabench; this "
                         f"one ({__version__}) knows versions up to {SCHEMA_VERSION}: check it "
                         "with that fabench")
        return False
    if rep.version < 1:
        rep.findings.append(Finding("schema version", "problem",
                                    f"schema_version {rep.version} was never written"))
        return False
    if rep.version < SCHEMA_VERSION:
        kept = "in one transaction (PostgreSQL's DDL is transactional)" if rep.server else \
            f"keeping a copy ({Path(rep.path).name}.schema{rep.version}.bak)"
        rep.findings.append(Finding(
            "schema version", "note",
            f"schema version {rep.version}, older than this fabench's {SCHEMA_VERSION}: the "
            f"next fabench command that opens it migrates it, {kept}"))
    return True


def _counts(db: Reader, rep: CheckReport) -> None:
    for table in ("campaigns", "runs", "results", "samples"):
        rep.counts[table] = int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def _references(db: Reader, rep: CheckReport) -> None:
    # The same as PRAGMA foreign_key_check, spelt out so the message names the rows.
    pairs = (("results", "run_id", "runs", "result", "run"),
             ("samples", "result_id", "results", "sample series of result", "result"),
             ("runs", "campaign_id", "campaigns", "run", "campaign"),
             ("matrix_pairs", "run_id", "runs", "matrix pair", "run"),
             ("matrices", "campaign_id", "campaigns", "matrix of campaign", "campaign"))
    for table, col, parent, what, pwhat in pairs:
        if table not in db.cols:
            continue
        key = {"samples": "result_id", "matrices": "campaign_id"}.get(table, "id")
        rows = db.execute(
            f"SELECT t.{key} AS id, t.{col} AS ref FROM {table} t WHERE t.{col} IS NOT NULL "
            f"AND NOT EXISTS (SELECT 1 FROM {parent} p WHERE p.id = t.{col})").fetchall()
        if rows:
            rep.findings.append(Finding(
                "references", "problem",
                f"{len(rows)} {what}(s) refer to a {pwhat} that does not exist: "
                + _ids([f"{r['id']} -> {pwhat} {r['ref']}" for r in rows])))


# Rows that must be unique. Results and matrix pairs have no unique key in the schema (only
# an index), so a writer that wrote one twice (a resumed or retried write) would go unseen.
_UNIQUE = (("results", ("run_id", "size"), "result(s) of one run at one size"),
           ("samples", ("result_id", "series"), "sample series of one result"),
           ("matrix_pairs", ("run_id", "src", "dst", "round", "mode"),
            "matrix direction(s) of one pass and round"))


def _duplicates(db: Reader, rep: CheckReport) -> None:
    for table, key, what in _UNIQUE:
        if table not in db.cols:
            continue
        cols = ", ".join(key)
        rows = db.execute(f"SELECT {cols}, count(*) AS n FROM {table} GROUP BY {cols} "
                          "HAVING count(*) > 1 ORDER BY " + cols).fetchall()
        if rows:
            rep.findings.append(Finding(
                "duplicates", "problem",
                f"{len(rows)} {what} written more than once: "
                + _ids(["(" + ", ".join(f"{k} {r[k]}" for k in key) + f") x{r['n']}"
                        for r in rows])))


def _statuses(db: Reader, rep: CheckReport) -> None:
    bad = [(r["id"], r["status"]) for r in db.execute("SELECT id, status FROM runs")
           if r["status"] not in RUN_STATUSES]
    if bad:
        rep.findings.append(Finding(
            "statuses", "problem",
            f"{len(bad)} run(s) with a status fabench does not write (it writes "
            f"{', '.join(RUN_STATUSES)}): " + _ids([f"{i} ({s!r})" for i, s in bad])))
    bad = [(r["id"], r["status"]) for r in db.execute("SELECT id, status FROM campaigns")
           if r["status"] not in CAMPAIGN_STATUSES
           and not _FINISHED_WITH.fullmatch(str(r["status"]))]
    if bad:
        rep.findings.append(Finding(
            "statuses", "problem",
            f"{len(bad)} campaign(s) with a status fabench does not write: "
            + _ids([f"{i} ({s!r})" for i, s in bad])))


def _json_columns(db: Reader, rep: CheckReport) -> None:
    for table, cols in _JSON_COLUMNS.items():
        present = [c for c in cols if c in db.cols.get(table, ())]
        for col in present:
            bad = []
            for r in db.execute(f"SELECT id, {col} AS v FROM {table}"):
                if r["v"] is None:
                    continue
                try:
                    json.loads(r["v"])
                except (TypeError, ValueError):
                    bad.append(r["id"])
            if bad:
                rep.findings.append(Finding(
                    "json columns", "problem",
                    f"{table}.{col} is not JSON in {len(bad)} row(s): ids {_ids(bad)}"))


def _samples(db: Reader, rep: CheckReport) -> None:
    torn, unknown, nonfinite, short, changed = [], [], [], [], []
    crc = "s.crc32" if "crc32" in db.cols.get("samples", ()) else "NULL"
    rows = db.execute(
        f"SELECT s.result_id, s.series, s.n, s.data, {crc} AS crc32, r.iterations, u.launcher"
        " FROM samples s LEFT JOIN results r ON r.id = s.result_id"
        " LEFT JOIN runs u ON u.id = r.run_id")
    for r in rows:
        data = r["data"]
        where = f"{r['result_id']}/{r['series']}"
        if r["series"] not in SERIES:
            unknown.append(where)
        if not isinstance(data, bytes) or len(data) % 8 or len(data) // 8 != r["n"]:
            size = len(data) if isinstance(data, bytes) else "not a blob"
            torn.append(f"{where} (n={r['n']}, {size} bytes)")
            continue
        if r["crc32"] is not None and zlib.crc32(data) != r["crc32"]:
            changed.append(where)
        values = array("d")
        values.frombytes(data)
        # times and rates are finite and not negative, whichever kernel or tool wrote them
        if not all(math.isfinite(v) and v >= 0 for v in values):
            nonfinite.append(where)
        # fabench's own kernels report one time per timed iteration; an imported run keeps
        # what the other tool printed (often one mean for many iterations).
        launcher = r["launcher"] or ""
        if (r["series"] == "times" and not launcher.startswith("import:")
                and r["iterations"] is not None and r["n"] != r["iterations"]):
            short.append(f"{where} ({r['n']} samples, {r['iterations']} iterations)")
    for items, text in (
            (torn, "sample blob(s) whose length disagrees with their count"),
            (unknown, f"sample series fabench does not write (it writes {', '.join(SERIES)})"),
            (changed, "sample series whose bytes differ from their checksum (changed after "
                      "they were written)"),
            (nonfinite, "sample series holding NaN, infinity or a negative time"),
            (short, "times series whose sample count differs from the result's iterations")):
        if items:
            rep.findings.append(Finding("samples", "problem",
                                        f"{len(items)} {text}: {_ids(list(items))}"))


def _results_have_times(db: Reader, rep: CheckReport) -> None:
    # add_result writes a result and its samples in one transaction: one without the other
    # is a torn write or a deleted row.
    rows = db.execute("SELECT id FROM results WHERE iterations > 0 AND NOT EXISTS (SELECT 1 "
                      "FROM samples s WHERE s.result_id = results.id AND s.series = 'times')"
                      ).fetchall()
    if rows:
        rep.findings.append(Finding("result samples", "problem",
                                    f"{len(rows)} result(s) without their times series: ids "
                                    f"{_ids([r['id'] for r in rows])}"))


def _ok_runs_have_results(db: Reader, rep: CheckReport) -> None:
    # A matrix pass keeps what it measured as pairs (`matrix_pairs`), not as results.
    pairs = (" AND NOT EXISTS (SELECT 1 FROM matrix_pairs m WHERE m.run_id = runs.id)"
             if "matrix_pairs" in db.cols else "")
    rows = db.execute("SELECT id FROM runs WHERE status = 'ok' AND NOT EXISTS "
                      "(SELECT 1 FROM results r WHERE r.run_id = runs.id)" + pairs).fetchall()
    if rows:
        rep.findings.append(Finding("results of ok runs", "problem",
                                    f"{len(rows)} run(s) marked ok hold no result: "
                                    f"ids {_ids([r['id'] for r in rows])}"))


def _running(db: Reader, rep: CheckReport) -> None:
    """A `running` row is no damage: a live writer has one; a dead one's is marked
    `interrupted` by the next fabench that opens the store. Said, not counted."""
    has_owner = "owner" in db.cols.get("runs", ())
    rows = db.execute("SELECT id, " + ("owner" if has_owner else "NULL AS owner")
                      + " FROM runs WHERE status = 'running'").fetchall()
    for r in rows:
        try:
            owner = ProcessOwner.from_json(json.loads(r["owner"] or "null"))
        except (TypeError, ValueError):
            owner = None
        alive = owner.alive() if owner else None
        if owner is None:
            text = ("no writer recorded (an older fabench wrote it): if no fabench is writing "
                    "to this store, it was interrupted")
        elif alive:
            text = f"being written now by fabench {owner.describe()}"
        elif alive is None:
            text = (f"written by fabench {owner.describe()}, which this host cannot see; "
                    "that host's next fabench marks it interrupted if that process is gone")
        else:
            text = (f"left by fabench {owner.describe()}, which is gone; the next fabench "
                    "command that opens the store marks it interrupted")
        rep.findings.append(Finding("running runs", "note", f"run {r['id']} is running: "
                                                            f"{text}"))


INVARIANTS: tuple[Invariant, ...] = (
    ("counts", _counts), ("references", _references), ("duplicates", _duplicates),
    ("statuses", _statuses), ("json columns", _json_columns), ("samples", _samples),
    ("result samples", _results_have_times), ("results of ok runs", _ok_runs_have_results),
    ("running runs", _running))
# On a server: what SQL answers there; not the sample bytes and JSON columns (every blob
# across the network: `fabench store copy URL FILE` and a check of FILE reads them).
SERVER_INVARIANTS: tuple[Invariant, ...] = tuple(
    (n, f) for n, f in INVARIANTS if n not in ("json columns", "samples"))


def _wal_note(rep: CheckReport) -> None:
    wal = rep.path.with_name(rep.path.name + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        rep.findings.append(Finding(
            "write-ahead log", "note",
            f"{wal.name} ({wal.stat().st_size} bytes) is beside it: a fabench is writing, or "
            "one was killed; its last commits are there, so move or copy the store together "
            "with it (the next fabench command folds it into the store)"))
