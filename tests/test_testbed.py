"""The namespace testbed itself: up/status/down, isolation of each host, cleanup after a
failed `up`, after kill -9 of fabench, and over many cycles; unprivileged where possible."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import pytest

from conftest import fabench_cli, fabench_run
from fabench.errors import FabenchError
from fabench.testbed import (
    TestbedConfig,
    TestbedState,
    create,
    destroy,
    leftovers,
    load_state,
)
from fabench.testbed.plumbing import _HOLD, HOLDER_MARK, holder_argv_ok
from fabench.testbed.state import queue_us

# Testbeds made, checked and removed: nothing here judges a time or a rate, so these share the
# first pass (each testbed carries this test's own name prefix).
pytestmark = pytest.mark.concurrent

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="these testbed tests run as root "
                                "(CI is root); test_unprivileged covers the other mode")


def _in(state_name: str, host: str, cmd: str) -> str:
    h = load_state(state_name).host(host)
    p = subprocess.run([*h.enter, "sh", "-c", cmd], capture_output=True, text=True,
                       timeout=60, check=False)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


@pytest.mark.netns
@needs_root
def test_four_hosts_up_status_down(tb: str) -> None:
    up = fabench_cli("testbed", "up", "--name", "four", "--hosts", "4", "--mtu", "9000",
                     "--rate", "2gbit", "--offloads", "off",
                     "--sysctl", "net.ipv4.tcp_rmem=4096 131072 6291456")
    assert "4 hosts" in up.stdout and "mtu 9000" in up.stdout
    st = load_state("four")
    assert st.complete and len(st.hosts) == 4
    addrs = [h.address for h in st.hosts]
    assert len(set(addrs)) == 4 and all(a.startswith(st.subnet.rsplit(".", 1)[0]) for a in addrs)

    for h in st.hosts:
        assert _in("four", h.name, "hostname") == h.name
        assert _in("four", h.name, "cat /sys/class/net/eth0/mtu") == "9000"
        assert _in("four", h.name, "sysctl -n net.ipv4.tcp_rmem").split() == \
            ["4096", "131072", "6291456"]
        assert "tbf" in _in("four", h.name, "tc qdisc show dev eth0")
        assert "tcp-segmentation-offload: off" in _in("four", h.name, "ethtool -k eth0")
    # Private /dev/shm and IPC: what h1 puts there, h2 and this host cannot see.
    tag = f"fbtest-{os.getpid()}"
    _in("four", "h1", f"touch /dev/shm/{tag}")
    assert tag not in _in("four", "h2", "ls /dev/shm")
    assert not Path(f"/dev/shm/{tag}").exists()
    assert _in("four", "h1", "readlink /proc/self/ns/ipc") != \
        _in("four", "h2", "readlink /proc/self/ns/ipc")
    # Names resolve to the testbed addresses; h1 reaches h4 through the switch.
    assert _in("four", "h1", "getent hosts h4").split()[0] == addrs[3]
    before = _in("four", "h4", "cat /sys/class/net/eth0/statistics/rx_bytes")
    _in("four", "h1", f"{sys.executable} -c \"import socket; s=socket.socket(); "
        f"s.settimeout(5); r=s.connect_ex(('h4', 9)); print(r)\"")
    after = _in("four", "h4", "cat /sys/class/net/eth0/statistics/rx_bytes")
    assert int(after) > int(before)  # the SYN (answered by a reset) crossed the bridge

    status = fabench_cli("testbed", "status", "four").stdout
    assert status.count(" up, eth0 ") == 4
    fabench_cli("testbed", "down", "four")
    assert leftovers(tb) == []
    assert "no testbeds" in fabench_cli("testbed", "status").stdout


def _tbf_lat_us(enter: list[str], dev: str) -> int:
    """The queue of the tbf on `dev`, as the kernel holds it (tc prints `lat` in us)."""
    p = subprocess.run([*enter, "tc", "-j", "qdisc", "show", "dev", dev], capture_output=True,
                       text=True, timeout=60, check=True)
    (tbf,) = [q for q in json.loads(p.stdout) if q["kind"] == "tbf"]
    return int(tbf["options"]["lat"])


def _link_ends(name: str) -> list[tuple[list[str], str]]:
    """Both rate-limited ends of every link: the host's eth0 and its switch port."""
    st = load_state(name)
    switch = ["ip", "netns", "exec", st.switch_ns]
    return [end for h in st.hosts for end in ((h.enter, h.ifname), (switch, h.port))]


