"""`fabench testbed up|down|status|exec`: an emulated cluster in network namespaces."""

import argparse
import json
import os
import signal
import sys
from types import FrameType

from ..errors import FabenchError
from ..testbed import TestbedConfig, create, destroy, destroy_all, list_states, load_state
from ..testbed.state import DEFAULT_QUEUE
from ..testbed.status import status_json, status_lines
from . import COMMANDS


@COMMANDS.register("testbed")
def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = sub.add_parser(
        "testbed", help="an emulated cluster: hosts in network namespaces behind a switch",
        description="Hosts with their own network, IPC, UTS and mount namespaces (private "
                    "/dev/shm), one veth each into a bridge in a switch namespace, an address "
                    "in a subnet chosen here, optional rate limits (both directions), MTU, "
                    "offloads and sysctls. Use it with `--on testbed NAME`. See "
                    "docs/testbed.md.")
    tsub = p.add_subparsers(dest="testbed_cmd", metavar="ACTION")
    tsub.required = True
    up = tsub.add_parser("up", help="make a testbed")
    up.add_argument("--name", default="tb", help="testbed name (default: tb)")
    up.add_argument("--hosts", type=int, default=2, help="number of hosts (default: 2)")
    up.add_argument("--mtu", type=int, default=1500, help="link MTU (default: 1500)")
    up.add_argument("--rate", help="link rate in tc units, both directions (e.g. 1gbit)")
    up.add_argument("--burst", help="tbf bucket (default: 1 ms at the rate)")
    up.add_argument("--queue", metavar="DURATION",
                    help=f"how long a packet may wait in a rate-limited link's queue before "
                         f"it is dropped (tbf latency), e.g. 5ms, 500us (default: "
                         f"{DEFAULT_QUEUE}; 5ms for exchange-heavy runs, see docs/testbed.md)")
    up.add_argument("--offloads", choices=["on", "off"],
                    help="TSO/GSO/GRO on both ends of every link (default: kernel's)")
    up.add_argument("--sysctl", action="append", default=[], metavar="KEY=VALUE",
                    help="per-host net.* sysctl, repeatable (net.ipv4.tcp_rmem='4096 ...')")
    up.add_argument("--switches", type=int, default=1,
                    help="leaf switches (default 1); hosts split evenly between them in "
                         "order, the leaves joined through a spine")
    up.add_argument("--uplink-rate", metavar="RATE",
                    help="rate of each leaf's uplink to the spine, both directions (tc units)")
    up.add_argument("--impair", action="append", default=[], metavar="SPEC",
                    help="repeatable: hN:KEY=V,... (one host's link), hA-hB:... (the path "
                         "between two hosts, both directions), hA>hB:... (one direction); "
                         "keys rate, delay, jitter, loss, dup, reorder (P%%[:GAP] or "
                         "multipath:K:STEP), reorder-window, reorder-hold, queue, ecn, dir "
                         "(docs/testbed.md)")
    up.add_argument("--sshd", action="store_true",
                    help="run OpenSSH's sshd in every host, with keys made for the testbed: "
                         "`--on hosts` over real ssh from inside a host (docs/testbed.md)")
    up.add_argument("--link-impl", choices=["auto", "netem", "fb-link"], default="auto",
                    help="what carries impairments beyond a rate: netem where this kernel "
                         "has it and it can (auto, the default), or fb-link, the user-space "
                         "link on TAP devices")
    up.set_defaults(func=_up)
    down = tsub.add_parser("down", help="remove a testbed (also after a crash)")
    down.add_argument("name", nargs="?", default="tb", help="testbed name (default: tb)")
    down.add_argument("--all", action="store_true",
                      help="remove every testbed and leftover carrying fabench's name prefix")
    down.set_defaults(func=_down)
    st = tsub.add_parser("status", help="testbeds, hosts, addresses, link settings")
    st.add_argument("name", nargs="?", help="one testbed (default: all)")
    st.add_argument("--json", action="store_true",
                    help="the state and every fb-link's counters, as JSON")
    st.set_defaults(func=_status)
    ex = tsub.add_parser("exec", help="run a command on a testbed host",
                         description="Run COMMAND inside HOST's namespaces, e.g. "
                                     "`fabench testbed exec h1 -- ip addr`.")
    ex.add_argument("--name", default="tb", help="testbed name (default: tb)")
    ex.add_argument("host", help="host name (h1, h2, ...) or address")
    ex.add_argument("command", nargs=argparse.REMAINDER, help="command and arguments")
    ex.set_defaults(func=_exec)


def _parse_sysctls(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise FabenchError(f"--sysctl {item!r}: expected KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # create() removes what it made on any exception


def _up(args: argparse.Namespace) -> int:
    if args.queue is not None and args.rate is None:
        # Without a rate there is no tbf, hence no queue to size: say so, not ignore it.
        raise FabenchError("--queue sizes the rate limit's queue: give --rate too")
    config = TestbedConfig(hosts=args.hosts, mtu=args.mtu, rate=args.rate, burst=args.burst,
                           queue=args.queue or DEFAULT_QUEUE,
                           offloads=None if args.offloads is None else args.offloads == "on",
                           sysctls=_parse_sysctls(args.sysctl), switches=args.switches,
                           uplink_rate=args.uplink_rate, impairs=list(args.impair),
                           link_impl=args.link_impl, sshd=args.sshd)
    signal.signal(signal.SIGTERM, _interrupt)
    state = create(args.name, config)
    for line in status_lines(state):
        print(line)
    return 0


def _down(args: argparse.Namespace) -> int:
    if args.all:
        removed = destroy_all()
        print(f"removed: {', '.join(removed)}" if removed else "nothing to remove")
        return 0
    problems = destroy(load_state(args.name))
    for p in problems:
        print(f"fabench: {p}", file=sys.stderr)
    print(f"testbed {args.name} removed" + (" (with problems above)" if problems else ""))
    return 1 if problems else 0


def _status(args: argparse.Namespace) -> int:
    states = [load_state(args.name)] if args.name else list_states()
    if args.json:
        print(json.dumps([status_json(st) for st in states], indent=1))
        return 0
    if not states:
        print("no testbeds (make one with `fabench testbed up`)")
    for st in states:
        for line in status_lines(st):
            print(line)
    return 0


def _exec(args: argparse.Namespace) -> int:
    cmd = [c for c in args.command if c != "--"] if args.command[:1] == ["--"] else args.command
    if not cmd:
        raise FabenchError("testbed exec: give a command, e.g. -- ip addr")
    host = load_state(args.name).host(args.host)
    os.execvp(host.enter[0], [*host.enter, *cmd])
    return 0  # not reached
