"""Slurm for real: a private munged, slurmctld and slurmd on this host (one node), a 2-rank
campaign `--on slurm`, and the kept sbatch script submitted again by hand; and a two-node
Slurm whose nodes are the hosts of a namespace testbed (one slurmd in each)."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import fabench_cli, missing, own_testbeds
from fabench.records import ResultRecord
from fabench.store.database import RunRow, Store
from fabench.testbed import TestbedConfig, create


@pytest.fixture(autouse=True)
def _slurm_installed() -> None:
    if not all(shutil.which(t) for t in ("slurmctld", "slurmd", "munged", "sbatch")):
        missing("slurm-wlm and munge are not installed (scripts/debian-packages.txt)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# What both private clusters run with: no cgroups, no accounting, the simplest scheduler.
_PLUGINS = """\
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
"""


def _conf(d: Path) -> str:
    node = socket.gethostname().split(".")[0]
    return f"""ClusterName=fbtest
SlurmctldHost={node}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={d}/munge.sock
CredType=cred/munge
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
{_PLUGINS}NodeName={node} CPUs={os.cpu_count()} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


def _stop(procs: list[subprocess.Popen[bytes]], d: Path) -> None:
    """The daemons a fixture started, by PID, newest first; then its directory."""
    for p in reversed(procs):
        p.send_signal(signal.SIGTERM)
    for p in reversed(procs):
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def slurm() -> Iterator[dict[str, str]]:
    if os.geteuid() != 0:
        missing("a private slurmd needs root (SlurmUser=root, proctrack/linuxproc)")
    # A short path: munge's socket path must fit a sockaddr_un.
    d = Path(tempfile.mkdtemp(prefix="fbslurm"))
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for sub in ("state", "spool"):
            (d / sub).mkdir()
        subprocess.run(["mungekey", "-c", "-k", str(d / "munge.key")], check=True,
                       capture_output=True)
        (d / "munge.key").chmod(0o600)
        conf = d / "slurm.conf"
        conf.write_text(_conf(d))
        env = {**os.environ, "SLURM_CONF": str(conf)}
        log = (d / "daemons.log").open("ab")
        procs.append(subprocess.Popen(
            ["munged", "-F", "--force", f"--key-file={d}/munge.key", f"--socket={d}/munge.sock",
             f"--pid-file={d}/munged.pid", f"--log-file={d}/munged.log",
             f"--seed-file={d}/munged.seed"], stdout=log, stderr=log))
        for _ in range(50):
            if (d / "munge.sock").exists():
                break
            time.sleep(0.1)
        for daemon in ("slurmctld", "slurmd"):
            procs.append(subprocess.Popen([daemon, "-D", "-f", str(conf)], env=env,
                                          stdout=log, stderr=log))
        for _ in range(100):
            p = subprocess.run(["sinfo", "-h", "-o", "%t"], env=env, capture_output=True,
                               text=True, check=False)
            if "idle" in p.stdout:
                break
            time.sleep(0.2)
        else:
            pytest.fail("slurmd never became idle:\n" + (d / "daemons.log").read_text()[-2000:])
        yield {"SLURM_CONF": str(conf), "dir": str(d)}
    finally:
        _stop(procs, d)


SPEC = """\
name: slurm-two-settings
runs:
  - kernel: [mpi.latency, mpi.bw]
    transport: [shm, tcp]
    ranks: 2
    sizes: "8,64K"
    iterations: 100
    warmup: 10
"""