@pytest.mark.netns
@needs_root
def test_queue_is_set_on_every_tbf_and_shown(tb: str) -> None:
    up = fabench_cli("testbed", "up", "--name", "q", "--hosts", "2", "--rate", "1gbit",
                     "--queue", "2ms")
    assert "queue 2ms" in up.stdout
    assert load_state("q").config.queue == "2ms"
    assert [_tbf_lat_us(e, d) for e, d in _link_ends("q")] == [2000] * 4
    assert "queue 2ms" in fabench_cli("testbed", "status", "q").stdout
    fabench_cli("testbed", "down", "q")
    # The default: deep enough that a sender's own TCP does not overflow it (docs/testbed.md).
    create("d", TestbedConfig(hosts=2, rate="100mbit"))
    assert [_tbf_lat_us(e, d) for e, d in _link_ends("d")] == [50_000] * 4
    # No rate, no tbf: a queue alone is refused rather than silently ignored.
    bad = fabench_run("testbed", "up", "--name", "n", "--queue", "5ms", check=False)
    assert bad.returncode == 2 and "give --rate too" in bad.stderr
    bad = fabench_run("testbed", "up", "--name", "n", "--rate", "1gbit", "--queue", "5",
                      check=False)
    assert bad.returncode == 2 and "--queue '5'" in bad.stderr


@pytest.mark.netns
def test_queue_durations_and_testbeds_recorded_before_the_option() -> None:
    assert [queue_us(q) for q in ("5ms", "500us", "0.5ms", "1s", "2MS")] == \
        [5000, 500, 500, 1_000_000, 2000]
    for bad in ("0ms", "5", "11s", "-1ms", "5 ms x"):
        with pytest.raises(FabenchError, match="--queue"):
            queue_us(bad)
    old = TestbedState("old", "fbx", "root", "10.77.9.0/24", "fbx-old-sw",
                       TestbedConfig(rate="1gbit"))
    data = json.loads(json.dumps(asdict(old)))
    del data["config"]["queue"]  # a state file written before --queue existed
    assert TestbedState.from_json(data).config.queue == "50ms"  # what tc was given then


@pytest.mark.netns
@needs_root
def test_failed_up_leaves_nothing(tb: str) -> None:
    # net.core.rmem_max is read-only inside a network namespace: `up` must fail and undo.
    proc = fabench_run("testbed", "up", "--name", "bad", "--hosts", "3",
                       "--sysctl", "net.core.rmem_max=16777216", check=False)
    assert proc.returncode == 2
    assert "net.core.rmem_max is not writable in a network namespace" in proc.stderr
    assert leftovers(tb) == []


@pytest.mark.netns
@needs_root
def test_down_after_kill_9_of_fabench(openmpi: str, tb: str, tmp_path: Path) -> None:
    """fabench dies hard in the middle of a run on a testbed it made for itself: no atexit,
    no signal handler. The ranks and the namespaces stay; `down --all` removes them."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "fabench", "bench", "mpi.latency", "--on", "testbed",
         "--transport", "tcp", "--sizes", "8", "--iterations", "100000000",
         "--out", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            state = [x for x in leftovers(tb) if x.startswith("state")]
            ranks = subprocess.run(["pgrep", "-f", "fb-mpi-latency --sizes 8 --iterations "
                                    "100000000"], capture_output=True, text=True).stdout.split()
            if state and len(ranks) >= 2:
                break
            time.sleep(0.2)
        else:
            pytest.fail("the run never started its ranks")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    left = leftovers(tb)
    assert any(x.startswith("netns") for x in left), left
    out = fabench_cli("testbed", "down", "--all").stdout
    assert "removed" in out
    assert leftovers(tb) == []
    time.sleep(0.5)
    ranks = subprocess.run(["pgrep", "-f", "fb-mpi-latency --sizes 8 --iterations 100000000"],
                           capture_output=True, text=True).stdout.split()
    assert ranks == []


def test_holders_are_matched_by_their_exact_command_line() -> None:
    py, hold = b"/usr/bin/python3", _HOLD.encode()
    mark = f"{HOLDER_MARK}:fbx-tb1".encode()
    assert holder_argv_ok([py, b"-c", hold, mark], "fbx")
    assert holder_argv_ok([py, b"-c", hold, mark + b":h12"], "fbx")
    assert not holder_argv_ok([py, b"-c", hold, mark], "fb")  # another prefix's
    assert not holder_argv_ok([py, b"-c", hold, mark + b":h1", b"x"], "fbx")
    assert not holder_argv_ok([py, b"-c", b"import time", mark], "fbx")
    assert not holder_argv_ok([b"grep", b"-c", hold, mark], "fbx")
    assert not holder_argv_ok([b"sleep", b"60", mark], "fbx")
    assert not holder_argv_ok([py, b"-c", hold, b"x" + mark], "fbx")


@pytest.mark.netns
@needs_root
def test_down_all_spares_processes_outside_the_testbed(tb: str) -> None:
    """`down --all` kills what runs inside the testbed's namespaces and its holders, nothing
    else: processes that merely carry the holder marker in their argv survive, and so does
    everything in this host's own network namespace, even next to a process shaped exactly
    like a holder there (as an unprivileged testbed's outer holder is)."""
    fabench_cli("testbed", "up", "--name", "spare", "--hosts", "2")
    st = load_state("spare")
    st.state_file.unlink()  # a crash lost the state file: leftovers are found by name
    marker = f"{HOLDER_MARK}:{tb}-spare"
    ghost_marker = f"{HOLDER_MARK}:{tb}-ghost"
    py = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
    decoys = [
        # sleeps whose argv carries the marker text, as argv[0] and as a whole fake command
        subprocess.Popen(["bash", "-c", f"exec -a {marker}:h1 sleep 60"]),
        subprocess.Popen(["bash", "-c", f"exec -a '{py} -c \"{_HOLD}\" {marker}' sleep 60"]),
        # a holder's argv with one argument more, and a python that does something else
        subprocess.Popen([py, "-c", _HOLD, marker, "extra"]),
        subprocess.Popen([py, "-c", "import time; time.sleep(60)", ghost_marker]),
    ]
    # Holder-shaped, in this host's network namespace: it may go, its neighbours may not.
    ghost = subprocess.Popen([py, "-c", _HOLD, ghost_marker])
    try:
        time.sleep(0.5)
        assert all(d.poll() is None for d in decoys)
        out = fabench_cli("testbed", "down", "--all").stdout
        assert "removed" in out
        time.sleep(0.3)
        assert [d.poll() for d in decoys] == [None] * len(decoys)
        assert ghost.wait(timeout=5) == -signal.SIGKILL
        assert leftovers(tb) == []
    finally:
        for d in [*decoys, ghost]:
            if d.poll() is None:
                os.kill(d.pid, signal.SIGKILL)
            d.wait()


@pytest.mark.netns
@needs_root
def test_twenty_cycles_leave_nothing(tb: str) -> None:
    netns_before = subprocess.run(["ip", "netns", "list"], capture_output=True,
                                  text=True).stdout
    for i in range(20):
        st = create(f"c{i}", TestbedConfig(hosts=2, rate="100mbit", mtu=9000))
        assert load_state(f"c{i}").complete
        assert destroy(st) == []
    assert leftovers(tb) == []
    after = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert tb not in after and tb not in netns_before


def _unprivileged_ok() -> bool:
    if os.geteuid() != 0:
        return True
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        sys.executable, "-c", "import fabench"], capture_output=True,
                       check=False)
    return p.returncode == 0


