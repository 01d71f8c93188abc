"""Kill tests (issue 31): a long-running command ended by SIGTERM or SIGKILL at a point of its
run leaves nothing behind once the next fabench has started: no process it started (mpirun,
ranks, hpcc, aggressors inside testbed hosts), no temporary directory of it, no `running'
record. SIGKILL cannot be caught: what ends the children is their parent-death signal and the
supervisor that outlives fabench (fabench.host.process), not fabench's own teardown."""

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import (
    Procs,
    fabench_cli,
    kill_left,
    missing,
    own_testbeds,
    wait_for_children,
    wait_gone,
)
from fabench.host.leftovers import OWNER_ENV, owner_tag, reap_orphans, tagged
from fabench.host.proc_stat import running


def _start(*args: str) -> "subprocess.Popen[str]":
    return subprocess.Popen([sys.executable, "-m", "fabench", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _statuses(db_path: Path) -> tuple[list[str], list[str]]:
    db = sqlite3.connect(db_path)
    try:
        runs = [r[0] for r in db.execute("SELECT status FROM runs")]
        camps = [r[0] for r in db.execute("SELECT status FROM campaigns")]
    finally:
        db.close()
    return runs, camps


def _temp_dirs_of(pid: int) -> list[str]:
    return [d.name for d in Path(tempfile.gettempdir()).glob(f"fabench-*-o{pid}.*")]


def _left_after(fb: "subprocess.Popen[str]", tree: Procs, out: Path) -> None:
    """Nothing of fb once the next fabench has started: its processes, temp dirs, `running`
    rows."""
    wait_gone(tree, timeout_s=20)
    # the next start: it reaps what a dead fabench left and marks its rows interrupted
    fabench_cli("report", "--store", str(out), "-o", str(out / "r.html"), check=False)
    assert _temp_dirs_of(fb.pid) == []
    assert not [p for p, (tag, _) in tagged().items() if tag.startswith(f"{fb.pid}:")]
    runs, camps = _statuses(out / "fabench.sqlite")
    assert "running" not in runs + camps, (runs, camps)


# (point, executable that marks it, how many)
BENCH_POINTS = [("launch", "orterun", 1), ("ranks", "fb-mpi-latency", 2)]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
@pytest.mark.parametrize(("point", "exe", "count"), BENCH_POINTS)
def test_bench_killed_leaves_nothing(tmp_path: Path, openmpi: str, sig: int, point: str,
                                     exe: str, count: int) -> None:
    fb = _start("bench", "mpi.latency", "--sizes", "8", "--iterations", "1000000000",
                "--out", str(tmp_path))
    tree: Procs = []
    try:
        tree = wait_for_children(fb, exe, count)
        os.kill(fb.pid, sig)
        fb.communicate(timeout=60)
        assert fb.returncode in (-sig, 128 + sig)
        _left_after(fb, tree, tmp_path)
    finally:
        kill_left(fb, tree)


@pytest.mark.concurrent
@pytest.mark.hpcc
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_hpl_nodes_killed_leaves_nothing(tmp_path: Path, openmpi: str, sig: int) -> None:
    """While hpcc runs: after SIGTERM fabench itself stores the run and the campaign as
    interrupted (it said so, and they stayed `running`); after SIGKILL mpirun, hpcc and the
    run directory are gone all the same."""
    if not Path("/usr/bin/hpcc").exists():
        missing("hpcc not installed (apt-get install hpcc)")
    fb = _start("hpl", "nodes", "--sizes", "3000", "--ranks-per-node", "1",
                "--out", str(tmp_path))
    tree: Procs = []
    try:
        tree = wait_for_children(fb, "hpcc", 1)
        time.sleep(0.5)
        os.kill(fb.pid, sig)
        _, err = fb.communicate(timeout=60)
        if sig == signal.SIGTERM:
            assert fb.returncode == 128 + sig and "Traceback" not in err, err
            runs, camps = _statuses(tmp_path / "fabench.sqlite")
            assert runs == ["interrupted"] and camps == ["interrupted"], (runs, camps)
        _left_after(fb, tree, tmp_path)
    finally:
        kill_left(fb, tree)


# Serial: reap_orphans ends every dead owner's leftovers on the host, so either test, beside the
# other in a second worker, reaps what the other planted before the other looks.
@pytest.mark.serial
def test_a_dead_owners_leftovers_are_reaped_at_the_next_start(tmp_path: Path) -> None:
    """Should the supervisor be killed too, the next fabench start ends what carries a dead
    owner's tag and removes its temporary directories; a live owner's are left alone."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    tag = f"{dead.pid}:1"  # a pid:start that names no process now
    left = subprocess.Popen(["sleep", "300"], env={**os.environ, OWNER_ENV: tag})
    keep = subprocess.Popen(["sleep", "300"], env={**os.environ, OWNER_ENV: owner_tag()})
    d = Path(tempfile.mkdtemp(prefix=f"fabench-x-o{dead.pid}.1-"))
    # shared-memory regions named like the ofi kernels' (native/transport/ofi.c)
    pid, _, start = owner_tag().partition(":")
    region = Path(f"/dev/shm/fabench-shm-o{dead.pid}.1-{uuid.uuid4().hex}-0")
    live_region = Path(f"/dev/shm/fabench-shm-o{pid}.{start}-{uuid.uuid4().hex}-0")
    region.write_bytes(b"r")
    live_region.write_bytes(b"r")
    try:
        said = reap_orphans()
        assert left.wait(timeout=10) is not None
        assert keep.poll() is None
        assert not d.exists()
        assert not region.exists() and live_region.exists()
        assert any(str(left.pid) in s for s in said), said
    finally:
        region.unlink(missing_ok=True)
        live_region.unlink(missing_ok=True)
        for p in (left, keep):
            if p.poll() is None:
                p.kill()
                p.wait()


def _needs_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("testbeds with fb-link need root (TAP devices)")


@pytest.fixture(scope="module")
def four_hosts() -> Iterator[str]:
    """One 4-host testbed for both signals: a kill leaves it as it was (the test proves the
    processes inside are gone), so the second test needs no new one."""
    _needs_root()
    with own_testbeds("fbkl" + uuid.uuid4().hex[:4]):
        fabench_cli("testbed", "up", "--name", "k", "--hosts", "4")
        yield "k"


@pytest.mark.concurrent
@pytest.mark.slow
@pytest.mark.netns
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_congestion_killed_with_aggressors_running(tmp_path: Path, openmpi: str,
                                                   four_hosts: str, sig: int) -> None:
    """The issue's case: killed right after the aggressors started, the streams inside the
    testbed hosts ran on for a day at 30-40 % CPU each. Now they end with fabench. The
    isolated phase comes first: short (1000 iterations, not 100000); the aggressors then
    settle for 30 s before the next victim, the window in which the signal comes."""
    fb = _start("congestion", "--on", "testbed", four_hosts, "--victim", "latency",
                "--aggressor", "incast", "--rounds", "1", "--iterations", "1000",
                "--settle", "30", "--out", str(tmp_path))
    tree: Procs = []
    try:
        tree = wait_for_children(fb, "fb-tcp-streams", 4)
        os.kill(fb.pid, sig)
        fb.communicate(timeout=60)
        _left_after(fb, tree, tmp_path)
    finally:
        kill_left(fb, tree)


def test_every_program_starts_through_process_popen() -> None:
    """The parent-death signal and the owner tag are set in one place: a Popen or run of
    subprocess anywhere else would start a child that outlives a killed fabench. The one
    exception is host/leftovers.py's undo, which must outlive its sweeper and says so on its
    line (`outlive=True`): the supervisor that runs it imports nothing of process.py's."""
    src = Path(__file__).resolve().parent.parent / "src" / "fabench"
    offenders = [f"{p.relative_to(src)}:{i}" for p in src.rglob("*.py")
                 if p.name != "process.py"
                 for i, line in enumerate(p.read_text().splitlines(), 1)
                 if ("subprocess.Popen(" in line or "subprocess.run(" in line
                     or "subprocess.call(" in line or "subprocess.check_output(" in line)
                 and not (p.name == "leftovers.py" and "outlive=True" in line)]
    assert offenders == []


# The child holds none of the parent's pipes: the test's wait for the parent's output would
# otherwise last as long as the child does.
PARENT = """\
import os, signal, subprocess, sys
from fabench.host import process
from fabench.host.process import popen
if sys.argv[1] == "preexec":  # as where setpriv is missing or has no --pdeathsig
    process._pdeathsig_prefix = lambda: None
child = popen([sys.executable, "-c", "import signal, time; "
               "signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); "
               "time.sleep(60)"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
child.stdout.readline()  # armed: the child runs its own code
print(child.pid, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("armed_by", ["setpriv", "preexec"])
def test_a_child_dies_with_its_parent_at_once(armed_by: str) -> None:
    """A program fabench starts gets SIGKILL the moment fabench dies, SIGKILL included: its
    parent-death signal (armed through setpriv where it has --pdeathsig, by a preexec_fn
    elsewhere). The child here ignores SIGTERM, so the supervisor (SIGTERM, then SIGKILL
    after TERM_GRACE_S = 3 s) cannot be what ends it within a second."""
    if armed_by == "setpriv" and shutil.which("setpriv") is None:
        missing("setpriv (util-linux) not installed")
    parent = subprocess.run([sys.executable, "-c", PARENT, armed_by], capture_output=True,
                            text=True, timeout=60)
    assert parent.returncode == -signal.SIGKILL, parent.stderr
    child = int(parent.stdout.split()[0])
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline and running(child):
        time.sleep(0.02)
    gone = not running(child)  # a zombie has ended; its new parent reaps it when it will
    if not gone:
        os.kill(child, signal.SIGKILL)
    assert gone, "the child outlived its parent by a second"


def test_a_missing_program_is_file_not_found() -> None:
    """Through setpriv too, a program that is not there raises what Popen raises, before
    anything starts (callers turn it into `not found`, exit 127)."""
    from fabench.host.process import popen, run_capture

    with pytest.raises(FileNotFoundError):
        popen(["fabench-no-such-program"])
    with pytest.raises(FileNotFoundError):
        popen(["./fabench-no-such-program"], cwd="/")
    assert run_capture(["fabench-no-such-program"]).returncode == 127


@pytest.mark.serial
def test_a_dead_owners_undo_runs_once_and_only_from_its_own_directory(tmp_path: Path) -> None:
    """What a killed fabench registered to undo (tune ab's revert) runs at the next start,
    once; a registration anybody else could have written (a 0777 directory, a link) in the
    shared /tmp never runs as root. The registered command here copies a store: its copy
    shows that it ran."""
    from fabench.store.database import Store

    src = tmp_path / "s.sqlite"
    Store(src).close()
    dead = subprocess.Popen(["true"])
    dead.wait()
    regs = []
    for i, (mode, link) in enumerate([(0o700, False), (0o777, False), (0o700, True)]):
        d = Path(tempfile.mkdtemp(prefix=f"fabench-undo-o{dead.pid}.1-"))
        args = json.dumps(["store", "copy", str(src), str(tmp_path / f"copy{i}.sqlite")])
        if link:
            (tmp_path / "elsewhere.json").write_text(args)
            (d / "undo.json").symlink_to(tmp_path / "elsewhere.json")
        else:
            (d / "undo.json").write_text(args)
        d.chmod(mode)
        regs.append(d)
    try:
        said = reap_orphans()
        assert (tmp_path / "copy0.sqlite").exists(), said
        assert not (tmp_path / "copy1.sqlite").exists(), said
        assert not (tmp_path / "copy2.sqlite").exists(), said
        assert not any(d.exists() for d in regs)
        assert sum("ran fabench store copy" in s for s in said) == 1, said
    finally:
        for d in regs:
            if d.exists():
                shutil.rmtree(d)
