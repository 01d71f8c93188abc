"""Make and unmake the namespaces of a testbed: hosts, a switch, veth links, limits.

Each host gets its own network, IPC, UTS and mount namespace. The last three are not
decoration: POSIX/SysV shared memory and CMA cross network namespaces, so without a private
IPC namespace and /dev/shm MPI and UCX silently talk through memory and the "network" carries
nothing; a host name of its own makes MPI see separate nodes.

Network namespaces are named (`ip netns`); one holder process per host keeps its IPC, UTS and
mount namespaces alive, and commands enter a host through the holder's PID. (Bind-mounting
the namespaces onto files would need no process, but a host's mount namespace is a snapshot
taken when it is made and cannot see the files of hosts made after it, so mpirun inside h1
could not reach h2.) Without root everything lives inside one user namespace (`unshare -r`)
kept by one more holder. `down` kills the holders and whatever runs in the hosts, by PID.
"""

import ipaddress
import json
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

from ..errors import FabenchError
from ..host.proc_stat import proc_start
from ..host.process import popen, run_once
from ..host.process_identity import host_netns, netns_of, wait_gone
from . import links, sshd
from .impair import parse_impairs
from .state import (
    NAME_RE,
    HostState,
    SwitchState,
    TestbedConfig,
    TestbedState,
    list_states,
    name_prefix,
    run_dir,
    state_path,
)

SUBNET_BASE = ipaddress.ip_network("10.77.0.0/16")
HOLDER_MARK = "fabench-testbed-holder"
# One process that sleeps until killed, whose command line names the testbed it holds, so
# `down --all` can find holders even without a state file.
_HOLD = "import signal; signal.pause()"


def _holder_python() -> str:
    """The system interpreter when there is one: inside a user namespace an interpreter under
    a home directory only its owner may enter (a pyenv in /root) cannot be executed."""
    return "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable


class PlumbingError(FabenchError):
    pass


