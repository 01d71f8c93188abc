"""`testbed up --sshd`: OpenSSH's sshd in every host, with keys made for the testbed, so the
hosts scheduler (`--on hosts FILE`, mpirun over ssh) and an acceptance run over real ssh,
from inside the first host as from a login node."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, fabench_cli, missing, own_testbeds
from fabench.testbed import load_state

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mpirun.openmpi") is None,
                                reason="a root testbed and Open MPI")


def _sshd_pids(marker: str) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                exe = os.readlink(d / "exe")
                cmdline = (d / "cmdline").read_bytes()  # sshd rewrites its title: one string
            except OSError:
                continue
            if exe.endswith("/sshd") and marker.encode() in cmdline:
                out.append(int(d.name))
    return out


@pytest.mark.netns
@pytest.mark.slow
def test_hosts_scheduler_and_an_acceptance_over_real_ssh(openmpi: str, tmp_path: Path) -> None:
    if not Path("/usr/sbin/sshd").exists():
        missing("OpenSSH's sshd not installed (apt-get install openssh-server)")
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home)}  # the user's ~/.ssh must stay out of it
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: over-ssh\nrepeats: 2\ntimeout_s: 300\nchecks:\n  - doctor\n"
                    "  - check: latency_us <= 1000 @ 8\n    transport: tcp\n"
                    "    iterations: 200\n")
    with own_testbeds(f"fbh{os.getpid() % 100000}"):
        fabench_cli("testbed", "up", "--name", "ssh", "--hosts", "3", "--sshd", env=env)
        st = load_state("ssh")
        d = st.dir / "ssh"
        assert _sshd_pids(str(d)), "no sshd started"
        h1 = st.host("h1").enter

        def in_h1(*argv: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
            return subprocess.run([*h1, "env", f"HOME={home}",
                                   f"FABENCH_RSH_AGENT={d / 'ssh'}", *argv],
                                  capture_output=True, text=True, timeout=timeout,
                                  check=False, cwd=ROOT)

        # real ssh: the other host answers with its own name, under its key only
        p = in_h1(str(d / "ssh"), "h3", "hostname")
        assert p.returncode == 0 and p.stdout.strip() == "h3", p.stderr
        wrong = in_h1("ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
                      "-o", f"UserKnownHostsFile={tmp_path / 'kh'}", "h3", "true")
        assert wrong.returncode != 0  # no key of the user's, no password: refused

        py = [sys.executable, "-m", "fabench"]
        hostfile = str(d / "hostfile")
        p = in_h1(*py, "bench", "mpi.latency", "--on", "hosts", hostfile, "--transport",
                  "tcp", "--sizes", "8", "--iterations", "100", "--out",
                  str(tmp_path / "bench"))
        assert p.returncode == 0, p.stdout + p.stderr
        assert "placement: h1:1, h2:1" in p.stdout and f"agent {d / 'ssh'}" in p.stdout

        p = in_h1(*py, "accept", str(spec), "--on", "hosts", hostfile, "--out",
                  str(tmp_path / "acc"), "--json")
        assert p.returncode == 0, p.stdout + p.stderr
        j = json.loads(p.stdout)
        assert [c["status"] for c in j["checks"]] == ["pass", "pass"]
        assert "agent " + str(d / "ssh") in j["on"]
    assert not (home / ".ssh").exists()
    assert _sshd_pids(str(d)) == []  # `testbed down` ended every sshd
