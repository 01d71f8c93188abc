"""The matrix judge against CPU contention (issue 28), on synthetic samples: each direction's
ping-pongs and windows as the kernels record them, so that its median and its best sample
are both known. Cheap; the testbed tests in test_matrix.py and test_matrix_tcp.py confirm on
real namespaces."""

import random

from fabench.matrix.judge import THRESHOLD, Groups, Matrix, analyse, find_suspects, judge
from fabench.records import PairRecord

WINDOW_BYTES = 4 * 1024 * 1024.0


def record(src: int, dst: int, lat: list[float], bw_mbps: list[float]) -> PairRecord:
    return PairRecord(src, dst, f"h{src + 1}", f"h{dst + 1}", 0, "concurrent", 1 << 20, 4,
                      WINDOW_BYTES, lat, [WINDOW_BYTES / b for b in bw_mbps])


def samples(rng: random.Random, lat: float = 10.0, bw: float = 1000.0, n_lat: int = 200,
            windows: int = 4) -> tuple[list[float], list[float]]:
    """A healthy direction: ping-pongs and windows within a few per cent."""
    return ([lat * rng.lognormvariate(0, 0.03) for _ in range(n_lat)],
            [bw * rng.lognormvariate(0, 0.03) for _ in range(windows)])


def contended(rng: random.Random, xs: list[float], share: float, extra: float) -> list[float]:
    """A share of the ping-pongs waited for the CPU: each of those took `extra` us longer."""
    return [x + extra * rng.uniform(0.5, 1.5) if rng.random() < share else x for x in xs]


