"""tune ab on a real namespace testbed: each effect the sources claim, measured A against B.

The testbed (fabench.testbed) is made with a private name prefix and removed in `finally`.
Assertions are on ratios of medians far larger than this shared host's noise (a factor of
~1000 for Nagle x delayed ACK, ~2 for MTU 9000 without offloads), never on absolute times.
"""

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import planned
from fabench.plan.plan import PlannedRun
from fabench.schedulers.testbed import TestbedScheduler as OnTestbed
from fabench.tune import apply as ap
from fabench.tune.ab import run_ab
from fabench.tune.profiles import parse_profile
from fabench.tune.targets import testbed_targets as tb_targets

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make namespaces")


def _profile(kind_line: str) -> str:
    return f"name: p\nsettings:\n  - {{{kind_line}, why: w, source: '[measured]', risk: r}}\n"


@pytest.fixture(scope="module")
def tb_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A name prefix and state directory of this module's own; whatever is left with that
    prefix is removed at the end."""
    from fabench.testbed import destroy_all

    saved = {k: os.environ.get(k) for k in ("FABENCH_TESTBED_PREFIX", "FABENCH_RUN_DIR")}
    prefix = "tun" + uuid.uuid4().hex[:6]
    os.environ["FABENCH_TESTBED_PREFIX"] = prefix
    os.environ["FABENCH_RUN_DIR"] = str(tmp_path_factory.mktemp("run"))
    try:
        yield prefix
    finally:
        destroy_all(prefix)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="module")
def testbed(tb_env: str) -> Iterator[str]:
    from fabench.testbed import TestbedConfig, create, destroy

    state = None
    try:
        # Offloads off: the configuration where MTU matters (measured: 3.3 vs 9.1 Gbit/s).
        state = create("ab", TestbedConfig(hosts=2, offloads=False, rate="20gbit"))
        yield state.name
    finally:
        if state is not None:
            destroy(state)


def _planned(kernel: str, sizes: str, iterations: int, extra: list[str] | None = None
             ) -> list[PlannedRun]:
    return [planned(kernel, "--sizes", sizes, "--iterations", str(iterations), "--warmup", "2",
                    *(extra or []), transport="tcp", timeout=300.0)]


def _route_lines(targets: list) -> list[str]:  # type: ignore[type-arg]
    from fabench.tune import readers

    return [r.line for t in targets if t.meta.get("role") != "switch" for r in readers.routes(t)]


@pytest.mark.netns
def test_nodelay_and_route_quickack_remove_the_delayed_ack_stall(testbed: str,
                                                                 tmp_path: Path) -> None:
    targets = tb_targets(testbed)
    launcher = OnTestbed(testbed=testbed)
    wwr = _planned("tcp.latency", "100", 12, ["--pattern", "wwr"])
    routes_before = _route_lines(targets)
    journal = tmp_path / "j.json"
    # A run-time knob: no system change, the B side gets --nodelay.
    res = run_ab(parse_profile(_profile("kind: socket, name: nodelay, value: 1")), targets,
                 wwr, launcher, tmp_path / "s.sqlite", journal, rounds=2)
    assert res.changes == 0 and not res.failed
    (d,) = res.deltas
    assert d.median_a > 100 * d.median_b, d.sentence()  # ~44 ms against tens of us
    # A system change, applied before each B and reverted after it.
    res = run_ab(parse_profile(_profile("kind: quickack, value: 1")), targets, wwr, launcher,
                 tmp_path / "s.sqlite", journal, rounds=2)
    assert res.changes == 2 and not res.failed
    (d,) = res.deltas
    assert d.median_a > 100 * d.median_b, d.sentence()
    assert len(res.runs_a["tcp.latency tcp np=2"]) == len(res.runs_b["tcp.latency tcp np=2"])
    assert _route_lines(targets) == routes_before and not journal.exists()


@pytest.mark.netns
@pytest.mark.alone  # offloads off: the CPU sets the rate, so another test's load would too
def test_mtu_9000_without_offloads_raises_bandwidth(testbed: str, tmp_path: Path) -> None:
    targets = tb_targets(testbed)
    prof = parse_profile(_profile("kind: mtu, value: 9000"))
    plan = ap.make_plan(prof, targets)
    # Both hosts and the switch's ports and bridge, else the switch drops the jumbo frames.
    assert len(plan.changes) == 5
    # 8 MiB samples (--window 8, not 64): a few ms each, an eighth of the traffic
    res = run_ab(prof, targets, _planned("tcp.bw", "1M", 8, ["--window", "8"]), OnTestbed(
                 testbed=testbed), tmp_path / "s.sqlite", tmp_path / "j.json", rounds=2)
    assert not res.failed
    (d,) = res.deltas
    assert d.median_b > 1.2 * d.median_a, d.sentence()
    assert all(ap.current(c) == c.previous for c in plan.changes)


@pytest.mark.netns
@pytest.mark.slow
def test_large_tcp_rmem_fills_a_rate_limited_link(tb_env: str, tmp_path: Path) -> None:
    """tcp_rmem (per network namespace) caps the receive window, and one TCP stream carries
    at most a window per round trip. No netem here: the round trip is the stack's own, 10-50 us
    on veth depending on the host's load, so the bandwidth-delay product of a 3gbit link is
    4-20 KB. A 4 KiB tcp_rmem (a ~2 KB window) is below it on any host and cannot fill the
    link; 16 MiB (the value source 001 sets) fills it to the limit: 100 -> 359 MB/s (x3.58) on
    a quiet host. The earlier 16 KiB cap was about the quiet host's BDP: it read x1.40-1.44
    under load, +2 % in a quiet CI run (the small window already filled the link)."""
    from fabench.testbed import TestbedConfig, create, destroy

    state = create("rmem", TestbedConfig(hosts=2, offloads=False, rate="3gbit",
                                         sysctls={"net.ipv4.tcp_rmem": "4096 4096 4096"}))
    try:
        targets = tb_targets(state.name)
        prof = parse_profile(_profile("kind: sysctl, name: net.ipv4.tcp_rmem, "
                                      "value: 4096 131072 16777216"))
        plan = ap.make_plan(prof, targets)
        assert [c.label for c in plan.changes] == ["net.ipv4.tcp_rmem"] * 2  # h1 and h2
        # tcp.bw writes --window messages a sample (64 by default): at the A side's ~25 MB/s
        # under load, 4 MiB x 64 x 10 samples x 2 rounds was 157 s in CI. 4 MiB samples take
        # 10+ ms at the limit, far above the clock's and the scheduler's noise.
        res = run_ab(prof, targets, _planned("tcp.bw", "1M", 6, ["--window", "4"]),
                     OnTestbed(testbed=state.name), tmp_path / "s.sqlite",
                     tmp_path / "j.json", rounds=2)
        assert not res.failed and res.changes == 2
        (d,) = res.deltas
        print(d.sentence())
        assert d.median_b > 1.5 * d.median_a, d.sentence()
        assert all(ap.current(c) == c.previous for c in plan.changes)  # reverted: 4 KiB
    finally:
        destroy(state)
