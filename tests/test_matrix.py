"""fabench matrix: the judge on synthetic matrices (cheap), the mpi.matrix kernel under real
MPI ranks, and end to end on real testbeds with real faults (slow)."""

import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from conftest import fabench_cli, fabench_run, missing, own_testbeds
from fabench.errors import FabenchError
from fabench.host.native import native_root
from fabench.matrix import measure
from fabench.matrix.advise import advise, matrix_from_json
from fabench.matrix.diff import diff
from fabench.matrix.export import matrix_csv
from fabench.matrix.judge import (
    GROUP_KINDS,
    NODE_SCREEN,
    THRESHOLD,
    Groups,
    Judgement,
    Matrix,
    Scale,
    Suspects,
    find_suspects,
    judge,
)
from fabench.matrix.locality import binding_advice, nic_locality, rank_places, read_hwloc
from fabench.matrix.measure import MatrixOptions, MatrixOutcome, measure_matrix, parse_pairs
from fabench.matrix.pairwise import tournament
from fabench.matrix.stored import MatrixStore as Store  # the store with the matrix's tables
from fabench.matrix.topology import compare, infer_topology, read_topology
from fabench.model.presets import PRESETS
from fabench.records import PairRecord
from fabench.schedulers.simgrid import SimGridScheduler
from fabench.sim.faulty import FatTree, PairFault, faulty_fat_tree
from fabench.sim.smpi import SimSetup
from fabench.testbed import TestbedConfig, create
from test_report import browse, console_errors
from test_sim import simgrid  # noqa: F401  (the fixture, by name)

HOSTS = [f"h{i + 1}" for i in range(8)]


def synthetic(n: int = 8, seed: int = 1, lat: float = 20.0, bw: float = 1000.0,
              noise: float = 0.05) -> Matrix:
    """A healthy fabric: every direction near `lat` us and `bw` MB/s, lognormal noise."""
    rng = random.Random(seed)
    m = Matrix([f"h{i + 1}" for i in range(n)])
    for i in range(n):
        for j in range(n):
            if i != j:
                m.latency[(i, j)] = lat * rng.lognormvariate(0, noise)
                m.bandwidth[(i, j)] = bw * rng.lognormvariate(0, noise)
    return m


def lines(j: Matrix, retest: Matrix | None = None) -> list[str]:
    return [v.line.split(":")[0] for v in judge(j, retest).verdicts]


def test_healthy_fabric_has_no_verdict_after_the_retest() -> None:
    # First-pass suspects do happen on a healthy fabric (about 150 scores per 8-host matrix,
    # each a small chance above 3.5); the retest, on fresh samples, clears them.
    first_pass = 0
    for seed in range(40):
        m = synthetic(seed=seed)
        first_pass += bool(lines(m))
        fresh = synthetic(seed=seed + 1000)
        sus = find_suspects(m)
        r = Matrix(m.hosts)
        for link in sus.retest_pairs(8):
            r.latency[link], r.bandwidth[link] = fresh.latency[link], fresh.bandwidth[link]
        assert judge(m, r, sus).verdicts == [], seed
    assert first_pass < 40


def test_bad_link_both_directions() -> None:
    m = synthetic()
    m.bandwidth[(1, 4)] /= 20
    m.bandwidth[(4, 1)] /= 20
    assert lines(m) == ["bad link h2 -> h5", "bad link h5 -> h2"]
    v = judge(m).verdicts[0]
    ev = v.evidence[0]
    assert ev.metric == "bandwidth" and ev.score > THRESHOLD and ev.first < ev.threshold


def test_one_way_link_is_bad_and_asymmetric() -> None:
    m = synthetic()
    m.bandwidth[(1, 4)] /= 20
    assert lines(m) == ["bad link h2 -> h5", "asymmetric link h2 -> h5"]


def test_slow_node_is_one_verdict_not_fourteen() -> None:
    m = synthetic()
    for o in range(8):
        if o != 2:
            m.bandwidth[(2, o)] /= 5
            m.bandwidth[(o, 2)] /= 5
    assert lines(m) == ["slow node h3"]


def test_slow_host_at_six_hosts_is_found_leave_one_node_out() -> None:
    # The case all-links scoring missed (node score 1.77 against 3.5 on a 6-host testbed):
    # a slow host owns 10 of the 30 directions, moving the median and MAD toward itself.
    # Against the 20 directions that do not touch it, it stands out.
    m = synthetic(6, seed=1, noise=0.15)
    for o in range(6):
        if o != 3:
            m.latency[(3, o)] *= 2.5
            m.latency[(o, 3)] *= 2.5
    every = Scale.of(m.latency.values())  # the yardstick of all links, the slow host's too
    old = statistics.median(every.score(v, worse_up=True) for link, v in m.latency.items()
                            if 3 in link)
    assert old < THRESHOLD  # what all-links scoring made of it
    j = judge(m)
    assert [v.line.split(":")[0] for v in j.verdicts if v.dst is None] == ["slow node h4"]
    assert j.nodes[3]["latency"] > THRESHOLD
    assert max(s["latency"] for h, s in enumerate(j.nodes) if h != 3) < THRESHOLD


def test_a_node_half_way_to_the_threshold_is_retested_and_judged_by_the_retest() -> None:
    # a noisy concurrent pass (spread 30 %): h6 at 1/1.5 of the bandwidth scores 2.3, under
    # 3.5; with a retest to follow it is screened in, and the isolated retest decides
    m = synthetic(8, seed=3, noise=0.3)
    for o in range(8):
        if o != 5:
            m.bandwidth[(5, o)] /= 1.5
            m.bandwidth[(o, 5)] /= 1.5
    assert NODE_SCREEN < judge(m).nodes[5]["bandwidth"] < THRESHOLD
    assert 5 not in find_suspects(m).nodes
    assert "slow node h6" not in lines(m)  # first pass alone: not a node verdict
    sus = find_suspects(m, screen=True)
    assert 5 in sus.nodes
    quiet = synthetic(8, seed=40, noise=0.05)
    r = Matrix(m.hosts)
    for link in sus.retest_pairs(8):
        r.latency[link], r.bandwidth[link] = quiet.latency[link], quiet.bandwidth[link]
    healthy = judge(m, r, sus)
    assert lines_of(healthy) == [] and "node h6" in healthy.cleared
    for link in r.bandwidth:
        if 5 in link:
            r.bandwidth[link] /= 4
    slow = judge(m, r, sus)
    assert [v.line.split(":")[0] for v in slow.verdicts if v.kind == "slow node"] == \
        ["slow node h6"]


def test_two_slow_hosts_do_not_hide_each_other() -> None:
    m = synthetic(6, seed=4)
    for h in (1, 4):
        for o in range(6):
            if o != h:
                m.bandwidth[(h, o)] /= 3
                m.bandwidth[(o, h)] /= 3
    assert lines(m) == ["slow node h2", "slow node h5"]


def test_two_slow_hosts_measured_on_a_loaded_testbed() -> None:
    # a real first pass (--kernel tcp, 6 hosts, h1 and h3 at 200 Mbit/s, 2 loaded cores): 18
    # of the 30 directions slow, the healthy ones from 300 to 1400 MB/s. Neither slow host
    # stood out with the other in its reference; the links did not make them a switch group.
    j = json.loads((Path(__file__).parent / "fixtures/matrix/two-slow-6-tcp.json").read_text())
    m = matrix_from_json(j)
    assert infer_topology(m).groups == [m.hosts]
    jd = judge(m)
    # the planted fault is a rate limit: exactly h1 and h3 are slow by bandwidth. (The first
    # pass may also name a host slow by latency alone, loaded-host noise that the isolated
    # retest decides: h6 at 14.8 us against 11.9.)
    by_bw = [v.src for v in jd.verdicts if v.kind == "slow node"
             and any(e.metric == "bandwidth" for e in v.evidence)]
    assert by_bw == ["h1", "h3"]
    # (the first pass alone also names a few healthy links, concurrent noise the retest
    # clears; no leaf, no uplink)
    assert not [v for v in jd.verdicts if v.kind in GROUP_KINDS]


