"""The statistics a peer tool prints, beside fabench's headline, so a user can check a number
against the tool they know (docs/statistics.md, "Comparing with OSU").

fabench's collective headline is the median over iterations of the slowest rank's time after a
barrier (`times`). OSU prints the mean over a loop of calls with no barrier between them,
averaged over ranks: `osu_avg`, timed by the kernel in such a loop after its samples. Between
the two sits `median_rank_mean`: the median over iterations of the mean over ranks
(`times_mean`), barrier-synchronised like the headline but averaged over ranks like OSU.
"""

from collections.abc import Sequence

import numpy as np

from ..records import ResultRecord


def median_rank_mean(records: Sequence[ResultRecord]) -> float | None:
    """Median over all iterations (of all records pooled) of the mean over ranks."""
    vals = [t for r in records for t in (r.times_mean or [])]
    return float(np.median(vals)) if vals else None


def osu_avg(records: Sequence[ResultRecord]) -> float | None:
    """OSU's average (us), mean over the records that carry one (one per run or round)."""
    vals = [float(r.extra["osu_avg"]) for r in records
            if isinstance(r.extra.get("osu_avg"), int | float)]
    return float(np.mean(vals)) if vals else None


def peer_fields(records: Sequence[ResultRecord]) -> dict[str, float | None]:
    return {"median_rank_mean": median_rank_mean(records), "osu_avg": osu_avg(records)}
