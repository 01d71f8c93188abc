"""Who carries each `--impair`, and how: tc rate limits (tbf for a host, htb classes filtered
by destination for a pair), netem where the kernel has it, and fb-link, the user-space link
on TAP devices, for everything else (and everything, on kernels without netem).

A host whose link is fb-link's gets a TAP device as eth0 and another as its switch port; the
fb-link process between them forwards every frame and applies its rules. What carried each
link is written into the testbed state (LinkState) and into every run's provenance.
"""

import json
import os
import secrets
import shlex
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import FabenchError
from ..host.native import native_root
from ..host.proc_stat import proc_start, running
from ..host.process import popen, run_once
from ..host.process_identity import wait_gone
from .impair import Impairment, parse_impairs
from .state import HostState, LinkState, TestbedConfig, TestbedState, burst_for, queue_us

FB_LINK = "fb-link"
# fb-link's cap on the frames inside one direction (queued, delayed, held): 10x netem's
# default `limit 1000` (tc-netem(8)), so that delays of tens of ms at Gbit/s rates fit.
LINK_LIMIT = 10_000
# The TAP devices' queue (txqueuelen): what waits while fb-link is not reading. 500 (the tun
# driver's default) dropped 8 % of an iperf3 stream's frames here; this is fb-link's own cap.
TAP_QUEUE = LINK_LIMIT
# htb needs a rate on its root class; a host with pair classes but no rate of its own gets
# one far above what a veth carries here, so only the pair classes limit anything.
UNLIMITED = "100gbit"


@dataclass
class HostPlan:
    """What one host's link gets."""

    rate_out: str | None = None  # tbf on eth0 (host egress)
    rate_in: str | None = None  # tbf on the switch port (host ingress)
    htb: list[tuple[str, str]] = field(default_factory=list)  # (peer address, rate) on eth0
    netem: list[tuple[str, str | None, Impairment]] = field(default_factory=list)
    rules: list[str] = field(default_factory=list)  # fb-link --rule arguments
    specs: dict[str, list[str]] = field(default_factory=dict)  # impl -> spec texts

    def add(self, impl: str, text: str) -> None:
        texts = self.specs.setdefault(impl, [])
        if text not in texts:
            texts.append(text)


def fb_link_path() -> Path:
    path = native_root() / "bin" / FB_LINK
    if not path.is_file():
        raise FabenchError(f"{FB_LINK} is not built (at {path}): it carries impairments on "
                           "kernels without netem; reinstall fabench with a C compiler")
    return path


def choose_impl(imp: Impairment, config: TestbedConfig, netem_ok: bool) -> str:
    if imp.rate_only:
        return "tbf" if imp.peer is None else "htb"
    if config.link_impl == "netem" or (config.link_impl == "auto" and netem_ok
                                       and not imp.needs_fb_link):
        if not netem_ok:
            raise FabenchError("--link-impl netem: this kernel has no sch_netem (`tc qdisc "
                               "add ... netem` is refused); use --link-impl auto or fb-link")
        if imp.needs_fb_link:
            raise FabenchError(f"--impair {imp.text!r}: netem cannot do multipath, "
                               "reorder-window, ecn or a queue in bytes; fb-link can "
                               "(--link-impl auto)")
        return "netem"
    return "fb-link"


