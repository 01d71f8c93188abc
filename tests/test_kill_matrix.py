"""The kill matrix of issue 31: every long-running command, ended by SIGTERM, SIGKILL or a
terminal's Ctrl-C (SIGINT to its process group) at a point of its run, leaves nothing once the
next fabench has started: no process it started (on this host or inside a testbed host), no
temporary file or directory, no `running` row, no tuning left applied inside the testbed, no
namespace, link or holder of a half-made testbed after `testbed down`.

What is left is found without fabench's own bookkeeping (its owner tag), so the same cases
judge a fabench that has none: every case runs fabench with a marker of its own in the
environment (children inherit it), a private TMPDIR, and a store of its own; processes that
appear inside the module's testbed namespaces count too. Ids read command-point-signal. With
FABENCH_KILL_TABLE=FILE each case appends what it found there (the issue's before/after
table)."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import fabench_cli, missing, own_testbeds
from fabench.host.process import descendants

MARK_ENV = "FBKILL_CASE"
WAIT_POINT_S = 120.0
GONE_S = 15.0  # the supervisor's grace (3 s) and a loaded host's slack

Point = Callable[["Case"], bool]


def _exe(pid: int) -> str:
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        return ""


def _marked(token: str) -> list[tuple[int, str]]:
    """Live processes carrying this case's marker: (pid, executable)."""
    key = f"{MARK_ENV}={token}".encode()
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            if key in (d / "environ").read_bytes().split(b"\0"):
                state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    out.append((int(d.name), _exe(int(d.name))))
        except OSError:
            continue
    return out


def _netns_pids(names: list[str]) -> set[int]:
    pids: set[int] = set()
    for ns in names:
        p = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True,
                           check=False)
        pids |= {int(x) for x in p.stdout.split()}
    return pids


def _sysctl_in(ns: str, key: str) -> str:
    p = subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-n", key], capture_output=True,
                       text=True, check=False)
    return " ".join(p.stdout.split())


def _rows(db: Path, sql: str) -> list[str]:
    if not db.exists():
        return []
    con = sqlite3.connect(db, timeout=10)
    try:
        return [str(r[0]) for r in con.execute(sql)]
    except sqlite3.Error:
        return []  # a store killed before its schema: nothing recorded, nothing running
    finally:
        con.close()


@dataclass
class Case:
    fb: "subprocess.Popen[str]"
    out: Path
    tmp: Path
    token: str
    stderr: Path
    env: dict[str, str]
    namespaces: list[str] = field(default_factory=list)

    def exes(self) -> list[str]:
        return [_exe(p) for p, _ in descendants(self.fb.pid)]

    def runs(self) -> list[str]:
        return _rows(self.out / "fabench.sqlite", "SELECT status FROM runs")


def ranks(exe: str, count: int = 2, min_runs: int = 0) -> Point:
    """Once `count` processes below fabench run `exe` (a prefix: fb-tcp- is any TCP kernel)
    and the store holds at least `min_runs` runs (a later pass, a later kernel)."""
    return lambda c: (sum(e.startswith(exe) for e in c.exes()) >= count
                      and len(c.runs()) >= min_runs)


def runs_ok(n: int) -> Point:
    """Once n runs are stored ok: the next kernel is being started."""
    return lambda c: c.runs().count("ok") >= n


# ---- the module's testbed ----------------------------------------------------------------

@dataclass
class Bed:
    name: str
    prefix: str
    namespaces: list[str]


@pytest.fixture(scope="module")
def bed() -> Iterator[Bed]:
    """One 4-host testbed for every case that runs on one; the slow link h2-h3 makes the
    matrix retest (its second point). A kill leaves it as it was: the cases prove that.
    20 Mbit/s, not 50: in a concurrent pass on a loaded host the healthy links spread over
    13x (144-1850 MB/s at 256K), and a CI run's first pass once scored the 50 Mbit/s link
    under the threshold, so the matrix ended without the retest this file kills."""
    if os.geteuid() != 0:
        missing("needs root (network namespaces)")
    prefix = "fbkm" + uuid.uuid4().hex[:4]
    with own_testbeds(prefix):
        fabench_cli("testbed", "up", "--name", "k", "--hosts", "4",
                    "--impair", "h2-h3:rate=20mbit")
        ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                            check=True).stdout.split()
        yield Bed("k", prefix, sorted(n for n in ns if n.startswith(f"{prefix}-k-")))


# ---- one case ------------------------------------------------------------------------------