def _run(argv: list[str], *, input_text: str | None = None, check: bool = True,
         timeout: float = 60) -> subprocess.CompletedProcess[str]:
    try:
        p = run_once(argv, input=input_text, capture_output=True, text=True,
                           timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PlumbingError(f"{shlex.join(argv[:6])}...: {exc}") from exc
    if check and p.returncode != 0:
        raise PlumbingError(f"`{shlex.join(argv)}` failed ({p.returncode}): "
                            f"{(p.stderr or p.stdout).strip()[-600:]}")
    return p


def _kill_exact(pid: int | None, start: int | None) -> None:
    if pid and start is not None and proc_start(pid) == start:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _mode() -> str:
    return "root" if os.geteuid() == 0 else "userns"


def _used_subnets() -> set[str]:
    used = {s.subnet for s in list_states()}
    p = _run(["ip", "-j", "addr"], check=False)
    try:
        for link in json.loads(p.stdout or "[]"):
            for a in link.get("addr_info", []):
                if a.get("family") == "inet":
                    net = ipaddress.ip_interface(f"{a['local']}/{a['prefixlen']}").network
                    used.update(str(s) for s in SUBNET_BASE.subnets(new_prefix=24)
                                if s.overlaps(net))
    except (ValueError, KeyError):
        pass
    return used


def pick_subnet() -> str:
    used = _used_subnets()
    for net in list(SUBNET_BASE.subnets(new_prefix=24))[1:]:
        if str(net) not in used:
            return str(net)
    raise PlumbingError("no free /24 left in 10.77.0.0/16 for a testbed")


def outer_ctx(state: TestbedState) -> list[str]:
    """Prefix that runs a command where the testbed's namespaces are named: nothing as root,
    inside the holder's user and mount namespace otherwise."""
    if state.mode == "root":
        return []
    return ["nsenter", "-t", str(state.holder_pid), "-U", "-m", "--preserve-credentials", "--"]


def _host_script(state: TestbedState, h: HostState, hosts_file: Path,
                 plan: "links.HostPlan | None") -> str:
    """Shell run inside the new host namespaces: link, address, limits, name, private mounts."""
    c = state.config
    q = shlex.quote
    plen = ipaddress.ip_network(state.subnet).prefixlen
    # A host on fb-link has a TAP device as eth0 (made already, with its twin in the switch)
    make = ([] if h.link == "tap" else
            [f"ip link add {h.ifname} type veth peer name {h.port} "
             f"netns {state.switch_of(h).netns}"])
    lines = [
        "ip link set lo up",
        *make,
        f"ip link set {h.ifname} mtu {c.mtu}",
        f"ip addr add {h.address}/{plen} dev {h.ifname}",
        # IPv6 autoconfiguration chatter (MLD, router solicitations) would be counted as
        # benchmark traffic; the testbed is IPv4 only.
        "sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 "
        "|| true",
    ]
    for key, value in c.sysctls.items():
        # sysctl(8) exits 0 even when the kernel refuses a value (net.core.rmem_max in a
        # child namespace: EINVAL), so the value is read back.
        want = " ".join(value.split())
        why = (f"sysctl {key} is not writable in a network namespace "
               f"(or the kernel refused {want})")
        lines.append(f"sysctl -qw {q(f'{key}={value}')} 2>/dev/null || true")
        lines.append(f"[ \"$(sysctl -n {q(key)} 2>/dev/null | tr -s ' \\t' '  ')\" = "
                     f"{q(want)} ] || {{ echo {q(why)} >&2; exit 3; }}")
    if c.offloads is not None:
        onoff = "on" if c.offloads else "off"
        # a TAP device cannot segment or checksum for its host: what cannot be set is not
        lines.append(f"ethtool -K {h.ifname} tso {onoff} gso {onoff} gro {onoff}"
                     + (" 2>/dev/null || true" if h.link == "tap" else ""))
    lines += links.quote_lines(links.host_tc(h, plan, c))
    lines += [
        f"ip link set {h.ifname} up",
        f"hostname {h.name}",
        "mount -t tmpfs -o mode=1777 tmpfs /dev/shm",
        "mount -t sysfs sysfs /sys",  # /sys/class/net of this host, as MPI/hwloc read it
        f"mount --bind {hosts_file} /etc/hosts",
        # Drop this namespace's copies of other namespaces' mounts so that they do not keep
        # deleted namespaces alive.
        "umount -l /run/netns 2>/dev/null || true",
    ]
    return "\n".join(lines)


def _switch_script(state: TestbedState, sw: SwitchState,
                   plans: "dict[str, links.HostPlan]") -> str:
    """One leaf: its hosts' ports into its bridge (with their limits), and its uplink."""
    c = state.config
    lines = []
    for h in state.hosts:
        if h.switch != sw.index:
            continue
        lines.append(f"ip link set {h.port} mtu {c.mtu} master {sw.bridge}")
        if c.offloads is not None:
            onoff = "on" if c.offloads else "off"
            lines.append(f"ethtool -K {h.port} tso {onoff} gso {onoff} gro {onoff}"
                         + (" 2>/dev/null || true" if h.link == "tap" else ""))
        # The port's egress is the host's ingress: the second direction of the link.
        lines += links.quote_lines(links.port_tc(h, plans.get(h.name), c))
        lines.append(f"ip link set {h.port} up")
    if sw.uplink:
        lines.append(f"ip link set {sw.uplink} mtu {c.mtu} master {sw.bridge}")
        if c.uplink_rate:
            lines.append(f"tc qdisc replace dev {sw.uplink} root "
                         f"{links.tbf_args(c.uplink_rate, c)}")
        lines.append(f"ip link set {sw.uplink} up")
    return "\n".join(lines)


def _spine_script(state: TestbedState) -> str:
    """The spine: one bridge joining every leaf's uplink, each rate-limited toward its leaf."""
    c = state.config
    lines = ["ip link set lo up", "ip link add br0 type bridge", f"ip link set br0 mtu {c.mtu}",
             "ip link set br0 up"]
    for sw in state.switches:
        lines.append(f"ip link add {sw.spine_port} type veth peer name {sw.uplink} "
                     f"netns {sw.netns}")
        lines.append(f"ip link set {sw.spine_port} mtu {c.mtu} master br0")
        if c.uplink_rate:
            lines.append(f"tc qdisc replace dev {sw.spine_port} root "
                         f"{links.tbf_args(c.uplink_rate, c)}")
        lines.append(f"ip link set {sw.spine_port} up")
    return "\n".join(lines)


def _hosts_file(state: TestbedState) -> str:
    lines = ["127.0.0.1 localhost"]
    lines += [f"{h.address} {h.name}" for h in state.hosts]
    return "\n".join(lines) + "\n"


def _agent_script(state: TestbedState) -> str:
    """An ssh stand-in: `agent [ssh options] HOST COMMAND...` runs COMMAND on that testbed
    host. mpirun (plm_rsh_agent), hydra (-launcher-exec) and the hosts launcher call it."""
    cases = []
    for h in state.hosts:
        cmd = f"exec {shlex.join(h.enter)} sh -c \"$*\""
        if state.mode == "userns":
            # Called from inside a host we are already in the testbed's user namespace, and
            # the kernel refuses to enter the namespace one is in (EINVAL).
            same = (f"[ \"$(readlink /proc/self/ns/user)\" = "
                    f"\"$(readlink /proc/{h.holder_pid}/ns/user)\" ]")
            inner = [a for a in h.enter if a not in ("-U", "--preserve-credentials")]
            cmd = f"{same} && exec {shlex.join(inner)} sh -c \"$*\"; {cmd}"
        cases.append(f"  {h.name}|{h.address}) {cmd} ;;")
    return "\n".join([
        "#!/bin/sh",
        f"# fabench testbed {state.name}: run a command on one of its hosts, like ssh would.",
        "while [ $# -gt 0 ]; do",
        "  case \"$1\" in -l|-p|-o|-i|-F) shift 2 ;; -*) shift ;; *) break ;; esac",
        "done",
        "host=$1; shift",
        "[ $# -gt 0 ] || { echo \"usage: $0 HOST COMMAND...\" >&2; exit 2; }",
        "case \"$host\" in",
        *cases,
        f"  *) echo \"$0: no host $host in testbed {state.name}\" >&2; exit 255 ;;",
        "esac",
        "",
    ])


def create(name: str, config: TestbedConfig) -> TestbedState:
    """Create the testbed; on any failure (or Ctrl-C) remove what was made, then re-raise."""
    config.validate()
    if any("ecn=" in spec for spec in config.impairs):
        # CE marks mean nothing to a TCP that did not negotiate ECN; only inside the hosts.
        config.sysctls.setdefault("net.ipv4.tcp_ecn", "1")
    prefix = name_prefix()
    if not NAME_RE.match(name):
        raise FabenchError(f"testbed name {name!r}: 1-16 lower-case letters/digits, "
                           "starting with a letter")
    if state_path(prefix, name).exists():
        raise FabenchError(f"testbed {name!r} exists; `fabench testbed down {name}` first")
    state = TestbedState(name=name, prefix=prefix, mode=_mode(), subnet=pick_subnet(),
                         switch_ns=f"{prefix}-{name}-sw", config=config,
                         created_by=os.getpid())
    net = ipaddress.ip_network(state.subnet)
    for k in range(1, config.switches + 1):
        # Switch 1 keeps the one-switch name, so tools that know `switch_ns` still find it.
        state.switches.append(SwitchState(
            index=k, netns=state.switch_ns if k == 1 else f"{prefix}-{name}-sw{k}",
            uplink="upl" if config.switches > 1 else "",
            spine_port=f"l{k}" if config.switches > 1 else ""))
    if config.switches > 1:
        state.spine_ns = f"{prefix}-{name}-spine"
    for i in range(1, config.hosts + 1):
        # Hosts split evenly, in order: h1..h4 on switch 1 and h5..h8 on switch 2 of 8.
        state.hosts.append(HostState(name=f"h{i}", index=i, netns=f"{prefix}-{name}-h{i}",
                                     address=str(net.network_address + i), port=f"p{i}",
                                     switch=1 + (i - 1) * config.switches // config.hosts))
    # Written before anything exists: a crash from here on leaves a file `down` can act on.
    state.save()
    try:
        _build(state)
    except BaseException:
        destroy(state)
        raise
    state.complete = True
    state.save()
    return state


def _all_netns(state: TestbedState) -> list[str]:
    names = [sw.netns for sw in state.switches] or [state.switch_ns]
    return names + ([state.spine_ns] if state.spine_ns else []) + [h.netns for h in state.hosts]


def _build(state: TestbedState) -> None:
    state.dir.mkdir(parents=True, exist_ok=True)
    hosts_file = state.dir / "hosts"
    hosts_file.write_text(_hosts_file(state))
    if state.mode == "userns":
        _start_outer_holder(state)
    ctx = outer_ctx(state)
    names = _all_netns(state)
    if state.mode == "root":
        _run(["ip", "-batch", "-"], input_text="".join(f"netns add {n}\n" for n in names))
    else:
        # In a user namespace `ip netns add` makes and names the namespace, then fails to
        # switch back to the initial one ("setns: Operation not permitted"), which it does
        # not need to: judge by the result.
        for n in names:
            _run([*ctx, "ip", "netns", "add", n], check=False)
        missing = set(names) - set(_list_netns(ctx))
        if missing:
            raise PlumbingError(f"could not make network namespaces {sorted(missing)}")
    for sw in state.switches:
        _run([*ctx, "ip", "-n", sw.netns, "-batch", "-"], input_text=(
            "link set lo up\n"
            f"link add {sw.bridge} type bridge\n"
            f"link set {sw.bridge} mtu {state.config.mtu}\n"
            f"link set {sw.bridge} up\n"))
    if state.spine_ns:
        _run([*ctx, "nsenter", f"--net=/run/netns/{state.spine_ns}", "sh", "-ec",
              _spine_script(state)])
    plans = _plan_links(state, ctx)
    for h in state.hosts:
        if plans.get(h.name) and plans[h.name].rules:
            h.link = "tap"
            for ns, dev in ((h.netns, h.ifname), (state.switch_of(h).netns, h.port)):
                _run([*ctx, "ip", "-n", ns, "tuntap", "add", "dev", dev, "mode", "tap"])
                # fb-link reads in bursts; a short device queue drops what arrives between
                _run([*ctx, "ip", "-n", ns, "link", "set", dev, "txqueuelen",
                      str(links.TAP_QUEUE)])
        _make_host(state, h, hosts_file, ctx, plans.get(h.name))
        state.save()
    for sw in state.switches:
        _run([*ctx, "nsenter", f"--net=/run/netns/{sw.netns}", "sh", "-ec",
              _switch_script(state, sw, plans)])
    for h in state.hosts:
        p = plans.get(h.name)
        for impl, specs in (p.specs.items() if p else []):
            if impl == "fb-link":
                link = links.start_fb_link(state, h, p.rules, specs, ctx,
                                           seed=links.link_seed(h.index))
            else:
                link = links.LinkState(host=h.name, impl=impl, specs=specs)
            state.links.append(link)
            state.save()
    state.agent.write_text(_agent_script(state))
    state.agent.chmod(0o755)
    if state.config.sshd:
        sshd.start(state)


def _plan_links(state: TestbedState, ctx: list[str]) -> "dict[str, links.HostPlan]":
    """Who carries each --impair; netem is looked for only when a spec could use it."""
    c = state.config
    if not c.impairs:
        return {}
    imps = parse_impairs(c.impairs, [h.name for h in state.hosts])
    if any(not i.rate_only for i in imps) and c.link_impl != "fb-link":
        state.netem = links.netem_available(ctx, state.switch_ns)
    plans = links.plan(state, bool(state.netem))
    if any(p.rules for p in plans.values()):
        links.fb_link_path()  # a clear error before anything is made for it
    return plans


def _make_host(state: TestbedState, h: HostState, hosts_file: Path, ctx: list[str],
               plan: "links.HostPlan | None") -> None:
    script = _host_script(state, h, hosts_file, plan)
    marker = f"{HOLDER_MARK}:{state.full_name}:{h.name}"
    argv = [*ctx, "nsenter", f"--net=/run/netns/{h.netns}", "unshare", "--ipc", "--uts",
            "--mount", "--propagation", "private", "sh", "-ec",
            f"{script}\necho ready\nexec {shlex.quote(_holder_python())} -c "
            f"{shlex.quote(_HOLD)} {marker}"]
    h.holder_pid, h.holder_start = _spawn_holder(argv)
    h.enter = ["nsenter", "-t", str(h.holder_pid), "-n", "-i", "-u", "-m", "--"]
    if state.mode == "userns":
        h.enter[3:3] = ["-U", "--preserve-credentials"]


def _spawn_holder(argv: list[str]) -> tuple[int, int]:
    # A holder lives as long as the testbed, not as long as this command.
    proc = popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                 stderr=subprocess.PIPE, text=True, start_new_session=True, outlive=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.wait(timeout=10)
        err = proc.stderr.read() if proc.stderr else ""
        raise PlumbingError(f"`{shlex.join(argv[-8:])}` failed: {err.strip()[-600:]}")
    start = proc_start(proc.pid)
    if start is None:
        raise PlumbingError("namespace holder exited right after starting")
    return proc.pid, start


def _start_outer_holder(state: TestbedState) -> None:
    marker = f"{HOLDER_MARK}:{state.full_name}"
    argv = ["unshare", "-r", "-m", "--propagation", "private", "sh", "-ec",
            "mount -t tmpfs tmpfs /run\nmkdir -p /run/netns\necho ready\n"
            f"exec {shlex.quote(_holder_python())} -c {shlex.quote(_HOLD)} {marker}"]
    state.holder_pid, state.holder_start = _spawn_holder(argv)
    state.save()


def _pids_in_netns(ctx: list[str], netns: str) -> list[int]:
    p = _run([*ctx, "ip", "netns", "pids", netns], check=False)
    return [int(x) for x in p.stdout.split() if x.isdigit()]


def _kill_all(pids: list[int]) -> None:
    """SIGKILL processes found inside the testbed's namespaces (ranks, daemons the tool
    started there), by PID; never one in the host's own network namespace."""
    host = host_netns()
    for pid in pids:
        if pid == os.getpid():
            continue
        ns = netns_of(pid)
        if ns is None or ns in host:
            continue
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def destroy(state: TestbedState) -> list[str]:
    """Remove everything the state names; tolerant of parts that never got made."""
    problems: list[str] = []
    for link in state.links:
        links.stop_link(link)
    for h in state.hosts:
        if h.holder_pid and proc_start(h.holder_pid) == h.holder_start:
            _kill_all(_pids_sharing_netns(h.holder_pid))
        _kill_exact(h.holder_pid, h.holder_start)
    if state.mode == "root":
        existing = set(_list_netns([]))
        for ns in _all_netns(state):
            if ns in existing:
                _kill_all(_pids_in_netns([], ns))
                p = _run(["ip", "netns", "del", ns], check=False)
                if p.returncode != 0:
                    problems.append(f"ip netns del {ns}: {p.stderr.strip()}")
    _kill_exact(state.holder_pid, state.holder_start)
    for pid in [h.holder_pid for h in state.hosts] + [state.holder_pid]:
        wait_gone(pid)
    # The agent, the hosts file, fb-link's status files and logs: all of this dir is ours.
    for f in state.dir.glob("*") if state.dir.is_dir() else []:
        _remove(f)
    if state.dir.is_dir():
        try:
            state.dir.rmdir()
        except OSError as exc:
            problems.append(f"{state.dir}: {exc}")
    state.state_file.unlink(missing_ok=True)
    return problems


def _remove(f: Path) -> None:
    """A file of a testbed's run directory, or its one level of subdirectory (--sshd's keys);
    a link is removed, never followed."""
    if f.is_dir() and not f.is_symlink():
        for g in f.glob("*"):
            if g.is_file() or g.is_symlink():
                g.unlink(missing_ok=True)
        f.rmdir()
    else:
        f.unlink(missing_ok=True)


def _pids_sharing_netns(pid: int) -> list[int]:
    """Processes in the network namespace of `pid` (a host holder); none when that is the
    host's own namespace (the outer holder of an unprivileged testbed lives there)."""
    target = netns_of(pid)
    if target is None or target in host_netns():
        return []
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) != pid:
            try:
                if os.readlink(d / "ns" / "net") == target:
                    out.append(int(d.name))
            except OSError:
                continue
    return out


def _list_netns(ctx: list[str]) -> list[str]:
    p = _run([*ctx, "ip", "-j", "netns", "list"], check=False)
    try:
        return [n["name"] for n in json.loads(p.stdout or "[]")]
    except (ValueError, KeyError, TypeError):
        return []


def destroy_all(prefix: str | None = None) -> list[str]:
    """Everything carrying the tool's name prefix: testbeds with state files, then leftovers
    found by name (namespaces, namespace files, holder processes) without one."""
    prefix = prefix or name_prefix()
    removed = []
    for st in list_states(prefix):
        destroy(st)
        removed.append(st.name)
    if os.geteuid() == 0:
        for ns in _list_netns([]):
            if ns.startswith(f"{prefix}-"):
                _kill_all(_pids_in_netns([], ns))
                _run(["ip", "netns", "del", ns], check=False)
                removed.append(ns)
    for pid, start in _holders(prefix):
        _kill_all(_pids_sharing_netns(pid))
        # The holder itself by PID and start time, wherever it lives: the outer holder of
        # an unprivileged testbed is in the host's network namespace.
        _kill_exact(pid, start)
        wait_gone(pid)
        removed.append(f"holder pid {pid}")
    tb_dir = run_dir() / "testbeds"
    for sub in sorted(tb_dir.glob(f"{prefix}-*")) if tb_dir.is_dir() else []:
        if sub.is_dir():
            for f in sub.glob("*"):
                _remove(f)
            sub.rmdir()
        else:
            sub.unlink(missing_ok=True)
    return removed


def holder_argv_ok(argv: list[bytes], prefix: str) -> bool:
    """Exactly the argv `_spawn_holder` execs: PYTHON -c _HOLD MARKER, where MARKER is
    HOLDER_MARK:PREFIX-NAME (an outer holder) or HOLDER_MARK:PREFIX-NAME:hN (a host's). A
    command line that merely contains the marker text (a grep, an editor, a shell loop) is
    not a holder."""
    if len(argv) != 4 or argv[1] != b"-c" or argv[2] != _HOLD.encode():
        return False
    if not os.path.basename(argv[0]).startswith(b"python"):
        return False
    marker = re.compile(rf"{re.escape(HOLDER_MARK)}:{re.escape(prefix)}-"
                        r"[a-z][a-z0-9]{0,15}(:h[0-9]{1,3})?")
    return marker.fullmatch(argv[3].decode("utf-8", "replace")) is not None


def _holders(prefix: str) -> list[tuple[int, int]]:
    """(PID, start time) of this user's holder processes of testbeds with this prefix."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if d.stat().st_uid != os.geteuid():
                continue
            argv = (d / "cmdline").read_bytes().split(b"\0")
            if argv and argv[-1] == b"":
                argv.pop()
            if not holder_argv_ok(argv, prefix):
                continue
            # The executable too, not just what argv[0] claims (`exec -a` sets any argv[0]).
            exe = os.readlink(d / "exe")
            if not os.path.basename(exe).startswith("python"):
                continue
        except (OSError, UnicodeDecodeError):
            continue
        start = proc_start(int(d.name))
        if start is not None:
            out.append((int(d.name), start))
    return out


def leftovers(prefix: str | None = None) -> list[str]:
    """What of the tool's still exists (for tests and `status`): namespaces, namespace
    files, holder processes, state files, links in this namespace named with the prefix."""
    prefix = prefix or name_prefix()
    found = []
    if os.geteuid() == 0:
        found += [f"netns {n}" for n in _list_netns([]) if n.startswith(f"{prefix}-")]
    p = _run(["ip", "-j", "link"], check=False)
    try:
        found += [f"link {ln['ifname']}" for ln in json.loads(p.stdout or "[]")
                  if ln["ifname"].startswith(prefix)]
    except (ValueError, KeyError):
        pass
    found += [f"holder pid {pid}" for pid, _ in _holders(prefix)]
    tb_dir = run_dir() / "testbeds"
    found += [f"state {p}" for p in tb_dir.glob(f"{prefix}-*")] if tb_dir.is_dir() else []
    return found