@pytest.mark.slow  # ~33 s here: daemons, four jobs, and the whole campaign again by hand
def test_campaign_on_slurm_and_script_kept(openmpi: str, slurm: dict[str, str],
                                           tmp_path: Path) -> None:
    spec = tmp_path / "c.yaml"
    spec.write_text(SPEC)
    out = tmp_path / "out"
    env = {"SLURM_CONF": slurm["SLURM_CONF"]}
    proc = fabench_cli("run", str(spec), "--on", "slurm", "--out", str(out), "--no-progress",
                       env=env, timeout=300)
    assert "on slurm" in proc.stdout
    with Store(out / "fabench.sqlite") as st:
        runs = st.runs(1)
        assert len(runs) == 4
        for r in runs:
            assert r.status == "ok", (r.reason, r.stderr_tail[-500:])
            assert r.launcher == "slurm"
            job = r.provenance["slurm"]
            assert job["state"] == "COMPLETED"
            assert job["script"].startswith("#!/bin/bash\n#SBATCH")
            assert Path(job["script_path"]).is_file()
            assert len(list(st.results(r.id))) == 2
        # The library's own report travels back through the job's stderr file.
        assert {r.selected_transport for r in runs} == {"ob1/vader", "ob1/tcp"}

    # The campaign as one job, as a user would submit it by hand.
    campaign = out / "slurm" / "campaign.sbatch"
    text = campaign.read_text()
    # Ranks are started by srun itself (Slurm's PMIx), the transport request travels as
    # OMPI_MCA_* variables.
    assert text.count("srun --mpi=pmix --ntasks=2") == 4 and "#SBATCH --ntasks=2" in text
    assert "export OMPI_MCA_btl=tcp,self" in text and "mpirun" not in text
    hand_out = tmp_path / "by-hand.out"
    # Submitted from the scripts' directory, as a user would: the job writes its interface
    # counter snapshots into its working directory.
    sub = subprocess.run(["sbatch", "--parsable", "--wait", f"--output={hand_out}",
                          str(campaign)], env={**os.environ, **env}, capture_output=True,
                         text=True, timeout=240, check=False, cwd=campaign.parent)
    assert sub.returncode == 0, sub.stderr
    hand_job = sub.stdout.strip().split(";", 1)[0]
    # Every run's counters, before and after, on the allocation's one node.
    assert len(list(campaign.parent.glob(f"run-*.{hand_job}.*.netdev"))) == 4 * 2
    records = [json.loads(ln) for ln in hand_out.read_text().splitlines()
               if ln.startswith("{")]
    results = [r for r in records if r.get("type") == "result"]
    assert len(results) == 8  # 4 runs x 2 sizes
    assert {r["kernel"] for r in results} == {"mpi.latency", "mpi.bw"}


@pytest.mark.slow  # ~15 s: two one-run jobs
def test_bench_on_slurm_with_mpirun_starter_and_mpich(openmpi: str, mpich: str,
                                                      slurm: dict[str, str],
                                                      tmp_path: Path) -> None:
    env = {"SLURM_CONF": slurm["SLURM_CONF"]}
    # fabench's own timeout (it cancels the job) well inside the test's, so a hung job never
    # outlives the test.
    common = ["--sizes", "8", "--iterations", "50", "--json", "--timeout", "120"]
    # mpirun inside the allocation, for sites whose Slurm has no PMIx plugin.
    p = fabench_cli("bench", "mpi.latency", "--on", "slurm:mpirun", *common, "--transport",
                    "tcp", "--out", str(tmp_path / "a"), env=env, timeout=240)
    [row] = [json.loads(ln) for ln in p.stdout.splitlines()]
    assert row["status"] == "ok" and row["selected_transport"] == "ob1/tcp"
    [script] = (tmp_path / "a" / "slurm").glob("run-*.sbatch")
    assert "mpirun.openmpi" in script.read_text()
    # MPICH started by srun through PMI-2, steered by UCX_TLS, its choice read from UCX. Shared
    # memory: MPICH 4.0 + UCX 1.13 over tcp once hung after wire-up in this job (CI run at
    # stop 8), which is the library's, not the launch's.
    p = fabench_cli("bench", "mpi.latency", "--on", "slurm", "--mpi", mpich, *common,
                    "--transport", "shm", "--out", str(tmp_path / "b"), env=env, timeout=240)
    [row] = [json.loads(ln) for ln in p.stdout.splitlines()]
    assert row["status"] == "ok" and row["selected_transport"].startswith("ch4:ucx/")
    [script] = (tmp_path / "b" / "slurm").glob("run-*.sbatch")
    assert "srun --mpi=pmi2" in script.read_text()


