"""The matrix's persistence: its two tables in the store, and the matrices kept there (the
latest, one campaign's, the one a selector names).

The store (store/) knows these tables exist, for what every table needs (their layout as a
migration in store/schema.py, copying, checking, PostgreSQL's ids), but not what a pair or a
judgement is: reading and writing them is the matrix's business, here.
"""

import json
import time
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..analysis.selection import parse_selector
from ..errors import FabenchError, StoreDamagedError
from ..records import PairRecord
from ..store.database import Store, damaged_message, json_field, pack_floats, unpack_floats

# A measured direction is committed within this long of its arrival, with those that came in
# the meantime. The store fsyncs each commit (synchronous=FULL): 11 ms a commit on this
# shared disk, and one commit per direction made a 512-host first pass (261,632 directions)
# wait about 48 minutes on the disk, the simulator blocked behind its full pipe. A kill loses
# at most this much of the pass, which --resume measures again; Ctrl-C loses nothing (the
# interrupted campaign's commit takes them along).
PAIR_COMMIT_S = 1.0


class MatrixStore(Store):
    """A store opened by the matrix: every store's campaigns and runs, plus each measured
    direction of a pair (`matrix_pairs`, under the run that measured it) and each matrix's
    hosts and judgement (`matrices`, one per campaign)."""

    _pairs_committed = 0.0  # monotonic time of the last commit of directions

    def add_matrix_pair(self, run_id: int, rec: PairRecord) -> None:
        lat, bw = pack_floats(rec.latency_us), pack_floats(rec.bandwidth_us)
        self.db.execute(
            "INSERT INTO matrix_pairs (run_id, src, dst, src_host, dst_host, round, mode, size,"
            " window, bytes_per_sample, latency, latency_crc32, bandwidth, bandwidth_crc32)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (run_id, rec.src, rec.dst, rec.src_host, rec.dst_host, rec.round, rec.mode,
             rec.size, rec.window, rec.bytes_per_sample, lat, zlib.crc32(lat), bw,
             zlib.crc32(bw)))
        now = time.monotonic()
        if now - self._pairs_committed >= PAIR_COMMIT_S:
            self.commit_pairs(now)

    def commit_pairs(self, now: float | None = None) -> None:
        """Commit the directions added since the last commit (a pass's end calls this)."""
        self.db.commit()
        self._pairs_committed = time.monotonic() if now is None else now

    def matrix_pairs(self, run_id: int) -> list[PairRecord]:
        out = []
        for r in self.db.execute("SELECT * FROM matrix_pairs WHERE run_id = ? ORDER BY id",
                                 (run_id,)).fetchall():
            series = []
            for name in ("latency", "bandwidth"):
                blob = r[name]
                # a report must not show numbers from a flipped bit (as the store's samples)
                if not isinstance(blob, bytes) or len(blob) % 8 or \
                        zlib.crc32(blob) != r[f"{name}_crc32"]:
                    raise StoreDamagedError(damaged_message(
                        self.path, f"the {name} samples of matrix pair {r['id']} (run {run_id})"
                                   " do not match the checksum written with them"))
                series.append(unpack_floats(blob))
            out.append(PairRecord(
                src=r["src"], dst=r["dst"], src_host=r["src_host"], dst_host=r["dst_host"],
                round=r["round"], mode=r["mode"], size=r["size"], window=r["window"],
                bytes_per_sample=r["bytes_per_sample"], latency_us=series[0],
                bandwidth_us=series[1]))
        return out

    def save_matrix(self, campaign_id: int, hosts: list[str], judgement: dict[str, Any]) -> None:
        self.db.execute("INSERT OR REPLACE INTO matrices (campaign_id, hosts, judgement, finished)"
                        " VALUES (?, ?, ?, ?)",
                        (campaign_id, json.dumps(hosts), json.dumps(judgement), time.time()))
        self.db.commit()

    def matrices(self) -> list[int]:
        """Campaign ids that hold a judged matrix, oldest first."""
        return judged_campaigns(self)

    def matrix(self, campaign_id: int) -> tuple[list[str], dict[str, Any]]:
        """A matrix's hosts (rank order) and its stored judgement."""
        return _matrix(self, campaign_id)