def _start(argv: list[str], tmp_path: Path, env: dict[str, str]) -> Case:
    token = uuid.uuid4().hex
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    err = tmp_path / "stderr"
    fb = subprocess.Popen(
        [sys.executable, "-m", "fabench", *argv], stdout=subprocess.DEVNULL,
        stderr=err.open("w"), text=True, start_new_session=True, cwd=tmp_path,
        env={**os.environ, **env, MARK_ENV: token, "TMPDIR": str(tmp)})
    return Case(fb, tmp_path / "out", tmp, token, err, env)


def _wait(case: Case, point: Point) -> None:
    deadline = time.monotonic() + WAIT_POINT_S
    while time.monotonic() < deadline:
        if point(case):
            return
        if case.fb.poll() is not None:
            pytest.fail(f"fabench ended ({case.fb.returncode}) before the point:\n"
                        + case.stderr.read_text()[-3000:])
        time.sleep(0.05)
    pytest.fail(f"point not reached in {WAIT_POINT_S:.0f} s")


def _signal(case: Case, sig: int) -> None:
    if sig == signal.SIGINT:  # a terminal's Ctrl-C reaches the foreground process group
        os.killpg(case.fb.pid, sig)
    else:
        os.kill(case.fb.pid, sig)
    try:
        case.fb.wait(timeout=90)
    except subprocess.TimeoutExpired:
        pytest.fail(f"fabench did not end within 90 s of {signal.Signals(sig).name}")


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _left(case: Case, before_ns: set[int], next_start: list[str],
          extra: Callable[[], list[str]], stays: Callable[[int], bool]) -> dict[str, list[str]]:
    # time for the supervisor to end what the killed fabench started, less what rightly
    # outlives it until the next start (`stays`): waiting for those waited all of GONE_S
    deadline = time.monotonic() + GONE_S
    while time.monotonic() < deadline and (
            [p for p, _ in _marked(case.token) if not stays(p)]
            or _netns_pids(case.namespaces) - before_ns):
        time.sleep(0.2)
    # the next start: it reaps what a dead fabench left and marks its rows interrupted
    fabench_cli(*next_start, check=False, env={**case.env, "TMPDIR": str(case.tmp)})
    time.sleep(0.5)
    db = case.out / "fabench.sqlite"
    return {
        "processes": sorted({e or "?" for _, e in _marked(case.token)}
                            | {_exe(p) or "?" for p in _netns_pids(case.namespaces)
                               - before_ns}),
        "temp": sorted(p.name for p in case.tmp.iterdir()),
        "running": [f"run {s}" for s in _rows(db, "SELECT status FROM runs")
                    if s == "running"]
        + [f"campaign {s}" for s in _rows(db, "SELECT status FROM campaigns")
           if s == "running"],
        "other": extra(),
    }


def _cleanup(case: Case, before_ns: set[int]) -> None:
    """A failed case's leftovers, by PID: only what carries its marker or is new in the
    module's testbed (both started by this case)."""
    if case.fb.poll() is None:
        case.fb.kill()
        case.fb.wait()
    for pid in [p for p, _ in _marked(case.token)] + sorted(
            _netns_pids(case.namespaces) - before_ns):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def kill_case(request: pytest.FixtureRequest, tmp_path: Path, argv: list[str], point: Point,
              sig: int, *, env: dict[str, str] | None = None, bed: Bed | None = None,
              next_start: list[str] | None = None,
              extra: Callable[[], list[str]] = list,
              stays: Callable[[int], bool] = lambda pid: False) -> dict[str, list[str]]:
    namespaces = bed.namespaces if bed else []
    before_ns = _netns_pids(namespaces)
    case = _start(argv, tmp_path, env or {})
    case.namespaces = namespaces
    try:
        _wait(case, point)
        _signal(case, sig)
        err = case.stderr.read_text()
        if sig != signal.SIGKILL:
            assert "Traceback" not in err, err[-3000:]
            assert case.fb.returncode in (128 + sig, -sig), (case.fb.returncode, err[-2000:])
        left = _left(case, before_ns, next_start or ["report", "--store", str(case.out),
                                                     "-o", str(tmp_path / "r.html")], extra,
                     stays)
    finally:
        _cleanup(case, before_ns)
    table = os.environ.get("FABENCH_KILL_TABLE")
    if table:
        with open(table, "a") as f:
            f.write(json.dumps({"case": request.node.name, **left}) + "\n")
    return left


def _nothing(left: dict[str, list[str]]) -> None:
    assert left == {"processes": [], "temp": [], "running": [], "other": []}, left


SIGS = [pytest.param(s, id=s.name) for s in (signal.SIGTERM, signal.SIGKILL, signal.SIGINT)]
TERM_KILL = SIGS[:2]


# ---- run: a campaign of several kernels -----------------------------------------------------

RUN_SPEC = """\
name: killrun
runs:
  - kernel: mpi.latency
    ranks: 2
    sizes: "8"
    iterations: 20
  - kernel: mpi.bw
    ranks: 2
    sizes: "8"
    iterations: 1000000000
"""


