"""Where the published corpus's error comes from (`model validate --published`'s
contributor lines, published.contributors): known answers on hand-made rows."""

from __future__ import annotations

import math

import pytest

from fabench.model.published import Row, contributors


def _row(system: str, ratio: float, ppn: int = 96, split: str = "test",
         collective: str = "allreduce") -> Row:
    # predicted / published = ratio: the row's |log error| is |log ratio|
    return Row(system, "X", split, f"{collective} openmpi default, 64x{ppn}, 8 B",
               100.0 * ratio, None, None, 100.0, None, ratio - 1.0, "us", group=system,
               collective=collective, nodes=64, ppn=ppn, kind="time")


def test_contributors_share_the_log_error_and_say_the_median_without() -> None:
    rows = [_row("a", 25.0), _row("a", 1 / 25.0),       # a misses by 25x both ways
            _row("b", 1.1), _row("b", 0.9), _row("b", 1.2),
            _row("c", 2.0, ppn=4, collective="alltoall"),
            _row("a", 100.0, split="fit")]              # fit rows are not scored
    got = {c.name: c for c in contributors(rows)}
    total = 2 * math.log(25) + math.log(1.1) - math.log(0.9) + math.log(1.2) + math.log(2)
    assert got["system a"].rows == 2
    assert got["system a"].share == pytest.approx(2 * math.log(25) / total)
    assert got["system c"].share == pytest.approx(math.log(2) / total)
    assert sum(got[f"system {s}"].share for s in "abc") == pytest.approx(1.0)
    # without a: |errors| 0.1, 0.1, 0.2, 1.0 -> median 0.15
    assert got["system a"].median_without == pytest.approx(0.15)
    # without b: 24, 0.96, 1.0 -> 1.0
    assert got["system b"].median_without == pytest.approx(1.0)
    assert got["host-based alltoall"].rows == 1
    assert got[">= 32 ranks/node"].rows == 5
    # largest share first: the class holding every row, then system a before b and c
    order = [c.name for c in contributors(rows)]
    assert order[0] == "64-255 nodes" and got["64-255 nodes"].share == pytest.approx(1.0)
    assert order.index("system a") < order.index("system c") < order.index("system b")
    assert [c.share for c in contributors(rows)] == sorted(
        (c.share for c in contributors(rows)), reverse=True)
