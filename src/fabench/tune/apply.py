"""Apply a profile's system settings to targets, journaled; revert them exactly."""

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import FabenchError
from ..host.target import Target, TargetError, sysctl_path
from . import journal as jr
from . import readers, sysctl_scope
from .journal import Change, Journal
from .profiles import (
    CpuSetting,
    LosslessSetting,
    MtuSetting,
    NumaSetting,
    OffloadSetting,
    Profile,
    QuickackSetting,
    RtoMinSetting,
    SysctlSetting,
)

STEP_DELAY_ENV = "FABENCH_TUNE_STEP_DELAY"  # seconds between changes: to watch an apply

# Present on the root namespace only, and without effect since Linux 4.14 ([measured]).
NOOP_SYSCTLS = {"net.ipv4.tcp_low_latency": "no effect since Linux 4.14 (the prequeue it "
                                            "switched was removed)"}
_ROUTE_FLAGS = {"linkdown", "dead", "offload", "trap", "rt_offload", "rt_trap",
                "rt_offload_failed"}


@dataclass
class Skipped:
    target: str
    label: str
    reason: str


@dataclass
class Plan:
    profile: str
    changes: list[Change] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)  # already as the profile wants


def merge_fields(current: str, wanted: str, match: str) -> str:
    """The value to write: per field max (at-least) or min (at-most), or `wanted` (exact)."""
    if match == "exact":
        return wanted
    cur, want = current.split(), wanted.split()
    if len(cur) != len(want) or not all(x.lstrip("-").isdigit() for x in cur + want):
        return wanted
    pick = max if match == "at-least" else min
    return " ".join(str(pick(int(c), int(w))) for c, w in zip(cur, want, strict=True))


def _iface_ok(t: Target, s: Any, iface: str, ifaces: list[str] | None) -> bool:
    if ifaces:
        import fnmatch

        return any(fnmatch.fnmatchcase(iface, p) for p in ifaces)
    if t.host_wide and not s.interfaces:
        return False  # a host's own NICs are changed only when named
    return bool(s.matches(iface))


def check_ifaces(targets: list[Target], patterns: list[str] | None) -> None:
    """Every --iface pattern names an interface of some target: one that matches nothing
    would leave the interface settings out without a word (a typo looked like a clean run)."""
    import fnmatch

    names = {i for t in targets for i in readers.interfaces(t)}
    for p in patterns or []:
        if not p or any(not c.isprintable() or c.isspace() for c in p):
            raise FabenchError(f"--iface {p!r}: an interface name or glob pattern")
        if not any(fnmatch.fnmatchcase(n, p) for n in names):
            raise FabenchError(f"--iface {p!r} matches no interface of the targets "
                               f"(they have: {', '.join(sorted(names))[:300]})")


def make_plan(profile: Profile, targets: list[Target], *, ifaces: list[str] | None = None
              ) -> Plan:
    plan = Plan(profile.name)
    for t in targets:
        _plan_target(plan, profile, t, ifaces)
    return plan