@pytest.mark.slow  # ~8 s: one one-run job
def test_slurm_run_records_interface_bytes_of_each_node(openmpi: str, slurm: dict[str, str],
                                                        tmp_path: Path) -> None:
    env = {"SLURM_CONF": slurm["SLURM_CONF"]}
    out = tmp_path / "out"
    fabench_cli("bench", "mpi.latency", "--on", "slurm", "--transport", "tcp", "--sizes", "8",
                "--iterations", "50", "--json", "--timeout", "120", "--out", str(out),
                env=env, timeout=240)
    node = socket.gethostname().split(".")[0]  # the fixture's NodeName
    with Store(out / "fabench.sqlite") as st:
        [run] = st.runs()
    assert run.status == "ok", (run.reason, run.stderr_tail[-500:])
    carried = run.provenance["interface_bytes"]
    assert carried["where"] == "all but lo"
    assert list(carried["per_host"]) == [node]
    assert all(v >= 0 for v in carried["per_host"][node].values())
    # One node: nothing claimed to cross, so no flag, and a note that says why.
    assert not any(f.startswith("traffic-did-not-cross") for f in run.flags)
    assert any("one-node allocation" in n for n in run.notes), run.notes
    # The per-node copies of /proc/net/dev sit next to the kept job script.
    job = run.provenance["slurm"]["job_id"]
    script = Path(run.provenance["slurm"]["script_path"])
    for phase in ("before", "after"):
        assert (script.parent / f"{script.stem}.{job}.{phase}.{node}.netdev").is_file()
    # No snapshot failed (its reason would be in an .err of the run), none left half-written.
    assert not list(script.parent.glob(f"{script.stem}.{job}.*.err"))
    assert not list(script.parent.glob("*.tmp"))


def _cgroup_mounts() -> str:
    """Shell that mounts, inside a testbed host, the cgroup hierarchies this machine has:
    slurmd 22.05 will not start without them, and a host has a sysfs of its own."""
    cmds = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        src, where, fstype, opts, *_ = line.split()
        if where == "/sys/fs/cgroup" or where.startswith("/sys/fs/cgroup/"):
            cmds.append(f"mkdir -p {where} && mount -t {fstype} -o {opts} {src} {where}")
    return " && ".join(cmds) or "true"


