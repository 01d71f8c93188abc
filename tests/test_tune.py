"""tune: profiles, audit, and apply/revert restoring every value exactly, also after kill -9.

Every change happens inside network namespaces this module makes (removed in `finally`); the
host's own interfaces and sysctls are only read.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import missing
from fabench.errors import FabenchError
from fabench.host import topology as topology
from fabench.host.proc_stat import proc_start
from fabench.host.process_identity import netns_of
from fabench.host.target import Target, TargetMismatch
from fabench.tune import apply as ap
from fabench.tune import journal as jr
from fabench.tune.audit import check
from fabench.tune.profiles import ProfileError, available_profiles, load_profile, parse_profile

# Settings read, applied and reverted inside the tests' own namespaces: nothing here judges a
# time or a rate, so these share the first pass.
pytestmark = pytest.mark.concurrent

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make namespaces")

# Everything a profile may change inside a namespace, as text: equal text = exact restore.
SNAPSHOT = ("for f in tcp_rmem tcp_wmem tcp_notsent_lowat tcp_autocorking "
            "tcp_slow_start_after_idle tcp_mtu_probing; do cat /proc/sys/net/ipv4/$f; done; "
            "for i in $(ls /sys/class/net); do ip -o link show dev $i | sed 's/ qlen.*//'; "
            "ethtool -k $i 2>/dev/null; done; ip -4 route show table main")

TEST_PROFILE = """
name: nstest
description: every per-namespace kind, plus ones that must be skipped in a namespace
settings:
  - {kind: sysctl, name: net.ipv4.tcp_rmem, value: 4096 65536 1048576, why: w, source: s, risk: r}
  - {kind: sysctl, name: net.ipv4.tcp_wmem, value: [4096, 32768, 2097152], why: w, source: s,
     risk: r}
  - {kind: sysctl, name: net.ipv4.tcp_notsent_lowat, value: 131072, why: w, source: s, risk: r}
  - {kind: sysctl, name: net.ipv4.tcp_autocorking, value: 0, why: w, source: s, risk: r}
  - {kind: sysctl, name: net.ipv4.tcp_slow_start_after_idle, value: 0, why: w, source: s,
     risk: r}
  - {kind: sysctl, name: net.core.rmem_max, value: 16777216, why: w, source: s, risk: r}
  - {kind: sysctl, name: net.ipv4.tcp_low_latency, value: 1, why: w, source: s, risk: r}
  - {kind: mtu, value: 9000, why: w, source: s, risk: r}
  - {kind: offload, feature: tso, value: "off", why: w, source: s, risk: r}
  - {kind: offload, feature: gso, value: "off", why: w, source: s, risk: r}
  - {kind: offload, feature: gro, value: "on", why: w, source: s, risk: r}
  - {kind: quickack, value: 1, why: w, source: s, risk: r}
  - {kind: cpu, name: turbo, value: "off", why: w, source: s, risk: r}
  - {kind: env, name: OMPI_MCA_btl_tcp_sndbuf, value: 2097152, why: w, source: s, risk: r}
