"""The lossless-RoCE audit (`tune check --profile lossless-roce`).

No RDMA NIC exists here, so the reading and verdict code is tested on real outputs of the
commands from real ConnectX NICs (and one Spectrum switch port), as published: each fixture
below names its source (tests/fixtures/roce/README.md has the full list). The path from a
live host goes through the same parsers; it is run end to end here on veth, inside network
namespaces this module makes, where `ethtool -S` and `dcb` answer as they do for a NIC
without DCB: the test stops where an RDMA device would be needed, and says so.
"""

import json
import os
import random
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from fabench.host.target import Target
from fabench.tune import lossless as ll
from fabench.tune import roce_parse as rp
from fabench.tune import roce_read
from fabench.tune.audit import check
from fabench.tune.lossless import Evidence, Window, judge
from fabench.tune.profiles import LosslessSetting, load_profile

FIX = Path(__file__).parent / "fixtures" / "roce"
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make namespaces")

# Where each fixture comes from (the README has the details).
SOURCES = {
    "mlnx_qos-netarbiter-eth4.txt": "https://github.com/att/netarbiter/blob/2c2682e6298ccab5a0a8e7314778c8148061e3bd/nvmf/OUTPUTSAMPLE.setup-nic-lossless-layer3.sh.md",
    "cma_roce_tos-netarbiter-mlx5_2.txt": "https://github.com/att/netarbiter/blob/2c2682e6298ccab5a0a8e7314778c8148061e3bd/nvmf/OUTPUTSAMPLE.setup-nic-lossless-layer3.sh.md",
    "mlnx_qos-mellanox-doc2792-eth2.txt": "https://community.mellanox.com/docs/DOC-2792",
    "dcb_pfc-iproute2-man-eth0.txt": "https://man7.org/linux/man-pages/man8/dcb-pfc.8.html",
    "dcb_app-iproute2-man-eth0.txt": "https://man7.org/linux/man-pages/man8/dcb-app.8.html",
    "dcb_app-iproute2-man-eth0-names.txt": "https://man7.org/linux/man-pages/man8/dcb-app.8.html",
    "dcb_pfc-netdev-eni1np1.txt": "https://mail-archive.com/netdev@vger.kernel.org/msg377425.html",
    "dcb_app_json-netdev-swp1.json": "https://lore.kernel.org/netdev/Zvqrb3HYM3XogzOn@shredder.mtl.com/",
    "ethtool_S-byteps-before.txt": "https://github.com/bytedance/byteps/issues/179",
    "ethtool_S-byteps-after.txt": "https://github.com/bytedance/byteps/issues/179",
    "mlxconfig-dpservice-cx5.txt": "https://github.com/ironcore-dev/dpservice/issues/26",
    "mlxconfig-sriov-operator-cx6lx.txt": "https://github.com/k8snetworkplumbingwg/sriov-network-operator/pull/358",
    "ibv_devinfo-deepep38-cx7.txt": "https://github.com/deepseek-ai/DeepEP/issues/38",
    "ibv_devinfo-deepep60-cx6dx.txt": "https://github.com/deepseek-ai/DeepEP/issues/60",
}
WANT = LosslessSetting(kind="lossless", why="w", source="s", risk="r", priority=3,
                       trust="dscp", dscp=26)


def fixture(name: str) -> str:
    assert name in SOURCES, f"cite {name}'s source in SOURCES and the README"
    return (FIX / name).read_text()


def verdicts(findings: list) -> list[str]:  # type: ignore[type-arg]
    return [f.verdict for f in findings if f.verdict]


def by_item(findings: list, suffix: str):  # type: ignore[no-untyped-def,type-arg]
    (f,) = [f for f in findings if f.item.endswith(suffix)]
    return f


def qos_evidence(name: str, tos: int | None = None, **kw: object) -> Evidence:
    q = rp.parse_mlnx_qos(fixture(name))
    assert not q.problems
    return Evidence("host", "eth", pfc=q.pfc, pfc_source="mlnx_qos", trust=q.trust,
                    dscp2prio=q.dscp2prio, roce_tos=tos, tos_source="cma_roce_tos",
                    **kw)  # type: ignore[arg-type]