def _conf2(d: Path, hosts: list[tuple[str, str]]) -> str:
    """Two nodes that share this machine's files: whatever a node keeps for itself (spool,
    pid file, log, PMIx's per-step directory under TmpFS) gets the node's name (%n)."""
    (ctl, ctl_addr) = hosts[0]
    nodes = "\n".join(f"NodeName={n} NodeAddr={a} CPUs=2 State=UNKNOWN" for n, a in hosts)
    return f"""ClusterName=fbtest2
SlurmctldHost={ctl}({ctl_addr})
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={d}/munge.sock
CredType=cred/munge
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool-%n
TmpFS={d}/tmp-%n
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd-%n.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd-%n.log
{_PLUGINS}{nodes}
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


@pytest.fixture
def slurm2() -> Iterator[dict[str, list[str] | str]]:
    """slurmctld and one slurmd in testbed host h1, one slurmd in h2 (each in the host's
    network, UTS and mount namespace); munged on this host serves both through its socket."""
    if os.geteuid() != 0:
        missing("slurmd in testbed hosts needs root (mounts inside the hosts)")
    procs: list[subprocess.Popen[bytes]] = []
    d = Path(tempfile.mkdtemp(prefix="fbs2"))
    with own_testbeds(f"fbs{os.getpid() % 100000}"):
        try:
            st = create("s2", TestbedConfig(hosts=2))
            hosts = [(h.name, h.address) for h in st.hosts]
            for sub in ["state", *(f"{k}-{n}" for n, _ in hosts for k in ("spool", "tmp"))]:
                (d / sub).mkdir()
            subprocess.run(["mungekey", "-c", "-k", str(d / "munge.key")], check=True,
                           capture_output=True)
            (d / "munge.key").chmod(0o600)
            conf = d / "slurm.conf"
            conf.write_text(_conf2(d, hosts))
            env = {**os.environ, "SLURM_CONF": str(conf)}
            log = (d / "daemons.log").open("ab")
            procs.append(subprocess.Popen(
                ["munged", "-F", "--force", f"--key-file={d}/munge.key",
                 f"--socket={d}/munge.sock", f"--pid-file={d}/munged.pid",
                 f"--log-file={d}/munged.log", f"--seed-file={d}/munged.seed"],
                stdout=log, stderr=log))
            for h in st.hosts:
                subprocess.run([*h.enter, "sh", "-ec", _cgroup_mounts()], check=True,
                               capture_output=True)
            # nsenter without a PID namespace execs the daemon: these PIDs are the daemons'.
            h1 = st.hosts[0].enter
            procs.append(subprocess.Popen([*h1, "slurmctld", "-D", "-f", str(conf)], env=env,
                                          stdout=log, stderr=log))
            for h in st.hosts:
                procs.append(subprocess.Popen([*h.enter, "slurmd", "-D", "-N", h.name, "-f",
                                               str(conf)], env=env, stdout=log, stderr=log))
            for _ in range(150):
                p = subprocess.run([*h1, "sinfo", "-h", "-N", "-o", "%t"], env=env,
                                   capture_output=True, text=True, check=False)
                if p.stdout.split().count("idle") == len(hosts):
                    break
                time.sleep(0.2)
            else:
                pytest.fail("slurmd never became idle on both hosts:\n"
                            + (d / "daemons.log").read_text()[-2000:])
            yield {"SLURM_CONF": str(conf), "enter": h1}
        finally:
            _stop(procs, d)


def _bench_in_h1(slurm2: dict[str, list[str] | str], out: Path,
                 on: str) -> tuple[RunRow, list[ResultRecord]]:
    """`fabench bench` run where a login node would be: in h1, next to the controller."""
    enter = list(slurm2["enter"])
    argv = [*enter, sys.executable, "-m", "fabench", "bench", "mpi.latency", "--on", on,
            "--transport", "tcp", "--sizes", "8,64K", "--iterations", "20", "--warmup", "2",
            "--timeout", "120", "--out", str(out)]
    p = subprocess.run(argv, env={**os.environ, "SLURM_CONF": str(slurm2["SLURM_CONF"])},
                       capture_output=True, text=True, timeout=240, check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    with Store(out / "fabench.sqlite") as st:
        [run] = st.runs()
        return run, list(st.results(run.id))


@pytest.mark.netns
@pytest.mark.slow  # ~20 s here: a testbed, four daemons, two jobs
def test_two_node_slurm_counts_both_nodes_and_flags_packed_ranks(
        openmpi: str, slurm2: dict[str, list[str] | str], tmp_path: Path) -> None:
    # One rank per node: srun starts them on h1 and h2, and both links carry the payload.
    run, results = _bench_in_h1(slurm2, tmp_path / "spread", "slurm -N 2 --ntasks-per-node=1")
    assert run.status == "ok", (run.reason, run.stderr_tail[-500:])
    assert run.selected_transport == "ob1/tcp"
    carried = run.provenance["interface_bytes"]["per_host"]
    assert set(carried) == {"h1", "h2"}
    moved = sum(r.bytes_per_sample * len(r.times) for r in results)
    assert all(carried[h]["tx_bytes"] >= moved for h in ("h1", "h2")), (carried, moved)
    assert run.flags == []

    # Two nodes, but mpirun fills the first node's slots: both ranks on h1, over loopback.
    out = tmp_path / "packed"
    run, _ = _bench_in_h1(slurm2, out, "slurm:mpirun -N 2 --ntasks-per-node=2")
    assert run.status == "ok", (run.reason, run.stderr_tail[-500:])
    assert set(run.provenance["interface_bytes"]["per_host"]) == {"h1", "h2"}
    [flag] = run.flags
    assert flag.startswith("traffic-did-not-cross") and "packed on one node" in flag
    # The report shows it the way it shows a testbed run's flag.
    rep = fabench_cli("report", "--store", str(out), "-o", str(tmp_path / "r.html"))
    assert "traffic-did-not-cross" in rep.stdout


ACCEPT_SPEC = """\
name: slurm-acc
repeats: 1
timeout_s: 120
checks:
  - check: allreduce_us <= 1000000 @ 8
    transport: {transport}
    iterations: 50
