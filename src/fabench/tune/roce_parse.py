"""Parsers for what a RoCE host prints about losslessness: `dcb pfc show`, `mlnx_qos -i`,
`ethtool -S`, RDMA hw_counters, `rdma statistic show`, `mlxconfig q`, `ibv_devinfo`.

Where the tool gives JSON (`dcb -j`), that is read (`parse_dcb_*_json`); the text parsers of
dcb stay for an output that is not JSON (a dcb that does not take -j, or a wrapper around it).

Every input is hostile: another tool's output, maybe truncated, maybe not that tool's at all.
Each parser reads what it recognises, bounds every number, names and size, and reports
every line it could not use in `problems`; none raises on bad input. The formats were taken
from real ConnectX output (tests/fixtures/roce/README.md says where each came from).
"""

import json
import re
from dataclasses import dataclass, field

MAX_BYTES = 4 << 20  # far above a real `ethtool -S` (a few hundred lines)
MAX_PROBLEMS = 20
U64 = (1 << 64) - 1
PRIOS = range(8)

_COUNTER = re.compile(r"[A-Za-z0-9_.\-\[\]: ]{1,128}")
_NUM = re.compile(r"\d{1,20}")


def _lines(text: str | bytes | None, problems: list[str]) -> list[str]:
    if text is None:
        return []
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if len(text) > MAX_BYTES:
        problems.append(f"output cut at {MAX_BYTES} bytes (was {len(text)})")
        text = text[:MAX_BYTES]
    return text.replace("\x00", "").splitlines()


def _note(problems: list[str], line: str, why: str) -> None:
    if len(problems) < MAX_PROBLEMS:
        shown = line.strip()[:80].encode("ascii", "backslashreplace").decode()
        problems.append(f"{why}: {shown!r}")
    elif len(problems) == MAX_PROBLEMS:
        problems.append("more unreadable lines not shown")


def _u64(s: str) -> int | None:
    s = s.strip()
    if not _NUM.fullmatch(s):
        return None
    v = int(s)
    return v if v <= U64 else None


# -- PFC: `dcb pfc show dev IF` (iproute2) ------------------------------------------------------

@dataclass
class PfcState:
    enabled: dict[int, bool] = field(default_factory=dict)  # priority -> PFC on
    requests: dict[int, int] = field(default_factory=dict)  # PFC frames sent, per priority
    indications: dict[int, int] = field(default_factory=dict)  # PFC frames received
    pfc_cap: int | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return set(self.enabled) == set(PRIOS)


def _prio_map(tokens: list[str], conv: dict[str, bool] | None, line: str,
              problems: list[str]) -> dict[int, object] | None:
    out: dict[int, object] = {}
    for tok in tokens:
        k, _, v = tok.partition(":")
        if not (k.isdigit() and int(k) in PRIOS) or int(k) in out:
            _note(problems, line, "not a priority map")
            return None
        if conv is not None:
            if v not in conv:
                _note(problems, line, "not on/off")
                return None
            out[int(k)] = conv[v]
        else:
            n = _u64(v)
            if n is None:
                _note(problems, line, "not a counter")
                return None
            out[int(k)] = n
    return out


def parse_dcb_pfc(text: str | bytes | None) -> PfcState:
    st = PfcState()
    for line in _lines(text, st.problems):
        toks = line.split()
        if not toks:
            continue
        i = 0
        while i < len(toks):
            key = toks[i]
            # `prio-pfc` in iproute2 releases; its first posted version printed `pg-pfc`.
            if key in ("prio-pfc", "pg-pfc", "requests", "indications"):
                j = i + 1
                while j < len(toks) and ":" in toks[j]:
                    j += 1
                onoff = {"on": True, "off": False} if key.endswith("pfc") else None
                m = _prio_map(toks[i + 1:j], onoff, line, st.problems)
                if m is not None:
                    target = st.enabled if key.endswith("pfc") else \
                        (st.requests if key == "requests" else st.indications)
                    target.update(m)  # type: ignore[arg-type]
                i = j
            elif key in ("pfc-cap", "delay") and i + 1 < len(toks):
                n = _u64(toks[i + 1])
                if key == "pfc-cap" and n is not None and n <= 8:
                    st.pfc_cap = n
                i += 2
            elif key == "macsec-bypass":
                i += 2
            else:
                _note(st.problems, line, "unknown dcb pfc field")
                break
    return st


