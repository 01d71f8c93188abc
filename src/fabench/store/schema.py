"""The store's schema, its versions, and the steps that bring an older store up to date.

A store is kept for years and read by whatever fabench is installed then, so its layout is
versioned (`meta.schema_version`). The tables as the first release wrote them are
`BASE_SCHEMA` (version 1); every later change is one `Migration` below, applied in order. A new
store is made the same way (version 1, then every step), so a migrated store and a new one
cannot drift apart. Before a step touches an existing store, a copy of it is kept beside it.
"""

import json
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from ..errors import StoreError, StoreVersionError

# Version 1, exactly as fabench 0.1.0 (commit 4d08b82) created it. Never edit: add a Migration.
BASE_VERSION = 1
BASE_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS campaigns (
  id INTEGER PRIMARY KEY, name TEXT NOT NULL, spec TEXT NOT NULL, started REAL NOT NULL,
  finished REAL, status TEXT NOT NULL, provenance TEXT NOT NULL DEFAULT '{}');
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY, campaign_id INTEGER REFERENCES campaigns(id), key TEXT NOT NULL,
  kernel TEXT NOT NULL, transport TEXT NOT NULL, mpi TEXT NOT NULL, ranks INTEGER NOT NULL,
  launcher TEXT NOT NULL, repeat INTEGER NOT NULL DEFAULT 0, settings TEXT NOT NULL,
  status TEXT NOT NULL, reason TEXT, started REAL NOT NULL, finished REAL,
  selected_transport TEXT, oversubscribed INTEGER NOT NULL DEFAULT 0, notes TEXT,
  command TEXT, stderr_tail TEXT, kernel_meta TEXT, provenance TEXT, flags TEXT);
CREATE INDEX IF NOT EXISTS runs_campaign ON runs(campaign_id, key);
CREATE TABLE IF NOT EXISTS results (
  id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id), size INTEGER NOT NULL,
  iterations INTEGER NOT NULL, warmup INTEGER NOT NULL, unit TEXT NOT NULL, datatype TEXT,
  count INTEGER, validated INTEGER, bytes_per_sample REAL, messages_per_sample REAL,
  extra TEXT);
CREATE INDEX IF NOT EXISTS results_run ON results(run_id, size);
CREATE TABLE IF NOT EXISTS samples (
  result_id INTEGER NOT NULL REFERENCES results(id), series TEXT NOT NULL, n INTEGER NOT NULL,
  data BLOB NOT NULL, PRIMARY KEY (result_id, series));
"""


@dataclass(frozen=True)
class Migration:
    """One step from version `to_version - 1` to `to_version`."""

    to_version: int
    summary: str
    statements: tuple[str, ...]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        2, "campaigns and runs record the fabench process that owns them (pid, its start time, "
           "host, boot id, PID namespace), so a run left `running` by a fabench that died can "
           "be told from one still in progress and marked `interrupted`; each sample blob "
           "written from now on carries its CRC-32, so a changed byte is found, not reported",
        ("ALTER TABLE campaigns ADD COLUMN owner TEXT",
         "ALTER TABLE runs ADD COLUMN owner TEXT",
         "ALTER TABLE samples ADD COLUMN crc32 INTEGER")),
    Migration(
        3, "the all-pairs matrix (`fabench matrix`): each measured direction of a pair with "
           "its latency and bandwidth samples (and their CRC-32) in `matrix_pairs`, under the "
           "run that measured it; each matrix's hosts and judgement in `matrices`",
        ("CREATE TABLE matrix_pairs ("
         " id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id),"
         " src INTEGER NOT NULL, dst INTEGER NOT NULL, src_host TEXT NOT NULL,"
         " dst_host TEXT NOT NULL, round INTEGER NOT NULL, mode TEXT NOT NULL,"
         " size INTEGER NOT NULL, window INTEGER NOT NULL, bytes_per_sample REAL NOT NULL,"
         " latency BLOB NOT NULL, latency_crc32 INTEGER NOT NULL,"
         " bandwidth BLOB NOT NULL, bandwidth_crc32 INTEGER NOT NULL)",
         "CREATE INDEX matrix_pairs_run ON matrix_pairs(run_id, src, dst)",
         "CREATE TABLE matrices ("
         " campaign_id INTEGER PRIMARY KEY REFERENCES campaigns(id), hosts TEXT NOT NULL,"
         " judgement TEXT NOT NULL, finished REAL NOT NULL)")),
)

SCHEMA_VERSION = MIGRATIONS[-1].to_version if MIGRATIONS else BASE_VERSION


def schema_columns(version: int = SCHEMA_VERSION) -> dict[str, tuple[str, ...]]:
    """The tables and columns a store of `version` has, made by the same steps as a real
    store (in memory), so this cannot disagree with what prepare() builds."""
    db = sqlite3.connect(":memory:")
    try:
        for stmt in _statements(BASE_SCHEMA):
            db.execute(stmt)
        for m in MIGRATIONS:
            if m.to_version <= version:
                for stmt in m.statements:
                    db.execute(stmt)
        return table_columns(db)
    finally:
        db.close()


def table_columns(db: sqlite3.Connection) -> dict[str, tuple[str, ...]]:
    tables = [r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    return {t: tuple(r[1] for r in db.execute("SELECT * FROM pragma_table_info(?)", (t,)))
            for t in tables}


@dataclass(frozen=True)
class MigrationDone:
    from_version: int
    to_version: int
    backup: Path
    steps: tuple[str, ...]


def read_version(db: sqlite3.Connection, path: Path) -> int | None:
    """The store's schema version; None for an empty database (a store not yet made)."""
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not tables:
        return None
    if "meta" not in tables:
        raise StoreError(f"{path} is an SQLite database but not a fabench store (it has no "
                         f"`meta` table; tables: {', '.join(sorted(tables))[:200]})")
    row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is None:
        raise StoreError(f"{path} has no schema_version in its `meta` table: not a store "
                         "fabench wrote, or a damaged one (`fabench store check` tells which)")
    try:
        return int(str(row[0]))
    except ValueError:
        raise StoreError(f"{path}: schema_version is {str(row[0])[:40]!r}, not a number "
                         "(`fabench store check` tells what else is wrong)") from None