def plan(state: TestbedState, netem_ok: bool) -> dict[str, HostPlan]:
    """Every host's share of every --impair (hosts without any are left out)."""
    c = state.config
    names = [h.name for h in state.hosts]
    addr = {h.name: h.address for h in state.hosts}
    plans: dict[str, HostPlan] = {}
    for imp in parse_impairs(c.impairs, names):
        impl = choose_impl(imp, c, netem_ok)
        if imp.peer is None:
            p = plans.setdefault(imp.host, HostPlan())
            p.add(impl, imp.text)
            dirs = ["out", "in"] if imp.direction == "both" else [imp.direction]
            for d in dirs:
                if impl == "tbf":
                    setattr(p, f"rate_{d}", imp.rate)
                elif impl == "netem":
                    p.netem.append((d, None, imp))
                else:
                    p.rules.append(f"{d}:{imp.rule_text(None)}")
            continue
        # A pair: htb and netem sit on each sender's eth0, filtered by destination; fb-link
        # on the first host's link, matching the peer's address in both directions.
        senders = [(imp.host, imp.peer)] + ([(imp.peer, imp.host)] if imp.both else [])
        if impl == "fb-link":
            p = plans.setdefault(imp.host, HostPlan())
            p.add(impl, imp.text)
            p.rules.append(f"out:{imp.rule_text(addr[imp.peer])}")
            if imp.both:
                p.rules.append(f"in:{imp.rule_text(addr[imp.peer])}")
            continue
        for src, dst in senders:
            p = plans.setdefault(src, HostPlan())
            p.add(impl, imp.text)
            if impl == "htb":
                assert imp.rate is not None
                p.htb.append((addr[dst], imp.rate))
            else:
                p.netem.append(("out", addr[dst], imp))
    # Rules for one peer come before a rule for every peer: fb-link takes the first match.
    for p in plans.values():
        p.rules.sort(key=lambda r: "peer=" not in r)
    return plans


def netem_args(imp: Impairment, mtu: int) -> str:
    """netem's options for what the spec asks (tc-netem(8) units)."""
    out = []
    if imp.delay_ns:
        out.append(f"delay {imp.delay_ns // 1000}us")
        if imp.jitter_ns:
            out.append(f"{imp.jitter_ns // 1000}us")
    if imp.loss_ppb:
        out.append(f"loss {imp.loss_ppb / 1e7:.7g}%")
    if imp.dup_ppb:
        out.append(f"duplicate {imp.dup_ppb / 1e7:.7g}%")
    if imp.reorder_ppb:
        out.append(f"reorder {imp.reorder_ppb / 1e7:.7g}% gap {imp.gap}")
    if imp.rate:
        out.append(f"rate {imp.rate}")
    if imp.queue_pkts:
        out.append(f"limit {imp.queue_pkts}")
    return " ".join(out)


def tc_lines(dev: str, rate: str | None, htb: list[tuple[str, str]],
             netem: list[tuple[str | None, Impairment]], c: TestbedConfig) -> list[str]:
    """tc commands for one end of a host's link: a tbf (the link's rate), or an htb whose
    classes give each listed peer its own rate (and netem leaves where asked)."""
    if not htb and not [n for n in netem if n[0] is not None]:
        whole = [imp for peer, imp in netem if peer is None]
        if whole:
            lines = [f"tc qdisc replace dev {dev} root handle 1: netem "
                     f"{netem_args(whole[0], c.mtu)}"]
            if rate:  # the link's rate under the netem
                lines.append(f"tc qdisc replace dev {dev} parent 1: handle 2: "
                             f"{tbf_args(rate, c)}")
            return lines
        return [f"tc qdisc replace dev {dev} root {tbf_args(rate, c)}"] if rate else []
    top = rate or UNLIMITED
    burst = burst_for(top, c.mtu)
    lines = [f"tc qdisc replace dev {dev} root handle 1: htb default 2",
             f"tc class add dev {dev} parent 1: classid 1:1 htb rate {top} ceil {top} "
             f"burst {burst} cburst {burst}",
             f"tc class add dev {dev} parent 1:1 classid 1:2 htb rate {top} ceil {top} "
             f"burst {burst} cburst {burst}"]
    classes: list[tuple[str, str | None, Impairment | None]] = \
        [(a, r, None) for a, r in htb] + [(a, None, i) for a, i in netem if a is not None]
    for n, (peer, prate, imp) in enumerate(classes, start=16):
        crate = prate or top
        cb = burst_for(crate, c.mtu)
        lines.append(f"tc class add dev {dev} parent 1:1 classid 1:{n:x} htb rate {crate} "
                     f"ceil {crate} burst {cb} cburst {cb}")
        if imp is not None:
            lines.append(f"tc qdisc add dev {dev} parent 1:{n:x} handle {n:x}: netem "
                         f"{netem_args(imp, c.mtu)}")
        lines.append(f"tc filter add dev {dev} parent 1: protocol ip prio 1 u32 match ip "
                     f"dst {peer}/32 flowid 1:{n:x}")
    return lines