def test_every_fixture_is_cited_in_the_readme() -> None:
    readme = (FIX / "README.md").read_text()
    files = {p.name for p in FIX.iterdir() if p.name != "README.md"}
    assert files == set(SOURCES)
    for name, url in SOURCES.items():
        assert name in readme and url.split("/blob/")[0].split("#")[0] in readme, name


# -- what the audit finds in each real output ------------------------------------------------

def test_healthy_configuration_gets_no_verdict() -> None:
    """AT&T netarbiter's ConnectX after its lossless layer-3 script: trust dscp, PFC on
    priority 3 only, RoCE ToS 106 (DSCP 26 + ECT) -> priority 3; with the congestion-control
    firmware rows of dpservice's ConnectX-5 (ROCE_CC_PRIO_MASK_P1 255: DCQCN on every
    priority). Everything the profile asks holds: no verdict, nothing DIFFERS."""
    tos = rp.parse_tos(fixture("cma_roce_tos-netarbiter-mlx5_2.txt"))
    assert tos == 106
    ev = qos_evidence("mlnx_qos-netarbiter-eth4.txt", tos,
                      mlxconfig=rp.parse_mlxconfig(fixture("mlxconfig-dpservice-cx5.txt")))
    found = judge(ev, WANT)
    assert verdicts(found) == []
    assert [f.item for f in found if f.status == "differs"] == []
    assert by_item(found, "RoCE priority").current.startswith("3: ToS 106")
    assert by_item(found, "PFC on priority 3").current == "on (PFC on 3)"
    assert "255" in by_item(found, "ECN/DCQCN on priority 3").current
    # DCQCN's reaction-point parameters as the firmware holds them.
    params = by_item(found, "DCQCN parameters").current
    assert "rpg_ai_rate 5" in params and "rpg_hai_rate 50" in params and "cnp_dscp 48" in params


def test_pfc_off_where_the_mapping_puts_roce() -> None:
    """Mellanox's mlnx_qos page (MLNX_OFED 4.2): trust dscp, PFC on 0, 2, 6, 7. RoCE marked
    DSCP 26 (ToS 106, the value NVIDIA's lossless guide uses) lands on priority 3, which has
    no PFC: the verdict. Left at ToS 0 (DSCP 0), RoCE would land on priority 0, where PFC is
    on: no PFC verdict, but the RoCE priority differs from the profile's 3."""
    found = judge(qos_evidence("mlnx_qos-mellanox-doc2792-eth2.txt", 106), WANT)
    assert verdicts(found) == [ll.PFC_OFF]
    assert by_item(found, "PFC on priority 3").current == "off (PFC on 0,2,6,7)"
    found = judge(qos_evidence("mlnx_qos-mellanox-doc2792-eth2.txt", 0), WANT)
    assert verdicts(found) == []
    assert by_item(found, "RoCE priority").status == "differs"
    assert by_item(found, "PFC on priority 0").status == "ok"
    assert by_item(found, "RoCE DSCP").current == "0 (ToS 0)"


def test_dcb_pfc_outputs() -> None:
    """iproute2's dcb-pfc(8) example: PFC on 6 and 7 only, so priority 3 is lossy. The
    netdev posting (a Spectrum switch port): PFC on 1 and 7, with 217 PFC frames sent and
    179 received on priority 1: for a RoCE priority 3 that is the PFC verdict; for a RoCE
    priority 1 PFC holds, and the pauses cannot be judged without ECN counters."""
    man = rp.parse_dcb_pfc(fixture("dcb_pfc-iproute2-man-eth0.txt"))
    assert (man.pfc_cap, man.problems) == (8, [])
    found = judge(Evidence("h", "eth0", pfc=man, pfc_source="dcb"), WANT)
    assert verdicts(found) == [ll.PFC_OFF]
    assert by_item(found, "PFC on priority 3").current == "off (PFC on 6,7)"

    net = rp.parse_dcb_pfc(fixture("dcb_pfc-netdev-eni1np1.txt"))
    assert net.requests[1] == 217 and net.indications[1] == 179 and not net.problems
    assert verdicts(judge(Evidence("sw", "eni1np1", pfc=net, pfc_source="dcb"), WANT)) == \
        [ll.PFC_OFF]
    prio1 = WANT.model_copy(update={"priority": 1})
    found = judge(Evidence("sw", "eni1np1", pfc=net, pfc_source="dcb"), prio1)
    assert verdicts(found) == []
    pauses = by_item(found, "pauses on priority 1")
    assert pauses.status == "unknown" and pauses.current.startswith("396 ")