def leaves(k: int = 4, per: int = 4, seed: int = 5) -> tuple[Matrix, Groups]:
    """k leaves of `per` hosts, links across leaves slower (more hops, a shared uplink)."""
    m = synthetic(k * per, seed=seed)
    for (i, j) in m.latency:
        if i // per != j // per:
            m.latency[(i, j)] *= 1.5
            m.bandwidth[(i, j)] /= 1.2
    return m, Groups.of([m.hosts[g * per:(g + 1) * per] for g in range(k)])


def test_bad_leaf_is_one_verdict_not_four_slow_nodes() -> None:
    m, groups = leaves()
    for (i, j) in m.bandwidth:
        if (i // 4 == 2) != (j // 4 == 2):  # leaf 3's uplink at a quarter
            m.bandwidth[(i, j)] /= 4
    # all-links scoring sees four slow hosts (or nothing); by leaf it is one verdict
    assert lines(m) != ["bad leaf h9..h12 (4 hosts)"]
    j = judge(m, groups=groups)
    # first pass alone: a healthy link may score about 3.5 (the retest clears those)
    got = [v.line.split(":")[0] for v in j.verdicts
           if v.kind not in ("asymmetric link", "bad link")]
    assert got == ["bad leaf h9..h12 (4 hosts)"]
    assert not [v for v in j.verdicts if v.kind == "bad link" and v.evidence[0].score > 4]
    leaf = j.verdicts[0]
    assert leaf.hosts == ("h9", "h10", "h11", "h12")
    assert leaf.evidence[0].metric == "bandwidth" and leaf.evidence[0].score > THRESHOLD
    # the groups a topology infers from the links are the ones judged
    topo = infer_topology(m)
    assert len(topo.groups) >= 2 and ["h9", "h10", "h11", "h12"] in topo.groups


@pytest.mark.parametrize("per", [4, 16])
def test_slow_host_inside_a_bad_leaf_is_a_node_beside_the_leaf(per: int) -> None:
    """A slow host behind a bad uplink: its directions across leaves are slow through the
    leaf, the ones inside the leaf through the host alone. Judged on every direction, the
    host was lost in the leaf (64 simulated hosts: 94 bad links, no slow node)."""
    m, groups = leaves(k=4, per=per, seed=5)
    slow = 2 * per + 3
    for (i, j) in m.bandwidth:
        if (i // per == 2) != (j // per == 2):
            m.bandwidth[(i, j)] /= 4
    for o in range(4 * per):
        if o != slow:
            m.bandwidth[(slow, o)] /= 3
            m.bandwidth[(o, slow)] /= 3
    j = judge(m, groups=groups)
    got = [v.line.split(":")[0] for v in j.verdicts if v.dst is None]
    assert got == [f"bad leaf h{2 * per + 1}..h{3 * per} ({per} hosts)", f"slow node h{slow + 1}"]
    # the slow host's own directions are its verdict's, not links of their own (a first-pass
    # link near 3.5 elsewhere is the retest's to clear)
    assert not [v for v in j.verdicts if v.dst is not None and f"h{slow + 1}" in (v.src, v.dst)]
    assert len([v for v in j.verdicts if v.dst is not None]) <= 2


def test_bad_uplink_between_two_of_four_leaves() -> None:
    m, groups = leaves(seed=6)
    for (i, j) in m.bandwidth:
        if {i // 4, j // 4} == {0, 3}:
            m.bandwidth[(i, j)] /= 3
    j = judge(m, groups=groups)
    got = [v.line.split(":")[0] for v in j.verdicts if v.kind != "asymmetric link"]
    assert got == ["bad uplink h1..h4 <-> h13..h16 (8 hosts)"]
    # a healthy four-leaf fabric: nothing at the group level
    clean, groups = leaves(seed=7)
    assert not [v for v in judge(clean, groups=groups).verdicts if v.kind in GROUP_KINDS]


def test_bad_uplink_of_two_switches_and_a_healthy_one() -> None:
    m = two_switches()
    groups = Groups.of([HOSTS[:4], HOSTS[4:]], {"s1": HOSTS[:4], "s2": HOSTS[4:]})
    assert lines_of(judge(m, groups=groups)) == ["bad uplink s1 <-> s2 (8 hosts)"]
    # the retest measures a few directions across and inside, one at a time: an uplink
    # that was only busy in the concurrent rounds is cleared, a slow one confirmed
    sus = find_suspects(m, groups)
    (fd,) = sus.groups
    assert fd.sample and fd.reference and set(fd.sample) <= set(sus.retest_pairs(8))
    assert all((i < 4) != (j < 4) for i, j in fd.sample)
    assert all((i < 4) == (j < 4) for i, j in fd.reference)
    fresh = synthetic(seed=30)
    busy = Matrix(m.hosts)
    for link in sus.retest_pairs(8):
        busy.latency[link], busy.bandwidth[link] = fresh.latency[link], fresh.bandwidth[link]
    j = judge(m, busy, sus, groups=groups)
    assert lines_of(j) == [] and "uplink s1 <-> s2" in j.cleared
    slow = Matrix(m.hosts, dict(busy.latency), {link: v / 8 if link in fd.sample else v
                                                for link, v in busy.bandwidth.items()})
    j = judge(m, slow, sus, groups=groups)
    assert lines_of(j) == ["bad uplink s1 <-> s2 (8 hosts)"]
    assert j.verdicts[0].evidence[0].retest_score > THRESHOLD
    # across the switches only the latency of more hops: not a bad uplink
    healthy = synthetic(seed=3)
    for (i, j) in healthy.latency:
        if (i < 4) != (j < 4):
            healthy.latency[(i, j)] *= 1.5
    assert lines_of(judge(healthy, groups=groups)) == []


def lines_of(j: Judgement) -> list[str]:
    return [v.line.split(":")[0] for v in j.verdicts]


def test_slow_host_inside_a_leaf_and_a_bad_link_across() -> None:
    m, groups = leaves(seed=8)
    for o in range(16):
        if o != 5:
            m.bandwidth[(5, o)] /= 3
            m.bandwidth[(o, 5)] /= 3
    m.bandwidth[(0, 12)] /= 10
    m.bandwidth[(12, 0)] /= 10
    got = [line for line in lines_of(judge(m, groups=groups))
           if not line.startswith("asymmetric")]
    assert got == ["slow node h6", "bad link h1 -> h13", "bad link h13 -> h1"]


# slow: 254 s at load 15 on 2 cores (a million directions judged); `make test` runs it
@pytest.mark.slow
def test_judging_1024_hosts_is_one_sweep() -> None:
    # a million directions: scored in numpy sweeps, not one scan per host (the time is not
    # asserted; the test fails by the suite's timeout if a per-host scan comes back)
    n = 1024
    # the noise drawn in one numpy call per metric (two million Python draws: 20 s loaded)
    rng = np.random.default_rng(9)
    links = [(i, j) for i in range(n) for j in range(n) if i != j]
    lat = (2.0 * (1 + 0.01 * rng.random(len(links)))).tolist()
    bw = (10000.0 * (1 + 0.01 * rng.random(len(links)))).tolist()
    m = Matrix([f"n{i}" for i in range(n)], dict(zip(links, lat, strict=True)),
               dict(zip(links, bw, strict=True)))
    for o in range(n):
        if o != 37:
            m.bandwidth[(37, o)] /= 4
            m.bandwidth[(o, 37)] /= 4
    m.bandwidth[(5, 200)] /= 4
    j = judge(m)
    got = lines_of(j)
    assert "slow node n37" in got and "bad link n5 -> n200" in got


def test_high_latency_link() -> None:
    m = synthetic()
    m.latency[(0, 7)] *= 3
    m.latency[(7, 0)] *= 3
    assert lines(m) == ["bad link h1 -> h8", "bad link h8 -> h1"]


def test_retest_clears_a_transient_and_confirms_a_fault() -> None:
    m = synthetic()
    m.bandwidth[(0, 1)] /= 10  # transient: fine when measured again
    m.bandwidth[(2, 3)] /= 10  # real
    sus = find_suspects(m)
    assert {(0, 1), (2, 3)} <= sus.links and len(sus.references) == 6
    # the retest, isolated: everything faster by 3x (no co-runners), the fault still slow
    r = Matrix(m.hosts)
    for link in sus.retest_pairs(8):
        r.latency[link] = m.latency[link] * 0.5
        r.bandwidth[link] = m.bandwidth[link] * 3
    r.bandwidth[(0, 1)] = 3000.0
    r.latency[(0, 1)] = 10.0
    j = judge(m, r, sus)
    assert [v.line.split(":")[0] for v in j.verdicts] == ["bad link h3 -> h4",
                                                          "asymmetric link h3 -> h4"]
    assert "link h1 -> h2" in j.cleared
    ev = j.verdicts[0].evidence[0]
    assert ev.retest is not None and ev.retest_score is not None and ev.retest_score > THRESHOLD


def test_unreachable_host_and_link() -> None:
    m = synthetic()
    for o in range(8):
        if o != 5:
            m.latency.pop((5, o)), m.bandwidth.pop((5, o))
            m.latency.pop((o, 5)), m.bandwidth.pop((o, 5))
    m.latency.pop((0, 1)), m.bandwidth.pop((0, 1))
    assert lines(m) == ["unreachable h6", "unreachable h1 -> h2"]


def test_identical_links_fall_back_to_mean_absolute_deviation() -> None:
    # a simulator gives identical numbers: MAD = 0, the score divides by 1.2533 x MeanAD
    m = synthetic(noise=0.0)
    m.bandwidth[(3, 6)] /= 2
    assert Scale.of(m.bandwidth.values()).spread > 0
    assert "bad link h4 -> h7" in lines(m)
    assert lines(synthetic(noise=0.0)) == []


def two_switches(seed: int = 3) -> Matrix:
    m = synthetic(seed=seed)
    for (i, j) in m.bandwidth:
        if (i < 4) != (j < 4):
            m.bandwidth[(i, j)] /= 8
            m.latency[(i, j)] *= 1.5
    return m


def test_groups_are_inferred_only_with_six_host_pairs_inside_them() -> None:
    """A 2 + 2 cut has 2 host pairs inside its groups to judge the 4 across by: too few for a
    median and MAD (topology.MIN_INSIDE_PAIRS). Before the floor, a 30 % slower cross half
    of a 4-host matrix with 2 % noise was two groups in 5 seeds of 5, and so was the host
    state's 10-50 % on an unshaped CI testbed, where an uplink verdict followed. A 3 + 3
    cut, 6 pairs inside, still finds the same effect."""
    for n, split in ((4, 2), (6, 3)):
        for seed in range(5):
            m = synthetic(n=n, seed=seed, noise=0.02)
            for (i, j) in m.bandwidth:
                if (i < split) != (j < split):
                    m.bandwidth[(i, j)] /= 1.3
            want = [m.hosts] if n == 4 else [m.hosts[:split], m.hosts[split:]]
            assert infer_topology(m).groups == want, (n, seed)


def test_groups_are_inferred_from_the_fastest_samples_where_load_scrambles_the_medians() -> None:
    """Two switches of 3 hosts, the uplink 8x slower. The medians carry a loaded host's
    contention: inside the switches they spread over 13x (1/13 to 1 of the floor), as a loaded
    6-host testbed's did, so the closest pair across is no outlier among them and the medians
    alone make one group. The fastest samples (the floor, which contention cannot lower) keep
    the 8x and make the two groups; without them, the medians decide as before."""
    rng = random.Random(5)
    m = synthetic(n=6, seed=5, noise=0.03)
    best: dict[str, dict[tuple[int, int], float]] = {"latency": {}, "bandwidth": {}}
    for (i, j), bw in m.bandwidth.items():
        across = (i < 3) != (j < 3)
        best["bandwidth"][(i, j)] = bw / 8 if across else bw
        best["latency"][(i, j)] = m.latency[(i, j)] * (1.5 if across else 1.0)
        load = rng.uniform(1.0, 13.0) if not across else rng.uniform(1.0, 1.5)
        m.bandwidth[(i, j)] = best["bandwidth"][(i, j)] / load
        m.latency[(i, j)] = best["latency"][(i, j)] * load
    medians_only = Matrix(m.hosts, dict(m.latency), dict(m.bandwidth))
    assert infer_topology(medians_only).groups == [m.hosts]
    m.best = best
    assert infer_topology(m).groups == [m.hosts[:3], m.hosts[3:]]


# A measured matrix (the fastest samples: src, dst, latency us, bandwidth MB/s) of a 6-host
# testbed of two switches, h1-h3 and h4-h6, with a 50 Mbit/s uplink, taken beside two busy
# loops (2026-11-29): bandwidth 477-2114 MB/s inside, 2.0-6.1 across; latency 21.7-95.5 us
# either way.
TWO_SWITCHES_LOADED = [
    (0, 1, 74.4, 816.0), (0, 2, 70.6, 725.4), (0, 3, 30.2, 6.1), (0, 4, 78.6, 2.2),
    (0, 5, 23.9, 2.4), (1, 0, 27.7, 1818.6), (1, 2, 27.1, 1523.6), (1, 3, 78.5, 2.1),
    (1, 4, 48.6, 2.7), (1, 5, 70.6, 6.0), (2, 0, 70.0, 681.1), (2, 1, 26.8, 1666.3),
    (2, 3, 48.7, 2.2), (2, 4, 74.4, 6.1), (2, 5, 78.5, 2.2), (3, 0, 30.4, 6.0),
    (3, 1, 78.5, 2.5), (3, 2, 95.5, 2.1), (3, 4, 70.5, 743.7), (3, 5, 74.6, 816.9),
    (4, 0, 78.6, 2.8), (4, 1, 95.5, 2.0), (4, 2, 27.4, 6.1), (4, 3, 70.0, 477.2),
    (4, 5, 22.5, 1097.5), (5, 0, 95.3, 2.2), (5, 1, 70.0, 6.0), (5, 2, 78.7, 3.2),
    (5, 3, 32.0, 1238.3), (5, 4, 21.7, 2113.9)]


def test_a_slow_uplink_separates_the_switches_on_bandwidth_though_latency_blurs_them() -> None:
    """On the whole link cost the closest pair across scores 2.24 against the distances inside
    (the loaded latencies spread them), under the 3.5 a cut needs; on bandwidth alone 4.20.
    The same latencies with a uniform bandwidth are one group: no half separates them."""
    m = Matrix([f"h{i + 1}" for i in range(6)], {(a, b): lat for a, b, lat, _ in
                                                 TWO_SWITCHES_LOADED},
               {(a, b): bw for a, b, _, bw in TWO_SWITCHES_LOADED})
    assert infer_topology(m).groups == [m.hosts[:3], m.hosts[3:]]
    flat = Matrix(m.hosts, dict(m.latency), {link: 1000.0 for link in m.bandwidth})
    assert infer_topology(flat).groups == [m.hosts]


def test_topology_finds_two_groups_and_a_misplaced_host(tmp_path: Path) -> None:
    topo = infer_topology(two_switches())
    assert topo.groups == [HOSTS[:4], HOSTS[4:]]
    assert infer_topology(synthetic()).groups == [HOSTS]
    conf = tmp_path / "topology.conf"
    conf.write_text("SwitchName=s1 Nodes=h[1-3],h5\nSwitchName=s2 Nodes=h4,h[6-8]\n"
                    "SwitchName=spine Switches=s[1-2]\n")
    declared = read_topology(conf)
    assert declared == {"s1": ["h1", "h2", "h3", "h5"], "s2": ["h4", "h6", "h7", "h8"]}
    assert compare(topo.groups, declared) == [
        "misplaced host h4: declared on s2, measured with the hosts of s1",
        "misplaced host h5: declared on s1, measured with the hosts of s2"]


def test_advise_stays_in_one_group_and_avoids_verdicts() -> None:
    m = two_switches()
    m.bandwidth[(1, 2)] /= 50
    m.bandwidth[(2, 1)] /= 50
    j = judge(m).to_json()
    j["topology"] = infer_topology(m).to_json()
    a = advise(j, 3)
    assert a.group is not None and set(a.hosts) <= set(HOSTS[:4]) or set(a.hosts) <= set(
        HOSTS[4:])
    assert not {"h2", "h3"} & set(a.hosts)
    with pytest.raises(FabenchError):
        advise(j, 9)
    csv = matrix_csv(j).splitlines()
    assert csv[0].startswith("src,dst,latency_us") and len(csv) == 1 + 56
    assert any(r.startswith("h2,h3,") and r.endswith("bad link") for r in csv)


def test_pairs_are_parsed_by_rank_or_host() -> None:
    assert parse_pairs("0:3,3:0") == ((0, 3), (3, 0))
    assert parse_pairs("h2:h5", HOSTS) == ((1, 4),)
    for bad in ("1", "1:1", "x:2", "0;1"):
        with pytest.raises(FabenchError):
            parse_pairs(bad)


# ---- the kernel, under real MPI ranks on this host ------------------------------------------

def _kernel(openmpi: str, ranks: int, *args: str) -> list[dict]:
    exe = native_root() / openmpi / "fb-mpi-matrix"
    if not exe.exists():
        missing(f"{exe} not built")
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_mpi_yield_when_idle": "1"}
    proc = subprocess.run(["mpirun.openmpi", "--oversubscribe", "-np", str(ranks), "--",
                           str(exe), "--lat-iterations", "5", "--lat-warmup", "1",
                           "--iterations", "2", "--warmup", "0", "--window", "2",
                           "--sizes", "4K", *args],
                          capture_output=True, text=True, timeout=120, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]


@pytest.mark.parametrize("ranks", [4, 5])
def test_kernel_visits_every_ordered_pair_once(openmpi: str, ranks: int) -> None:
    recs = _kernel(openmpi, ranks)
    pairs = [(r["src"], r["dst"]) for r in recs if r["type"] == "pair"]
    assert sorted(pairs) == [(i, j) for i in range(ranks) for j in range(ranks) if i != j]
    rounds = {r["round"] for r in recs if r["type"] == "pair"}
    assert len(rounds) == (ranks if ranks % 2 else ranks - 1)  # odd: one bye per round
    # the tcp variant's schedule (matrix/pairwise.py) is the kernel's, round for round
    schedule = tournament(ranks)
    for r in (r for r in recs if r["type"] == "pair"):
        assert tuple(sorted((r["src"], r["dst"]))) in schedule[r["round"]]
    p = next(r for r in recs if r["type"] == "pair")
    assert len(p["latency_us"]) == 5 and len(p["bandwidth_us"]) == 2
    assert p["bytes_per_sample"] == 2 * 4096 and p["mode"] == "concurrent"


def test_kernel_measures_only_the_pairs_asked(openmpi: str) -> None:
    recs = _kernel(openmpi, 4, "--mode", "isolated", "--pairs", "1:2,3:0,2:1")
    pairs = sorted((r["src"], r["dst"]) for r in recs if r["type"] == "pair")
    assert pairs == [(1, 2), (2, 1), (3, 0)]
    assert {r["mode"] for r in recs if r["type"] == "pair"} == {"isolated"}


def test_kernel_refuses_bad_options(openmpi: str) -> None:
    exe = native_root() / openmpi / "fb-mpi-matrix"
    if not exe.exists():
        missing(f"{exe} not built")
    for args in (["--mode", "sideways"], ["--lat-iterations", "0"]):
        proc = subprocess.run([str(exe), *args], capture_output=True, text=True, check=False)
        assert proc.returncode == 2 and "mpi.matrix" in proc.stderr


# ---- end to end on real testbeds ------------------------------------------------------------

needs_root = pytest.mark.usefixtures("root", "openmpi")  # a root testbed and Open MPI


# 4 windows of 4 x 128 KiB per direction (2 MiB) instead of 1 MiB messages (16 MiB), where a
# rate limit of 50 Mbit/s otherwise takes seconds per direction and per retest. It was 256
# KiB while ranks that shared cores spun: at load 16-24 on 2 cores the healthy links spread
# so widely that a 100 Mbit/s uplink no longer separated the groups, and h1 -> h6 at 30
# Mbit/s was only an asymmetric link. With the naps (FABENCH_SHARED_CORES) 128 KiB named the
# 50 Mbit/s link of a 6-host testbed beside a busy loop, 12-13.5 s against 15-19 s.
QUICK = ("--size", "128K")
# The six-host testbed's tests run alone (no other test loads the host): there 64 KiB windows
# named h4 and h1 -> h6 with higher scores than 256 KiB (h4 9.8 and 13.2 against 9.3 and 9.7,
# mpi and tcp), in half the time (7.5 and 5.7 s a matrix against 15.5 and 13.2: the 30 Mbit/s
# link carries a quarter of the bytes).
SIX_HOSTS = ("--size", "64K")


def _matrix(out: Path, name: str, *args: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    # in this process: the matrix's own imports (scipy's clustering among them) once per
    # module, not once per matrix
    proc = fabench_run("matrix", "--on", "testbed", name, "--out", str(out), *args, check=False)
    assert proc.returncode in (0, 3), proc.stdout + proc.stderr
    with Store(out / "fabench.sqlite") as st:
        cid = st.matrices()[-1]
        _, j = st.matrix(cid)
        runs = st.runs(cid)
        assert runs and len(st.matrix_pairs(runs[0].id)) == len(j["latency_us"])
    return proc, j


@pytest.mark.netns
@needs_root
@pytest.mark.slow
def test_testbed_bad_link_found_and_healthy_testbed_passes(openmpi: str, tmp_path: Path) -> None:
    with own_testbeds(f"fbm{os.getpid() % 100000}"):
        fabench_cli("testbed", "up", "--name", "bad", "--hosts", "6",
                    "--impair", "h2-h3:rate=50mbit")
        proc, j = _matrix(tmp_path / "bad", "bad", *QUICK)
        assert proc.returncode == 3, proc.stdout
        flagged = [ln for ln in proc.stdout.splitlines() if ln.startswith("bad link")]
        assert [ln.split(":")[0] for ln in flagged] == ["bad link h2 -> h3", "bad link h3 -> h2"]
        assert "retest" in flagged[0]

        fabench_cli("testbed", "up", "--name", "good", "--hosts", "6")
        proc, j = _matrix(tmp_path / "good", "good", *QUICK)
        assert proc.returncode == 0, proc.stdout
        assert j["verdicts"] == [] and "no link or node flagged" in proc.stdout


@pytest.mark.netns
@needs_root
@pytest.mark.slow
def test_testbed_two_switches_give_two_groups_and_a_bad_uplink(openmpi: str,
                                                               tmp_path: Path) -> None:
    """One 6-host testbed of two switches with a slow (50 Mbit/s) uplink and one matrix on it,
    for both the inferred groups and the uplink verdict. One test, not two sharing a module
    fixture: the fixture was to be made once through pytest-xdist's `xdist_group`, which
    pytest 9 silently defeats (xdist 3.8 sets `item._nodeid`, which pytest 9's nodeid no
    longer reads), so both tests built the testbed and its matrix, 43-51 s each, at once."""
    with own_testbeds(f"fbs{os.getpid() % 100000}"):
        fabench_cli("testbed", "up", "--name", "sw", "--hosts", "6", "--switches", "2",
                    "--uplink-rate", "50mbit")
        topo = tmp_path / "topo"
        topo.write_text("leaf1: h1 h2 h3\nleaf2: h4 h5 h6\n")
        # 128 KiB through 50 Mbit/s (at 256 KiB and 100 Mbit/s a loaded host measured one
        # group; at 512 KiB and 100 Mbit/s one matrix of three at load 10 named no uplink).
        # Since ranks that share cores nap, 128 KiB gave the uplink scores 14.6-16.4 and both
        # groups in 20-21 s a matrix, 256 KiB 27.5-31.9 in 37 s (threshold 3.5)
        store = tmp_path / "sw"
        proc, j = _matrix(store, "sw", "--topology", str(topo), *QUICK)
    assert j["topology"]["groups"] == [["h1", "h2", "h3"], ["h4", "h5", "h6"]], proc.stdout
    assert j["topology"]["misplaced"] == []
    adv = fabench_run("matrix", "advise", "--nodes", "3", "--store", str(store))
    hosts = adv.stdout.splitlines()[0].split(": ")[1].split(",")
    assert hosts in (["h1", "h2", "h3"], ["h4", "h5", "h6"]), adv.stdout
    assert [v["line"].split(":")[0] for v in j["verdicts"]] == \
        ["bad uplink leaf1 <-> leaf2 (6 hosts)"], proc.stdout
    assert proc.returncode == 3


@pytest.fixture(scope="module")
def slow_host_testbed() -> Iterator[str]:
    """One 6-host testbed for both kernels' matrices (they only measure it): h4 slow, the
    one-way link h1 > h6 slow."""
    if os.geteuid() != 0:
        missing("needs root (network namespaces)")
    with own_testbeds(f"fbq{os.getpid() % 100000}"):
        fabench_cli("testbed", "up", "--name", "sl", "--hosts", "6",
                    "--impair", "h4:rate=200mbit", "--impair", "h1>h6:rate=30mbit")
        yield "sl"


@needs_root
@pytest.mark.slow
@pytest.mark.netns
# alone: h4's 200 Mbit/s is the smallest contrast of the testbed tests to the unshaped links,
# whose rate the CPU sets; beside another testbed test the tcp matrix once missed h4 (load 6.6)
@pytest.mark.alone
@pytest.mark.parametrize("kernel", ["mpi", "tcp"])
def test_testbed_slow_host_and_one_way_link_at_six_hosts(openmpi: str, tmp_path: Path,
                                                         slow_host_testbed: str,
                                                         kernel: str) -> None:
    # issue 28's case: the default matrix named the link and missed the slow host
    proc, j = _matrix(tmp_path / "sl", slow_host_testbed, "--kernel", kernel, *SIX_HOSTS)
    got = {v["line"].split(":")[0] for v in j["verdicts"]}
    assert {"slow node h4", "bad link h1 -> h6"} <= got, proc.stdout
    assert got <= {"slow node h4", "bad link h1 -> h6", "asymmetric link h1 -> h6"}, \
        proc.stdout
    if kernel == "mpi" and (os.cpu_count() or 1) < 6:
        # six ranks on fewer cores: said on stderr as it happens, and in the summary
        assert "# matrix: oversubscribed:" in proc.stderr
        assert any(w.startswith("oversubscribed") for w in j["warnings"])


# ---- the report ------------------------------------------------------------------------------

@pytest.mark.browser
def test_report_heatmaps_in_chromium(tmp_path: Path) -> None:
    m = two_switches()
    m.hosts[0] = '<script>window.pwned=1</script>"&'  # a hostile host name, escaped
    m.bandwidth[(1, 2)] /= 50
    m.bandwidth[(2, 1)] /= 50
    j = judge(m).to_json()
    j["topology"] = infer_topology(m).to_json()
    store = tmp_path / "fabench.sqlite"
    with Store(store) as st:
        cid = st.begin_campaign("matrix", {})
        rid = st.begin_run(campaign_id=cid, key="k", kernel="mpi.matrix", transport="tcp",
                           mpi="openmpi", ranks=8, launcher="testbed", repeat=0, settings={})
        st.finish_run(rid, status="ok")
        st.save_matrix(cid, m.hosts, j)
        st.end_campaign(cid, "finished")
    html = tmp_path / "report.html"
    fabench_cli("report", f"c{cid}", "-o", str(html), "--store", str(store))
    text = html.read_text()
    assert "<script>window.pwned" not in text and "&lt;script&gt;window.pwned" in text
    shot = tmp_path / "matrix.png"
    snap = browse(html, f"--screenshot={shot}")
    assert shot.exists() and shot.stat().st_size > 10000, snap.stderr[-2000:]
    dom = browse(html, "--dump-dom")
    assert console_errors(dom.stderr + snap.stderr) == []
    maps = re.findall(r'<svg class="heatmap".*?</svg>', dom.stdout, re.S)
    assert len(maps) == 2
    for svg in maps:
        assert svg.count('class="cell flagged"') == 2  # h2 -> h3 and h3 -> h2
        assert svg.count('class="cell') == 56
    assert "bad link h2 -&gt; h3" in dom.stdout
    if os.environ.get("FABENCH_SCREENSHOT_DIR"):
        shutil.copy(shot, Path(os.environ["FABENCH_SCREENSHOT_DIR"]) / "matrix-heatmap.png")


def stored_report(tmp_path: Path, m: Matrix, j: dict[str, object]) -> Path:
    store = tmp_path / "fabench.sqlite"
    with Store(store) as st:
        cid = st.begin_campaign("matrix", {})
        rid = st.begin_run(campaign_id=cid, key="k", kernel="mpi.matrix", transport="tcp",
                           mpi="openmpi", ranks=len(m.hosts), launcher="testbed", repeat=0,
                           settings={})
        st.finish_run(rid, status="ok")
        st.save_matrix(cid, m.hosts, j)
        st.end_campaign(cid, "finished")
    html = tmp_path / "report.html"
    fabench_cli("report", f"c{cid}", "-o", str(html), "--store", str(store))
    return html


@pytest.mark.browser
def test_report_of_a_bad_leaf_agrees_with_itself_in_chromium(tmp_path: Path) -> None:
    # 16 hosts in 4 leaves, leaf 3's uplink at a quarter: one verdict, its hosts' rows and
    # columns framed, the node table saying the same; no empty sections
    m, _ = leaves(seed=5)
    for (i, k) in m.bandwidth:
        if (i // 4 == 2) != (k // 4 == 2):
            m.bandwidth[(i, k)] /= 4
    topo = infer_topology(m)
    jd = judge(m, groups=Groups.of(topo.groups))
    j = {**jd.to_json(), "topology": topo.to_json()}
    assert [v["kind"] for v in j["verdicts"] if v["dst"] is None] == ["bad leaf"]
    html = stored_report(tmp_path, m, j)
    shot = tmp_path / "bad-leaf.png"
    snap = browse(html, f"--screenshot={shot}")
    assert shot.exists() and shot.stat().st_size > 10000, snap.stderr[-2000:]
    dom = browse(html, "--dump-dom")
    assert console_errors(dom.stderr + snap.stderr) == []
    maps = re.findall(r'<svg class="heatmap".*?</svg>', dom.stdout, re.S)
    assert len(maps) == 2
    for svg in maps:
        assert svg.count('class="cell') == 16 * 15
        assert svg.count('class="flagged-row"') == 4 and svg.count('class="flagged-col"') == 4
        assert svg.count('class="val"') == 16 * 15  # values on the cells at 16 hosts
        assert 'class="scale"' in svg
    rows = re.findall(r'<tr class="bad">(.*?)</tr>', dom.stdout, re.S)
    assert len(rows) == 4 and all("bad leaf" in r for r in rows)
    assert "bad leaf h9..h12 (4 hosts)" in dom.stdout
    for empty in ("<h2>Summary</h2>", "<h2>Charts</h2>", "<h2>Comparisons</h2>",
                  "<h2>Statistics per size</h2>"):
        assert empty not in dom.stdout
    if os.environ.get("FABENCH_SCREENSHOT_DIR"):
        shutil.copy(shot, Path(os.environ["FABENCH_SCREENSHOT_DIR"]) / "matrix-bad-leaf.png")


@pytest.mark.browser
def test_report_heatmap_of_64_hosts_hovers_its_values(tmp_path: Path) -> None:
    m = synthetic(64, seed=11)
    for o in range(64):
        if o != 20:
            m.bandwidth[(20, o)] /= 4
            m.bandwidth[(o, 20)] /= 4
    j = judge(m).to_json()
    html = stored_report(tmp_path, m, j)
    dom = browse(html, "--dump-dom")
    svg = re.findall(r'<svg class="heatmap".*?</svg>', dom.stdout, re.S)[1]
    assert svg.count('class="cell') == 64 * 63 and 'class="val"' not in svg
    assert len(re.findall(r"<title>h1 -&gt; h2: [0-9.]+ MB/s</title>", svg)) == 1
    assert svg.count('class="flagged-row"') == 1
    width = int(re.search(r'width="(\d+)"', svg).group(1))  # type: ignore[union-attr]
    assert width >= 64 * 18  # cells of 18 px or more: readable


def test_heatmap_marks_what_the_retest_cleared_and_what_it_confirmed() -> None:
    """The cells show the first pass; a direction the isolated retest cleared looked like a
    fault with no sign (16-host bad-leaf screenshot, issue 28): now dashed, both values in
    its title, and a confirmed one keeps its black outline with the retest value."""
    from fabench.report.matrix import heatmap, matrix_section

    m = synthetic(6, seed=3)
    m.bandwidth[(0, 1)] /= 10  # confirmed by the retest below
    m.bandwidth[(2, 3)] /= 3  # first-pass outlier that the retest clears
    j = judge(m).to_json()
    j["retest_bandwidth_MBps"] = [[0, 1, m.bandwidth[(0, 1)]], [2, 3, m.bandwidth[(2, 4)]]]
    j["verdicts"] = [v for v in j["verdicts"] if v["src"] == "h1" and v["dst"] == "h2"]
    assert j["verdicts"], "the planted link is a verdict"
    svg = heatmap(j, "bandwidth")
    assert svg.count('class="cell retested"') == 1 and svg.count('class="cell flagged"') == 1
    assert re.search(r"h3 -&gt; h4: [0-9.]+ MB/s; isolated retest [0-9.]+ MB/s: cleared", svg)
    assert re.search(r"h1 -&gt; h2: [0-9.]+ MB/s; isolated retest [0-9.]+ MB/s \(", svg)
    one = [v for v in j["verdicts"] if v["kind"] == "bad link"]
    assert "1 verdict</h3>" in matrix_section([{**j, "verdicts": one, "campaign_id": 1}])


_FILL = re.compile(r'<rect class="cell[^"]*"[^>]*fill="rgb\((\d+),(\d+),60\)"[^>]*><title>'
                   r"(h\d+) -&gt; (h\d+):")


def _fills(svg: str) -> dict[tuple[str, str], tuple[int, int]]:
    return {(a, b): (int(r), int(g)) for r, g, a, b in _FILL.findall(svg)}


def test_heatmap_colours_by_the_score_within_the_switch_pair_class() -> None:
    """Two switches: healthy directions across them pay an eighth of the bandwidth (more hops,
    an uplink shared), which a colour by value painted as red as the fault (issue 28). By
    class score they are green and only the planted in-leaf fault is red."""
    from fabench.report.matrix import heatmap

    m = two_switches()
    m.bandwidth[(1, 2)] /= 50
    topo = infer_topology(m)
    grouped = judge(m, groups=Groups.of(topo.groups)).to_json()
    fills = _fills(heatmap(grouped, "bandwidth"))
    assert len(fills) == 56
    across = [f for (a, b), f in fills.items() if (a in HOSTS[:4]) != (b in HOSTS[:4])]
    assert len(across) == 32 and all(r < 255 for r, _ in across), across  # under the threshold
    # typical: green (by value they sat at ~0.35 of the scale, red 178 each)
    assert statistics.median(r for r, _ in across) < 100, across
    assert fills[("h2", "h3")] == (255, 0)  # the fault: red
    assert "score within its switch-pair class" in heatmap(grouped, "bandwidth")
    # one group: the values are the picture, worst red (the planted fault, 50x under)
    flat = judge(synthetic()).to_json()
    assert flat.get("judged_groups") is None or len(flat["judged_groups"]["members"]) == 1
    m1 = synthetic()
    m1.bandwidth[(1, 2)] /= 50
    one = _fills(heatmap(judge(m1).to_json(), "bandwidth"))
    assert one[("h2", "h3")] == (255, 0) and sum(r == 255 for r, _ in one.values()) == 1


def test_compare_two_matrices_per_link() -> None:
    broken = synthetic()
    broken.bandwidth[(1, 4)] /= 20
    broken.bandwidth[(4, 1)] /= 20
    repaired = synthetic(seed=2)
    repaired.bandwidth[(0, 7)] /= 20  # a new fault elsewhere
    changes = {c.line.split(" (")[0]: c for c in diff(judge(broken).to_json(),
                                                      judge(repaired).to_json())}
    assert "fixed h2 -> h5" in changes and "fixed h5 -> h2" in changes
    assert changes["fixed h2 -> h5"].bandwidth_ratio > 10
    assert "broken h1 -> h8" in changes
    assert sum(c.verdict in ("fixed", "broken", "still bad") for c in changes.values()) == 3


@pytest.mark.netns
@needs_root
@pytest.mark.slow
def test_unreachable_host_in_a_hostfile(openmpi: str, tmp_path: Path) -> None:
    """A hostfile naming a host the agent cannot reach: a line naming it, the others measured
    and stored, the host marked unreachable (exit 3)."""
    with own_testbeds(f"fbu{os.getpid() % 100000}"):
        tb = create("hf", TestbedConfig(hosts=3))
        hostfile = tmp_path / "hostfile"
        hostfile.write_text("h1\nh2\nh3\nh9\n")
        env = {**os.environ, "FABENCH_RSH_AGENT": str(tb.agent), "FABENCH_IFACE": "eth0"}
        p = subprocess.run([*tb.hosts[0].enter, sys.executable, "-m", "fabench", "matrix",
                            "--on", "hosts", str(hostfile), "--out", str(tmp_path), *QUICK,
                            "--json"],
                           env=env, capture_output=True, text=True, timeout=600, check=False)
        assert p.returncode == 3, p.stdout + p.stderr
        assert "host h9 unreachable" in p.stderr and "no host h9" in p.stderr
        j = json.loads(p.stdout)
        assert [v["line"] for v in j["verdicts"] if v["kind"] == "unreachable"] == [
            "unreachable h9"]
        assert len(j["latency_us"]) == 6  # every direction among h1, h2, h3


@pytest.mark.netns
@needs_root
@pytest.mark.slow
def test_matrix_cut_short_is_stored_and_resumed(openmpi: str, tmp_path: Path) -> None:
    """A pass that dies mid-matrix (here: its time runs out in the last round, the one with the
    slow h1-h2 link; rank 0 meets rank 1 in round 2 of 0..2 with 4 ranks) keeps its finished
    rounds, marks the missing directions, and --resume measures only those."""
    with own_testbeds(f"fbr{os.getpid() % 100000}"):
        # every link shaped (1 Gbit/s): unshaped, the healthy directions read what the
        # scheduler gave them (a CI run's resume inferred two switch groups from that and
        # named an uplink between them)
        fabench_cli("testbed", "up", "--name", "cut", "--hosts", "4", "--rate", "1gbit",
                    "--impair", "h1-h2:rate=50mbit")
        # no retest of the cut pass either: its suspects' isolated pass ran into the same 7 s
        # limit (seen: 8.8 s more, measuring nothing this test asserts)
        proc = fabench_run("matrix", "--on", "testbed", "cut", "--out", str(tmp_path),
                           "--timeout", "7", "--iterations", "8", "--no-retest", "--json",
                           check=False)
        assert proc.returncode == 3, proc.stdout + proc.stderr
        assert "--resume" in proc.stderr
        j = json.loads(proc.stdout)
        lost = [v["line"] for v in j["verdicts"] if v["kind"] == "unreachable"]
        assert "unreachable h1 -> h2" in lost and len(j["latency_us"]) + len(lost) == 12
        # the resume's judgement without the isolated retest (the retest is other tests'
        # subject; here it measured the 50 mbit link twice more, ~20 s): the slow link is
        # named from the resumed directions, whatever first-pass noise stands beside it.
        # 4 windows, not 8: the slow link's two directions are most of the resume's time
        # (16 MiB each at 50 Mbit/s), and 20x below the other links it needs no more
        proc = fabench_run("matrix", "--on", "testbed", "cut", "--out", str(tmp_path),
                           "--resume", str(j["campaign_id"]), "--iterations", "4",
                           "--no-retest", "--json", check=False)
        assert proc.returncode == 3, proc.stdout + proc.stderr
        j2 = json.loads(proc.stdout)
        assert len(j2["latency_us"]) == 12
        assert j2["passes"][0]["directions"] == len(lost)
        named = {v["line"].split(":")[0] for v in j2["verdicts"]}
        assert {"bad link h1 -> h2", "bad link h2 -> h1"} <= named, named
        assert not [v for v in j2["verdicts"] if v["kind"] == "unreachable"]


def test_cli_usage_errors_exit_2(tmp_path: Path) -> None:
    p = fabench_run("matrix", "--pairs", "0:0", "--out", str(tmp_path), check=False)
    assert p.returncode == 2 and "two different hosts" in p.stderr
    p = fabench_run("matrix", "advise", "--nodes", "2", "--store", str(tmp_path), check=False)
    assert p.returncode == 2 and "no store" in p.stderr
    p = fabench_run("matrix", "--on", "testbed", "no-such-testbed-x", "--out", str(tmp_path),
                    check=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr


def sim_matrix(tmp_path: Path, tree: FatTree, resume: int | None = None) -> MatrixOutcome:
    fabric = PRESETS["roce-100g"]()
    setup = SimSetup(fabric=fabric, nodes=tree.hosts, hosts_per_leaf=tree.hosts_per_leaf,
                     platform=faulty_fat_tree(fabric, tree))
    opts = MatrixOptions(iterations=2, lat_iterations=10, lat_warmup=2, hosts=tree.hosts,
                         timeout_s=120)
    return measure_matrix(tmp_path / "fabench.sqlite", SimGridScheduler(setup), opts, resume)


@pytest.mark.sim
@pytest.mark.usefixtures("simgrid")
def test_simgrid_tree_with_a_slow_host_and_a_bad_link(tmp_path: Path) -> None:
    """Real smpirun on sim/faulty.py's explicit tree (2 leaves of 4): exactly the two faults
    are found; the same tree without faults has no verdict."""
    faulty = FatTree(8, 4, ((1, 0.25),), (PairFault(2, 6, 0.25),))
    out = sim_matrix(tmp_path / "a", faulty)
    assert sorted(v.line.split(":")[0] for v in out.judgement.verdicts) == [
        "bad link node-2 -> node-6", "bad link node-6 -> node-2", "slow node node-1"]
    assert out.exit_status == 3
    clean = sim_matrix(tmp_path / "b", FatTree(8, 4))
    assert clean.judgement.verdicts == [] and clean.exit_status == 0
    # one direction only: that direction is bad and asymmetric. The way back is not asserted
    # clean: its windows' acknowledgements cross the fault, so it is 0.3 % slower, and in a
    # simulator without noise the MeanAD fallback makes that an outlier too (docs/matrix.md)
    one_way = sim_matrix(tmp_path / "c", FatTree(8, 4, pair_faults=(PairFault(3, 4, 0.2,
                                                                               both=False),)))
    kinds = {(v.kind, v.src, v.dst) for v in one_way.judgement.verdicts}
    assert {("bad link", "node-3", "node-4"), ("asymmetric link", "node-3", "node-4")} <= kinds
    assert all({v.src, v.dst} == {"node-3", "node-4"} for v in one_way.judgement.verdicts)


@pytest.mark.sim
@pytest.mark.usefixtures("simgrid")
def test_simgrid_matrix_killed_before_its_judgement_is_resumed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A matrix killed before its judgement (Ctrl-C, a batch job's time limit: at 1024 hosts
    the first pass alone takes hours) stores no judgement, only its measured directions.
    --resume measures just the directions missing; an attempt killed after its whole first
    pass is judged and retested with nothing measured again."""
    faulty = FatTree(8, 4, ((1, 0.25),), (PairFault(2, 6, 0.25),))
    want = ["bad link node-2 -> node-6", "bad link node-6 -> node-2", "slow node node-1"]
    db = tmp_path / "fabench.sqlite"
    # 1: Ctrl-C in the first pass, after 20 of its 56 directions were stored
    stored = 0
    real_add = Store.add_matrix_pair

    def add_then_stop(store: Store, run_id: int, rec: PairRecord) -> None:
        nonlocal stored
        if stored == 20:
            raise KeyboardInterrupt
        real_add(store, run_id, rec)
        stored += 1

    monkeypatch.setattr(Store, "add_matrix_pair", add_then_stop)
    with pytest.raises(KeyboardInterrupt):
        sim_matrix(tmp_path, faulty)
    monkeypatch.setattr(Store, "add_matrix_pair", real_add)
    # and the pairs of each job (--pairs on one command line) as few as a Linux exec would
    # take at a million pairs: the resume and the retests go in several jobs
    monkeypatch.setattr(measure, "PAIRS_TEXT_MAX", 60)
    with Store(db) as st:
        cid = st.latest_campaign()
        assert cid is not None and cid not in st.matrices()
        assert st.campaign(cid).status == "interrupted"
        first_run = st.runs(cid)[0]
        assert first_run.status == "interrupted" and len(st.matrix_pairs(first_run.id)) == 20
    out = sim_matrix(tmp_path, faulty, resume=cid)
    firsts = [p for p in out.passes if p.role == "first"]
    assert len(firsts) == 3 and sum(len(p.pairs) for p in firsts) == 36  # 144 chars
    assert all(len(p.pairs) <= 60 // len("1:2,") for p in out.passes)
    assert len([p for p in out.passes if p.role == "retest"]) > 1
    assert sorted(v.line.split(":")[0] for v in out.judgement.verdicts) == want
    with Store(db) as st:
        passes = st.matrix(cid)[1]["passes"]
    assert [(p["run_id"], p["role"], p["directions"]) for p in passes[:len(firsts) + 1]] == [
        (first_run.id, "first", 20), *((p.run_id, "first", len(p.pairs)) for p in firsts)]

    # 2: Ctrl-C while the whole first pass is being judged
    real_find = measure.find_suspects

    def judged_then_stop(m: Matrix, **_: object) -> Suspects:
        raise KeyboardInterrupt

    monkeypatch.setattr(measure, "find_suspects", judged_then_stop)
    with pytest.raises(KeyboardInterrupt):
        sim_matrix(tmp_path, faulty)
    monkeypatch.setattr(measure, "find_suspects", real_find)
    with Store(db) as st:
        cid2 = st.latest_campaign()
        assert cid2 is not None and cid2 != cid and cid2 not in st.matrices()
        runs = st.runs(cid2)
    out = sim_matrix(tmp_path, faulty, resume=cid2)
    assert out.passes and all(p.role == "retest" for p in out.passes)
    assert sorted(v.line.split(":")[0] for v in out.judgement.verdicts) == want
    with Store(db) as st:
        passes = st.matrix(cid2)[1]["passes"]
        assert st.campaign(cid2).status == "finished"
    assert (passes[0]["run_id"], passes[0]["role"], passes[0]["directions"]) == (
        runs[0].id, "first", 56)
    # judged now: nothing left to resume; a campaign that is no matrix is refused
    with pytest.raises(FabenchError, match="nothing to resume"):
        sim_matrix(tmp_path, faulty, resume=cid2)
    with Store(db) as st:
        other = st.begin_campaign("run", {}, {})
    with pytest.raises(FabenchError, match="not a matrix"):
        sim_matrix(tmp_path, faulty, resume=other)


def test_pair_chunks_keep_each_command_line_argument_short() -> None:
    pairs = [(i, j) for i in range(1024) for j in range(1024) if i != j]
    chunks = measure.pair_chunks(pairs)
    assert [p for c in chunks for p in c] == pairs
    assert all(len(",".join(f"{i}:{j}" for i, j in c)) <= measure.PAIRS_TEXT_MAX
               for c in chunks)
    assert len(chunks) == 126  # a million pairs of 1024 ranks: 8.2 MB of text, 64 KiB a job
    assert measure.pair_chunks([(1, 2)], 1) == [[(1, 2)]]  # one pair always fits a job


def test_faulty_tree_platform_routes() -> None:
    """destination-mod-k across leaves, the fault link on its pair's route only, bad input."""
    p = faulty_fat_tree(PRESETS["roce-100g"](), FatTree(8, 4, pair_faults=(PairFault(0, 5,
                                                                                     0.5),)))
    routes = re.findall(r'<route src="([^"]+)" dst="([^"]+)"[^>]*>(.*?)</route>', p.xml)
    assert len(routes) == 8 * 8  # every ordered pair and each host's loopback
    by = {(s, d): body for s, d, body in routes}
    assert 'id="up0-1" direction="UP"' in by[("node-0", "node-5")]  # 5 mod 4 spines = 1
    assert 'id="up1-1" direction="DOWN"' in by[("node-0", "node-5")]
    assert "fault0" in by[("node-5", "node-0")] and "up" not in by[("node-0", "node-1")]
    assert sum("fault0" in b for b in by.values()) == 2
    # a degraded leaf: each of its uplinks at the fraction, the other leaf's at full rate
    weak = faulty_fat_tree(PRESETS["roce-100g"](), FatTree(8, 4, slow_leaves=((1, 0.25),)))
    rate = dict(re.findall(r'<link id="(up\d-\d)" bandwidth="([0-9.e+]+)MBps"', weak.xml))
    assert len(rate) == 8 and all(float(rate[f"up1-{s}"]) == float(rate[f"up0-{s}"]) / 4
                                  for s in range(4))
    for bad in (lambda: FatTree(8, 4, ((8, 0.5),)), lambda: FatTree(8, 4, ((1, 0.0),)),
                lambda: FatTree(8, 4, pair_faults=(PairFault(2, 2, 0.5),)),
                lambda: FatTree(8, 4, slow_leaves=((2, 0.5),)),
                lambda: FatTree(4, 4, slow_leaves=((0, 0.5),))):
        with pytest.raises(FabenchError):
            bad()


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.usefixtures("simgrid")
def test_simgrid_64_hosts_bench() -> None:
    """bench/matrix_sim_scale.py at 64 hosts (4 leaves of 16): both faults found, no other
    verdict (its exit status). The simulator is deterministic: 8 ping-pongs and one window
    per direction (the bench's 512-host settings) instead of its default 20 and 2."""
    bench = Path(__file__).resolve().parents[1] / "bench" / "matrix_sim_scale.py"
    p = subprocess.run([sys.executable, str(bench), "--hosts", "64", "--slow", "37", "--bad",
                        "5", "50", "--lat-iterations", "8", "--iterations", "1"],
                       capture_output=True, text=True, timeout=600, check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "slow node node-37" in p.stdout and "bad link node-5 -> node-50" in p.stdout


@pytest.mark.sim
@pytest.mark.usefixtures("simgrid")
def test_fabench_compare_of_two_stored_matrices(tmp_path: Path) -> None:
    """`fabench compare c1 c2` on two real (SimGrid) matrices, before and after a repair:
    per-link verdicts as `fabench matrix compare`; its other operands keep their meaning."""
    sim_matrix(tmp_path, FatTree(8, 4, pair_faults=(PairFault(2, 6, 0.25),)))  # campaign 1
    sim_matrix(tmp_path, FatTree(8, 4))  # campaign 2: the link repaired
    store = str(tmp_path / "fabench.sqlite")
    p = fabench_run("compare", "--store", store, "--", "c1", "c2", check=False)
    assert p.returncode == 0, p.stderr  # nothing flagged in the second
    out = p.stdout.splitlines()
    assert any(x.startswith("fixed node-2 -> node-6 (bandwidth x") for x in out), p.stdout
    assert any(x.startswith("fixed node-6 -> node-2") for x in out)
    assert out == fabench_cli("matrix", "compare", "1", "2", "--store", store).stdout.splitlines()
    back = fabench_run("compare", "--store", store, "--", "campaign:2", "c1", check=False)
    assert back.returncode == 3 and "broken node-2 -> node-6" in back.stdout
    one = fabench_run("compare", "--store", store, "--", "c1", "1", check=False)
    assert one.returncode == 2 and "'c1' names a stored matrix, '1' does not" in one.stderr


# ---- NIC locality ---------------------------------------------------------------------------

def two_numa_xml(tmp_path: Path) -> Path:
    """A two-NUMA node with a NIC on node 1, from real lstopo output. Why not a collected one:
    this VM has one NUMA node and no multi-socket machine is at hand, and hwloc's synthetic
    topologies (`--input "node:2 ..."`) carry no I/O objects. So lstopo writes the synthetic
    two-node machine, with the OS numbering of many dual-socket Intel servers (node 0 holds
    the even CPUs: logical and OS ids differ), and the test hangs the I/O subtree lstopo writes
    for a PCI NIC (Bridge > PCIDev > OSDev of osdev_type 2) under node 1's Group, where hwloc
    puts a device whose locality is that node."""
    if shutil.which("lstopo-no-graphics") is None:
        missing("lstopo-no-graphics not found (Debian: apt-get install hwloc)")
    xml = subprocess.run(["lstopo-no-graphics", "--input",
                          "node:2 core:4 pu:1(indexes=0,2,4,6,1,3,5,7)", "--of", "xml"],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    root = ET.fromstring(xml)
    group = next(o for o in root.iter("object")
                 if o.get("type") == "Group" and o.get("nodeset") == "0x00000002")
    bridge = ET.SubElement(group, "object", type="Bridge", bridge_type="0-1", depth="0",
                           bridge_pci="0000:[81-81]")
    pci = ET.SubElement(bridge, "object", type="PCIDev", pci_busid="0000:81:00.0",
                        pci_type="0207 [15b3:101b] [15b3:0007] 00")
    ET.SubElement(pci, "object", type="OSDev", name="ib0", osdev_type="2")
    path = tmp_path / "two-numa.xml"
    path.write_text(ET.tostring(root, encoding="unicode"))
    return path


def test_nic_locality_and_binding_on_two_numa_nodes(tmp_path: Path) -> None:
    topo, xml = read_hwloc(two_numa_xml(tmp_path))
    loc = nic_locality(topo, xml)
    assert loc.nic == "ib0" and loc.numa == (1,) and loc.near == frozenset({1, 3, 5, 7})
    # node 1's cores: logical 4..7 (Open MPI's --cpu-set), OS cpus 1,3,5,7 (Slurm's map_cpu)
    assert loc.cores == ((4, 1), (5, 3), (6, 5), (7, 7))
    advice = binding_advice(loc, 2)
    assert "mpirun --bind-to core --cpu-set 4,5 -N 2" in advice[1]
    assert "--cpu-bind=map_cpu:1,3" in advice[2] and "--cpunodebind=1 --membind=1" in advice[3]
    assert any(x.startswith("note: 6 ranks per node, 4 cores near") for x in
               binding_advice(loc, 6))
    places = rank_places(loc, ["a", "a", "b", "b"], ["3", "0", "0-7", "?"])
    assert [p.place for p in places] == ["near", "far", "unbound", "unknown"]
    assert places[1].line == "rank 1 on a bound to cpus 0: far from the NIC"
    with pytest.raises(FabenchError, match="no such network device"):
        nic_locality(topo, xml, "eth9")
    # this VM: one node; its virtual NIC, where hwloc lists one, is local to node 0
    here, here_xml = read_hwloc(None)
    if here.nics:
        assert all(set(n) <= {x.index for x in here.nodes} for n in here.nics.values())


def test_kernel_reports_each_ranks_binding(openmpi: str) -> None:
    """The MPI kernels' meta names each rank's CPUs (sched_getaffinity): ranks started under
    `taskset -c 0` (mpirun's own binding off) report cpu 0."""
    exe = native_root() / openmpi / "fb-mpi-matrix"
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_mpi_yield_when_idle": "1"}
    proc = subprocess.run(["taskset", "-c", "0", "mpirun.openmpi", "--oversubscribe",
                           "--bind-to", "none", "-np", "2", "--", str(exe),
                           "--lat-iterations", "2", "--lat-warmup", "1", "--iterations", "1",
                           "--warmup", "0", "--sizes", "4K"],
                          capture_output=True, text=True, timeout=120, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    meta = next(json.loads(x) for x in proc.stdout.splitlines() if '"meta"' in x)
    assert meta["cpus"] == ["0", "0"]


@pytest.mark.sim
@pytest.mark.usefixtures("simgrid")
def test_advise_prints_the_binding_near_the_nic(tmp_path: Path) -> None:
    sim_matrix(tmp_path, FatTree(8, 4, ((1, 0.25),)))
    xml = two_numa_xml(tmp_path)
    p = fabench_cli("matrix", "advise", "--nodes", "3", "--ppn", "2", "--hwloc", str(xml),
                    "--store", str(tmp_path / "fabench.sqlite"))
    out = p.stdout.splitlines()
    assert out[0].startswith("hosts: ") and "node-1" not in out[0]  # the slow node left out
    assert any("ranks of the matrix bound near the NIC" in x for x in out)
    assert any("--cpu-set 4,5" in x for x in out)
    bad = fabench_run("matrix", "advise", "--nodes", "3", "--hwloc", str(xml), "--nic", "eth9",
                      "--store", str(tmp_path / "fabench.sqlite"), check=False)
    assert bad.returncode == 2 and "no such network device" in bad.stderr


@pytest.mark.parametrize("value", [0.0, -5.0, math.inf, math.nan])
def test_a_direction_without_a_usable_bandwidth_is_a_bad_link_not_a_crash(value: float) -> None:
    # an imported or damaged matrix may hold any number: such a direction scores as missing
    # (the worst), and its way back has no ratio to it (0 crashed the asymmetry's division)
    m = synthetic()
    m.bandwidth[(2, 5)] = value
    j = judge(m)
    assert [v.line.split(":")[0] for v in j.verdicts] == ["bad link h3 -> h6"]
    assert json.loads(json.dumps(j.to_json(), allow_nan=False))["hosts"][2] == "h3"