# -- DSCP to priority: `dcb app show dev IF dscp-prio` (iproute2) -----------------------------

_DSCP_NAMES = {**{f"CS{i}": 8 * i for i in range(8)},
               **{f"AF{x}{y}": 8 * x + 2 * y for x in range(1, 5) for y in range(1, 4)},
               "EF": 46}


@dataclass
class DscpMap:
    dscp2prio: dict[int, int] = field(default_factory=dict)
    ambiguous: set[int] = field(default_factory=set)  # DSCPs with two priorities
    problems: list[str] = field(default_factory=list)


def parse_dcb_app(text: str | bytes | None) -> DscpMap:
    """`dscp-prio 0:0 24:2 24:3 48:6` (`dcb -N`) or with names (`CS3:2`). The table may give
    one DSCP two priorities (dcb-app(8) shows it): such a DSCP maps to neither."""
    m = DscpMap()
    seen: dict[int, set[int]] = {}
    for line in _lines(text, m.problems):
        toks = line.split()
        if not toks:
            continue
        if toks[0] != "dscp-prio":
            _note(m.problems, line, "not a dscp-prio line")
            continue
        for tok in toks[1:]:
            k, _, v = tok.partition(":")
            d = int(k) if k.isdigit() and len(k) <= 2 else _DSCP_NAMES.get(k)
            if d is None or d > 63 or not (v.isdigit() and int(v) in PRIOS):
                _note(m.problems, line, f"bad mapping {tok[:16]}")
                continue
            seen.setdefault(d, set()).add(int(v))
    return _dscp_map(m, seen)


def _dscp_map(m: DscpMap, seen: dict[int, set[int]]) -> DscpMap:
    """Each DSCP's priority; one given two priorities maps to neither (dcb-app(8))."""
    for d, ps in seen.items():
        if len(ps) == 1:
            m.dscp2prio[d] = next(iter(ps))
        else:
            m.ambiguous.add(d)
    return m


# -- the same two as JSON: `dcb -j` (iproute2 dcb/dcb_pfc.c, dcb/dcb_app.c) -------------------

def _json_object(text: str | bytes | None, problems: list[str]) -> dict[str, object] | None:
    """The top-level object of a JSON output; None when the output is not JSON at all (the
    caller then reads the tool's text instead)."""
    if text is None:
        return None
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if len(text) > MAX_BYTES:
        problems.append(f"output cut at {MAX_BYTES} bytes (was {len(text)})")
        return None
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(obj, dict):
        _note(problems, str(obj)[:80], "not a JSON object")
        return {}
    return obj


def _json_u64(v: object) -> int | None:
    # bool is an int in Python; a counter is never true or false
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= U64 else None


def parse_dcb_pfc_json(text: str | bytes | None) -> PfcState | None:
    """`dcb -j pfc show dev IF`: `pfc_cap` and `delay` numbers, `prio_pfc` eight booleans,
    `requests` and `indications` eight counters each (with -s). None when not JSON."""
    st = PfcState()
    obj = _json_object(text, st.problems)
    if obj is None:
        return None
    for key, value in obj.items():
        if key == "prio_pfc":
            if isinstance(value, list) and len(value) <= len(PRIOS) and \
                    all(isinstance(x, bool) for x in value):
                st.enabled = dict(enumerate(value))
            else:
                _note(st.problems, str(value), "prio_pfc is not eight on/off values")
        elif key in ("requests", "indications"):
            counts = [_json_u64(x) for x in value] if isinstance(value, list) else [None]
            if len(counts) <= len(PRIOS) and None not in counts:
                target = st.requests if key == "requests" else st.indications
                target.update({p: n for p, n in enumerate(counts) if n is not None})
            else:
                _note(st.problems, str(value), f"{key} are not eight counters")
        elif key == "pfc_cap":
            n = _json_u64(value)
            st.pfc_cap = n if n is not None and n <= 8 else None
        elif key not in ("delay", "macsec_bypass"):
            _note(st.problems, key, "unknown dcb pfc field")
    return st