"""


def _accept_job(out: Path, run_id: int) -> tuple[RunRow, str]:
    with Store(out / "fabench.sqlite") as st:
        run = st.run(run_id)
    return run, Path(run.provenance["slurm"]["script_path"]).read_text()


@pytest.mark.slow  # ~10 s: one job
def test_accept_runs_a_collective_over_the_whole_allocation(openmpi: str, slurm: dict[str, str],
                                                            tmp_path: Path) -> None:
    spec = tmp_path / "acc.yaml"
    spec.write_text(ACCEPT_SPEC.format(transport="shm"))
    out = tmp_path / "out"
    p = fabench_cli("accept", str(spec), "--on", "slurm", "--out", str(out), "--json",
                    env={"SLURM_CONF": slurm["SLURM_CONF"]}, check=False, timeout=240)
    assert p.returncode == 0, p.stdout + p.stderr
    [c] = json.loads(p.stdout)["checks"]
    # the allocation is the partition's one node (sinfo): two ranks on it, asked of Slurm
    # as that shape, not a count it may place as it likes
    assert any("at 2 ranks (1 x 2)" in e for e in c["evidence"]), c["evidence"]
    run, script = _accept_job(out, c["run_ids"][0])
    assert run.ranks == 2 and run.status == "ok"
    assert "#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=2\n" in script
    assert "#SBATCH --nodes=1" in (out / "slurm" / "campaign.sbatch").read_text()


def _accept_in_h1(slurm2: dict[str, list[str] | str], spec: Path, out: Path
                  ) -> dict[str, object]:
    argv = [*list(slurm2["enter"]), sys.executable, "-m", "fabench", "accept", str(spec),
            "--on", "slurm", "--out", str(out), "--json"]
    p = subprocess.run(argv, env={**os.environ, "SLURM_CONF": str(slurm2["SLURM_CONF"])},
                       capture_output=True, text=True, timeout=240, check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    return dict(json.loads(p.stdout))


@pytest.mark.netns
@pytest.mark.slow  # ~25 s: a testbed, four daemons, one job; the only multi-node Slurm here
def test_accept_collective_spans_every_node_of_a_two_node_slurm(
        openmpi: str, slurm2: dict[str, list[str] | str], tmp_path: Path) -> None:
    spec = tmp_path / "acc.yaml"
    spec.write_text(ACCEPT_SPEC.format(transport="tcp"))
    j = _accept_in_h1(slurm2, spec, tmp_path / "out")
    [c] = j["checks"]  # type: ignore[index]
    assert c["status"] == "pass" and any("(2 x 1)" in e for e in c["evidence"])
    run, script = _accept_job(tmp_path / "out", c["run_ids"][0])
    # Each node has 2 CPUs: asked for 2 tasks alone, Slurm packs them onto h1 (the packed
    # case of the test above). Asked as 2 nodes x 1, the allreduce crosses both links.
    assert "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n" in script
    assert set(run.provenance["interface_bytes"]["per_host"]) == {"h1", "h2"}
    assert not any(f.startswith("traffic-did-not-cross") for f in run.flags), run.flags