def _plan_target(plan: Plan, profile: Profile, t: Target, ifaces: list[str] | None) -> None:
    tj = t.to_json()
    links = readers.interfaces(t)
    if t.meta.get("role") == "switch":
        _plan_switch(plan, profile, t, links)
        return
    offload_wants: dict[str, dict[str, bool]] = {}
    # One change per route: `ip route change` replaces every metric, so quickack and rto_min
    # on the same route must be written together.
    route_wants: dict[str, dict[str, str]] = {}
    for s in profile.system_settings:
        if isinstance(s, SysctlSetting):
            label = s.name
            if s.name in NOOP_SYSCTLS:
                plan.skipped.append(Skipped(t.name, label, NOOP_SYSCTLS[s.name]))
                continue
            if not t.host_wide:
                scope = sysctl_scope.decide([s.name])[s.name]
                if not scope.namespaced:
                    # Written "inside" a namespace, a host-wide key is written for the host.
                    plan.skipped.append(Skipped(
                        t.name, label, f"refused on a namespace target: {scope.label} "
                        f"({scope.how}); apply it to the host with --host-wide"))
                    continue
            path = sysctl_path(s.name)
            raw = t.read(path)
            if raw is None:
                why = ("absent in a network namespace (root namespace only)"
                       if not t.host_wide else "absent on this kernel")
                plan.skipped.append(Skipped(t.name, label, why))
                continue
            if not t.writable(path):
                plan.skipped.append(Skipped(
                    t.name, label, "read-only in a network namespace: a host-wide setting "
                    "(apply on the host with --host-wide)" if not t.host_wide else "read-only"))
                continue
            new = merge_fields(readers.normalize(raw), readers.normalize(s.value), s.match)
            if new == readers.normalize(raw):
                plan.unchanged.append(f"{t.name}: {label} = {new}")
                continue
            plan.changes.append(Change(tj, "file", path, raw, new, label))
        elif isinstance(s, MtuSetting):
            for iface in links:
                if not _iface_ok(t, s, iface, ifaces):
                    continue
                cur = readers.mtu(t, iface)
                if cur == s.value:
                    plan.unchanged.append(f"{t.name}: {iface} mtu = {cur}")
                elif cur is not None:
                    plan.changes.append(Change(tj, "mtu", iface, cur, s.value, f"{iface} mtu"))
        elif isinstance(s, OffloadSetting):
            for iface in links:
                if _iface_ok(t, s, iface, ifaces):
                    offload_wants.setdefault(iface, {})[s.long_name] = s.value == "on"
        elif isinstance(s, QuickackSetting | RtoMinSetting):
            for r in readers.routes(t):
                if r.dev is None or not _iface_ok(t, s, r.dev, ifaces):
                    continue
                if isinstance(s, QuickackSetting):
                    want, have = ("quickack", str(s.value)), str(r.quickack or 0)
                else:
                    want, have = ("rto_min", s.value), f"{r.rto_min_ms}ms"
                attrs = route_wants.setdefault(r.line, {})
                if have != want[1]:
                    attrs[want[0]] = want[1]
        elif isinstance(s, CpuSetting):
            if not t.host_wide:
                plan.skipped.append(Skipped(t.name, f"cpu {s.name}", "host-wide: the CPUs "
                                            "are shared by every namespace"))
                continue
            _plan_cpu(plan, t, s)
        elif isinstance(s, NumaSetting):
            plan.skipped.append(Skipped(t.name, "numa placement", "chosen per run (bind ranks "
                                        "to the NIC's NUMA node); not a system setting"))
        elif isinstance(s, LosslessSetting):
            plan.skipped.append(Skipped(t.name, "lossless RoCE", "audit only: PFC, trust and "
                                        "ECN must match the switch, so fabench reports them "
                                        "and changes none"))
    for iface, wants in offload_wants.items():
        _plan_offloads(plan, t, iface, wants)
    for line, attrs in route_wants.items():
        dst = line.split()[0]
        if not attrs:
            plan.unchanged.append(f"{t.name}: route {line}")
            continue
        new_line = line
        for attr, value in attrs.items():
            new_line = route_with(new_line, attr, value)
        plan.changes.append(Change(tj, "route", dst, line, new_line,
                                   f"route {dst} " + " ".join(f"{k} {v}"
                                                              for k, v in attrs.items())))


def _plan_switch(plan: Plan, profile: Profile, t: Target, links: list[str]) -> None:
    """A testbed's switch takes only its hosts' MTU: ports first, the bridge last (and, in
    revert's reverse order, first down)."""
    bridge = t.meta.get("bridge")
    ifaces = sorted((i for i in links if i != "lo"), key=lambda i: i == bridge)
    for s in profile.system_settings:
        if isinstance(s, MtuSetting):
            for iface in ifaces:
                cur = readers.mtu(t, iface)
                if cur is not None and cur != s.value:
                    plan.changes.append(Change(t.to_json(), "mtu", iface, cur, s.value,
                                               f"{iface} mtu (switch)"))


# Route metrics `ip route show` prints with " lock" that `ip route change` does not take
# back in that form: rto_min is always locked, and its parser refuses the word.
_LOCK_IMPLIED = {"rto_min"}


def route_args(line: str) -> list[str]:
    """A route as `ip route show` prints it -> the arguments `ip route change` accepts."""
    toks = [x for x in line.split() if x not in _ROUTE_FLAGS]
    out: list[str] = []
    for i, tok in enumerate(toks):
        if tok == "lock" and i > 0 and toks[i - 1] in _LOCK_IMPLIED:
            continue
        out.append(tok)
    return out