@pytest.mark.parametrize("sig", SIGS)
@pytest.mark.parametrize("point", ["between-kernels", "in-kernel"])
def test_run(request: pytest.FixtureRequest, tmp_path: Path, openmpi: str, point: str,
             sig: int) -> None:
    """Between kernels: the first run is stored and the second being started; in a kernel:
    the second kernel's ranks run."""
    spec = tmp_path / "c.yaml"
    spec.write_text(RUN_SPEC)
    at = runs_ok(1) if point == "between-kernels" else ranks("fb-mpi-bw")
    _nothing(kill_case(request, tmp_path, ["run", str(spec), "--out", str(tmp_path / "out")],
                       at, sig))


# ---- accept, diagnose, sim: one long kernel -------------------------------------------------

ACCEPT_SPEC = """\
name: killacc
checks:
  - check: latency_us <= 1000 @ 8
    transport: shm
    iterations: 1000000000
"""


@pytest.mark.parametrize("sig", TERM_KILL)
@pytest.mark.parametrize("point", ["in-kernel"])
def test_accept(request: pytest.FixtureRequest, tmp_path: Path, openmpi: str, point: str,
                sig: int) -> None:
    spec = tmp_path / "a.yaml"
    spec.write_text(ACCEPT_SPEC)
    _nothing(kill_case(request, tmp_path, ["accept", str(spec), "--out", str(tmp_path / "out")],
                       ranks("fb-mpi-latency"), sig))


@pytest.mark.parametrize("sig", TERM_KILL)
@pytest.mark.parametrize("point", ["in-kernel"])
def test_diagnose_transports(request: pytest.FixtureRequest, tmp_path: Path, openmpi: str,
                             point: str, sig: int) -> None:
    argv = ["diagnose", "transports", "--mpi", "openmpi", "--path", "ucx:posix", "--sizes", "8",
            "--iterations", "1000000000", "--rounds", "1", "--no-prove", "--out",
            str(tmp_path / "out")]
    _nothing(kill_case(request, tmp_path, argv, ranks("fb-mpi-"), sig))


SHM = Path("/dev/shm")


@pytest.mark.parametrize("sig", TERM_KILL)
@pytest.mark.parametrize("point", ["in-kernel"])
def test_ofi_shm(request: pytest.FixtureRequest, tmp_path: Path, point: str, sig: int) -> None:
    """A libfabric shm run killed mid-kernel leaves no shared-memory region: each side's
    endpoint region (16 MiB in /dev/shm) carries fabench's owner tag, and the supervisor or the
    next start removes a dead owner's. Before, the regions were named after the kernel's pid
    alone and outlived it, and a later kernel that drew the same pid failed (fi_enable: EBUSY):
    a clean CI lost a test that way."""
    argv = ["bench", "ofi.bw", "--transport", "ofi:shm", "--sizes", "64K", "--iterations",
            "100000000", "--out", str(tmp_path / "out")]
    mine: list[str] = []

    def regions_up(c: Case) -> bool:
        if not mine:
            mine.append(f"fabench-shm-o{c.fb.pid}.")
        return len(list(SHM.glob(mine[0] + "*"))) == 2

    def regions_left() -> list[str]:
        return sorted(p.name for p in SHM.glob(mine[0] + "*"))
    try:
        _nothing(kill_case(request, tmp_path, argv, regions_up, sig, extra=regions_left))
    finally:
        for p in SHM.glob(mine[0] + "*") if mine else []:
            p.unlink(missing_ok=True)


@pytest.fixture(scope="module")
def smpirun() -> None:
    if subprocess.run(["sh", "-c", "command -v smpirun"], capture_output=True,
                      check=False).returncode:
        missing("SimGrid not installed (libsimgrid-dev)")


@pytest.mark.sim
@pytest.mark.parametrize("sig", SIGS)
@pytest.mark.parametrize("point", ["simulating"])
def test_sim(request: pytest.FixtureRequest, tmp_path: Path, smpirun: None, point: str,
             sig: int) -> None:
    argv = ["sim", "mpi.allreduce", "--fabric", "roce-100g", "--nodes", "16", "--iterations",
            "100000000", "--out", str(tmp_path / "out")]
    _nothing(kill_case(request, tmp_path, argv, ranks("smpimain", 1), sig))


# ---- on the module's testbed ----------------------------------------------------------------