def parse_dcb_app_json(text: str | bytes | None) -> DscpMap | None:
    """`dcb -j app show dev IF dscp-prio`: `dscp_prio` a list of [DSCP, PRIO] pairs, numeric
    with or without -N (iproute2 6.x adds a third, blank element to each). None when not
    JSON. A DSCP given two priorities maps to neither, as in the text form."""
    m = DscpMap()
    obj = _json_object(text, m.problems)
    if obj is None:
        return None
    pairs = obj.get("dscp_prio", [])
    seen: dict[int, set[int]] = {}
    for pair in pairs if isinstance(pairs, list) else [pairs]:
        d = _json_u64(pair[0]) if isinstance(pair, list) and len(pair) >= 2 else None
        prio = _json_u64(pair[1]) if d is not None else None
        if d is None or d > 63 or prio not in PRIOS:
            _note(m.problems, str(pair), "bad dscp_prio mapping")
            continue
        seen.setdefault(d, set()).add(int(prio or 0))
    return _dscp_map(m, seen)


# -- `mlnx_qos -i IF` (MLNX_OFED / mlnx-tools) -------------------------------------------------

@dataclass
class QosState:
    trust: str | None = None  # pcp | dscp
    dscp2prio: dict[int, int] = field(default_factory=dict)
    pfc: PfcState = field(default_factory=PfcState)
    prio2tc: dict[int, int] = field(default_factory=dict)
    tsa: dict[int, str] = field(default_factory=dict)  # tc -> ets|strict|vendor
    problems: list[str] = field(default_factory=list)


_DSCP_ROW = re.compile(r"prio:\s*([0-7])\s+dscp:\s*((?:\d{1,2},)*\d{1,2},?)")
_TC_ROW = re.compile(r"tc:\s*([0-7])\s+ratelimit:\s*[^,]{1,32},\s*tsa:\s*([a-z]{1,16})")


def parse_mlnx_qos(text: str | bytes | None) -> QosState:
    st = QosState()
    lines = _lines(text, st.problems)
    tc: int | None = None
    for line in lines:
        s = line.strip()
        if not s:
            continue
        low = s.lower()
        if low.startswith("priority trust state:") or low.startswith("priority trust mode:"):
            v = s.split(":", 1)[1].strip().lower()
            if v in ("pcp", "dscp"):
                st.trust = v
            else:
                _note(st.problems, line, "unknown trust state")
        elif m := _DSCP_ROW.fullmatch(s):
            prio = int(m.group(1))
            for d in (x for x in m.group(2).split(",") if x):
                if int(d) > 63:
                    _note(st.problems, line, "DSCP above 63")
                    break
                st.dscp2prio[int(d)] = prio
        elif low.split()[0] == "enabled":
            vals = s.split()[1:]
            if len(vals) == 8 and all(v in ("0", "1") for v in vals):
                st.pfc.enabled = {p: v == "1" for p, v in zip(PRIOS, vals, strict=True)}
            else:
                _note(st.problems, line, "PFC row is not 8 flags")
        elif low.split()[0] == "priority":  # the PFC table's header row
            if s.split()[1:] != [str(p) for p in PRIOS]:
                _note(st.problems, line, "unexpected priority header")
        elif m := _TC_ROW.match(s):
            tc = int(m.group(1))
            st.tsa[tc] = m.group(2)
        elif low.startswith("priority:") and tc is not None:
            for p in s.split(":", 1)[1].split():
                if p.isdigit() and int(p) in PRIOS:
                    st.prio2tc[int(p)] = tc
                else:
                    _note(st.problems, line, "not a priority")
        elif low.startswith(("dcbx mode", "dscp2prio mapping", "cable len", "pfc configuration",
                             "receive buffer size", "default priority", "buffer", "tc:",
                             "pcp", "dscp to priority", "prio ")):
            continue
        else:
            _note(st.problems, line, "unknown mlnx_qos line")
    return st