def test_dscp_map_from_dcb_app() -> None:
    """iproute2's dcb-app(8) example, numeric (`dcb -N`) and named: DSCP 0 -> 0, 48 -> 6,
    and DSCP 24 given two priorities (2 and 3), so it maps to neither. RoCE at ToS 192
    (DSCP 48) lands on 6; at DSCP 24 the priority cannot be derived and the profile's is
    used, said as such."""
    num = rp.parse_dcb_app(fixture("dcb_app-iproute2-man-eth0.txt"))
    names = rp.parse_dcb_app(fixture("dcb_app-iproute2-man-eth0-names.txt"))
    for m in (num, names):
        assert (m.dscp2prio, m.ambiguous, m.problems) == ({0: 0, 48: 6}, {24}, [])
    man = rp.parse_dcb_pfc(fixture("dcb_pfc-iproute2-man-eth0.txt"))
    ev = Evidence("h", "eth0", pfc=man, pfc_source="dcb", dscp2prio=num.dscp2prio,
                  dscp_source="dcb app", roce_tos=192, tos_source="default_roce_tos")
    found = judge(ev, WANT)
    assert by_item(found, "RoCE priority").current.startswith("6: ToS 192")
    assert by_item(found, "PFC on priority 6").status == "ok"  # PFC on 6 and 7 in that example
    ev.roce_tos = 24 << 2
    assert "the profile's priority 3" in by_item(judge(ev, WANT), "RoCE priority").current


def test_dscp_map_from_dcb_json() -> None:
    """`dcb -j app show` as posted to netdev (Spectrum port swp1, CS1 -> 0, CS2 -> 1): JSON is
    what the reader asks dcb for first. The text parsers stay for output that is not JSON:
    the JSON parsers answer None for every recorded text output, which sends the reader to
    the text form."""
    m = rp.parse_dcb_app_json(fixture("dcb_app_json-netdev-swp1.json"))
    assert m is not None and (m.dscp2prio, m.ambiguous, m.problems) == ({8: 0, 16: 1}, set(), [])
    for name in ("dcb_app-iproute2-man-eth0.txt", "dcb_pfc-iproute2-man-eth0.txt",
                 "dcb_pfc-netdev-eni1np1.txt"):
        assert rp.parse_dcb_app_json(fixture(name)) is None
        assert rp.parse_dcb_pfc_json(fixture(name)) is None
    # the text reader cannot read JSON: the two are not interchangeable
    assert rp.parse_dcb_app(fixture("dcb_app_json-netdev-swp1.json")).dscp2prio == {}
    two = rp.parse_dcb_app_json('{"dscp_prio": [[24, 2], [24, 3], [48, 6], [64, 1], [1]]}')
    assert two is not None and two.dscp2prio == {48: 6} and two.ambiguous == {24}
    assert len(two.problems) == 2  # DSCP 64 and the one-element pair


def test_dcb_pfc_json_reads_as_the_text_does() -> None:
    """No public recorded output of `dcb -j pfc show` exists, and no DCB-capable device is
    here to make one (veth and lo answer "Operation not supported", the end-to-end test
    below): so the test stops at the layout iproute2's dcb/dcb_pfc.c prints, written here
    for the two recorded text states (the dcb-pfc(8) example, the netdev Spectrum port),
    and holds that both parsers read the same state from them."""
    man_json = json.dumps({"pfc_cap": 8, "macsec_bypass": False, "delay": 4096,
                           "prio_pfc": [False] * 6 + [True, True]})
    net_json = json.dumps({"pfc_cap": 8, "macsec_bypass": True, "delay": 0,
                           "prio_pfc": [False, True, False, False, False, False, False, True],
                           "requests": [0, 217, 0, 0, 0, 0, 0, 28],
                           "indications": [0, 179, 0, 0, 0, 0, 0, 18]})
    for text_name, js in (("dcb_pfc-iproute2-man-eth0.txt", man_json),
                          ("dcb_pfc-netdev-eni1np1.txt", net_json)):
        text, from_json = rp.parse_dcb_pfc(fixture(text_name)), rp.parse_dcb_pfc_json(js)
        assert from_json is not None and from_json == text, text_name
    assert verdicts(judge(Evidence("h", "eth0", pfc=rp.parse_dcb_pfc_json(man_json),
                                   pfc_source="dcb"), WANT)) == [ll.PFC_OFF]
    # what a hostile JSON gets: refused fields, reported, never a guess
    bad = rp.parse_dcb_pfc_json('{"prio_pfc": [1, 0], "requests": [-1], "pfc_cap": 99, '
                                '"x": 1}')
    assert bad is not None and (bad.enabled, bad.requests, bad.pfc_cap) == ({}, {}, None)
    assert len(bad.problems) == 3


