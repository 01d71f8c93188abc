"""The cost terms that make ranks per node and scale first-class (NIC gap, step noise, the
neighbour fold, distance-doubling halving), the small-to-large fit and the conformal bands:
known answers worked out by hand in each test's comments."""

from __future__ import annotations

import math

import pytest

from fabench.model.collectives import (
    algorithms,
    allreduce_rabenseifner,
    allreduce_recursive_doubling,
    allreduce_ring,
)
from fabench.model.cost import Cluster, Model, harmonic
from fabench.model.decisions import library_choice, openmpi_rules
from fabench.model.fabric import Fabric, Segment
from fabench.model.published import (
    Row,
    conformal_bands,
    conformal_quantile,
)
from fabench.model.scale import Observation, fit_scale
from fabench.model.topology import TopologySpec

ALPHA, BETA = 2.0, 1e-3  # us, us per byte (1000 MB/s)
SHM_ALPHA, SHM_BETA = 0.5, 1e-4
GAMMA = 2e-4  # us per byte reduced


def _fabric(nic_gap: float = 0.0, noise: float = 0.0) -> Fabric:
    # one switch between any two nodes, measured across one: no extra hop latency anywhere
    return Fabric("t", [Segment(0, ALPHA, BETA)], calibrated_hops=1, hop_latency_us=0.3,
                  intra=[Segment(0, SHM_ALPHA, SHM_BETA)], reduce_us_per_byte=GAMMA,
                  nic_gap_us=nic_gap, noise_us=noise)


def _cluster(nodes: int, ppn: int) -> Cluster:
    return Cluster(nodes, ppn, TopologySpec("single").build(nodes))


def test_harmonic_numbers() -> None:
    assert harmonic(1) == 1.0
    assert harmonic(4) == pytest.approx(1 + 1 / 2 + 1 / 3 + 1 / 4)  # 25/12
    exact = sum(1 / k for k in range(1, 1001))  # 7.4855
    assert harmonic(1000) == pytest.approx(exact, abs=1e-3)


def test_nic_gap_queues_the_ranks_of_a_node_behind_each_other() -> None:
    m = 8.0
    base = Model(_fabric(), _cluster(4, 4))
    gap = Model(_fabric(nic_gap=0.5), _cluster(4, 4))
    # xor at distance 4 leaves every node: its 4 ranks send through one NIC, 3 wait 0.5 us
    a0 = base.step_parts(m, 4, "xor")[0]
    assert a0 == pytest.approx(ALPHA)
    assert gap.step_parts(m, 4, "xor")[0] == pytest.approx(ALPHA + 3 * 0.5)
    # a binomial step with a quarter of the ranks active: one rank of each node sends
    assert gap.step_parts(m, 4, "xor", active=4)[0] == pytest.approx(ALPHA)
    # shift by 2: two ranks of a node cross (the node's last two), one waits
    assert gap.step_parts(m, 2, "shift")[0] == pytest.approx(ALPHA + 0.5)
    # within the node (xor 1): the NIC is not used
    assert gap.step_parts(m, 1, "xor")[0] == pytest.approx(SHM_ALPHA)
    # the vectorised pairwise exchange charges the same: distances 1..15, min(d, 4, 16 - d)
    # senders (the last three shifts wrap round to the node's own ranks for some of them)
    a, _ = gap.shift_parts(m, range(1, 16))
    a_base, _ = base.shift_parts(m, range(1, 16))
    inter = [d for d in range(1, 16) if a_base[d - 1] == pytest.approx(ALPHA)]
    assert inter and all(a[d - 1] - a_base[d - 1] == pytest.approx((min(d, 4, 16 - d) - 1)
                                                                   * 0.5) for d in inter)


def test_step_noise_is_the_expected_maximum_over_the_steps_ranks() -> None:
    md = Model(_fabric(noise=1.0), _cluster(4, 4))
    # 16 ranks in the step: + 1 us * H(16) = 3.3807 us
    assert md.step_parts(8.0, 4, "xor")[0] == pytest.approx(ALPHA + 3.380728993)
    # 4 active ranks: + H(4) = 25/12
    assert md.step_parts(8.0, 4, "xor", active=4)[0] == pytest.approx(ALPHA + 25 / 12)