@pytest.mark.concurrent
@pytest.mark.netns
@pytest.mark.parametrize("sig", SIGS)
@pytest.mark.parametrize("point", ["first-pass", "retest"])
@pytest.mark.parametrize("kernel", ["mpi", "tcp"])
def test_matrix(request: pytest.FixtureRequest, tmp_path: Path, openmpi: str, bed: Bed,
                kernel: str, point: str, sig: int) -> None:
    if sig == signal.SIGINT and point == "retest":
        pytest.skip("Ctrl-C once per kernel: the first pass")
    exe = "fb-mpi-matrix" if kernel == "mpi" else "fb-tcp-"
    argv = ["matrix", "--kernel", kernel, "--on", "testbed", bed.name, "--size", "256K",
            "--out", str(tmp_path / "out")]
    if kernel == "mpi":  # half the windows: the slow link's 4 MB would take 1.7 s a direction
        argv += ["--iterations", "2"]
    if kernel == "mpi" and point == "retest":
        # the retest needs the first pass to flag the slow link: measured one pair at a time
        # (the others parked) it scored 16-40 beside two busy loops, concurrently 4.7-25, and
        # two CI runs' loaded concurrent passes flagged nothing (exit 0 before the retest)
        argv += ["--isolated"]
    at = ranks(exe, 2, min_runs=1 if point == "first-pass" else 2)
    _nothing(kill_case(request, tmp_path, argv, at, sig, bed=bed))


TUNE_KEY = "net.ipv4.tcp_slow_start_after_idle"
TUNE_PROFILE = f"""\
name: killtune
settings:
  - {{kind: sysctl, name: {TUNE_KEY}, value: "0", why: w, source: "[measured]", risk: r}}
"""


@pytest.mark.concurrent
@pytest.mark.netns
@pytest.mark.parametrize("sig", SIGS)
@pytest.mark.parametrize("point", ["B-applied"])
def test_tune_ab(request: pytest.FixtureRequest, tmp_path: Path, openmpi: str, bed: Bed,
                 point: str, sig: int) -> None:
    """Killed while B runs with the profile applied inside the testbed hosts: after the next
    start every host has its own value again and no journal is pending."""
    hosts = [n for n in bed.namespaces if not n.endswith("-sw")]
    before = {n: _sysctl_in(n, TUNE_KEY) for n in hosts}
    assert set(before.values()) == {"1"}, before
    prof = tmp_path / "p.yaml"
    prof.write_text(TUNE_PROFILE)
    journal = tmp_path / "journal.json"
    argv = ["tune", "ab", str(prof), "--bench", "tcp.latency", "--rounds", "1",
            "--sizes", "8", "--iterations", "15000", "--on", "testbed", bed.name,
            "--journal", str(journal), "--out", str(tmp_path / "out")]

    def b_applied(c: Case) -> bool:
        return ranks("fb-tcp-latency", 2)(c) and _sysctl_in(hosts[0], TUNE_KEY) == "0"

    def tuning() -> list[str]:
        now = {n: _sysctl_in(n, TUNE_KEY) for n in hosts}
        return ([f"{n} {TUNE_KEY}={v}" for n, v in now.items() if v != before[n]]
                + (["journal pending"] if journal.exists() else []))

    left = kill_case(request, tmp_path, argv, b_applied, sig, bed=bed, extra=tuning)
    try:
        _nothing(left)
    finally:  # a leak must not reach the next case
        for n, v in before.items():
            subprocess.run(["ip", "netns", "exec", n, "sysctl", "-qw", f"{TUNE_KEY}={v}"],
                           check=False)
        journal.unlink(missing_ok=True)


@pytest.mark.concurrent
@pytest.mark.netns
@pytest.mark.parametrize("sig", SIGS)
@pytest.mark.parametrize("point", ["half-made"])
def test_testbed_up(request: pytest.FixtureRequest, tmp_path: Path, point: str,
                    sig: int) -> None:
    """Killed with some of its hosts made: `testbed down` (the next start) removes every
    namespace, link, holder and state file. The made hosts' holders outlive a SIGKILL until
    then (a testbed outlives the command that made it); found by the mark in their command
    line, they are only not waited for before the next start, and count after it."""
    if os.geteuid() != 0:
        missing("needs root (network namespaces)")
    from fabench.testbed import destroy_all, leftovers
    from fabench.testbed.plumbing import HOLDER_MARK

    prefix = "fbku" + uuid.uuid4().hex[:4]
    env = {"FABENCH_TESTBED_PREFIX": prefix}

    def half_made(c: Case) -> bool:
        ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                            check=False).stdout
        return ns.count(f"{prefix}-h-") >= 3

    try:
        left = kill_case(request, tmp_path, ["testbed", "up", "--name", "h", "--hosts", "8"],
                         half_made, sig, env=env,
                         next_start=["testbed", "down", "h"],
                         extra=lambda: leftovers(prefix),
                         stays=lambda pid: HOLDER_MARK.encode() in _cmdline(pid))
    finally:
        destroy_all(prefix)
    _nothing(left)