@pytest.mark.netns
@pytest.mark.skipif(not shutil.which("setpriv") and os.geteuid() == 0,
                    reason="setpriv is needed to drop root")
def test_unprivileged_up_exec_down(tmp_path: Path) -> None:
    """Without root: the whole testbed in a user namespace (unshare -r)."""
    if not _unprivileged_ok():
        pytest.skip("the installed fabench is not readable by an unprivileged user here")
    # pytest's tmp_path is private to root; the unprivileged user needs a directory it owns.
    top = Path(tempfile.mkdtemp(prefix="fbunpriv"))
    run_dir = top / "run"
    run_dir.mkdir()
    os.chmod(top, 0o755)
    if os.geteuid() == 0:
        os.chown(run_dir, 65534, 65534)
    script = """
import os, subprocess
from fabench.testbed import TestbedConfig, create, destroy, leftovers
st = create("u", TestbedConfig(hosts=3, mtu=9000, rate="1gbit", offloads=False))
try:
    assert st.mode == "userns", st.mode
    names = [subprocess.run([*h.enter, "hostname"], capture_output=True, text=True,
                            check=True).stdout.strip() for h in st.hosts]
    assert names == ["h1", "h2", "h3"], names
    # the ssh stand-in, from inside h1 to h3, as mpirun would use it
    out = subprocess.run([*st.hosts[0].enter, str(st.agent), "h3", "cat",
                          "/sys/class/net/eth0/mtu"], capture_output=True, text=True)
    assert out.stdout.strip() == "9000", out
finally:
    destroy(st)
assert leftovers() == [], leftovers()
print("unprivileged ok")
"""
    env = {**os.environ, "FABENCH_RUN_DIR": str(run_dir),
           "FABENCH_TESTBED_PREFIX": f"fbu{os.getpid() % 100000}"}
    argv = [sys.executable, "-c", script]
    if os.geteuid() == 0:
        argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120,
                           cwd=top, check=False)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    if p.returncode != 0 and "Operation not permitted" in p.stderr and "unshare" in p.stderr:
        pytest.skip(f"user namespaces are not allowed here: {p.stderr[-300:]}")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "unprivileged ok" in p.stdout


def test_a_zombie_is_not_running_and_wait_gone_does_not_wait_for_it() -> None:
    """`down` from another process than `up` meets holders and links that nobody reaps at
    once (a container's PID 1 may not): ended is ended, not 5 s more of waiting."""
    from fabench.host.process_identity import running, wait_gone

    child = subprocess.Popen(["sleep", "60"])
    try:
        assert running(child.pid)
        os.kill(child.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while running(child.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        # not reaped yet: the zombie's /proc entry is still there
        assert Path(f"/proc/{child.pid}").exists() and not running(child.pid)
        t = time.monotonic()
        wait_gone(child.pid, timeout=5.0)
        assert time.monotonic() - t < 2.0
        assert not Path(f"/proc/{child.pid}").exists()  # our own child: reaped
    finally:
        child.kill()
        child.wait()
    assert not running(child.pid)
