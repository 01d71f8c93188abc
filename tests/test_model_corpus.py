"""The published corpus as data (corpus/published.yaml): what a system's fit part gives the
model, and that its leave-one-system-out groups hold out shared hardware together. Known
answers from the numbers the corpus transcribes."""

from __future__ import annotations

import statistics

import pytest

from fabench.model.published import SystemSpec, _fabric, load_corpus


@pytest.fixture(scope="module")
def systems() -> list[SystemSpec]:
    return load_corpus().systems  # parsed once: the file is ~50 kB of YAML


def test_a_systems_published_osu_bw_gives_the_model_its_gap_per_message(
        systems: list[SystemSpec]) -> None:
    s = next(x for x in systems if x.id == "alaska-ib-ompi")
    assert s.fit.curves is not None
    bw = s.fit.curves.bandwidth_MBps
    # LogGP's g: the time per message of osu_bw's window at <= 64 B, size / (MB/s) in us;
    # [EXC] prints 7.53 MB/s at 1 B ... 463.83 MB/s at 64 B: the median is 1 / 7.53 us
    g = statistics.median(size / bw[size] for size in bw if size <= 64)
    assert g == pytest.approx(1 / 7.53, rel=1e-3)
    f = _fabric(s, {})
    assert f.gap_us == pytest.approx(g, rel=1e-6)
    # its link: what one flow streams at 4 MiB, not an earlier segment's slope
    assert f.link_bandwidth_MBps == pytest.approx(12164.86, rel=0.02)


def test_leave_one_system_out_holds_out_a_clusters_fabrics_together(
        systems: list[SystemSpec]) -> None:
    group = {s.id: s.group or s.id for s in systems}
    # two fabrics of one cluster's nodes (IB and RoCE partitions) are one group: holding out
    # one and keeping the other would let the same nodes calibrate their own band
    assert group["alaska-ib-ompi"] == group["alaska-roce-ompi"]
    assert group["csd3-cclake-ib-ompi"] == group["csd3-cclake-roce-ompi"]
    assert group["alaska-ib-ompi"] != group["csd3-cclake-ib-ompi"]
    assert group["alps-gh200-ompi5"] == group["alps-slingshot-ompi"]
    # a system with one collective job has no fit row among its collectives: every
    # collective row of it is judged, none is fitted
    for sid in ("alaska-ib-ompi", "csd3-cclake-roce-ompi", "alps-gh200-ompi5-nocxi"):
        s = next(x for x in systems if x.id == sid)
        assert s.cases and all(c.split == "test" for c in s.cases)