def test_heavy_tailed_noise_grows_as_a_power_of_the_ranks() -> None:
    f = _fabric(noise=0.5)
    f.noise_exponent = 0.5
    md = Model(f, _cluster(4, 4))
    # 16 ranks: + 0.5 us * 16^0.5 = 2 us; 4 active ranks: + 0.5 * 2 = 1 us
    assert md.step_parts(8.0, 4, "xor")[0] == pytest.approx(ALPHA + 2.0)
    assert md.step_parts(8.0, 4, "xor", active=4)[0] == pytest.approx(ALPHA + 1.0)


def test_non_power_of_two_fold_pairs_neighbours_on_the_node() -> None:
    # 3 nodes x 2 ranks: p2 = 4, 2 extra ranks. The fold pairs ranks 0-1 and 2-3 (the same
    # node each) in and out: 2 same-node steps plus one reduction; then recursive doubling
    # over 4 ranks: distance 1 (same node) and 2 (across), each with its reduction.
    m = 1000.0
    md = Model(_fabric(), _cluster(3, 2))
    shm = SHM_ALPHA + SHM_BETA * m  # 0.6 us
    net = ALPHA + BETA * m  # 3.0 us
    want = 2 * shm + GAMMA * m + (shm + GAMMA * m) + (net + GAMMA * m)
    assert allreduce_recursive_doubling(md, m) == pytest.approx(want)  # 4.8 us


def test_rabenseifner_halves_with_distance_doubling() -> None:
    # 2 nodes x 2 ranks, 4096 B (1024 floats): reduce-scatter 2048 B to the rank 1 away (same
    # node), then 1024 B to the rank 2 away (the other node); the allgather retraces both.
    m = 4096.0
    md = Model(_fabric(), _cluster(2, 2))
    first = SHM_ALPHA + SHM_BETA * 2048  # 0.7048
    second = ALPHA + BETA * 1024  # 3.024
    want = 2 * (first + second) + GAMMA * (2048 + 1024)
    assert allreduce_rabenseifner(md, m) == pytest.approx(want)  # 8.0720 us


def test_ring_of_eager_steps_waits_on_its_left_neighbour_only() -> None:
    # 2 nodes x 4 ranks, 8000 B: 8 chunks of 1000 B, 2 x 7 = 14 steps. Of the ring's 8 links
    # 2 leave a node (ranks 3 -> 4 and 7 -> 0), 6 stay on it. Each rank waits only for its
    # left neighbour, so the critical path runs back through one link per step: the mean
    # link, (2 x 3.0 + 6 x 0.6) / 8 = 1.2 us a step, not the 3.0 us of the slowest one
    # (the max-plus cycle of the ring: its growth per step is the mean of its links).
    m = 8000.0
    md = Model(_fabric(), _cluster(2, 4))
    chunk = m / 8
    shm, net = SHM_ALPHA + SHM_BETA * chunk, ALPHA + BETA * chunk  # 0.6, 3.0 us
    want = 14 * (2 * net + 6 * shm) / 8 + 7 * GAMMA * chunk
    assert allreduce_ring(md, m) == pytest.approx(want)  # 16.8 + 1.4 = 18.2 us
    # From the rendezvous on (a second segment whose fixed cost rises by a round trip) a
    # send waits for its receiver too: every step at the slowest link, as before.
    rndv = Fabric("r", [Segment(0, ALPHA, BETA), Segment(512, ALPHA + 2.0, BETA)],
                  calibrated_hops=1, hop_latency_us=0.3, intra=[Segment(0, SHM_ALPHA, SHM_BETA)],
                  reduce_us_per_byte=GAMMA)
    assert rndv.rendezvous_bytes() == 512
    want = 14 * (ALPHA + 2.0 + BETA * chunk) + 7 * GAMMA * chunk
    assert allreduce_ring(Model(rndv, _cluster(2, 4)), m) == pytest.approx(want)  # 71.4 us
    # ... or at the same-node link where the node's copies are the slower: 1e-2 us a byte,
    # 10 us for the 1000 B chunk against the network's 5 us
    slow = Fabric("s", rndv.segments, calibrated_hops=1, hop_latency_us=0.3,
                  intra=[Segment(0, SHM_ALPHA, 1e-2)], reduce_us_per_byte=GAMMA)
    want = 14 * (SHM_ALPHA + 1e-2 * chunk) + 7 * GAMMA * chunk
    assert allreduce_ring(Model(slow, _cluster(2, 4)), m) == pytest.approx(want)  # 147.4 us
    # one rank per node: every link leaves its node
    one = Model(_fabric(), _cluster(8, 1))
    assert allreduce_ring(one, m) == pytest.approx(14 * net + 7 * GAMMA * chunk)
    # Noise of mean 0.5 us a rank and step: the delays add along the same path, which stays
    # on its rank or moves one back each step: 2 x 0.5 us a step (last passage), not the
    # slowest of the 8 ranks, 0.5 x H(8) = 1.36 us, as a step every rank waits for pays.
    noisy = Model(_fabric(noise=0.5), _cluster(2, 4))
    assert allreduce_ring(noisy, m) == pytest.approx(
        14 * ((2 * net + 6 * shm) / 8 + 2 * 0.5) + 7 * GAMMA * chunk)  # 32.2 us