def too_new_message(path: Path, found: int) -> str:
    return (f"{path} has store schema version {found}, and this fabench ({__version__}) reads "
            f"versions up to {SCHEMA_VERSION}: it was written by a newer fabench. Install that "
            "fabench (or newer) to read it; this one leaves the file untouched.")


def prepare(db: sqlite3.Connection, path: Path) -> MigrationDone | None:
    """Make a new store, or bring an older one to SCHEMA_VERSION (after a backup copy), or
    refuse a newer one. Opening a current store takes no write lock."""
    version = read_version(db, path)
    if version == SCHEMA_VERSION:
        return None
    if version is not None and version > SCHEMA_VERSION:
        raise StoreVersionError(too_new_message(path, version))
    # Another fabench may be making or migrating the same file right now: decide again
    # under the write lock.
    db.execute("BEGIN IMMEDIATE")
    try:
        version = read_version(db, path)
        if version is not None and version > SCHEMA_VERSION:
            raise StoreVersionError(too_new_message(path, version))
        done = None
        if version is None:
            for stmt in _statements(BASE_SCHEMA):
                db.execute(stmt)
            db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(BASE_VERSION),))
            version = BASE_VERSION
            backup = None
        elif version < SCHEMA_VERSION:
            backup = backup_copy(path, f"schema{version}")
        else:
            backup = None
        first = version
        steps = []
        for m in MIGRATIONS:
            if m.to_version <= version:
                continue
            for stmt in m.statements:
                db.execute(stmt)
            db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                       (str(m.to_version),))
            if backup is not None:
                steps.append(m.summary)
                db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (
                    f"migration.{m.to_version}", json.dumps({
                        "from": m.to_version - 1, "at": time.time(),
                        "fabench": __version__, "backup": str(backup)})))
            version = m.to_version
        db.commit()
        if backup is not None:
            done = MigrationDone(first, version, backup, tuple(steps))
        return done
    except BaseException:
        db.rollback()
        raise


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def backup_copy(path: Path, tag: str) -> Path:
    """A consistent copy of the store (its WAL included) as `<store>.<tag>.bak`, never
    overwriting an earlier one. Made through a second connection, so it works while the
    caller holds the write lock."""
    target = path.with_name(f"{path.name}.{tag}.bak")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.{tag}-{n}.bak")
    copy_database(path, target)
    return target


def copy_database(source: Path, target: Path) -> None:
    """SQLite's online backup into a temporary file, renamed into place when complete, so
    `target` is always a whole database or absent."""
    tmp = target.with_name(target.name + ".tmp")
    tmp.unlink(missing_ok=True)
    src = sqlite3.connect(source.resolve().as_uri() + "?mode=ro", uri=True)
    try:
        dst = sqlite3.connect(str(tmp))
        try:
            src.backup(dst)
        finally:
            dst.close()
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    finally:
        src.close()
        tmp.unlink(missing_ok=True)