def test_pauses_without_ecn_marks() -> None:
    """The netdev posting's pause counts on priority 1, judged with ECN/CNP counters. No
    public output shows both side by side, so the hw_counters here are built in the test:
    all zero gives the verdict, any ECN mark or CNP clears it."""
    net = rp.parse_dcb_pfc(fixture("dcb_pfc-netdev-eni1np1.txt"))
    prio1 = WANT.model_copy(update={"priority": 1})
    zero = rp.Counters({"np_ecn_marked_roce_packets": 0, "np_cnp_sent": 0, "rp_cnp_handled": 0})
    found = judge(Evidence("sw", "eni1np1", pfc=net, pfc_source="dcb", hw=zero), prio1)
    assert verdicts(found) == [ll.PAUSE_NO_ECN]
    marked = rp.Counters({**zero.values, "np_ecn_marked_roce_packets": 12})
    assert verdicts(judge(Evidence("sw", "eni1np1", pfc=net, pfc_source="dcb", hw=marked),
                          prio1)) == []


def test_ethtool_counters_before_and_after_a_run() -> None:
    """byteps issue 179, `ethtool -S | grep prio` on an mlx5 NIC around an RDMA benchmark.
    mlx5 lists rx_prioN_pause only for priorities with PFC on; there is none, so PFC is off
    everywhere (verdict for priority 3), and the run's 273 GB all moved on priority 0."""
    before = rp.parse_ethtool_stats(fixture("ethtool_S-byteps-before.txt"))
    after = rp.parse_ethtool_stats(fixture("ethtool_S-byteps-after.txt"))
    assert len(before.values) == 32 and len(after.values) == 19  # the copy of "after" is cut
    found = judge(Evidence("h", "enp178s0f0", stats=after), WANT, Window(before.values, 60.0))
    assert verdicts(found) == [ll.PFC_OFF]
    pfc = by_item(found, "PFC on priority 3")
    assert pfc.current == "off (PFC on none)" and "inferred from ethtool -S" in pfc.why
    traffic = by_item(found, "traffic per priority")
    rx = 88171136852706 - 88034564921216
    tx = 14043243801718 - 13906677385186
    assert traffic.current.startswith(f"priority 0: {rx + tx} B over 60 s")
    assert traffic.status == "differs" and "without PFC (0)" in traffic.why


def test_drops_on_a_lossless_priority() -> None:
    """netarbiter's configuration (PFC on 3) with discard counters built in the test (mlx5's
    names): a drop on priority 3 is the verdict; one on priority 0, which is lossy, is not."""
    ev = qos_evidence("mlnx_qos-netarbiter-eth4.txt", 106,
                      stats=rp.Counters({"rx_prio3_discards": 7, "rx_prio0_discards": 9}))
    found = judge(ev, WANT)
    assert verdicts(found) == [ll.LOSSY_DROPS]
    assert by_item(found, "drops on lossless priorities").current.startswith("priority 3: 7")
    ev.stats = rp.Counters({"rx_prio3_discards": 0, "rx_prio0_discards": 9})
    assert verdicts(judge(ev, WANT)) == []