"""


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@pytest.fixture
def ns_pair() -> Iterator[list[str]]:
    """Two namespaces joined by a veth pair, with addresses this test assigns."""
    tag = uuid.uuid4().hex[:6]
    names = [f"fbtune{tag}a", f"fbtune{tag}b"]
    try:
        for n in names:
            _ip("netns", "add", n)
        _ip("link", "add", "tva", "netns", names[0], "type", "veth", "peer", "name", "tvb",
            "netns", names[1])
        for n, dev, addr in ((names[0], "tva", "10.213.7.1/24"),
                             (names[1], "tvb", "10.213.7.2/24")):
            _ip("-n", n, "addr", "add", addr, "dev", dev)
            _ip("-n", n, "link", "set", dev, "up")
            _ip("-n", n, "link", "set", "lo", "up")
        yield names
    finally:
        for n in names:
            subprocess.run(["ip", "netns", "del", n], capture_output=True, check=False)


def snapshot(ns: str) -> str:
    return subprocess.run(["ip", "netns", "exec", ns, "sh", "-c", SNAPSHOT],
                          capture_output=True, text=True, check=True).stdout


def fabench(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fabench", *args], capture_output=True,
                          text=True, env={**os.environ, **env}, timeout=120, check=False)


# -- profiles --------------------------------------------------------------------------------

def test_builtin_profiles_ship_with_the_package_and_cite_sources() -> None:
    names = available_profiles()
    assert {"tcp-throughput", "low-latency", "hpc-default", "lossless-roce"} <= set(names)
    for name in names:
        prof = load_profile(name)
        for s in prof.settings:
            # Every built-in setting cites a source document or our own measurement
            # (docs/sources.md).
            assert re.search(r"\[(00[0-6]|measured)\]", s.source), (name, s)


def test_profile_errors_name_key_and_line() -> None:
    bad = ("name: x\nsettings:\n  - kind: sysctl\n    name: net.ipv4.tcp_rmem\n"
           "    value: 1\n    why: w\n    source: s\n    risk: r\n    colour: red\n"
           "  - kind: mtu\n    value: 90000\n    why: w\n    source: s\n    risk: r\n"
           "  - kind: teleport\n")
    with pytest.raises(ProfileError) as e:
        parse_profile(bad, "p.yaml")
    msg = str(e.value)
    assert "p.yaml line 9: settings[0].colour: unknown key" in msg
    assert "line 11: settings[1].value" in msg
    assert "settings[2]" in msg and "unknown kind" in msg
    with pytest.raises(ProfileError, match="settings\\[0\\].why: required key is missing"):
        parse_profile("name: x\nsettings:\n  - {kind: mtu, value: 9000, source: s, risk: r}\n")
    with pytest.raises(ProfileError, match="unknown profile 'nope'"):
        load_profile("nope")


def test_user_profile_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mine.yaml").write_text(
        "name: mine\nsettings:\n  - {kind: socket, name: nodelay, value: 1, why: w, "
        "source: '[measured]', risk: r}\n")
    monkeypatch.setenv("FABENCH_PROFILE_PATH", str(tmp_path))
    prof = load_profile("mine")
    assert prof.kernel_args() == ["--nodelay"] and not prof.system_settings


def test_merge_fields_never_lowers_what_is_already_higher() -> None:
    assert ap.merge_fields("4096 131072 33554432", "4096 87380 16777216", "at-least") == \
        "4096 131072 33554432"
    assert ap.merge_fields("4096 16384 4194304", "4096 65536 16777216", "at-least") == \
        "4096 65536 16777216"
    assert ap.merge_fields("1 2", "5 0", "at-most") == "1 0"


# -- audit -------------------------------------------------------------------------------------

@pytest.mark.netns
def test_check_on_this_host_reads_only() -> None:
    before = Path("/proc/sys/net/ipv4/tcp_wmem").read_text()
    found = check(load_profile("tcp-throughput"), [Target.host()])
    assert Path("/proc/sys/net/ipv4/tcp_wmem").read_text() == before
    by_item = {f.item: f for f in found}
    assert by_item["net.ipv4.tcp_low_latency"].status == "no-op"
    assert "4.14" in by_item["net.ipv4.tcp_low_latency"].why
    if os.geteuid() == 0:  # the scope comes from a throwaway namespace
        assert by_item["net.ipv4.tcp_rmem"].scope == "per-netns"
        assert by_item["net.core.rmem_max"].scope.startswith("host-wide")
    assert all(f.source for f in found if f.status != "info")


@pytest.mark.netns
@ROOT_ONLY
def test_check_in_a_namespace_reports_scope(ns_pair: list[str]) -> None:
    found = check(load_profile("tcp-throughput"), [Target.namespace(ns_pair[0])])
    by_item = {f.item: f for f in found}
    assert by_item["net.ipv4.tcp_wmem"].scope == "per-netns"
    assert by_item["net.core.wmem_max"].scope == \
        "host-wide (read-only in namespaces): shared with the host, not applied here"
    assert by_item["net.ipv4.tcp_low_latency"].status == "no-op"
    assert by_item["tva mtu"].current == "1500" and by_item["tva mtu"].status == "differs"


@pytest.fixture
def ns_up_down() -> Iterator[str]:
    """One namespace of this test's own with three veth pairs, addresses assigned here: `tuu`
    up (peer `tup` up too), `tdd`/`tdp` administratively down, `tll` up over a peer that is
    down (operstate LOWERLAYERDOWN, its route kept and flagged linkdown)."""
    ns = f"fbtune{uuid.uuid4().hex[:6]}u"
    try:
        _ip("netns", "add", ns)
        for a, b in (("tuu", "tup"), ("tdd", "tdp"), ("tll", "tlp")):
            _ip("-n", ns, "link", "add", a, "type", "veth", "peer", "name", b)
        for dev, addr in (("tuu", "10.213.8.1/24"), ("tdd", "10.213.9.1/24"),
                          ("tll", "10.213.10.1/24")):
            _ip("-n", ns, "addr", "add", addr, "dev", dev)
        for dev in ("tuu", "tup", "tll"):
            _ip("-n", ns, "link", "set", dev, "up")
        # the kernel sets operstate a moment after `link set up` (linkwatch): a clean CI once
        # read tuu as LOWERLAYERDOWN right after it
        deadline = time.monotonic() + 10
        while _operstates(ns).get("tuu") != "UP" and time.monotonic() < deadline:
            time.sleep(0.05)
        yield ns
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


def _operstates(ns: str) -> dict[str, str]:
    return {d["ifname"]: d["operstate"] for d in json.loads(subprocess.run(
        ["ip", "-n", ns, "-j", "link"], capture_output=True, text=True, check=True).stdout)}


@pytest.mark.netns
@ROOT_ONLY
def test_check_skips_links_that_are_down(ns_up_down: str) -> None:
    opers = _operstates(ns_up_down)
    assert opers["tuu"] == "UP" and opers["tdd"] == "DOWN" and opers["tll"] == "LOWERLAYERDOWN"
    down = {"tdd", "tdp", "tll", "tlp"}
    for prof in (parse_profile(TEST_PROFILE), None):  # the profile's advice, and the info
        found = check(prof, [Target.namespace(ns_up_down)])
        items = [f.item for f in found]
        assert "tuu mtu" in items and "tup mtu" in items
        assert any(i.startswith("tuu ") and "offload" in f.area
                   for i, f in zip(items, found, strict=True))
        # "quickack" against the profile's setting, "delayed ACK" (both attributes) as info.
        assert {"route 10.213.8.0/24 quickack", "route 10.213.8.0/24 delayed ACK"} & set(items)
        # Nothing about a down link, its route included ...
        assert not [i for i in items if i.split()[0] in down or "10.213.10." in i]
        # ... except one line saying which were skipped and why.
        (skipped,) = [f for f in found if f.item == "skipped: down"]
        assert skipped.status == "info"
        assert {x.split(" (")[0] for x in skipped.current.split(", ")} == down
        assert "tll (operstate LOWERLAYERDOWN)" in skipped.current
        assert "tdd (not up)" in skipped.current


# -- NUMA topology -----------------------------------------------------------------------------

@pytest.fixture
def hwloc_installed() -> None:
    if shutil.which(topology.LSTOPO) is None or shutil.which("hwloc-calc") is None:
        missing("hwloc is not installed (scripts/debian-packages.txt)")


needs_hwloc = pytest.mark.usefixtures("hwloc_installed")


def _hwloc(*argv: str) -> str:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=60,
                          check=True).stdout


@needs_hwloc
def test_lstopo_of_this_machine_parses() -> None:
    """This machine's own lstopo XML (a VM here: one NUMA node, or none reported): nodes and
    cores per node against hwloc-calc, this process's CPUs all on some node, and every PCI
    NIC hwloc lists with its node."""
    topo = topology.parse_lstopo_xml(_hwloc(topology.LSTOPO, "--of", "xml"))
    assert topo.source.startswith("hwloc")
    indices = [n.index for n in topo.nodes]
    assert len(indices) == int(_hwloc("hwloc-calc", "--number-of", "numanode", "all"))
    for n in topo.nodes:
        assert n.cores == int(_hwloc("hwloc-calc", "--number-of", "core", f"node:{n.index}"))
        assert 0 < n.cores <= len(n.cpus)
    assert os.sched_getaffinity(0) <= set(topo.node_of_cpu())
    pci_nics = [d.name for d in Path("/sys/class/net").iterdir()
                if "/pci" in os.path.realpath(d / "device")]
    for nic in pci_nics:
        assert nic in topo.nics, (nic, topo.nics)
        assert topo.nics[nic] and set(topo.nics[nic]) <= set(indices)
        sysfs = Path(f"/sys/class/net/{nic}/device/numa_node")
        if sysfs.exists() and int(sysfs.read_text()) >= 0:
            assert topo.nics[nic] == (int(sysfs.read_text()),)
    print(f"nodes {[(n.index, n.cores, sorted(n.cpus)) for n in topo.nodes]}, "
          f"NICs {topo.nics}, PCI NICs in sysfs {pci_nics}")


@needs_hwloc
def test_lstopo_of_a_two_node_machine_parses() -> None:
    """More than one node, and CPU sets wider than one 32-bit word, as hwloc itself writes
    them: a synthetic topology (this host has one node; hwloc builds the XML)."""
    xml = _hwloc(topology.LSTOPO, "--input", "node:2 core:20 pu:2", "--of", "xml")
    topo = topology.parse_lstopo_xml(xml)
    assert [(n.index, n.cores, len(n.cpus)) for n in topo.nodes] == [(0, 20, 40), (1, 20, 40)]
    assert topo.nodes[1].cpus == frozenset(range(40, 80))
    assert topo.node_of_cpu()[79] == 1 and topo.nics == {}
    assert topology.bitmap("0x00000001,0x00000003") == {0, 1, 32}
    assert topology.bitmap("0x00000002,,0x0") == {65}  # an empty word is a zero word
    with pytest.raises(ValueError):
        topology.parse_lstopo_xml("<topology/>")


@needs_hwloc
def test_numa_check_uses_hwloc_and_falls_back_to_sysfs(monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    def numa(found: list[Any]) -> dict[str, Any]:
        return {f.item: f for f in found if f.area == "numa"}

    found = numa(check(None, [Target.host()]))
    assert found["NUMA layout"].why.startswith("from hwloc")
    for f in found.values():
        if f.item != "NUMA layout" and f.current != "virtual (no device)":
            assert "locality from hwloc" in f.why or "did not list" in f.why, f
    # Without lstopo the same check reads sysfs, and says so.
    monkeypatch.setattr(topology, "LSTOPO", "fabench-test-no-such-lstopo")
    fallback = numa(check(None, [Target.host()]))
    assert fallback["NUMA layout"].why.startswith("from sysfs; ")
    assert "not found" in fallback["NUMA layout"].why
    # The same nodes (core counts may differ: hwloc leaves out CPUs outside our cgroup).
    assert re.findall(r"node\d+", fallback["NUMA layout"].current) == \
        re.findall(r"node\d+", found["NUMA layout"].current)


# -- apply / revert ----------------------------------------------------------------------------

@pytest.mark.netns
@ROOT_ONLY
def test_apply_then_revert_restores_every_value_exactly(ns_pair: list[str],
                                                        tmp_path: Path) -> None:
    before = [snapshot(n) for n in ns_pair]
    prof = parse_profile(TEST_PROFILE)
    targets = [Target.namespace(n) for n in ns_pair]
    plan = ap.make_plan(prof, targets)
    labels = {(Target.from_json(c.target).name, c.label) for c in plan.changes}
    skipped = {(s.target, s.label) for s in plan.skipped}
    for n, dev in zip(ns_pair, ("tva", "tvb"), strict=True):
        assert (n, "net.ipv4.tcp_rmem") in labels and (n, f"{dev} mtu") in labels
        assert (n, "net.core.rmem_max") in skipped  # read-only in a child namespace
        assert (n, "net.ipv4.tcp_low_latency") in skipped  # no-op, and root-ns only
        assert (n, "cpu turbo") in skipped  # host-wide
    journal = tmp_path / "j.json"
    ap.apply(plan, journal)
    during = [snapshot(n) for n in ns_pair]
    assert "mtu 9000" in during[0] and "quickack 1" in during[0]
    assert "tcp-segmentation-offload: off" in during[0]
    assert "4096\t65536\t1048576" in during[1]
    with pytest.raises(FabenchError, match="not reverted yet"):
        ap.apply(ap.make_plan(prof, targets), journal)
    rep = ap.revert(journal)
    assert not rep.failed and len(rep.restored) == len(plan.changes)
    assert [snapshot(n) for n in ns_pair] == before
    assert not journal.exists() and rep.retired is not None


@pytest.mark.netns
@ROOT_ONLY
def test_kill_9_during_apply_then_revert_restores_exactly(ns_pair: list[str],
                                                          tmp_path: Path) -> None:
    before = [snapshot(n) for n in ns_pair]
    prof = tmp_path / "nstest.yaml"
    prof.write_text(TEST_PROFILE)
    journal = tmp_path / "journal.json"
    env = {"FABENCH_TUNE_JOURNAL": str(journal), "FABENCH_TUNE_STEP_DELAY": "0.3"}
    proc = subprocess.Popen([sys.executable, "-m", "fabench", "tune", "apply", str(prof),
                             "--netns", *ns_pair], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, **env})
    try:
        assert proc.stdout is not None
        done = 0
        for line in proc.stdout:  # kill once a few changes are made, well before the end
            done += line.strip().startswith("done:")
            if done == 3:
                break
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    mid = [snapshot(n) for n in ns_pair]
    assert mid != before  # something was changed ...
    assert "mtu 9000" not in mid[1]  # ... and something was not yet
    assert journal.exists()
    r = fabench("tune", "revert", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 failed" in r.stdout
    assert [snapshot(n) for n in ns_pair] == before


@pytest.mark.netns
@ROOT_ONLY
def test_revert_tolerates_a_vanished_namespace(tmp_path: Path) -> None:
    ns = f"fbtune{uuid.uuid4().hex[:6]}g"
    try:
        _ip("netns", "add", ns)
        prof = parse_profile(TEST_PROFILE)
        ap.apply(ap.make_plan(prof, [Target.namespace(ns)]), tmp_path / "j.json")
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
    time.sleep(0.1)
    rep = ap.revert(tmp_path / "j.json")
    assert rep.gone and not rep.failed and not rep.restored


def _sleeper(*unshare: str) -> subprocess.Popen[bytes]:
    """`sleep` in a network namespace of its own (`unshare --net`, which execs sleep in
    place: the PID holds the namespace, and killing it removes the namespace)."""
    p = subprocess.Popen([*unshare, "sleep", "120"])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{p.pid}/comm").read_text().strip() == "sleep":
                return p
        except OSError:
            pass
        time.sleep(0.02)
    p.kill()
    raise AssertionError(f"{unshare} sleep did not start")


def _in_ns(pid: int, path: str) -> str:
    return subprocess.run(["nsenter", "-t", str(pid), "-n", "--", "cat", path],
                          capture_output=True, text=True, check=True).stdout


@pytest.mark.netns
@ROOT_ONLY
def test_revert_refuses_a_reused_pid_or_the_hosts_namespace(tmp_path: Path) -> None:
    """A target entered with `nsenter -t PID` (a testbed host) is journaled with the PID's
    start time and namespace. Once the PID belongs to another process, or the target
    resolves to this host's own namespace, revert refuses: nothing written, journal kept."""
    rmem = "/proc/sys/net/ipv4/tcp_rmem"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        procs.append(_sleeper("unshare", "--net"))
        a = procs[-1]
        assert netns_of(a.pid) != netns_of("self")
        t = Target("a", ("nsenter", "-t", str(a.pid), "-n", "--"))
        prof = parse_profile(_TCP_RMEM_PROFILE)
        journal = tmp_path / "j.json"
        ap.apply(ap.make_plan(prof, [t]), journal)
        original = json.loads(journal.read_text())
        ident = original["changes"][0]["target"]["ident"]
        assert ident == {"pids": [{"pid": a.pid, "start": proc_start(a.pid),
                                   "netns": netns_of(a.pid)}], "netns": netns_of(a.pid)}
        os.kill(a.pid, signal.SIGKILL)  # the testbed host goes, and its namespace with it
        a.wait()

        # Its PID now names another process: here another namespace of this test's.
        procs.append(_sleeper("unshare", "--net"))
        b = procs[-1]
        b_before = _in_ns(b.pid, rmem)
        reused = json.loads(json.dumps(original))
        for c in reused["changes"]:
            c["target"]["prefix"][2] = str(b.pid)
            c["target"]["ident"]["pids"][0]["pid"] = b.pid
        jr.write_durably(journal, reused)
        rep = ap.revert(journal)
        assert rep.failed and not rep.restored and not rep.gone
        assert f"PID {b.pid} is no longer the process" in rep.failed[0]
        assert journal.exists() and _in_ns(b.pid, rmem) == b_before

        # Right PID and start time, another namespace than the one recorded: refused too.
        ident_b = {"pids": [{"pid": b.pid, "start": proc_start(b.pid),
                             "netns": netns_of(b.pid)}], "netns": "net:[1]"}
        for c in reused["changes"]:
            c["target"]["ident"] = ident_b
        jr.write_durably(journal, reused)
        rep = ap.revert(journal)
        assert rep.failed and "the journal recorded net:[1]" in rep.failed[0]
        assert journal.exists() and _in_ns(b.pid, rmem) == b_before

        # The journal as written, its PID gone: nothing to write to, reported as gone.
        jr.write_durably(journal, original)
        rep = ap.revert(journal)
        assert rep.gone and not rep.failed and not journal.exists()

        # A process in this host's own namespace is no target: refused when planning, and
        # when a journal names it (the change is a file of this test's, so nothing on the
        # host could be written even if the guard failed).
        procs.append(_sleeper())
        h = procs[-1]
        host_t = Target("h", ("nsenter", "-t", str(h.pid), "-n", "--"))
        with pytest.raises(TargetMismatch, match="this host's own network namespace"):
            ap.make_plan(prof, [host_t])
        probe = tmp_path / "probe"
        probe.write_text("new\n")
        target = {"name": "h", "prefix": list(host_t.prefix), "netns": None,
                  "ident": {"pids": [{"pid": h.pid, "start": proc_start(h.pid),
                                      "netns": netns_of(h.pid)}], "netns": netns_of(h.pid)}}
        jr.save(journal, jr.Journal("p", [jr.Change(target, "file", str(probe), "old", "new",
                                                    "probe")], state="applied"))
        rep = ap.revert(journal)
        assert rep.failed and "host's own network namespace" in rep.failed[0]
        assert probe.read_text() == "new\n" and journal.exists()
    finally:
        for p in procs:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGKILL)
            p.wait()


_TCP_RMEM_PROFILE = """
name: rmem
settings:
  - {kind: sysctl, name: net.ipv4.tcp_rmem, value: 4096 65536 1048576, why: w, source: s,
     risk: r}
"""


def test_host_changes_need_host_wide(tmp_path: Path) -> None:
    r = fabench("tune", "apply", "tcp-throughput", "--on", "local",
                env={"FABENCH_TUNE_JOURNAL": str(tmp_path / "j.json")})
    assert r.returncode == 2 and "--host-wide" in r.stderr
    r = fabench("tune", "apply", "tcp-throughput", "--host-wide", "--dry-run",
                env={"FABENCH_TUNE_JOURNAL": str(tmp_path / "j.json")})
    assert r.returncode == 0, r.stderr
    # Without --iface the host's own NICs are never in the plan.
    changes = r.stdout.split("# run-time")[0]
    assert " mtu:" not in changes and "quickack" not in changes and "rto_min" not in changes
    assert not (tmp_path / "j.json").exists()
