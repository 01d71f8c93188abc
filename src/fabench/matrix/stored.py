"""Matrices kept in the store: the latest, or one campaign's."""

from pathlib import Path
from typing import Any

from ..errors import FabenchError
from ..store import Store


def load_matrix(path: Path, campaign_id: int | None = None) -> tuple[int, dict[str, Any]]:
    """(campaign id, judgement) of one stored matrix; the latest when no id is given."""
    with Store(path) as store:
        ids = store.matrices()
        if not ids:
            raise FabenchError(f"{path} holds no matrix (run `fabench matrix` first)")
        cid = ids[-1] if campaign_id is None else campaign_id
        _, judgement = store.matrix(cid)
    return cid, judgement