def test_a_shift_near_a_full_turn_keeps_its_wrapped_partners_on_the_node() -> None:
    # 2 nodes x 4 ranks: rank r sends to r + d mod 8. d = 1..7 takes 1, 2, 3, 4 ranks of a
    # node across, then, near the full turn, 3, 2, 1: at d = 6 node 1's ranks 4 and 5 reach
    # 2 and 3 on node 0, while 6 and 7 wrap round to 4 and 5, on their own node.
    md = Model(_fabric(), _cluster(2, 4))
    assert [md.shift_crossing(d) for d in range(1, 8)] == [1, 2, 3, 4, 3, 2, 1]
    # 4 nodes x 4: only the last 3 shifts wrap (d = 13, 14, 15)
    md4 = Model(_fabric(), _cluster(4, 4))
    assert [md4.shift_crossing(d) for d in (3, 4, 12, 13, 15)] == [3, 4, 4, 3, 1]
    # A pairwise exchange on a link of 1000 MB/s: step d's crossing ranks share it. 2 x 4,
    # 8000 B a pair: the link carries (1+2+3+4+3+2+1) x 8000 B = 128 us of bytes (it was
    # 1+2+3+4+4+4+4 = 22 flows' worth, 176 us, with every shift past ppn counted whole).
    f = _fabric()
    f.link_bandwidth_MBps = 1000.0
    f.segments = [Segment(0, 0.0, 1e-6)]  # the endpoints far faster than the link
    pairwise = algorithms("alltoall")["pairwise"][0]
    assert pairwise(Model(f, _cluster(2, 4)), 8000.0) == pytest.approx(16 * 8000 / 1000)


def test_a_shift_waits_for_its_same_node_pairs_too() -> None:
    # 2 nodes x 4 ranks, the network far faster than the node's copies (1e-6 against 1e-3 us
    # a byte): a shift by d sends shift_crossing(d) ranks of a node across and keeps the
    # other 4 - crossing on the node; the step ends with the slower, the copies, except at
    # d = 4, where every rank crosses. Pairwise, 8000 B: 6 shifts of 0.5 + 8 us, one of 2 us.
    f = _fabric()
    f.segments = [Segment(0, ALPHA, 1e-6)]
    f.intra = [Segment(0, SHM_ALPHA, 1e-3)]
    md = Model(f, _cluster(2, 4))
    assert [md.stays(d) for d in range(1, 8)] == [3, 2, 1, 0, 1, 2, 3]
    pairwise = algorithms("alltoall")["pairwise"][0]
    net = ALPHA + 1e-6 * 8000
    assert pairwise(md, 8000.0) == pytest.approx(6 * (SHM_ALPHA + 8.0) + net)
    # the same through step(): the shift by 1 is the copy's, the network parts alone are not
    assert md.step(8000.0, 1, "shift") == pytest.approx(SHM_ALPHA + 8.0)
    a, b, _ = md.step_parts(8000.0, 1, "shift", network_only=True)
    assert a + b == pytest.approx(net)
    # linear (every send posted at once): the node's copies run beside the network's flows,
    # a rank's 3 same-node partners one after another: 3 x 8 us of bytes, not 6 (a copy per
    # shift that keeps someone on the node)
    linear = algorithms("alltoall")["linear"][0]
    gaps = 6 * f.gap_us
    assert linear(md, 8000.0) == pytest.approx(max(ALPHA, SHM_ALPHA) + gaps + 3 * 8.0)
    # one node: nothing crosses, nothing is compared (the steps stay as they were priced)
    assert Model(f, _cluster(1, 4)).stays(1) == 0