def test_pause_storm() -> None:
    """A storm is pause counters growing while the priority carries nothing, over a window;
    no public source shows two such snapshots, so the counters are built in the test on
    netarbiter's configuration. The NIC's own storm detector counts as well."""
    ev = qos_evidence("mlnx_qos-netarbiter-eth4.txt", 106)
    before = {"rx_prio3_pause": 100, "rx_prio3_packets": 5, "tx_prio3_packets": 5}
    ev.stats = rp.Counters({**before, "rx_prio3_pause": 9100})
    found = judge(ev, WANT, Window(before, 10.0))
    assert ll.STORM in verdicts(found)
    assert "9000" in by_item(found, "pause storm").current
    ev.stats = rp.Counters({**before, "rx_prio3_pause": 9100, "rx_prio3_packets": 80000})
    assert ll.STORM not in verdicts(judge(ev, WANT, Window(before, 10.0)))
    ev.stats = rp.Counters({"tx_pause_storm_error_events": 1})
    assert verdicts(judge(ev, WANT)) == [ll.STORM]


def test_roce_mtu_follows_the_interface_mtu() -> None:
    """DeepEP 38's ConnectX-7: RoCE port active at 4096. That needs an interface MTU of at
    least 4192 (4096 + 96 B of RoCEv2 headers): 4200 and 9000 agree, 1500 (which gives 1024)
    does not. DeepEP 60's ConnectX-6 Dx port is down: its 1024 is not judged."""
    cx7 = rp.parse_ibv_devinfo(fixture("ibv_devinfo-deepep38-cx7.txt"))
    assert [(p.hca, p.state, p.max_mtu, p.active_mtu, p.link_layer) for p in cx7.ports] == \
        [("mlx5_2", "PORT_ACTIVE", 4096, 4096, "Ethernet")]
    for mtu, verdict in ((4200, []), (9000, []), (4191, [ll.MTU_MISMATCH]),
                         (1500, [ll.MTU_MISMATCH])):
        found = judge(Evidence("h", "eth", ib_ports=cx7.ports, netdev_mtu=mtu), WANT)
        assert verdicts(found) == verdict, mtu
    down = rp.parse_ibv_devinfo(fixture("ibv_devinfo-deepep60-cx6dx.txt"))
    found = judge(Evidence("h", "eth", ib_ports=down.ports, netdev_mtu=1500), WANT)
    assert verdicts(found) == [] and by_item(found, "RoCE MTU").status == "info"
    assert rp.iboe_mtu(4200) == 4096 and rp.iboe_mtu(1500) == 1024 and rp.iboe_mtu(300) == 0


def test_mlxconfig_with_three_columns_and_a_cut_row() -> None:
    """sriov-network-operator 358's ConnectX-6 Lx: `mlxconfig -e q` prints default, current
    and next-boot values; the retrieved copy ends inside a row, which is reported, not read."""
    c = rp.parse_mlxconfig(fixture("mlxconfig-sriov-operator-cx6lx.txt"))
    assert c.params["RPG_AI_RATE_P1"] == "5" and c.params["INITIAL_ALPHA_VALUE_P1"] == "1023"
    assert "MIN_TIME_BETWEEN_CNPS_P1" not in c.params and len(c.problems) == 1
    found = judge(Evidence("h", "eth", mlxconfig=c), WANT)
    assert by_item(found, "ECN/DCQCN on priority 3").status == "unknown"  # no mask row
    assert rp.mlx_int("True(1)") == 1 and rp.mlx_int("DEVICE_DEFAULT(0)") == 0