# -- counters: `ethtool -S IF`, hw_counters, `rdma statistic show` -----------------------------

@dataclass
class Counters:
    values: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def parse_ethtool_stats(text: str | bytes | None) -> Counters:
    """`NAME: VALUE` lines; names may carry a queue prefix (`[0]: rx_bytes`, `rxq0: ...`)."""
    c = Counters()
    seen_header = False
    for line in _lines(text, c.problems):
        s = line.strip()
        if not s:
            continue
        if s in ("NIC statistics:", "Standard stats for"):
            seen_header = True
            continue
        name, sep, value = s.rpartition(":")
        name = name.strip()
        n = _u64(value)
        if not sep or n is None or not _COUNTER.fullmatch(name):
            _note(c.problems, line, "not a counter line")
            continue
        if name in c.values:
            _note(c.problems, line, "counter repeated")
            continue
        c.values[name] = n
    if c.values and not seen_header:
        c.problems.append("no 'NIC statistics:' header: maybe not ethtool -S output")
    return c


def parse_hw_counters(text: str | bytes | None) -> Counters:
    """`grep -H . DIR/*` over an RDMA port's hw_counters: `PATH:VALUE` per line."""
    c = Counters()
    for line in _lines(text, c.problems):
        s = line.strip()
        if not s:
            continue
        path, sep, value = s.rpartition(":")
        name = path.rsplit("/", 1)[-1]
        n = _u64(value)
        if not sep or n is None or not re.fullmatch(r"[a-z0-9_]{1,64}", name):
            _note(c.problems, line, "not a hw counter")
            continue
        c.values[name] = n
    return c


def parse_rdma_statistic(text: str | bytes | None) -> dict[str, Counters]:
    """`rdma statistic show`: `link DEV/PORT name value name value ...` per line."""
    out: dict[str, Counters] = {}
    bad = Counters()
    for line in _lines(text, bad.problems):
        toks = line.split()
        if not toks:
            continue
        if len(toks) < 2 or toks[0] != "link" or not re.fullmatch(r"[\w.-]{1,32}/\d{1,3}",
                                                                 toks[1]):
            _note(bad.problems, line, "not an rdma statistic line")
            continue
        c = out.setdefault(toks[1], Counters())
        rest = toks[2:]
        if len(rest) % 2:
            _note(c.problems, line, "odd number of fields")
            rest = rest[:-1]
        for name, value in zip(rest[::2], rest[1::2], strict=True):
            n = _u64(value)
            if n is None or not re.fullmatch(r"[a-z0-9_]{1,64}", name):
                _note(c.problems, line, f"bad counter {name[:32]}")
                continue
            c.values[name] = n
    if bad.problems:
        out.setdefault("?", Counters()).problems.extend(bad.problems)
    return out


# -- firmware DCQCN parameters: `mlxconfig -d DEV q` ----------------------------------------

@dataclass
class MlxConfig:
    params: dict[str, str] = field(default_factory=dict)  # the *current* value
    problems: list[str] = field(default_factory=list)


_MLXCFG = re.compile(r"\*?\s*([A-Z][A-Z0-9_]{1,63})\s+(\S{1,40})(?:\s+(\S{1,40})\s+(\S{1,40}))?")


def parse_mlxconfig(text: str | bytes | None) -> MlxConfig:
    """`mlxconfig q` prints NAME CURRENT; `mlxconfig -e q` prints NAME DEFAULT CURRENT
    NEXT_BOOT (a leading `*` marks a changed one)."""
    c = MlxConfig()
    in_cfg = False
    for line in _lines(text, c.problems):
        s = line.strip()
        if not s:
            continue
        if s.startswith("Configurations:"):
            in_cfg = True
            continue
        m = _MLXCFG.fullmatch(s)
        if m and re.fullmatch(r"[A-Z0-9_]+", m.group(1)) and (m.group(3) or len(s.split()) == 2
                                                              or s.startswith("*")):
            c.params[m.group(1)] = m.group(3) or m.group(2)
        elif in_cfg or re.match(r"\*?\s*[A-Z][A-Z0-9_]+\s", s):
            _note(c.problems, line, "not a NAME VALUE row")
    return c


