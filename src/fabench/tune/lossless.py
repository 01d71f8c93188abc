"""The lossless-RoCE audit: from what was read about a RoCE interface to findings and verdicts.

Pure functions over parsed evidence (roce_parse); reading it from a host is roce_read's job,
so the same judgement runs on a live NIC and on real outputs kept as test fixtures.

Verdicts (the names `tune check` prints, from issue 17):
- "PFC off on the RoCE priority": the priority RoCE traffic lands on has no PFC, so it is
  not lossless.
- "pauses without ECN marks": pause frames on the RoCE priority and no ECN mark or CNP:
  congestion is handled by pause alone (head-of-line blocking, congestion spreading).
- "drops on a lossless priority": a PFC priority lost packets (buffer or congestion
  discards, or RoCE receive-buffer drops).
- "PFC pause storm": the NIC's own storm detector fired, or pause counters grew over an
  observation window in which the priority carried no data.
- "mismatched MTU": the RoCE MTU does not follow the interface MTU, or interfaces that must
  carry the same frames (hosts, switch ports) differ, or differ from the profile's MTU.
"""

from dataclasses import dataclass, field

from .findings import Finding
from .profiles import LosslessSetting
from .roce_parse import PRIOS, Counters, IbPort, MlxConfig, PfcState, iboe_mtu, mlx_int

PFC_OFF = "PFC off on the RoCE priority"
PAUSE_NO_ECN = "pauses without ECN marks"
LOSSY_DROPS = "drops on a lossless priority"
STORM = "PFC pause storm"
MTU_MISMATCH = "mismatched MTU"
VERDICTS = (PFC_OFF, PAUSE_NO_ECN, LOSSY_DROPS, STORM, MTU_MISMATCH)

SRC_QOS = "[005] (lossless RoCE: trust, PFC, ECN per priority)"
SRC_MLX5 = "[006] (mlx5 driver counters and RoCE MTU rules)"
SCOPE = "per-interface (NIC)"

# Counters that show ECN at work, wherever the driver puts them: hw_counters (notification
# point: marked packets seen, CNPs sent; reaction point: CNPs acted on), ethtool -S.
ECN_COUNTERS = ("np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled", "rx_ecn_mark",
                "rx_cnp_pkts", "tx_cnp_pkts")
STORM_COUNTERS = ("tx_pause_storm_warning_events", "tx_pause_storm_error_events")
PORT_DROPS = ("rx_discards_phy", "tx_discards_phy", "rx_out_of_buffer")


@dataclass
class Evidence:
    """Everything read about one RoCE-carrying interface of one target."""

    target: str
    iface: str
    pfc: PfcState | None = None
    pfc_source: str = ""
    trust: str | None = None
    dscp2prio: dict[int, int] = field(default_factory=dict)
    dscp_source: str = ""
    roce_tos: int | None = None
    tos_source: str = ""
    ecn: dict[str, dict[int, bool]] = field(default_factory=dict)  # roce_np|roce_rp -> prio
    mlxconfig: MlxConfig | None = None
    dcqcn: dict[str, str] = field(default_factory=dict)  # sysfs/debugfs parameters
    netdev_mtu: int | None = None
    ib_ports: list[IbPort] = field(default_factory=list)
    stats: Counters | None = None  # ethtool -S
    hw: Counters | None = None  # RDMA hw_counters of the port behind the interface
    notes: list[str] = field(default_factory=list)  # what could not be read, and why

    def counters(self) -> dict[str, int]:
        out = dict(self.stats.values) if self.stats else {}
        out.update(self.hw.values if self.hw else {})
        return out


@dataclass
class Window:
    """Counters over an interval: `before` taken `seconds` before the evidence's own."""

    before: dict[str, int]
    seconds: float


def _f(ev: Evidence, item: str, current: str, recommended: str, status: str, why: str = "",
       source: str = SRC_QOS, risk: str = "", verdict: str = "") -> Finding:
    return Finding(ev.target, "lossless", f"{ev.iface} {item}", current, recommended, status,
                   SCOPE, why, source, risk, verdict)


def _prios(ps: object) -> str:
    lst = sorted(ps)  # type: ignore[call-overload]
    return ",".join(str(p) for p in lst) if lst else "none"


def roce_priority(ev: Evidence, want: LosslessSetting) -> tuple[int, str, bool]:
    """(priority, how it was found, derived from the host's own mapping)."""
    if ev.trust == "pcp":
        return want.priority, ("trust pcp: the priority is the VLAN PCP of the sender's "
                               f"egress map (not read); the profile's {want.priority} "
                               "assumed"), False
    if ev.roce_tos is not None and ev.dscp2prio:
        dscp = ev.roce_tos >> 2
        if dscp in ev.dscp2prio:
            p = ev.dscp2prio[dscp]
            trust = "trust dscp" if ev.trust == "dscp" else \
                f"DSCP map from {ev.dscp_source or 'the NIC'}, trust not read"
            return p, (f"ToS {ev.roce_tos} ({ev.tos_source}) -> DSCP {dscp} -> priority {p} "
                       f"({trust})"), True
    return want.priority, f"the profile's priority {want.priority} (no ToS/DSCP map read)", False