def tbf_args(rate: str, c: TestbedConfig) -> str:
    return (f"tbf rate {rate} burst {c.burst or burst_for(rate, c.mtu)} "
            f"latency {queue_us(c.queue)}us")


def host_tc(h: HostState, p: HostPlan | None, c: TestbedConfig) -> list[str]:
    """tc for the host's eth0 (inside the host)."""
    rate = (p.rate_out if p and p.rate_out else None) or c.rate
    return tc_lines(h.ifname, rate, p.htb if p else [],
                    [(a, i) for d, a, i in (p.netem if p else []) if d == "out"], c)


def port_tc(h: HostState, p: HostPlan | None, c: TestbedConfig) -> list[str]:
    """tc for the host's switch port (the port's egress is the host's ingress)."""
    rate = (p.rate_in if p and p.rate_in else None) or c.rate
    return tc_lines(h.port, rate, [], [(a, i) for d, a, i in (p.netem if p else [])
                                       if d == "in"], c)


def netem_available(ctx: list[str], netns: str) -> bool:
    """Whether this kernel has sch_netem: try one on the loopback of a testbed namespace
    (never on the host's own interfaces), and take it off again."""
    base = [*ctx, "ip", "netns", "exec", netns, "tc", "qdisc"]
    p = run_once([*base, "add", "dev", "lo", "root", "netem", "delay", "1ms"],
                       capture_output=True, text=True, timeout=30, check=False)
    if p.returncode != 0:
        return False
    run_once([*base, "del", "dev", "lo", "root"], capture_output=True, timeout=30,
                   check=False)
    return True


def start_fb_link(state: TestbedState, h: HostState, rules: list[str], specs: list[str],
                  ctx: list[str], seed: int) -> LinkState:
    """fb-link between h's eth0 and its switch port (both TAP devices, already made); it
    writes its status file once it is attached, which is when this returns."""
    sw = state.switch_of(h)
    status = state.dir / f"link-{h.name}.json"
    log = state.dir / f"link-{h.name}.log"
    status.unlink(missing_ok=True)
    argv = [*ctx, str(fb_link_path()), "--host-ns", f"/run/netns/{h.netns}",
            "--host-if", h.ifname, "--switch-ns", f"/run/netns/{sw.netns}",
            "--switch-if", h.port, "--mtu", str(state.config.mtu), "--status", str(status),
            "--seed", str(seed), "--limit", str(LINK_LIMIT),
            "--spin-us", os.environ.get("FABENCH_LINK_SPIN_US", "0")]
    for r in rules:
        argv += ["--rule", r]
    with log.open("w") as out:
        # The link lives as long as the testbed, not as long as this command.
        proc = popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                     start_new_session=True, outlive=True)

    link = LinkState(host=h.name, impl="fb-link", specs=specs, detail=rules, pid=proc.pid,
                     start=proc_start(proc.pid), status_file=str(status), seed=seed)
    deadline = time.monotonic() + 10
    while not status.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)
            raise FabenchError(f"fb-link for {h.name} did not start (exit {proc.returncode}): "
                               f"{log.read_text().strip()[-600:]}")
        time.sleep(0.01)
    return link


def link_seed(index: int) -> int:
    """A fresh seed per link (recorded in the state and the runs' provenance), or, with
    FABENCH_LINK_SEED=N, N plus the host's index: the same choices on every testbed."""
    fixed = os.environ.get("FABENCH_LINK_SEED")
    if fixed is not None:
        if not fixed.isdigit():
            raise FabenchError(f"FABENCH_LINK_SEED={fixed!r}: a non-negative integer")
        return int(fixed) + index
    return secrets.randbits(63)


def link_alive(link: LinkState) -> bool:

    return link.impl != "fb-link" or (bool(link.pid) and proc_start(link.pid or 0) == link.start)


