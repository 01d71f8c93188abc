"""`fabench store copy SRC DST`: a whole store between SQLite and PostgreSQL, row for row.

Every row keeps its id (runs are named by id in reports and selections), every column its
value: JSON columns as the text that was written, sample blobs byte for byte with their CRC.
The copy is one transaction on the target (whole or absent) into an empty store, then compared
with the source row by row before it is called done.
"""

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import FabenchError
from . import postgres
from .database import Store
from .schema import schema_columns

# Parents before children, so every foreign key refers to a row already copied.
TABLES = ("campaigns", "runs", "results", "samples", "matrix_pairs", "matrices")
_ORDER = {"samples": "result_id, series", "matrices": "campaign_id"}
_CHUNK = 200


@dataclass
class CopyReport:
    source: str
    target: str
    rows: dict[str, int] = field(default_factory=dict)
    sample_values: int = 0


def _rows(st: Store, table: str) -> Iterator[Any]:
    """A table's rows in key order, a chunk at a time: a store of 100 MB of samples is not
    held in memory at once."""
    cols = ", ".join(schema_columns()[table])
    order = _ORDER.get(table, "id")
    first = order.split(",")[0]
    last: Any = None
    while True:
        where = "" if last is None else f" WHERE {first} > ?"
        if table == "samples":
            # a key of two columns: chunk by result id, every series of a result together
            ids = [r[0] for r in st.db.execute(
                f"SELECT DISTINCT result_id FROM samples{where} ORDER BY result_id LIMIT "
                f"{_CHUNK}", () if last is None else (last,)).fetchall()]
            if not ids:
                return
            rows = st.db.execute(
                f"SELECT {cols} FROM samples WHERE result_id >= ? AND result_id <= ? "
                "ORDER BY result_id, series", (ids[0], ids[-1])).fetchall()
            last = ids[-1]
        else:
            rows = st.db.execute(f"SELECT {cols} FROM {table}{where} ORDER BY {order} LIMIT "
                                 f"{_CHUNK}", () if last is None else (last,)).fetchall()
            if not rows:
                return
            last = rows[-1][first]
        yield from rows


def _empty(st: Store) -> bool:
    return all(st.db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] == 0 for t in TABLES)


def _value(v: Any) -> Any:
    return bytes(v) if isinstance(v, memoryview | bytearray) else v


def copy_store(src: Store, dst: Store) -> CopyReport:
    """Copy every row of `src` into the empty store `dst`, then compare the two."""
    if not _empty(dst):
        raise FabenchError(f"the target store {dst.path} already holds rows: `store copy` "
                           "writes only into an empty store (a new file or database)")
    src.check_health()
    report = CopyReport(str(src.path), str(dst.path))
    with dst.transaction():
        for table in TABLES:
            cols = schema_columns()[table]
            sql = (f"INSERT INTO {table} ({', '.join(cols)}) VALUES "
                   f"({', '.join('?' for _ in cols)})")
            n = 0
            for row in _rows(src, table):
                dst.db.execute(sql, tuple(_value(row[c]) for c in cols))
                n += 1
            report.rows[table] = n
        if dst.backend == "postgresql":
            postgres.reset_identities(dst.db)  # type: ignore[arg-type]
    diff = compare_stores(src, dst)
    if diff:
        raise FabenchError(f"the copy {dst.path} differs from {src.path}: {diff[0]}"
                           f"{f' (and {len(diff) - 1} more)' if len(diff) > 1 else ''}")
    report.sample_values = sum(int(r[0] or 0) for r in src.db.execute(
        "SELECT sum(n) FROM samples").fetchall())
    return report


def compare_stores(a: Store, b: Store) -> list[str]:
    """Every difference between the rows of two stores, table by table (empty: identical).
    Floats compare exactly, blobs byte for byte."""
    out: list[str] = []
    for table in TABLES:
        cols = schema_columns()[table]
        left, right = _rows(a, table), _rows(b, table)
        n = 0
        while True:
            x, y = next(left, None), next(right, None)
            if x is None and y is None:
                break
            if x is None or y is None:
                out.append(f"{table}: {a.path if y is not None else b.path} has fewer rows "
                           f"({n})")
                break
            n += 1
            for c in cols:
                if _value(x[c]) != _value(y[c]):
                    out.append(f"{table} row {n}: {c} {str(x[c])[:40]!r} != {str(y[c])[:40]!r}")
                    break
            if len(out) > 20:
                return out
    return out