def pfc_map(ev: Evidence, win: "Window | None" = None) -> tuple[dict[int, bool] | None, str]:
    """PFC per priority: from dcb/mlnx_qos, else from the counters mlx5 lists: it creates
    rx_prioN_pause only for priorities with PFC on (en_stats.c), next to rx_prioN_bytes for
    all eight."""
    if ev.pfc is not None and ev.pfc.complete:
        return dict(ev.pfc.enabled), ev.pfc_source
    # Either snapshot of a window may be the complete one (a pasted excerpt can be cut).
    for c in (ev.stats.values if ev.stats else {}, win.before if win else {}):
        if not all(f"rx_prio{p}_bytes" in c for p in PRIOS):
            continue
        return ({p: f"rx_prio{p}_pause" in c for p in PRIOS},
                "inferred from ethtool -S: mlx5 lists rx_prioN_pause only where PFC is on")
    return None, ""


def _delta(now: dict[str, int], win: Window | None, name: str) -> int | None:
    """The counter's growth over the window (or its total without one); None when absent or
    reset in between (a counter going down is a reset, not negative traffic)."""
    if name not in now:
        return None
    if win is None:
        return now[name]
    if name not in win.before or now[name] < win.before[name]:
        return None
    return now[name] - win.before[name]


def _sum(now: dict[str, int], win: Window | None, names: list[str]) -> int | None:
    vals = [_delta(now, win, n) for n in names]
    known = [v for v in vals if v is not None]
    return sum(known) if known else None


def judge(ev: Evidence, want: LosslessSetting, win: Window | None = None) -> list[Finding]:
    out: list[Finding] = [_f(ev, "not read", n, "-", "unknown") for n in ev.notes]
    prio, how, mapped = roce_priority(ev, want)
    out.append(_f(ev, "RoCE priority", f"{prio}: {how}", str(want.priority),
                  ("ok" if prio == want.priority else "differs") if mapped else "info",
                  "PFC and ECN act per priority: RoCE must land on the one made lossless"))
    if want.trust is not None:
        out.append(_f(ev, "trust", ev.trust or "not read", want.trust,
                      "unknown" if ev.trust is None else
                      ("ok" if ev.trust == want.trust else "differs"),
                      "what the NIC classifies received packets by (pcp: VLAN tag, dscp: IP "
                      "header); it must match the switch"))
    if want.dscp is not None:
        dscp = ev.roce_tos >> 2 if ev.roce_tos is not None else None
        out.append(_f(ev, "RoCE DSCP", "not read" if dscp is None else
                      f"{dscp} (ToS {ev.roce_tos})", str(want.dscp),
                      "unknown" if dscp is None else ("ok" if dscp == want.dscp else "differs"),
                      "the DSCP the switch maps to the lossless queue"))
    out += _pfc(ev, prio, mapped, win)
    out += _ecn(ev, prio, want)
    out += _dcqcn(ev)
    out += _mtu(ev, want)
    out += _counters(ev, prio, win)
    return out


def _pfc(ev: Evidence, prio: int, mapped: bool, win: Window | None) -> list[Finding]:
    pfc, src = pfc_map(ev, win)
    if pfc is None:
        return [_f(ev, f"PFC on priority {prio}", "not read", "on", "unknown",
                   "PFC (802.1Qbb) pauses one priority instead of dropping its frames")]
    on = {p for p, v in pfc.items() if v}
    why = f"PFC per priority from {src}; RoCE priority {prio}" + \
        (" from the host's own mapping" if mapped else "")
    if pfc[prio]:
        return [_f(ev, f"PFC on priority {prio}", f"on (PFC on {_prios(on)})", "on", "ok", why)]
    return [_f(ev, f"PFC on priority {prio}", f"off (PFC on {_prios(on)})", "on", "differs",
               why, risk="RoCE frames are dropped under congestion and recovered by go-back-N "
               "retransmission", verdict=PFC_OFF)]