def test_a_node_with_several_nics_spreads_its_ranks_over_them() -> None:
    # 2 nodes x 4 ranks, 4 NICs a node (Alps GH200: one per module): a pairwise exchange's
    # crossing ranks (1, 2, 3, 4, 3, 2, 1) each leave through a NIC of their own, so the
    # link that limits every step carries one flow: 7 x 8000 B = 56 us on 1000 MB/s links,
    # against 16 flows' worth (128 us) through one NIC. Two NICs: 1, 1, 2, 2, 2, 1, 1.
    f = _fabric()
    f.link_bandwidth_MBps = 1000.0
    f.segments = [Segment(0, 0.0, 1e-6)]
    pairwise = algorithms("alltoall")["pairwise"][0]

    def nics(n: int) -> Model:
        return Model(f, Cluster(2, 4, TopologySpec("single").build(2), nics=n))

    assert pairwise(nics(4), 8000.0) == pytest.approx(7 * 8000 / 1000)
    assert pairwise(nics(2), 8000.0) == pytest.approx(10 * 8000 / 1000)
    assert pairwise(nics(1), 8000.0) == pytest.approx(16 * 8000 / 1000)
    # the NIC's gap queues only the ranks that share one: 8 ranks a node, xor at distance 8
    # (every rank leaves), 0.5 us a message: 7 wait on one NIC, 1 on each of four
    gap = _fabric(nic_gap=0.5)
    one = Model(gap, Cluster(4, 8, TopologySpec("single").build(4)))
    four = Model(gap, Cluster(4, 8, TopologySpec("single").build(4), nics=4))
    assert one.step_parts(8.0, 8, "xor")[0] == pytest.approx(ALPHA + 7 * 0.5)
    assert four.step_parts(8.0, 8, "xor")[0] == pytest.approx(ALPHA + 1 * 0.5)
    # a binomial step with one rank of a node sending: one NIC, no queue, either way
    assert four.step_parts(8.0, 8, "xor", active=4)[0] == pytest.approx(ALPHA)
    # same-node copies are not spread: every rank of the node copies through its memory
    assert four.step_parts(8.0, 1, "xor") == one.step_parts(8.0, 1, "xor")


def test_open_mpi_before_4_1_runs_its_old_fixed_rules() -> None:
    # [OMPI40]: allreduce recursive doubling below 10,000 B, then the ring (the 4.1 table
    # picks Rabenseifner at 64 ranks and 1 MiB); alltoall Bruck under 200 B a rank on more
    # than 12 ranks, basic linear under 3,000 B, then pairwise (4.1: linear at 64 KiB).
    assert library_choice("openmpi-4.0", "allreduce", 64, 32, 9999) == "recursive_doubling"
    assert library_choice("openmpi-4.0", "allreduce", 64, 32, 10000) == "ring"
    assert library_choice("openmpi", "allreduce", 64, 32, 1 << 20) == "rabenseifner"
    assert library_choice("openmpi-4.0", "allreduce", 64, 32, 1 << 20) == "ring"
    # no more floats than ranks: reduce + bcast, modelled as binomial
    assert library_choice("openmpi-4.0", "allreduce", 4096, 64, 16000) == "binomial"
    assert library_choice("openmpi-4.0", "alltoall", 13, 1, 199) == "bruck"
    assert library_choice("openmpi-4.0", "alltoall", 12, 1, 199) == "linear"
    assert library_choice("openmpi-4.0", "alltoall", 64, 32, 2999) == "linear"
    assert library_choice("openmpi-4.0", "alltoall", 64, 32, 65536) == "pairwise"
    assert library_choice("openmpi", "alltoall", 64, 32, 65536) == "linear"
    assert library_choice("openmpi-4.0", "alltoall", 2, 1, 8) == "pairwise"  # two_procs
    # allgather: under 50,000 B in all, recursive doubling on a power of two, else Bruck;
    # above, neighbour exchange on an even count, the ring on an odd one
    assert library_choice("openmpi-4.0", "allgather", 16, 1, 3000) == "recursive_doubling"
    assert library_choice("openmpi-4.0", "allgather", 12, 1, 4000) == "bruck"
    assert library_choice("openmpi-4.0", "allgather", 12, 1, 5000) == "neighbor_exchange"
    assert library_choice("openmpi-4.0", "allgather", 13, 1, 5000) == "ring"
    # a stored run's rules from the Open MPI its campaign recorded (`mpirun --version`)
    assert openmpi_rules("mpirun (Open MPI) 4.0.3") == "openmpi-4.0"
    assert openmpi_rules("mpirun (Open MPI) 3.1.6") == "openmpi-4.0"
    assert openmpi_rules("mpirun (Open MPI) 4.1.4") == "openmpi"
    assert openmpi_rules("mpirun (Open MPI) 5.0.8") == "openmpi"
    assert openmpi_rules(None) == openmpi_rules("unknown") == "openmpi"