def judged_campaigns(store: Store) -> list[int]:
    """Campaign ids of any open store that hold a judged matrix, oldest first."""
    return [int(r[0]) for r in store.db.execute(
        "SELECT campaign_id FROM matrices ORDER BY campaign_id")]


def judgements(store: Store, campaign_ids: Iterable[int]) -> list[dict[str, Any]]:
    """The judgement (with its `campaign_id`) of each of these campaigns that holds a matrix,
    from any open store: what a report of those campaigns shows."""
    held = set(judged_campaigns(store))
    return [{"campaign_id": c, **_matrix(store, c)[1]} for c in campaign_ids if c in held]


def _matrix(store: Store, campaign_id: int) -> tuple[list[str], dict[str, Any]]:
    r = store.db.execute("SELECT * FROM matrices WHERE campaign_id = ?",
                         (campaign_id,)).fetchone()
    if r is None:
        raise FabenchError(f"{store.path}: campaign {campaign_id} holds no matrix")
    return (list(json_field(r["hosts"], [], f"matrix {campaign_id} hosts")),
            dict(json_field(r["judgement"], {}, f"matrix {campaign_id} judgement")))


def load_matrix(path: Path, campaign_id: int | None = None) -> tuple[int, dict[str, Any]]:
    """(campaign id, judgement) of one stored matrix; the latest when no id is given."""
    with MatrixStore(path) as store:
        ids = store.matrices()
        if not ids:
            raise FabenchError(f"{path} holds no matrix (run `fabench matrix` first)")
        cid = ids[-1] if campaign_id is None else campaign_id
        _, judgement = store.matrix(cid)
    return cid, judgement


def matrix_operand(store: MatrixStore, text: str) -> int | None:
    """The campaign id of the stored matrix a `fabench compare` operand names (`c3`,
    `campaign:3`, `campaign=3`, or `latest` where the newest campaign is a matrix); None when
    it names something else (runs, a transport, filters, several joined by +)."""
    if "+" in text:
        return None
    sel = parse_selector(text)
    if sel.latest:
        cid = store.latest_campaign()
    elif len(sel.filters) == 1 and sel.filters[0][0] == "campaign" and \
            sel.filters[0][1].isascii() and sel.filters[0][1].isdigit():
        cid = int(sel.filters[0][1])
    else:
        return None
    return cid if cid is not None and cid in store.matrices() else None


def matrix_operands(path: Path, a: str, b: str) -> tuple[int, int] | None:
    """Both operands' matrices, None when neither names one; one alone is an error (the
    run-by-run comparison has nothing to compare a matrix with)."""
    with MatrixStore(path) as store:
        ca, cb = matrix_operand(store, a), matrix_operand(store, b)
    if ca is None and cb is None:
        return None
    if ca is None or cb is None:
        which, other = (a, b) if ca is not None else (b, a)
        raise FabenchError(f"{which!r} names a stored matrix, {other!r} does not: compare a "
                           "matrix with another matrix (e.g. c3 c7)")
    return ca, cb


def matrix_bindings(path: Path, judgement: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(host, CPU list) of each rank of a matrix's first pass, as the kernel reported them
    (meta `cpus`); empty lists for a matrix measured before kernels reported it."""
    first = next((p for p in judgement.get("passes", []) if p.get("role") == "first"), None)
    if first is None:
        return [], []
    with MatrixStore(path) as store:
        meta = store.run(int(first["run_id"])).kernel_meta or {}
    hosts, cpus = list(meta.get("hosts") or []), list(meta.get("cpus") or [])
    if len(cpus) != len(hosts):
        return [], []
    return [str(h) for h in hosts], [str(c) for c in cpus]