def _ecn(ev: Evidence, prio: int, want: LosslessSetting) -> list[Finding]:
    rp, np_ = ev.ecn.get("roce_rp", {}), ev.ecn.get("roce_np", {})
    src = "sysfs ecn/roce_rp|roce_np/enable"
    if prio in rp or np_:
        # The notification point (CNP generation) is one switch per port shown as eight
        # files; the reaction point (rate cut) is per priority.
        on = rp.get(prio, False) and any(np_.values())
        cur = f"reaction point {'on' if rp.get(prio) else 'off'}, notification point " \
              f"{'on' if any(np_.values()) else 'off'}"
    else:
        mask = mlx_int(ev.mlxconfig.params.get("ROCE_CC_PRIO_MASK_P1")) \
            if ev.mlxconfig else None
        if mask is None or mask > 255:
            return [_f(ev, f"ECN/DCQCN on priority {prio}", "not read",
                       "on" if want.ecn else "-", "unknown" if want.ecn else "info",
                       "ECN marks let DCQCN slow senders before PFC has to pause them")]
        on = bool(mask >> prio & 1)
        cur, src = f"{'on' if on else 'off'} (firmware ROCE_CC_PRIO_MASK_P1 = {mask})", \
            "mlxconfig"
    st = "ok" if on == want.ecn else "differs"
    return [_f(ev, f"ECN/DCQCN on priority {prio}", cur, "on" if want.ecn else "off", st,
               f"from {src}; ECN marks let DCQCN slow senders before PFC has to pause them")]


_DCQCN_KEYS = ("RPG_AI_RATE", "RPG_HAI_RATE", "RPG_GD", "RPG_MIN_DEC_FAC", "RPG_MIN_RATE",
               "RPG_TIME_RESET", "RPG_BYTE_RESET", "RATE_TO_SET_ON_FIRST_CNP",
               "MIN_TIME_BETWEEN_CNPS", "CNP_DSCP", "CNP_802P_PRIO", "INITIAL_ALPHA_VALUE")


def _dcqcn(ev: Evidence) -> list[Finding]:
    params = {k.lower(): v for k, v in ev.dcqcn.items()}
    if ev.mlxconfig:
        for k in _DCQCN_KEYS:
            v = ev.mlxconfig.params.get(f"{k}_P1")
            if v is not None:
                params.setdefault(k.lower(), v)
    if not params:
        return []
    shown = ", ".join(f"{k} {v}" for k, v in sorted(params.items()))
    return [_f(ev, "DCQCN parameters", shown, "-", "info", "the reaction point's rate "
               "increase/decrease steps and the CNP interval; compare between hosts")]


def _mtu(ev: Evidence, want: LosslessSetting) -> list[Finding]:
    out = []
    if want.mtu is not None and ev.netdev_mtu is not None:
        ok = ev.netdev_mtu == want.mtu
        out.append(_f(ev, "MTU", str(ev.netdev_mtu), str(want.mtu), "ok" if ok else "differs",
                      "every host and switch port must carry the fabric's frames",
                      verdict="" if ok else MTU_MISMATCH))
    for port in ev.ib_ports:
        name = f"{port.hca}/{port.port} RoCE MTU"
        if port.state and port.state != "PORT_ACTIVE":
            out.append(_f(ev, name, f"{port.active_mtu} ({port.state})", "-", "info",
                          "port not active: its MTU is not judged", SRC_MLX5))
            continue
        if port.active_mtu is None or ev.netdev_mtu is None:
            continue
        expect = iboe_mtu(ev.netdev_mtu)
        if port.max_mtu is not None:
            expect = min(expect, port.max_mtu)
        ok = port.active_mtu == expect
        out.append(_f(ev, name, f"{port.active_mtu} (interface MTU {ev.netdev_mtu})",
                      str(expect), "ok" if ok else "differs",
                      "the kernel derives the RoCE MTU from the interface MTU less 96 B of "
                      "RoCEv2 headers (4200 gives 4096, 1500 gives 1024)", SRC_MLX5,
                      verdict="" if ok else MTU_MISMATCH))
    return out