def test_sysfs_readers_on_the_documented_layout(tmp_path: Path) -> None:
    """The ECN, DCQCN and hw_counters readers, through the same shell snippets as on a host,
    over a directory laid out as NVIDIA documents MLNX_OFED's sysfs
    (/sys/class/net/IF/ecn/roce_np|roce_rp/enable/N, parameter files beside them) and as the
    RDMA core lays out hw_counters (one file per counter). This machine has neither, so the
    tree and its 0/1 values are made here; the reaction point is on for priority 3 only."""
    net = tmp_path / "net" / "ens1f0"
    for g in ("roce_np", "roce_rp"):
        (net / "ecn" / g / "enable").mkdir(parents=True)
        for p in range(8):
            (net / "ecn" / g / "enable" / str(p)).write_text(
                "1\n" if g == "roce_np" or p == 3 else "0\n")
    for k, v in (("rpg_ai_rate", "5"), ("rpg_hai_rate", "50"), ("rpg_gd", "11")):
        (net / "ecn" / "roce_rp" / k).write_text(v + "\n")
    (net / "ecn" / "roce_np" / "min_time_between_cnps").write_text("4\n")
    hw = tmp_path / "hw_counters"
    hw.mkdir()
    for k, v in (("np_ecn_marked_roce_packets", 0), ("np_cnp_sent", 0), ("rp_cnp_handled", 0),
                 ("out_of_buffer", 0)):
        (hw / k).write_text(f"{v}\n")
    host = Target.host()
    ecn = roce_read.read_ecn(host, str(net))
    assert ecn["roce_rp"] == {p: p == 3 for p in range(8)} and all(ecn["roce_np"].values())
    dcqcn = roce_read.read_dcqcn(host, str(net), str(tmp_path / "no-debugfs"))
    assert dcqcn == {"rpg_ai_rate": "5", "rpg_hai_rate": "50", "rpg_gd": "11",
                     "min_time_between_cnps": "4"}
    counters = roce_read.read_hw_counters(host, str(hw))
    assert counters.values["np_cnp_sent"] == 0 and not counters.problems
    ev = qos_evidence("mlnx_qos-netarbiter-eth4.txt", 106, ecn=ecn, dcqcn=dcqcn, hw=counters)
    found = judge(ev, WANT)
    assert by_item(found, "ECN/DCQCN on priority 3").status == "ok"
    assert "rpg_ai_rate 5" in by_item(found, "DCQCN parameters").current
    assert verdicts(found) == []
    ev.ecn = {"roce_np": ecn["roce_np"], "roce_rp": {p: False for p in range(8)}}
    assert by_item(judge(ev, WANT), "ECN/DCQCN on priority 3").status == "differs"


# -- hostile input -------------------------------------------------------------------------------

PARSERS = (rp.parse_dcb_pfc, rp.parse_mlnx_qos, rp.parse_ethtool_stats, rp.parse_hw_counters,
           rp.parse_rdma_statistic, rp.parse_mlxconfig, rp.parse_ibv_devinfo, rp.parse_tos,
           rp.parse_flags, rp.parse_dcb_pfc_json, rp.parse_dcb_app_json)


def test_parsers_take_hostile_input_without_failing() -> None:
    rng = random.Random(17)
    inputs: list[str | bytes | None] = [
        None, "", "\x00" * 100, "NIC statistics:\n rx: 99999999999999999999999\n",
        "prio-pfc 9:on 3:maybe\nrequests 1:-5\n", "enabled 1 1 1\npriority: 9 x\n",
        "hca_id: ../../etc\n port: 99999\n active_mtu: 9000 (9)\n",
        "x" * 200_000, "a: " + "9" * 5000, bytes(rng.randrange(256) for _ in range(5000)),
        "[" * 100_000, '{"prio_pfc": {"a": 1}, "dscp_prio": [[1e400, "x"]]}', "[1, 2]",
        "\n".join(f"c{i}: {i}" for i in range(50_000)),
    ]
    # Each real output given to every other parser.
    inputs += [fixture(n) for n in SOURCES]
    for _ in range(200):
        inputs.append("".join(rng.choice(" :\n\t0123456789abcdefprio-pfconffx,()*") for _ in
                              range(rng.randrange(1, 400))))
    for parse in PARSERS:
        for text in inputs:
            parse(text)  # type: ignore[operator]
    # Numbers beyond 64 bits and negative ones are refused, and reported.
    c = rp.parse_ethtool_stats("NIC statistics:\n     big: 18446744073709551616\n"
                               "     neg: -1\n     ok: 18446744073709551615\n")
    assert c.values == {"ok": 18446744073709551615} and len(c.problems) == 2
    huge = rp.parse_ethtool_stats("NIC statistics:\n" + ("c: 1\n" + "x" * 4000 + "\n") * 1100)
    assert huge.values == {"c": 1} and huge.problems[0].startswith("output cut at")
    assert rp.parse_tos("256") is None and rp.parse_tos("Global tclass=106") == 106
    bad = rp.parse_dcb_pfc("prio-pfc 0:on 0:off\n")
    assert bad.enabled == {} and bad.problems
    # Counters that went down (a reset between snapshots) are not negative traffic.
    ev = Evidence("h", "eth", stats=rp.Counters({"rx_prio0_bytes": 5}))
    assert judge(ev, WANT, Window({"rx_prio0_bytes": 10}, 1.0)) is not None


