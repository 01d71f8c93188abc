"""OpenSSH's sshd in every testbed host (`testbed up --sshd`): the path `--on hosts FILE`
takes on a real cluster (ssh to each node, mpirun's rsh agent), run for real.

Keys are made for the testbed, in its run directory, and removed with it: a host key the
hosts share and a client key that only they accept. Nothing of the user's ~/.ssh is read or
written: the client's configuration (`ssh/ssh_config`) names the key, the testbed's own
known_hosts with every host's key, strict host key checking and batch mode. `ssh/ssh` runs
that client (an agent for FABENCH_RSH_AGENT), `ssh/hostfile` lists the hosts.

The hosts are reached from inside a host (the first, as a login node would be): the testbed's
network has no leg in this machine's own namespace, and none is added.
"""

import getpass
import shlex
import shutil
import subprocess
import time
from pathlib import Path

from ..errors import FabenchError
from ..host.process import popen, run_once
from .state import TestbedState

SSHD = "/usr/sbin/sshd"
START_TIMEOUT_S = 15.0


def ssh_dir(state: TestbedState) -> Path:
    return state.dir / "ssh"


def agent_path(state: TestbedState) -> Path:
    return ssh_dir(state) / "ssh"


def hostfile_path(state: TestbedState) -> Path:
    return ssh_dir(state) / "hostfile"


def _keygen(path: Path, comment: str) -> None:
    p = run_once(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f",
                  str(path)], capture_output=True, text=True, check=False,
                 stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        raise FabenchError(f"ssh-keygen failed: {p.stderr.strip()[-300:]}")


def _sshd_config(d: Path, user: str) -> str:
    return "\n".join([
        "# fabench testbed sshd: keys of this testbed only, no passwords",
        "Port 22",
        f"HostKey {d / 'host_ed25519'}",
        f"AuthorizedKeysFile {d / 'authorized_keys'}",
        f"AllowUsers {user}",
        "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "StrictModes no",
        "PidFile none",
        "X11Forwarding no",
        "AllowTcpForwarding no",
        "PermitUserEnvironment no",
        "PrintMotd no",
        "LogLevel ERROR",
        "",
    ])


def _client_config(d: Path, user: str) -> str:
    return "\n".join([
        "Host *",
        f"  User {user}",
        f"  IdentityFile {d / 'id_ed25519'}",
        "  IdentitiesOnly yes",
        f"  UserKnownHostsFile {d / 'known_hosts'}",
        "  GlobalKnownHostsFile /dev/null",
        "  StrictHostKeyChecking yes",
        "  BatchMode yes",
        "  ConnectTimeout 10",
        "  LogLevel ERROR",
        "",
    ])


def start(state: TestbedState) -> None:
    """Keys, configurations, and sshd listening on port 22 of every host."""
    if state.mode != "root":
        raise FabenchError("--sshd needs a root testbed (sshd switches to the user it logs "
                           "in, which a user namespace cannot)")
    if not Path(SSHD).exists() or shutil.which("ssh") is None:
        raise FabenchError(f"--sshd needs OpenSSH ({SSHD} and ssh): apt-get install "
                           "openssh-server openssh-client")
    d = ssh_dir(state)
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    user = getpass.getuser()
    _keygen(d / "host_ed25519", f"fabench testbed {state.name} host key")
    _keygen(d / "id_ed25519", f"fabench testbed {state.name} client key")
    pub = (d / "id_ed25519.pub").read_text()
    (d / "authorized_keys").write_text(pub)
    (d / "authorized_keys").chmod(0o600)
    host_pub = " ".join((d / "host_ed25519.pub").read_text().split()[:2])
    (d / "known_hosts").write_text("".join(f"{h.name},{h.address} {host_pub}\n"
                                           for h in state.hosts))
    (d / "sshd_config").write_text(_sshd_config(d, user))
    (d / "ssh_config").write_text(_client_config(d, user))
    agent = agent_path(state)
    agent.write_text(f"#!/bin/sh\nexec ssh -F {shlex.quote(str(d / 'ssh_config'))} \"$@\"\n")
    agent.chmod(0o755)
    hostfile_path(state).write_text("".join(f"{h.name}\n" for h in state.hosts))
    # sshd's privilege separation directory (Debian's unit makes it at start as well)
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    for h in state.hosts:
        log = (d / f"sshd-{h.name}.log").open("ab")
        # the host's own namespaces; `testbed down` ends it with every process in them
        # outlives `testbed up` on purpose: the testbed's hosts keep their sshd
        popen([*h.enter, SSHD, "-D", "-e", "-f", str(d / "sshd_config"),
               "-o", f"ListenAddress={h.address}"], outlive=True, stdin=subprocess.DEVNULL,
              stdout=log, stderr=log, start_new_session=True)
        log.close()
    for h in state.hosts:
        _wait_listening(state, h.enter, h.name)


def _wait_listening(state: TestbedState, enter: list[str], name: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        p = run_once([*enter, "ss", "-Hltn", "sport", "=", ":22"], capture_output=True,
                     text=True, check=False, stdin=subprocess.DEVNULL)
        if p.stdout.strip():
            return
        time.sleep(0.2)
    log = ssh_dir(state) / f"sshd-{name}.log"
    tail = log.read_text(errors="replace").strip()[-400:] if log.exists() else ""
    raise FabenchError(f"sshd on {name} is not listening after {START_TIMEOUT_S:.0f} s: {tail}")