def _counters(ev: Evidence, prio: int, win: Window | None) -> list[Finding]:
    now = ev.counters()
    if not now and not (ev.pfc and (ev.pfc.requests or ev.pfc.indications)):
        return []
    span = f"over {win.seconds:.3g} s" if win else "since the counters were last cleared"
    out: list[Finding] = []
    pfc, _ = pfc_map(ev, win)
    lossless = {p for p, v in (pfc or {}).items() if v}
    pauses = _sum(now, win, [f"rx_prio{prio}_pause", f"tx_prio{prio}_pause"])
    if ev.pfc is not None and (ev.pfc.requests or ev.pfc.indications) and win is None:
        pauses = (pauses or 0) + ev.pfc.requests.get(prio, 0) + ev.pfc.indications.get(prio, 0)
    ecn = _sum(now, win, list(ECN_COUNTERS))
    if pauses:
        if ecn is None:
            out.append(_f(ev, f"pauses on priority {prio}", f"{pauses} {span}; ECN/CNP "
                          "counters not readable", "ECN marks as well", "unknown",
                          "pause without ECN means congestion is handled by pause alone"))
        elif ecn == 0:
            out.append(_f(ev, f"pauses on priority {prio}", f"{pauses} pause frames, 0 ECN "
                          f"marks or CNPs {span}", "ECN marks as well", "differs",
                          "congestion handled by pause alone: head-of-line blocking, "
                          "congestion spreading to innocent flows", SRC_MLX5,
                          verdict=PAUSE_NO_ECN))
        else:
            out.append(_f(ev, f"pauses on priority {prio}", f"{pauses} pause frames, {ecn} "
                          f"ECN marks/CNPs {span}", "-", "info", source=SRC_MLX5))
    drops = {}
    for q in sorted(lossless):
        n = _sum(now, win, [f"rx_prio{q}_discards", f"rx_prio{q}_buf_discard",
                            f"rx_prio{q}_cong_discard"])
        if n:
            drops[f"priority {q}"] = n
    oob = _delta(now, win, "out_of_buffer")
    if oob and prio in lossless:
        drops["RoCE receive buffer (out_of_buffer)"] = oob
    if drops:
        out.append(_f(ev, "drops on lossless priorities", ", ".join(
            f"{k}: {v}" for k, v in drops.items()) + f" {span}", "0", "differs",
            "PFC should make these priorities drop-free", SRC_MLX5, verdict=LOSSY_DROPS))
    port = {n: v for n in PORT_DROPS if (v := _delta(now, win, n))}
    if port:
        out.append(_f(ev, "port drops", ", ".join(f"{k} {v}" for k, v in port.items()) +
                      f" {span}", "0", "differs", "not attributed to a priority by the NIC",
                      SRC_MLX5))
    storm = {n: v for n in STORM_COUNTERS if (v := _delta(now, win, n))}
    if win is not None:
        for q in sorted(lossless | {prio}):
            paused = _sum(now, win, [f"rx_prio{q}_pause", f"tx_prio{q}_pause"])
            data = _sum(now, win, [f"rx_prio{q}_packets", f"tx_prio{q}_packets"])
            if paused and data == 0:
                storm[f"priority {q} pause frames on an idle priority"] = paused
    if storm:
        out.append(_f(ev, "pause storm", ", ".join(f"{k}: {v}" for k, v in storm.items()) +
                      f" {span}", "0", "differs", "a stalled receiver keeps pausing its peer, "
                      "which backs up into the fabric", SRC_MLX5, verdict=STORM))
    traffic = {q: v for q in PRIOS
               if (v := _sum(now, win, [f"rx_prio{q}_bytes", f"tx_prio{q}_bytes"]))}
    if traffic:
        off = [q for q in traffic if pfc is not None and not pfc.get(q, False)]
        cur = ", ".join(f"priority {q}: {v} B" for q, v in traffic.items()) + f" {span}"
        moved_elsewhere = win is not None and prio not in traffic and off
        out.append(_f(ev, "traffic per priority", cur, f"RoCE on priority {prio}",
                      "differs" if moved_elsewhere else "info",
                      "where the bytes actually went" + (
                          f"; none on {prio}, so the traffic ran on priorities without PFC "
                          f"({_prios(off)})" if moved_elsewhere else ""), SRC_MLX5))
    if not out and now:
        out.append(_f(ev, "counters", f"{len(now)} counters read {span}; no pause, ECN or "
                      "drop counters among them" if not any(
                          k.startswith(("rx_prio", "tx_prio")) or k in ECN_COUNTERS
                          for k in now) else f"{len(now)} counters read {span}: nothing "
                      "to flag", "-", "info", source=SRC_MLX5))
    return out


def judge_fabric(evidence: list[Evidence], switch_mtus: dict[str, int] | None = None
                 ) -> list[Finding]:
    """Across hosts: interfaces that must carry the same frames with different MTUs."""
    mtus = {f"{e.target}/{e.iface}": e.netdev_mtu for e in evidence if e.netdev_mtu}
    mtus.update(switch_mtus or {})
    if len(set(mtus.values())) <= 1:
        return []
    shown = ", ".join(f"{k} {v}" for k, v in sorted(mtus.items()))
    counts = sorted(((list(mtus.values()).count(v), v) for v in set(mtus.values())),
                    reverse=True)
    common = str(counts[0][1]) if counts[0][0] > counts[1][0] else "one MTU for all"
    return [Finding("fabric", "lossless", "MTU across the fabric", shown, common, "differs",
                    "fabric", "a frame larger than a port's MTU is dropped there, on the "
                    "lossless priority too", SRC_MLX5, "", MTU_MISMATCH)]