# -- end to end on veth ------------------------------------------------------------------------

def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@pytest.fixture
def veth_pair() -> Iterator[tuple[str, str]]:
    """Two namespaces of this test's own joined by a veth pair, addresses assigned here."""
    tag = uuid.uuid4().hex[:6]
    names = (f"fbll{tag}a", f"fbll{tag}b")
    try:
        for n in names:
            _ip("netns", "add", n)
        _ip("link", "add", "lla", "netns", names[0], "type", "veth", "peer", "name", "llb",
            "netns", names[1])
        for n, dev, addr in ((names[0], "lla", "10.217.3.1/24"),
                             (names[1], "llb", "10.217.3.2/24")):
            _ip("-n", n, "addr", "add", addr, "dev", dev)
            _ip("-n", n, "link", "set", dev, "up")
        yield names
    finally:
        for n in names:
            subprocess.run(["ip", "netns", "del", n], capture_output=True, check=False)


@pytest.mark.netns
@ROOT_ONLY
def test_counters_end_to_end_on_veth(veth_pair: tuple[str, str]) -> None:
    """The live path on a NIC-less link: interfaces found inside the namespace, `ethtool -S`
    read there (veth's own counters: its peer's ifindex proves which device was read),
    snapshots around traffic, and the audit's answer for a link without PFC or ECN: nothing
    read, nothing judged, no verdict. An RDMA device would be needed beyond this point."""
    a, b = veth_pair
    ta = Target.namespace(a)
    ifaces, ports, why = roce_read.audited_interfaces(ta, WANT)
    assert ifaces == ["lla"] and ports == [] and "no RDMA device" in why
    snap1 = roce_read.snapshot([ta], WANT)
    stats = snap1.counters[(a, "lla")]
    peer = json.loads(subprocess.run(["ip", "-n", b, "-j", "link", "show", "dev", "llb"],
                                     capture_output=True, text=True, check=True).stdout)
    assert stats["peer_ifindex"] == peer[0]["ifindex"]
    assert "rx_queue_0_xdp_packets" in stats and "rx_queue_0_drops" in stats
    # Traffic between the two snapshots: UDP datagrams from a to b.
    code = ("import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            "for _ in range(200): s.sendto(b'x' * 100, ('10.217.3.2', 9))")
    subprocess.run(["ip", "netns", "exec", a, sys.executable, "-c", code], check=True)
    snap2 = roce_read.snapshot([ta], WANT)
    win = snap1.window(a, "lla", snap2)
    assert win is not None and win.seconds > 0
    ev = roce_read.read_evidence(ta, "lla", [])
    assert ev.netdev_mtu == 1500 and ev.pfc is None
    assert any("PFC (dcb pfc show)" in n for n in ev.notes)  # veth has no DCB
    found = judge(ev, WANT, win)
    assert verdicts(found) == []
    counters = by_item(found, "counters")
    assert "no pause, ECN or drop counters" in counters.current and "over" in counters.current


@pytest.mark.netns
@ROOT_ONLY
def test_tune_check_lossless_roce_on_namespaces(veth_pair: tuple[str, str]) -> None:
    """The command as a user runs it: no verdict on two matching veth ends (exit 0); after
    one end goes to MTU 9000, "mismatched MTU" across the two (exit 3, a diagnosis)."""
    a, b = veth_pair
    cmd = [sys.executable, "-m", "fabench", "tune", "check", "--profile", "lossless-roce",
           "--netns", a, b, "--window", "0.2", "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    assert {(x["target"], x["current"]) for x in rows if x["item"] == "interfaces audited"} \
        == {(a, "lla"), (b, "llb")}
    assert not [x for x in rows if x["verdict"]]
    _ip("-n", b, "link", "set", "llb", "mtu", "9000")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 3, r.stderr
    (mtu,) = [json.loads(x) for x in r.stdout.splitlines() if '"mismatched MTU"' in x]
    assert mtu["current"] == f"{a}/lla 1500, {b}/llb 9000"


@pytest.mark.netns
@ROOT_ONLY
def test_mtu_across_a_testbed_and_its_switch(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """On a testbed the switch's ports join the comparison: one host raised to MTU 9000
    while its peer and the switch stay at 1500 is "mismatched MTU", naming every port."""
    from conftest import own_testbeds
    from fabench.testbed import TestbedConfig, create
    from fabench.tune.targets import testbed_targets

    monkeypatch.setenv("FABENCH_RUN_DIR", str(tmp_path))
    with own_testbeds("fbll" + uuid.uuid4().hex[:5]):
        st = create("mtu", TestbedConfig(hosts=2))
        targets = testbed_targets(st.name)
        prof = load_profile("lossless-roce")
        assert verdicts(check(prof, targets)) == []
        (h1,) = [t for t in targets if t.name == "h1"]
        h1.run(["ip", "link", "set", "dev", "eth0", "mtu", "9000"])
        (fabric,) = [f for f in check(prof, targets) if f.verdict]
        assert fabric.verdict == ll.MTU_MISMATCH and fabric.recommended == "1500"
        assert "h1/eth0 9000" in fabric.current and "h2/eth0 1500" in fabric.current
        assert f"{st.name}-switch/" in fabric.current


@pytest.mark.netns
@ROOT_ONLY
def test_counters_end_to_end_inside_a_testbed(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The counter collection on a testbed as `tune check --on testbed` runs it: `ethtool -S`
    read inside each host (its own mount namespace shows its own /sys), so each host's eth0
    is its own veth: the peer ifindex it reports is that host's switch port. Snapshots around
    traffic from h1 to h2 give a window per host; the switch is not snapshotted (its ports
    carry no RoCE); veth has no pause, ECN or drop counters to judge: no verdict."""
    from conftest import own_testbeds
    from fabench.testbed import TestbedConfig, create
    from fabench.tune.targets import testbed_targets

    monkeypatch.setenv("FABENCH_RUN_DIR", str(tmp_path))
    with own_testbeds("fbll" + uuid.uuid4().hex[:5]):
        st = create("ctr", TestbedConfig(hosts=2))
        targets = testbed_targets(st.name)
        snap1 = roce_read.snapshot(targets, WANT)
        assert set(snap1.counters) == {("h1", "eth0"), ("h2", "eth0")}
        sw = st.switches[0].netns
        for h in st.hosts:
            port = json.loads(subprocess.run(["ip", "-n", sw, "-j", "link", "show", "dev",
                                              h.port], capture_output=True, text=True,
                                             check=True).stdout)[0]
            assert snap1.counters[(h.name, "eth0")]["peer_ifindex"] == port["ifindex"]
        (h1,) = [t for t in targets if t.name == "h1"]
        code = ("import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                f"for _ in range(200): s.sendto(b'x' * 100, ({st.hosts[1].address!r}, 9))")
        h1.run([sys.executable, "-c", code])
        snap2 = roce_read.snapshot(targets, WANT)
        for h in ("h1", "h2"):
            win = snap1.window(h, "eth0", snap2)
            assert win is not None and win.seconds > 0
            (t,) = [x for x in targets if x.name == h]
            found = judge(roce_read.read_evidence(t, "eth0", []), WANT, win)
            assert verdicts(found) == []
            assert "no pause, ECN or drop counters" in by_item(found, "counters").current


def test_window_is_validated() -> None:
    for bad in ("nan", "inf", "-1", "4000"):
        r = subprocess.run([sys.executable, "-m", "fabench", "tune", "check", "--profile",
                            "lossless-roce", "--window", bad], capture_output=True, text=True,
                           timeout=120, check=False)
        assert r.returncode == 2 and "--window" in r.stderr and "Traceback" not in r.stderr


def test_lossless_profile_is_audit_only() -> None:
    prof = load_profile("lossless-roce")
    (s,) = prof.settings
    assert isinstance(s, LosslessSetting) and (s.priority, s.trust, s.dscp) == (3, "dscp", 26)
    from fabench.tune.apply import make_plan

    plan = make_plan(prof, [Target.host()])
    assert plan.changes == [] and [x.label for x in plan.skipped] == ["lossless RoCE"]
    assert check is not None