def route_with(line: str, attr: str, value: str) -> str:
    """The route with one metric set (replacing its old value, and its " lock")."""
    toks = route_args(line)
    if attr in toks:
        i = toks.index(attr)
        del toks[i:i + 2]
    return " ".join([*toks, attr, value])


def _plan_offloads(plan: Plan, t: Target, iface: str, wants: dict[str, bool]) -> None:
    feats = readers.offloads(t, iface)
    if feats is None:
        plan.skipped.append(Skipped(t.name, f"{iface} offloads", "ethtool -k failed"))
        return
    leaves = readers.leaf_features(feats)
    new: dict[str, bool] = {}
    for name, on in wants.items():
        if name not in feats:
            plan.skipped.append(Skipped(t.name, f"{iface} {name}", "no such feature"))
            continue
        kids = [n for n, f in feats.items() if f.parent == name and not f.fixed]
        for leaf in kids or ([name] if name in leaves else []):
            if leaves[leaf] != on:
                new[leaf] = on
        if not kids and name not in leaves:
            plan.skipped.append(Skipped(t.name, f"{iface} {name}", "fixed by the driver"))
    if not new:
        plan.unchanged.append(f"{t.name}: {iface} offloads {wants}")
        return
    plan.changes.append(Change(t.to_json(), "offloads", iface, leaves, new,
                               f"{iface} offloads " + " ".join(
                                   f"{k} {'on' if v else 'off'}" for k, v in new.items())))


def _plan_cpu(plan: Plan, t: Target, s: CpuSetting) -> None:
    tj = t.to_json()
    if s.name == "governor":
        govs = readers.cpu_governors(t)
        if not govs:
            plan.skipped.append(Skipped(t.name, "cpu governor", "no cpufreq on this host"))
        for path, cur in govs.items():
            if cur != s.value:
                plan.changes.append(Change(tj, "file", path, cur, s.value, "cpu governor"))
    elif s.name == "turbo":
        tf = readers.turbo_file(t)
        if tf is None:
            plan.skipped.append(Skipped(t.name, "cpu turbo", "turbo control not exposed"))
            return
        path, inverted = tf
        on = s.value in ("on", "1", "true")
        want = ("0" if on else "1") if inverted else ("1" if on else "0")
        cur = t.read(path)
        if cur != want:
            plan.changes.append(Change(tj, "file", path, cur, want, "cpu turbo"))
    elif s.name == "smt":
        control, _ = readers.smt(t)
        if control not in ("on", "off"):
            plan.skipped.append(Skipped(t.name, "cpu smt", f"SMT control is {control}"))
        elif control != s.value:
            plan.changes.append(Change(tj, "file", "/sys/devices/system/cpu/smt/control",
                                       control, s.value, "cpu smt"))


# ---- doing and undoing -------------------------------------------------------------------

def _set(c: Change, value: Any) -> None:
    t = c.tgt
    if c.kind == "file":
        t.write(c.key, str(value))
    elif c.kind == "mtu":
        t.run(["ip", "link", "set", "dev", c.key, "mtu", str(value)])
    elif c.kind == "offloads":
        _set_features(t, c.key, {k: bool(v) for k, v in value.items()})
    elif c.kind == "route":
        t.run(["ip", "route", "change", *route_args(str(value))])
    else:
        raise FabenchError(f"journal: unknown change kind {c.kind!r}")


def _set_features(t: Target, iface: str, want: dict[str, bool]) -> None:
    # Features depend on each other (TSO needs SG): a second pass sets what the first one's
    # order prevented.
    for _ in range(3):
        feats = readers.offloads(t, iface) or {}
        leaves = readers.leaf_features(feats)
        diff = {k: v for k, v in want.items() if k in leaves and leaves[k] != v}
        if not diff:
            return
        args = [x for k, v in diff.items() for x in (k, "on" if v else "off")]
        t.run(["ethtool", "-K", iface, *args], check=False)