def fabric(n: int, seed: int, change: dict | None = None) -> list[PairRecord]:
    """Every direction of n hosts, with `change[(i, j)](rng, lat, bw)` applied where given."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        for j in range(n):
            if i != j:
                lat, bw = samples(rng)
                if change and (i, j) in change:
                    lat, bw = change[(i, j)](rng, lat, bw)
                out.append(record(i, j, lat, bw))
    return out


def names(j) -> list[str]:
    return [v.line.split(":")[0] for v in j.verdicts]


def medians_only(m: Matrix) -> Matrix:
    """The same matrix as the judge saw it before issue 28: medians, no best samples."""
    return Matrix(m.hosts, dict(m.latency), dict(m.bandwidth))


def test_contended_latency_is_no_bad_link_and_a_delay_is() -> None:
    hosts = [f"h{i + 1}" for i in range(6)]
    change = {
        # healthy, but 70 % of its ping-pongs waited for a core: the median more than doubles
        (0, 1): lambda rng, lat, bw: (contended(rng, lat, 0.7, 20.0), bw),
        # a fault of the path: every ping-pong 15 us longer
        (2, 3): lambda rng, lat, bw: ([x + 15.0 for x in lat], bw),
    }
    m = Matrix.of(hosts, fabric(6, seed=3, change=change))
    assert m.latency[(0, 1)] > 2 * m.latency[(2, 4)]  # the contention shows in the median
    # judged on medians alone (the judge before): both named
    assert {"bad link h1 -> h2", "bad link h3 -> h4"} <= set(names(judge(medians_only(m))))
    j = judge(m)
    assert names(j) == ["bad link h3 -> h4"]
    ev = j.verdicts[0].evidence[0]
    assert ev.best is not None and ev.best_threshold is not None
    assert ev.best > ev.best_threshold and ev.first > ev.threshold
    assert "best sample" in j.verdicts[0].line
    an = analyse(m)
    assert an.scores[(0, 1)]["latency"] < THRESHOLD < an.scores[(2, 3)]["latency"]


def test_contended_windows_are_no_bad_link_and_a_rate_limit_is() -> None:
    hosts = [f"h{i + 1}" for i in range(6)]
    change = {
        # 3 of 4 windows shared the cores with other work: at half speed
        (1, 4): lambda rng, lat, bw: (lat, [bw[0]] + [b / 2 for b in bw[1:]]),
        # a link at a third of the rate: every window
        (5, 0): lambda rng, lat, bw: (lat, [b / 3 for b in bw]),
    }
    m = Matrix.of(hosts, fabric(6, seed=4, change=change))
    before = names(judge(medians_only(m)))
    assert "bad link h2 -> h5" in before and "bad link h6 -> h1" in before
    after = names(judge(m))
    assert "bad link h6 -> h1" in after and "asymmetric link h6 -> h1" in after
    assert not [x for x in after if "h2 -> h5" in x], after


def test_retest_confirms_a_fault_and_clears_contention() -> None:
    """The isolated retest: a contended suspect (its median up, its best ping-pong not) is
    cleared, the delayed link is confirmed with both values in its evidence."""
    hosts = [f"h{i + 1}" for i in range(6)]
    first = Matrix.of(hosts, fabric(6, seed=5, change={
        (0, 1): lambda rng, lat, bw: ([x + 15.0 for x in lat], bw),
        (3, 2): lambda rng, lat, bw: ([x + 15.0 for x in lat], bw)}))
    sus = find_suspects(first, screen=True)
    assert {(0, 1), (3, 2)} <= sus.links
    again = fabric(6, seed=6, change={
        (0, 1): lambda rng, lat, bw: ([x + 15.0 for x in lat], bw),
        # healthy after all (the first pass's delay was somebody else's burst): in the
        # retest it waited for the CPU in most of its ping-pongs
        (3, 2): lambda rng, lat, bw: (contended(rng, lat, 0.8, 20.0), bw)})
    want = set(sus.retest_pairs(6))
    retest = Matrix.of(hosts, [r for r in again if (r.src, r.dst) in want])
    j = judge(first, retest, sus)
    assert names(j) == ["bad link h1 -> h2"]
    assert "link h4 -> h3" in j.cleared
    ev = j.verdicts[0].evidence[0]
    assert ev.retest_best is not None and ev.retest_score is not None
    assert ev.retest_score > THRESHOLD
    # on medians alone the retest confirmed the contended one too
    assert "bad link h4 -> h3" in names(judge(medians_only(first), medians_only(retest), sus))


def test_retest_whose_references_scatter_confirms_only_what_stands_out_of_them() -> None:
    """Medians only (no samples): a retest at a busy moment, its references spread over a
    factor of 2, does not confirm a suspect at 2.4x; a fault at 10x stands out of them."""
    hosts = [f"h{i + 1}" for i in range(8)]
    rng = random.Random(7)
    first = Matrix(hosts)
    for i in range(8):
        for j in range(8):
            if i != j:
                first.latency[(i, j)] = 10 * rng.lognormvariate(0, 0.01)
                first.bandwidth[(i, j)] = 1000 * rng.lognormvariate(0, 0.03)
    first.latency[(0, 1)] = 10.6  # healthy, just over the first pass's tight threshold
    first.latency[(2, 3)] = 100.0  # a real fault
    sus = find_suspects(first)
    assert {(0, 1), (2, 3)} <= sus.links
    retest = Matrix(hosts)
    for k, link in enumerate(sus.retest_pairs(8)):
        # the references one after another on a busy host: 10 to 20 us
        retest.latency[link] = 10.0 * (1 + (k % 5) / 4)
        retest.bandwidth[link] = first.bandwidth[link]
    retest.latency[(0, 1)] = 24.5
    retest.latency[(2, 3)] = 100.0
    j = judge(first, retest, sus)
    assert names(j) == ["bad link h3 -> h4"]
    assert "link h1 -> h2" in j.cleared
    # the same retest with references as tight as the first pass: h1 -> h2 confirmed (the
    # rule can fail: it is the references' scatter that clears it)
    for link in sus.references:
        retest.latency[link] = 10.0
    assert "bad link h1 -> h2" in names(judge(first, retest, sus))


def test_bad_uplink_of_two_switches_names_no_link_inside_a_leaf() -> None:
    """4 healthy hosts on 2 switches, the uplink at a fifth: the across class is the uplink's
    own, and its directions count in the spread beside the 4 directions inside the leaves.
    With the spread of those 4 alone, 2 of these 300 seeds named a link inside a leaf (and 20
    of 300 where one leaf direction was 3 % slower, as slow as the windows' own noise)."""
    hosts = ["h1", "h2", "h3", "h4"]
    leaf = {0: 0, 1: 0, 2: 1, 3: 1}

    def across(rng, lat, bw):
        return [x * 1.3 for x in lat], [b / 5 for b in bw]

    change = {(i, j): across for i in range(4) for j in range(4)
              if i != j and leaf[i] != leaf[j]}
    groups = Groups.of([hosts[:2], hosts[2:]], {"s1": hosts[:2], "s2": hosts[2:]})
    found = {seed: names(judge(Matrix.of(hosts, fabric(4, seed, change)), groups=groups))
             for seed in range(300)}
    wrong = {s: f for s, f in found.items() if f != ["bad uplink s1 <-> s2 (4 hosts)"]}
    assert not wrong, wrong


def test_contended_host_is_no_slow_node_and_a_delayed_one_is() -> None:
    hosts = [f"h{i + 1}" for i in range(6)]

    def busy(rng, lat, bw):  # most ping-pongs waited for a core
        return contended(rng, lat, 0.7, 20.0), bw

    def delayed(rng, lat, bw):  # a host whose every ping-pong takes 40 us longer
        return [x + 40.0 for x in lat], bw

    change = {(i, j): busy for i in range(6) for j in range(6) if i != j and 1 in (i, j)}
    m = Matrix.of(hosts, fabric(6, seed=9, change=change))
    assert "slow node h2" in names(judge(medians_only(m)))
    assert names(judge(m)) == []
    change = {(i, j): delayed for i in range(6) for j in range(6) if i != j and 4 in (i, j)}
    assert names(judge(Matrix.of(hosts, fabric(6, seed=9, change=change)))) == ["slow node h5"]


def test_one_way_rate_limit_is_asymmetric_however_wide_the_ratios_spread() -> None:
    """A concurrent pass on a loaded host: healthy bandwidths lognormal with sigma 0.9 (a
    factor of 15 between the 5th and 95th percentile), so the ratios' spread is wide and a
    direction at 6 MB/s against 500 back scores under 3.5 as a ratio; it is bad by its
    bandwidth and its way back is not: asymmetric (the tcp testbed test missed it so)."""
    def made(back: float) -> Matrix:
        rng = random.Random(2)
        m = Matrix([f"h{i + 1}" for i in range(5)])
        for i in range(5):
            for j in range(5):
                if i != j:
                    m.latency[(i, j)] = 10 * rng.lognormvariate(0, 0.03)
                    m.bandwidth[(i, j)] = 1500 * rng.lognormvariate(0, 0.9)
        m.bandwidth[(1, 3)], m.bandwidth[(3, 1)] = 6.0, back
        return m

    m = made(500.0)
    an = analyse(m)
    assert an.scores[(1, 3)]["asymmetry"] < THRESHOLD < an.scores[(1, 3)]["bandwidth"]
    j = judge(m)
    assert names(j) == ["bad link h2 -> h4", "asymmetric link h2 -> h4"]
    ev = j.verdicts[1].evidence[0]
    assert ev.first > ev.threshold  # 83x against the ratio at the bandwidth threshold
    # a link bad both ways is no asymmetric link
    assert names(judge(made(6.0))) == ["bad link h2 -> h4", "bad link h4 -> h2"]


def test_node_retest_in_units_of_its_references_scatter() -> None:
    """Medians only: 5 hosts, latencies within 1 %, one host 8 % slower: a node suspect. A
    retest whose references scatter by 10 % (a busy moment) does not confirm 8 %; one whose
    references agree does (the rule can fail: it is the scatter that clears it)."""
    rng = random.Random(13)
    hosts = [f"h{i + 1}" for i in range(5)]
    first = Matrix(hosts)
    for i in range(5):
        for j in range(5):
            if i != j:
                first.latency[(i, j)] = 10 * rng.lognormvariate(0, 0.01) * \
                    (1.08 if 3 in (i, j) else 1.0)
                first.bandwidth[(i, j)] = 1000 * rng.lognormvariate(0, 0.03)
    sus = find_suspects(first, screen=True)
    assert 3 in sus.nodes and sus.references

    def retest(scatter: float) -> Matrix:
        r = Matrix(hosts)
        for k, link in enumerate(sus.retest_pairs(5)):
            r.latency[link] = 10 * (1.08 if 3 in link else 1 + scatter * ((k % 3) - 1))
            r.bandwidth[link] = first.bandwidth[link]
        return r

    assert "slow node h4" in names(judge(first, retest(0.0), sus))
    busy = judge(first, retest(0.1), sus)
    assert "slow node h4" not in names(busy) and "node h4" in busy.cleared


def test_a_link_of_a_host_called_slow_stays_suspect_for_the_next_retest() -> None:
    """Recorded on a 5-host tcp testbed with h2 -> h4 at 50 Mbit: retest 1 called h2 slow by
    latency noise (so its link was not judged: the host explains it), retest 2 cleared h2. The
    link must still be retested and judged then, not dropped with the host's verdict."""
    from types import SimpleNamespace

    from fabench.matrix.judge import Suspects, Verdict
    from fabench.matrix.measure import survivors

    asked = Suspects(frozenset({(1, 3), (0, 2)}), frozenset({1}), ((0, 3), (4, 0)))
    retest1 = SimpleNamespace(hosts=["h1", "h2", "h3", "h4", "h5"], groups=None,
                              verdicts=[Verdict("slow node", "h2", None, (), ("h2",))])
    kept = survivors(retest1, asked)  # type: ignore[arg-type]
    assert kept.nodes == {1} and kept.links == {(1, 3)}  # (0, 2) was cleared: not kept
    assert (1, 3) in kept.retest_pairs(5)
    cleared = SimpleNamespace(hosts=retest1.hosts, groups=None, verdicts=[])
    assert survivors(cleared, kept).links == frozenset()  # type: ignore[arg-type]


def _leaves(n_groups: int, per: int = 4) -> tuple[list[str], list[int], Groups]:
    hosts = [f"h{i + 1}" for i in range(n_groups * per)]
    leaf = [i // per for i in range(len(hosts))]
    sw = {f"s{k + 1}": hosts[k * per:(k + 1) * per] for k in range(n_groups)}
    return hosts, leaf, Groups.declared(hosts, sw)


def _busy_windows(rng, lat, bw):
    """Healthy, but 3 of its 4 windows shared the cores with other work: at half speed."""
    return lat, [bw[0]] + [b / 2 for b in bw[1:]]


def _degraded(rng, lat, bw):
    """A path at a quarter of the rate: every window."""
    return lat, [b / 4 for b in bw]


def _sweep(n_groups: int, touched, how, seeds: range) -> tuple[dict[int, list[str]],
                                                               dict[int, list[str]]]:
    """Verdicts per seed on medians alone (the judge before) and with the best samples."""
    hosts, leaf, groups = _leaves(n_groups)
    n = len(hosts)
    change = {(i, j): how for i in range(n) for j in range(n)
              if i != j and touched(leaf[i], leaf[j])}
    before, after = {}, {}
    for seed in seeds:
        m = Matrix.of(hosts, fabric(n, seed, change))
        before[seed] = names(judge(medians_only(m), groups=groups))
        after[seed] = names(judge(m, groups=groups))
    return before, after


def test_contended_leaf_is_no_bad_leaf_and_a_degraded_one_is() -> None:
    """3 leaves of 4 hosts. Leaf s3's directions to the rest share the cores with other work in
    3 of their 4 windows (the medians halve, the best windows do not): on medians alone it is
    a bad leaf in every seed; by the best-sample rule nothing is named. A leaf whose uplinks
    run at a quarter moves every window: found in every seed, before and after."""
    seeds = range(20)
    before, after = _sweep(3, lambda a, b: a != b and 2 in (a, b), _busy_windows, seeds)
    assert all(v == ["bad leaf s3 (4 hosts)"] for v in before.values()), before
    assert all(v == [] for v in after.values()), after
    before, after = _sweep(3, lambda a, b: a != b and 2 in (a, b), _degraded, seeds)
    assert all(v == ["bad leaf s3 (4 hosts)"] for v in before.values()), before
    assert all(v == ["bad leaf s3 (4 hosts)"] for v in after.values()), after
    # the verdict carries both: the median of its directions and of their best windows
    m = Matrix.of(_leaves(3)[0], fabric(12, 0, {
        (i, j): _degraded for i in range(12) for j in range(12)
        if i != j and i // 4 != j // 4 and 2 in (i // 4, j // 4)}))
    ev = judge(m, groups=_leaves(3)[2]).verdicts[0].evidence[0]
    assert ev.best is not None and ev.best_threshold is not None
    assert ev.best < ev.best_threshold and ev.first < ev.threshold  # bandwidth: lower is worse


def test_contended_uplink_is_no_bad_uplink_and_a_degraded_one_is() -> None:
    """The same for one group pair: s1 <-> s2 of 3 leaves, and the only pair of 2 leaves
    (scored there against the directions inside the leaves). With 3 leaves the contended
    pair's directions are then judged one by one, against an across class two thirds
    healthy: a contended direction's best window is its one clean window, against the best
    of 4 of the others, and a few score above 3.5 by their noise (31 in 40 seeds, of 32
    contended directions each: docs/matrix.md); those are suspects that the isolated retest
    clears."""
    seeds = range(12)
    pair = lambda a, b: {a, b} == {0, 1}  # noqa: E731
    want = "bad uplink s1 <-> s2 (8 hosts)"
    for groups in (3, 2):
        before, after = _sweep(groups, pair, _busy_windows, seeds)
        assert all(want in v for v in before.values()), before
        assert not [v for v in after.values() if want in v], after
        if groups == 2:
            assert all(v == [] for v in after.values()), after
        before, after = _sweep(groups, pair, _degraded, seeds)
        assert all(want in v for v in before.values()), before
        assert all(v == [want] for v in after.values()), after
    # the full judgement, retest included (isolated: the contention gone), names nothing
    hosts, leaf, groups = _leaves(3)
    n = len(hosts)
    change = {(i, j): _busy_windows for i in range(n) for j in range(n)
              if i != j and pair(leaf[i], leaf[j])}
    for seed in seeds:
        first = Matrix.of(hosts, fabric(n, seed, change))
        an = analyse(first, groups)
        sus = find_suspects(first, analysis=an, screen=True)
        assert not sus.groups
        want_pairs = set(sus.retest_pairs(n))
        again = Matrix.of(hosts, [r for r in fabric(n, seed + 1000)
                                  if (r.src, r.dst) in want_pairs])
        assert names(judge(first, again, sus, analysis=an)) == [], seed


def test_leaf_retest_clears_contention_and_confirms_a_degraded_leaf() -> None:
    """A leaf found in the first pass is retested on a sample of its directions against a
    sample of its reference: where the sample's windows were contended in the retest (its
    best windows at the others'), the leaf is cleared; on medians alone it was confirmed."""
    hosts, leaf, groups = _leaves(3)
    n = len(hosts)
    bad = {(i, j) for i in range(n) for j in range(n)
           if i != j and leaf[i] != leaf[j] and 2 in (leaf[i], leaf[j])}
    first = Matrix.of(hosts, fabric(n, 1, dict.fromkeys(bad, _degraded)))
    an = analyse(first, groups)
    sus = find_suspects(first, analysis=an, screen=True)
    assert [fd.kind for fd in sus.groups] == ["bad leaf"]
    want = set(sus.retest_pairs(n))

    def retest(how) -> Matrix:
        return Matrix.of(hosts, [r for r in fabric(n, 2, dict.fromkeys(bad, how))
                                 if (r.src, r.dst) in want])

    busy = retest(_busy_windows)
    assert names(judge(first, busy, sus, analysis=an)) == []
    assert names(judge(first, medians_only(busy), sus, analysis=an)) == \
        ["bad leaf s3 (4 hosts)"]
    j = judge(first, retest(_degraded), sus, analysis=an)
    assert names(j) == ["bad leaf s3 (4 hosts)"]
    ev = j.verdicts[0].evidence[0]
    assert ev.retest_best is not None and ev.retest_score is not None
    assert ev.retest_score > THRESHOLD
