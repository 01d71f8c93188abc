"""The published corpus as data (corpus/published.yaml): what a system's fit part gives the
model, and that its leave-one-system-out groups hold out shared hardware together. Known
answers from the numbers the corpus transcribes."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import pytest

from fabench.errors import FabenchError
from fabench.model.fabric import Fabric, Segment
from fabench.model.published import CORPUS, SystemSpec, _fabric, load_corpus, memory_prior
from fabench.model.scale import ScaleFit


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


def test_a_system_names_more_than_one_nic_only_with_its_source(
        systems: list[SystemSpec], tmp_path: Path) -> None:
    # Alps' GH200 nodes: four NICs, one per module, from CSCS's hardware page
    alps = {s.id: s for s in systems if s.group == "cscs-alps"}
    assert alps and all(s.nics_per_node == 4 and s.nics_source == "ALPSHW"
                        for s in alps.values())
    assert all(s.nics_per_node == 1 for s in systems if s.group != "cscs-alps")
    base = CORPUS.read_text()
    for hostile, why in (("nics_source: NOPE", "no known source"),
                         ("nics_source: null", "no known source"),
                         ("nics_per_node: 0", "greater than or equal to 1"),
                         ("nics_per_node: 1000", "less than or equal to 64")):
        key = hostile.split(":")[0]
        text = re.sub(rf"(?m)^    {key}: .*$", "    " + hostile, base, count=1)
        assert text != base
        bad = tmp_path / "corpus.yaml"
        bad.write_text(text)
        with pytest.raises(FabenchError, match=why):
            load_corpus(bad)


def test_the_node_memory_prior_is_the_median_of_the_other_fits() -> None:
    def fit(mem: float) -> ScaleFit:
        return ScaleFit(0.0, 0.0, 0.0, 1, node_memory_MBps=mem)
    # three fits, one of them "unlimited" (0): it counts as the largest, not the smallest
    prior = memory_prior({"a": fit(1e4), "b": fit(0.0), "c": fit(5.6e4)})
    assert prior is not None
    assert (prior.node_memory_MBps, prior.systems) == (5.6e4, 3)
    assert (prior.low, prior.high) == (1e4, 5.6e4)  # the finite ones' range
    # most of them unlimited: the prior is unlimited too
    most = memory_prior({"a": fit(0.0), "b": fit(0.0), "c": fit(1e4)})
    assert most is not None and most.node_memory_MBps == 0.0
    assert memory_prior({}) is None
    # applied to a fabric: the value, said as assumed with the range it came from
    f = prior.apply(Fabric("t", [Segment(0, 1.0, 1e-4)]))
    assert f.node_memory_MBps == 5.6e4
    prov = f.provenance["node_memory_MBps"]
    assert prov.assumed and (prov.low, prov.high) == (1e4, 5.6e4) and "3 other" in prov.source
