"""Document 001's delayed-ACK and buffer tunings on this kernel (issue 16, last bullet).

001 cut the minimum delayed-ACK time from 40 ms to ~5 ms and raised the TCP buffers to 16 MB;
`tcp_low_latency` is a no-op since Linux 4.14. The delayed-ACK change is made per route
(`ip route change ... quickack 1` or `rto_min 5ms`), and whether this kernel honours it is
measured, not assumed: the Nagle x delayed-ACK pattern (write 100 B, write 100 B, read 8 B)
in namespaces of the test's own, the modes interleaved in one run and compared as ratios.
"""

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from fabench.host.target import Target
from fabench.tune import apply as ap
from fabench.tune import delack
from fabench.tune.audit import check
from fabench.tune.profiles import load_profile, parse_profile

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make namespaces")


def test_route_attributes_change_the_delayed_ack_here() -> None:
    """Measured here (medians of 15 round trips per mode): ~44-48 ms by default, 8-12 ms
    with rto_min 5ms (the delayed ACK is bounded by rto_min on this kernel), tens of us with
    quickack 1. Ratios with a wide margin, never absolute times."""
    res = delack.measure(("default", "rto_min 5ms", "quickack 1"), rounds=3, per_round=5)
    base, rto, qa = (res.median(m) for m in ("default", "rto_min 5ms", "quickack 1"))
    print(f"write-write-read medians: default {base * 1e3:.2f} ms, rto_min 5ms "
          f"{rto * 1e3:.2f} ms, quickack 1 {qa * 1e3:.3f} ms")
    assert base > 2 * rto, (base, rto)
    assert base > 20 * qa, (base, qa)
    assert rto > 2 * qa, (rto, qa)  # rto_min bounds the delay; it does not remove it


@pytest.fixture
def netns() -> Iterator[str]:
    ns = f"fbdack{uuid.uuid4().hex[:6]}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        for args in (["link", "add", "dka", "type", "veth", "peer", "name", "dkb"],
                     ["addr", "add", "10.218.0.1/24", "dev", "dka"],
                     ["link", "set", "dka", "up"], ["link", "set", "dkb", "up"],
                     # A route that already has an rto_min: `ip route show` prints it as
                     # "rto_min lock 20ms", which `ip route change` refuses in that form.
                     ["route", "add", "10.218.9.0/24", "dev", "dka", "rto_min", "20ms"]):
            subprocess.run(["ip", "-n", ns, *args], check=True, capture_output=True)
        yield ns
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


def routes(ns: str) -> str:
    return subprocess.run(["ip", "-n", ns, "-4", "route", "show", "table", "main"],
                          capture_output=True, text=True, check=True).stdout


PROFILE = """
name: delack
settings:
  - {kind: quickack, value: 1, why: w, source: s, risk: r}
  - {kind: rto_min, value: 5ms, why: w, source: s, risk: r}
"""


@pytest.mark.netns
def test_route_changes_apply_together_and_revert_exactly(netns: str, tmp_path: Path) -> None:
    before = routes(netns)
    assert "rto_min lock 20ms" in before
    plan = ap.make_plan(parse_profile(PROFILE), [Target.namespace(netns)])
    # One change per route: `ip route change` replaces all metrics, so both go together.
    assert sorted(c.label for c in plan.changes) == [
        "route 10.218.0.0/24 quickack 1 rto_min 5ms", "route 10.218.9.0/24 quickack 1 rto_min 5ms"]
    ap.apply(plan, tmp_path / "j.json")
    now = routes(netns)
    assert now.count("rto_min lock 5ms") == 2 and now.count("quickack 1") == 2
    rep = ap.revert(tmp_path / "j.json")
    assert not rep.failed, rep.failed
    assert routes(netns) == before


@pytest.mark.netns
def test_check_covers_001_tunings_on_this_kernel(netns: str) -> None:
    """tcp-throughput holds 001's buffers, its delayed-ACK change and its tcp_low_latency:
    each is checked here, with the scope the kernel gives it, and the delayed-ACK change is
    the per-route one this kernel honours (measured by the check itself)."""
    found = {f.item: f for f in check(load_profile("tcp-throughput"),
                                      [Target.namespace(netns)])}
    assert found["net.ipv4.tcp_rmem"].scope == found["net.ipv4.tcp_wmem"].scope == "per-netns"
    for k in ("net.core.rmem_max", "net.core.wmem_max"):
        assert found[k].scope.startswith("host-wide") and "not applied here" in found[k].scope
        assert found[k].recommended == ">= 16777216"
    low = found["net.ipv4.tcp_low_latency"]
    assert low.status == "no-op" and "4.14" in low.why
    assert found["route 10.218.0.0/24 rto_min"].recommended == "5ms"
    assert found["route 10.218.9.0/24 rto_min"].current == "20ms"
    kernel = found["delayed ACK on this kernel"]
    assert kernel.status == "ok" and kernel.recommended == "rto_min 5ms", kernel
    plan = ap.make_plan(load_profile("tcp-throughput"), [Target.namespace(netns)])
    skipped = {s.label: s.reason for s in plan.skipped}
    assert "no effect since Linux 4.14" in skipped["net.ipv4.tcp_low_latency"]
    assert skipped["net.core.rmem_max"].startswith("refused on a namespace target")