def current(c: Change) -> Any:
    t = c.tgt
    if c.kind == "file":
        return t.read(c.key)
    if c.kind == "mtu":
        return readers.mtu(t, c.key)
    if c.kind == "offloads":
        return readers.leaf_features(readers.offloads(t, c.key) or {})
    if c.kind == "route":
        dst = c.key
        for r in readers.routes(t):
            if r.line.split()[0] == dst:
                return r.line
        return None
    raise FabenchError(f"journal: unknown change kind {c.kind!r}")


def matches(c: Change, value: Any, now: Any) -> bool:
    if c.kind == "file":
        return now is not None and readers.normalize(str(now)) == readers.normalize(str(value))
    if c.kind == "offloads":
        return all(now.get(k) == v for k, v in value.items())
    if c.kind == "route":
        # The kernel prints metrics in its own order, not the order they were given in.
        a, b = route_args(str(now or "")), route_args(str(value))
        return a[:1] == b[:1] and sorted(a) == sorted(b)
    return bool(now == value)


@dataclass
class ApplyResult:
    journal_path: Path
    applied: list[Change]


def apply(plan: Plan, journal_path: Path,
          on_step: Callable[[Change], None] | None = None) -> ApplyResult:
    existing = jr.load(journal_path)
    if existing is not None:
        raise FabenchError(
            f"profile {existing.profile!r} applied at {time.ctime(existing.created)} is not "
            f"reverted yet ({journal_path}): run `fabench tune revert` first")
    if not plan.changes:
        return ApplyResult(journal_path, [])
    j = Journal(plan.profile, plan.changes)
    jr.save(journal_path, j)  # durable before the first change
    delay = float(os.environ.get(STEP_DELAY_ENV, "0") or 0)
    done: list[Change] = []
    try:
        for c in plan.changes:
            _set(c, c.new)
            now = current(c)
            if not matches(c, c.new, now):
                raise TargetError(f"{c.tgt.name}: {c.label}: set to {show_value(c.new)}, "
                                  f"reads {show_value(now)}")
            done.append(c)
            if on_step:
                on_step(c)
            if delay:
                time.sleep(delay)
    except BaseException:
        # A failed apply leaves nothing behind: undo, and drop the journal if that worked.
        report = revert(journal_path)
        if report.failed:
            raise FabenchError("apply failed and its revert failed too: "
                               + "; ".join(report.failed)
                               + f" (journal kept: {journal_path})") from None
        raise
    j.state = "applied"
    jr.save(journal_path, j)
    return ApplyResult(journal_path, done)


@dataclass
class RevertReport:
    profile: str | None
    restored: list[str] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    retired: Path | None = None


def revert(journal_path: Path) -> RevertReport:
    j = jr.load(journal_path)
    if j is None:
        return RevertReport(None)
    rep = RevertReport(j.profile)
    # Each target is checked once, before anything is written to it: still there, and still
    # the namespace the journal recorded (not a recycled PID's, never this host's own).
    verdicts: dict[str, str] = {}
    for c in reversed(j.changes):
        t = c.tgt
        where = f"{t.name}: {c.label}"
        key = json.dumps(c.target, sort_keys=True)
        if key not in verdicts:
            try:
                verdicts[key] = "ok" if t.verify() else "gone"
            except TargetError as exc:
                verdicts[key] = str(exc)
        if verdicts[key] == "gone":
            rep.gone.append(f"{where} (namespace {t.netns} no longer exists)")
            continue
        if verdicts[key] != "ok":
            rep.failed.append(f"{where}: not reverted: {verdicts[key]}")
            continue
        try:
            if not matches(c, c.previous, current(c)):
                _set(c, c.previous)
            now = current(c)
        except FabenchError as exc:
            rep.failed.append(f"{where}: {exc}")
            continue
        if c.kind == "file" and now != c.previous or not matches(c, c.previous, now):
            rep.failed.append(f"{where}: wanted {show_value(c.previous)}, reads {show_value(now)}")
        else:
            rep.restored.append(f"{where} = {show_value(c.previous)}")
    if not rep.failed:
        rep.retired = jr.retire(journal_path)
    return rep


def show_value(v: Any) -> str:
    if isinstance(v, dict):
        return ", ".join(f"{k} {'on' if x else 'off'}" for k, x in v.items())
    return readers.normalize(str(v)) if v is not None else "(absent)"