def test_scale_fit_recovers_planted_terms_from_small_runs() -> None:
    # "measurements" made by the model itself with grid values (1 us noise, 0.1 us NIC gap) on
    # 4 and 8 nodes x 8 ranks are fitted back exactly from a fabric without them
    truth = _fabric(nic_gap=0.1, noise=1.0)
    obs = []
    for nodes in (4, 8):
        cl = _cluster(nodes, 8)
        for m in (8.0, 4096.0, 65536.0):
            obs.append(Observation(lambda f, cl=cl, m=m: allreduce_recursive_doubling(
                Model(f, cl), m), allreduce_recursive_doubling(Model(truth, cl), m)))
            obs[-1].nodes = nodes
    fit = fit_scale(_fabric(), obs)
    assert fit.noise_us == pytest.approx(1.0)
    assert fit.nic_gap_us == pytest.approx(0.1)
    assert fit.noise_exponent == 0.0
    assert fit.rms_log_error == pytest.approx(0.0, abs=1e-9)
    # a heavy tail (exponent 0.5) planted the same way is found when two counts are given,
    # and not looked for with one
    heavy = _fabric(nic_gap=0.1, noise=1.0)
    heavy.noise_exponent = 0.5
    for o in obs:
        cl = _cluster(o.nodes, 8)
        o.measured_us = o.predict(heavy) if cl else 0.0
    fit = fit_scale(_fabric(), obs)
    assert (fit.noise_us, fit.nic_gap_us, fit.noise_exponent) == pytest.approx((1.0, 0.1, 0.5))
    one = fit_scale(_fabric(), [o for o in obs if o.nodes == 4])
    assert one.noise_exponent == 0.0 and one.rms_log_error > 0


def test_conformal_quantile_and_leave_one_group_out_bands() -> None:
    # (n + 1) * 0.9 = 9.9 -> the 10th smallest of 10; with 5 residuals the 6th does not exist
    assert conformal_quantile([0.1 * k for k in range(1, 11)], 0.9) == pytest.approx(1.0)
    assert math.isinf(conformal_quantile([0.1] * 5, 0.9))

    def row(group: str, pred: float, pub: float) -> Row:
        return Row(group, "S", "test", "c", pred, None, None, pub, None, pred / pub - 1, "us",
                   group=group)
    # group b's band comes from a's 9 residuals only (b's own, log 4 = 1.386, stays out):
    # k = ceil(10 * 0.5) = 5 -> the 5th of log(1.1) .. log(1.9) = log(1.5)
    a = [row("a", 1.0 + 0.1 * k, 1.0) for k in range(1, 10)]
    b = [row("b", 4.0, 1.0)]
    cov = conformal_bands(a + b, 0.5, signed=False)
    assert b[0].low == pytest.approx(4.0 / 1.5) and b[0].high == pytest.approx(4.0 * 1.5)
    assert not (b[0].low <= b[0].published <= b[0].high)
    # a's pool is b's single residual: too small for a finite band at 50 % (k = 1 of 1 is
    # finite: ceil(2 * 0.5) = 1), so a's rows get log 4 either side, and all 9 cover
    assert all(r.low == pytest.approx(r.predicted / 4) for r in a)
    assert cov.rows == 10 and cov.inside == 9


def test_signed_conformal_bands_lean_the_way_the_model_errs() -> None:
    def row(group: str, pred: float, pub: float, collective: str = "allreduce") -> Row:
        return Row(group, "S", "test", "c", pred, None, None, pub, None, pred / pub - 1, "us",
                   group=group, collective=collective)
    # a: 19 signed log residuals log(predicted / published), -1.5 .. -0.1 and 0.1 .. 0.4
    a = [row("a", math.exp(-0.1 * k), 1.0) for k in range(1, 16)] + \
        [row("a", math.exp(0.1 * k), 1.0) for k in range(1, 5)]
    b = row("b", 1.0, math.exp(1.0), "alltoall")  # the model 2.7x too fast
    cov = conformal_bands([*a, b], 0.9)
    # each tail at 95 %: ceil(20 x 0.95) = 19th of 19, the largest: 0.4 below, 1.5 above
    assert b.low == pytest.approx(math.exp(-0.4)) and b.high == pytest.approx(math.exp(1.5))
    assert b.low <= b.published <= b.high and "signed" in cov.method
    # the symmetric band over the same pool: |x|'s 18th smallest, 1.4 either side (wider)
    sym = row("b", 1.0, math.exp(1.0), "alltoall")
    conformal_bands([*a, sym], 0.9, signed=False)
    assert sym.high / sym.low == pytest.approx(math.exp(2.8))
    assert sym.high / sym.low > b.high / b.low
    # Mondrian: b's class (alltoall, small) has no rows elsewhere: the whole pool serves
    mb = row("b", 1.0, math.exp(1.0), "alltoall")
    conformal_bands([*a, mb], 0.9, mondrian=True)
    assert (mb.low, mb.high) == (pytest.approx(b.low), pytest.approx(b.high))


