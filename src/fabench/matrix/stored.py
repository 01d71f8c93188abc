"""Matrices kept in the store: the latest, or one campaign's, or the one a selector names."""

from pathlib import Path
from typing import Any

from ..analysis.selection import parse_selector
from ..errors import FabenchError
from ..store.database import Store


def load_matrix(path: Path, campaign_id: int | None = None) -> tuple[int, dict[str, Any]]:
    """(campaign id, judgement) of one stored matrix; the latest when no id is given."""
    with Store(path) as store:
        ids = store.matrices()
        if not ids:
            raise FabenchError(f"{path} holds no matrix (run `fabench matrix` first)")
        cid = ids[-1] if campaign_id is None else campaign_id
        _, judgement = store.matrix(cid)
    return cid, judgement


def matrix_operand(store: Store, text: str) -> int | None:
    """The campaign id of the stored matrix a `fabench compare` operand names (`c3`,
    `campaign:3`, `campaign=3`, or `latest` where the newest campaign is a matrix); None when
    it names something else (runs, a transport, filters, several joined by +)."""
    if "+" in text:
        return None
    sel = parse_selector(text)
    if sel.latest:
        cid = store.latest_campaign()
    elif len(sel.filters) == 1 and sel.filters[0][0] == "campaign" and \
            sel.filters[0][1].isdigit():
        cid = int(sel.filters[0][1])
    else:
        return None
    return cid if cid is not None and cid in store.matrices() else None


def matrix_operands(path: Path, a: str, b: str) -> tuple[int, int] | None:
    """Both operands' matrices, None when neither names one; one alone is an error (the
    run-by-run comparison has nothing to compare a matrix with)."""
    with Store(path) as store:
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
    with Store(path) as store:
        meta = store.run(int(first["run_id"])).kernel_meta or {}
    hosts, cpus = list(meta.get("hosts") or []), list(meta.get("cpus") or [])
    if len(cpus) != len(hosts):
        return [], []
    return [str(h) for h in hosts], [str(c) for c in cpus]