def mlx_int(v: str | None) -> int | None:
    """`True(1)`, `DEVICE_DEFAULT(0)`, `255` -> the number."""
    if v is None:
        return None
    m = re.fullmatch(r"(?:[A-Za-z_]{1,40}\()?(\d{1,20})\)?", v)
    return int(m.group(1)) if m and int(m.group(1)) <= U64 else None


# -- `ibv_devinfo` --------------------------------------------------------------------------

@dataclass
class IbPort:
    hca: str
    port: int
    state: str = ""
    max_mtu: int | None = None
    active_mtu: int | None = None
    link_layer: str = ""


@dataclass
class IbvInfo:
    ports: list[IbPort] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


_IB_MTUS = {256, 512, 1024, 2048, 4096}


def parse_ibv_devinfo(text: str | bytes | None) -> IbvInfo:
    info = IbvInfo()
    hca: str | None = None
    cur: IbPort | None = None
    for line in _lines(text, info.problems):
        s = line.strip()
        if not s:
            continue
        key, sep, value = s.partition(":")
        key, value = key.strip(), value.strip()
        if key == "hca_id":
            hca = value if re.fullmatch(r"[\w.-]{1,32}", value) else None
            cur = None
            if hca is None:
                _note(info.problems, line, "bad hca_id")
        elif key == "port" and hca is not None:
            if value.isdigit() and 0 < int(value) < 256:
                cur = IbPort(hca, int(value))
                info.ports.append(cur)
            else:
                _note(info.problems, line, "bad port number")
                cur = None
        elif cur is not None and key in ("max_mtu", "active_mtu"):
            m = re.fullmatch(r"(\d{3,4})\s*\(\d\)", value)
            if m and int(m.group(1)) in _IB_MTUS:
                setattr(cur, key, int(m.group(1)))
            else:
                _note(info.problems, line, "not an IB MTU")
        elif cur is not None and key == "state":
            cur.state = value.split()[0][:32] if value else ""
        elif cur is not None and key == "link_layer":
            cur.link_layer = value[:32]
    return info


def iboe_mtu(netdev_mtu: int) -> int:
    """The RoCE MTU the kernel derives from a netdev MTU: the largest IB MTU that fits once
    the RoCEv2 headers (96 B) are taken off (`iboe_get_mtu`, include/rdma/ib_addr.h)."""
    room = netdev_mtu - 96
    for m in (4096, 2048, 1024, 512, 256):
        if room >= m:
            return m
    return 0


# -- small values: ToS, sysfs flags --------------------------------------------------------

def parse_tos(text: str | bytes | None) -> int | None:
    """A RoCE ToS: `106` (cma_roce_tos, configfs default_roce_tos) or `Global tclass=106`
    (MLNX_OFED's /sys/class/infiniband/DEV/tc/PORT/traffic_class)."""
    probs: list[str] = []
    for line in _lines(text, probs):
        m = re.fullmatch(r"\s*(?:Global tclass=)?(\d{1,3})\s*", line)
        if m and int(m.group(1)) <= 255:
            return int(m.group(1))
    return None


def parse_flags(text: str | bytes | None) -> dict[str, dict[int, bool]]:
    """Lines `GROUP PRIO 0|1` (what the reader's loop over .../ecn/roce_np|roce_rp/enable/N
    prints) -> {group: {prio: on}}."""
    out: dict[str, dict[int, bool]] = {}
    probs: list[str] = []
    for line in _lines(text, probs):
        toks = line.split()
        if len(toks) == 3 and toks[0] in ("roce_np", "roce_rp") and toks[1].isdigit() \
                and int(toks[1]) in PRIOS and toks[2] in ("0", "1"):
            out.setdefault(toks[0], {})[int(toks[1])] = toks[2] == "1"
    return out