def test_normalised_conformal_scales_by_how_well_the_fit_rows_fit() -> None:
    def row(group: str, split: str, pred: float, pub: float) -> Row:
        return Row(group, "S", split, "c", pred, None, None, pub, None, pred / pub - 1, "us",
                   group=group)
    a_fit = row("a", "fit", 1.0, 1.0)  # a's small runs reproduced exactly: sigma_a = 0.1
    a = [row("a", "test", 1.0 + 0.1 * k, 1.0) for k in range(1, 10)]
    b_fit = row("b", "fit", 2.0, 1.0)  # b's own small runs: off by x2, sigma_b = ln 2
    b = row("b", "test", 4.0, 1.0)
    c = row("c", "test", 3.0, 1.0)  # no fit rows: the plain pool of everyone else
    cov = conformal_bands([a_fit, *a, b_fit, b, c], 0.5, signed=False)
    # b: the 5th of a's 9 scores log(1 + 0.1 k) / 0.1 is log(1.5) / 0.1, times sigma_b
    q_b = math.log(1.5) / 0.1 * math.log(2)
    assert b.high == pytest.approx(4.0 * math.exp(q_b))
    # a: b's one calibrated score ln 4 / ln 2 = 2 (c has no sigma), times sigma_a = 0.1:
    # exp(+-0.2) covers 1 for predictions 1.1 and 1.2 only
    assert all(r.high == pytest.approx(r.predicted * math.exp(0.2)) for r in a)
    # c: plain residuals of a and b (10), k = ceil(11 * 0.5) = 6: log(1.6)
    assert c.high == pytest.approx(3.0 * 1.6)
    assert cov.rows == 11 and cov.inside == 2 + 1 + 0


def test_node_memory_bandwidth_is_shared_by_the_nodes_copying_ranks() -> None:
    f = _fabric()
    f.node_memory_MBps = 1000.0
    md = Model(f, _cluster(2, 4))
    m = 1000.0
    # 4 ranks of a node copy at once: 1000 / 4 = 250 MB/s each (4e-3 us/B) > one rank's 1e-4
    assert md.step_parts(m, 1, "xor")[1] == pytest.approx(4e-3 * m)
    # a binomial step with 2 of 8 ranks active: one per node, the node's whole 1000 MB/s
    assert md.step_parts(m, 1, "xor", active=2)[1] == pytest.approx(1e-3 * m)
    # reductions: every rank of the node reduces, max(gamma 2e-4, 4 / 1000) per byte
    assert md.reduce_cost(m) == pytest.approx(4e-3 * m)


def test_hpl_adds_a_fabric_and_memory_dependent_drop_beyond_one_node_efficiency() -> None:
    """What the HPL model predicts beyond "efficiency at N = efficiency at 1 node": a drop set
    by the fabric's speed against the node's and by memory per node (the problem size); both
    directions checked, so a model that returned the 1-node efficiency fails."""
    from fabench.model.hpl import HplParams, hpl_point
    from fabench.model.presets import PRESETS

    def eff(fabric: str, mem_gb: float, nodes: int) -> float:
        prm = HplParams(5324.8, 0.7727, mem_gb, sources={"node_cv": "assumed 0"})
        return hpl_point(PRESETS[fabric](), nodes, prm).efficiency
    one = eff("roce-100g", 256, 1)  # the anchor itself (the old check restated it)
    fast, slow = eff("roce-100g", 256, 240), eff("tcp-40g", 256, 240)
    assert slow < fast < one
    assert one - slow > 5 * (one - fast)  # 40G TCP costs several times 100G RoCE's drop
    assert eff("roce-100g", 64, 240) < fast  # less memory: smaller n, more communication
