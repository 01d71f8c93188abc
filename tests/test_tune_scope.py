"""Tuning a namespace must never reach the host (issue 19).

Which sysctls follow the network namespace is decided by the kernel: writable inside a
namespace proves nothing (`vm.*` is). The decision writes only inside throwaway namespaces
and compares the host's value, which this module checks is never changed; a namespace target
then refuses every key that is not per namespace.
"""

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from fabench.host.target import Target
from fabench.tune import apply as ap
from fabench.tune import sysctl_scope as sc
from fabench.tune.audit import check
from fabench.tune.profiles import parse_profile

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make namespaces")

KEYS = ["net.ipv4.tcp_rmem", "net.ipv4.tcp_autocorking", "net.core.somaxconn",
        "net.ipv4.tcp_congestion_control", "net.core.rmem_max", "net.core.netdev_max_backlog",
        "net.ipv4.tcp_low_latency", "vm.swappiness", "kernel.pid_max"]


def host_values(keys: list[str]) -> dict[str, str]:
    return {k: Path(sc.sysctl_path(k)).read_text() for k in keys
            if Path(sc.sysctl_path(k)).exists()}


def test_the_kernel_decides_and_the_host_is_never_changed() -> None:
    before = host_values(KEYS)
    got = sc.decide(KEYS, sc.Probe())
    assert host_values(KEYS) == before
    kinds = {k: s.kind for k, s in got.items()}
    assert kinds["net.ipv4.tcp_rmem"] == sc.PER_NETNS
    assert kinds["net.ipv4.tcp_autocorking"] == sc.PER_NETNS  # a boolean: +1 refused, -1 taken
    assert kinds["net.core.somaxconn"] == sc.PER_NETNS
    assert kinds["net.ipv4.tcp_congestion_control"] == sc.PER_NETNS  # a name, from the list
    assert kinds["net.core.rmem_max"] == sc.HOST_WIDE_RO
    assert kinds["net.core.netdev_max_backlog"] == sc.ROOT_NS_ONLY
    assert kinds["net.ipv4.tcp_low_latency"] == sc.ROOT_NS_ONLY
    assert kinds["vm.swappiness"] == kinds["kernel.pid_max"] == sc.HOST_WIDE
    assert "never written" in got["vm.swappiness"].how
    assert "the host kept" in got["net.ipv4.tcp_rmem"].how
    assert [k for k, s in got.items() if s.namespaced] == KEYS[:4]


def _holder(*unshare: str) -> subprocess.Popen[bytes]:
    p = subprocess.Popen(["unshare", *unshare, "--", "sh", "-c", "echo ready; read _"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert p.stdout is not None and p.stdout.readline().strip() == b"ready"
    return p


@pytest.mark.netns
def test_a_write_that_reaches_the_reference_is_detected_and_undone() -> None:
    """The detecting branch, on a key that really is shared: kernel.shmmax belongs to the
    IPC namespace, so between a network namespace and the one it was made from it is one
    value. Here the "host" is a stand-in with its own IPC namespace (so the real host's
    shmmax is never touched): the throwaway network namespace is made inside it, the write
    shows up in the stand-in, is called host-wide, and the stand-in's value is put back."""
    real = host_values(["kernel.shmmax", "net.ipv4.tcp_rmem"])
    holder = _holder("--ipc", "--net")
    try:
        pid = str(holder.pid)
        probe = sc.Probe(reference=("nsenter", "-t", pid, "--ipc", "--net", "--"),
                         spawn=("nsenter", "-t", pid, "--ipc", "--"))
        stand_in_before = probe.read_reference("kernel.shmmax")
        with probe:
            got = sc.write_test(probe, ["kernel.shmmax", "net.ipv4.tcp_rmem"])
        assert got["kernel.shmmax"].kind == sc.HOST_WIDE, got
        assert "put back" in got["kernel.shmmax"].how
        assert got["net.ipv4.tcp_rmem"].kind == sc.PER_NETNS
        assert probe.read_reference("kernel.shmmax") == stand_in_before
    finally:
        if holder.stdin:
            holder.stdin.close()
        holder.wait(timeout=10)
    assert host_values(["kernel.shmmax", "net.ipv4.tcp_rmem"]) == real


@pytest.fixture
def netns() -> Iterator[str]:
    ns = f"fbscope{uuid.uuid4().hex[:6]}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        yield ns
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


PROFILE = """
name: mixed
settings:
  - {kind: sysctl, name: vm.swappiness, value: 1, why: w, source: s, risk: r}
  - {kind: sysctl, name: net.core.somaxconn, value: 1024, why: w, source: s, risk: r}
  - {kind: sysctl, name: net.core.rmem_max, value: 16777216, why: w, source: s, risk: r}
"""


@pytest.mark.netns
def test_namespace_targets_refuse_host_wide_keys(netns: str, tmp_path: Path) -> None:
    """vm.swappiness is writable inside a network namespace (the old check only asked that),
    and writing it there would change the host. apply refuses it on a namespace target,
    check labels it, and the per-namespace key next to it is applied and reverted."""
    t = Target.namespace(netns)
    assert t.writable("/proc/sys/vm/swappiness")  # why "writable" was never enough
    keys = ["vm.swappiness", "net.core.somaxconn", "net.core.rmem_max"]
    before = host_values(keys)
    prof = parse_profile(PROFILE)
    plan = ap.make_plan(prof, [t])
    assert [c.label for c in plan.changes] == ["net.core.somaxconn"]
    refused = {s.label: s.reason for s in plan.skipped}
    assert refused["vm.swappiness"].startswith("refused on a namespace target: host-wide")
    assert "read-only in namespaces" in refused["net.core.rmem_max"]
    ap.apply(plan, tmp_path / "j.json")
    assert host_values(keys) == before  # the host's own values, untouched
    assert t.read("/proc/sys/net/core/somaxconn") == "1024"
    assert not ap.revert(tmp_path / "j.json").failed
    found = {f.item: f for f in check(prof, [t])}
    assert found["vm.swappiness"].scope == "host-wide: shared with the host, not applied here"
    assert found["net.core.somaxconn"].scope == "per-netns"
    assert "the host kept" in found["net.core.somaxconn"].why
    # On the host itself (--host-wide) the same key is an ordinary host setting.
    host = {f.item: f for f in check(prof, [Target.host()])}
    assert host["vm.swappiness"].scope == "host-wide"
    assert host_values(keys) == before


@pytest.mark.netns
def test_cli_dry_run_names_the_refusal(netns: str, tmp_path: Path) -> None:
    import sys

    (tmp_path / "p.yaml").write_text(PROFILE)
    r = subprocess.run([sys.executable, "-m", "fabench", "tune", "apply", str(tmp_path /
                        "p.yaml"), "--netns", netns, "--dry-run"], capture_output=True,
                       text=True, timeout=120, check=False,
                       env={**os.environ, "FABENCH_TUNE_JOURNAL": str(tmp_path / "j.json")})
    assert r.returncode == 0, r.stderr
    assert f"{netns}: vm.swappiness: skipped (refused on a namespace target" in r.stdout
    assert f"{netns}: net.core.somaxconn:" in r.stdout and not (tmp_path / "j.json").exists()