def dead_links(state: TestbedState) -> list[str]:
    """One line per fb-link process that is gone: its host is cut off from the switch."""
    return [f"link of {ln.host} (fb-link pid {ln.pid}) is gone: {ln.host} is cut off"
            for ln in state.links if not link_alive(ln)]


def link_status(link: LinkState, timeout: float = 5.0) -> dict[str, Any] | None:
    """fb-link's counters now: it rewrites its status file on SIGUSR1; None when it is gone
    or does not answer in time."""
    if link.impl != "fb-link" or not link_alive(link):
        return None
    path = Path(link.status_file)
    before = _read_json(path)
    seq = before.get("status_seq", -1) if before else -1
    try:
        os.kill(link.pid or 0, signal.SIGUSR1)
    except (ProcessLookupError, PermissionError):
        return None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = _read_json(path)
        if now and now.get("status_seq", -1) > seq:
            return now
        time.sleep(0.005)
    return None


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def stop_link(link: LinkState) -> None:
    """SIGTERM (fb-link writes its last status), then SIGKILL if it lingers."""

    if link.impl != "fb-link" or not link.pid or proc_start(link.pid) != link.start:
        return
    try:
        os.kill(link.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    wait_gone(link.pid, timeout=2.0)
    if running(link.pid) and proc_start(link.pid) == link.start:
        try:
            os.kill(link.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        wait_gone(link.pid)


def describe(link: LinkState) -> str:
    what = {"tbf": "tc tbf", "htb": "tc htb (per-destination classes)", "netem": "netem",
            "fb-link": "fb-link (user space, TAP)"}[link.impl]
    alive = ""
    if link.impl == "fb-link":
        alive = f", pid {link.pid} " + ("running" if link_alive(link) else "GONE")
    return f"{link.host}: {what}{alive}: {'; '.join(link.specs)}"


def provenance(state: TestbedState) -> list[dict[str, Any]]:
    """What a run records about the links it crossed: which implementation carried which
    spec, and for fb-link its rules."""
    return [{"host": ln.host, "impl": ln.impl, "specs": ln.specs,
             "detail": ln.detail if ln.impl == "fb-link" else [], "seed": ln.seed}
            for ln in state.links]


def quote_lines(lines: list[str]) -> list[str]:
    """tc lines come from validated values only; this re-checks that nothing in them could
    be read by the shell as more than words."""
    for line in lines:
        for word in line.split():
            if shlex.quote(word) != word:
                raise FabenchError(f"refusing a tc line with shell characters: {line!r}")
    return lines


class LinkWatch:
    """Around one run: refuses to start on a testbed whose fb-link is gone, and afterwards
    says which links died during the run and what each fb-link counted meanwhile."""

    def __init__(self, state: TestbedState) -> None:
        self.state = state
        self.before: dict[str, dict[str, Any]] = {}

    def start(self) -> None:
        dead = dead_links(self.state)
        if dead:
            raise FabenchError(f"testbed {self.state.name}: {'; '.join(dead)}; "
                               f"`fabench testbed down {self.state.name}` and make it again")
        for ln in self.state.links:
            st = link_status(ln)
            if st is not None:
                self.before[ln.host] = st

    def finish(self) -> tuple[dict[str, Any], list[str]]:
        """(provenance of the links with fb-link counters over the run, flags)."""
        flags = [f"link-died: {line}" for line in dead_links(self.state)]
        counters = {}
        for ln in self.state.links:
            after = link_status(ln)
            if after is not None and ln.host in self.before:
                counters[ln.host] = counter_delta(self.before[ln.host], after)
        return {"links": provenance(self.state), "link_counters": counters}, flags


def counter_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """after - before for every integer counter of an fb-link status, by direction."""
    def sub(a: Any, b: Any) -> Any:
        if isinstance(a, dict) and isinstance(b, dict):
            return {k: sub(a[k], b.get(k)) for k in a if k != "params"}
        if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            return [sub(x, y) for x, y in zip(a, b, strict=True)]
        if isinstance(a, int) and isinstance(b, int):
            return a - b
        return a
    return {d: sub(a, before.get("dirs", {}).get(d, {})) for d, a in after.get("dirs", {}).items()}
