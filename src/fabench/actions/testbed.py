"""`fabench testbed up|down|status|exec`: an emulated cluster in network namespaces."""

import argparse
import json
import os
import sys

from ..errors import FabenchError
from ..testbed import TestbedConfig, create, destroy, destroy_all, list_states, load_state
from ..testbed.state import DEFAULT_QUEUE
from ..testbed.status import status_json, status_lines


def _parse_sysctls(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise FabenchError(f"--sysctl {item!r}: expected KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


def up_main(args: argparse.Namespace) -> int:
    if args.queue is not None and args.rate is None:
        # Without a rate there is no tbf, hence no queue to size: say so, not ignore it.
        raise FabenchError("--queue sizes the rate limit's queue: give --rate too")
    config = TestbedConfig(hosts=args.hosts, mtu=args.mtu, rate=args.rate, burst=args.burst,
                           queue=args.queue or DEFAULT_QUEUE,
                           offloads=None if args.offloads is None else args.offloads == "on",
                           sysctls=_parse_sysctls(args.sysctl), switches=args.switches,
                           uplink_rate=args.uplink_rate, impairs=list(args.impair),
                           link_impl=args.link_impl, sshd=args.sshd)
    # SIGTERM, SIGHUP and Ctrl-C raise Interrupted (cli.main): create() removes what it made
    # on any exception, and the exit status names the signal (143 for SIGTERM, not 130)
    state = create(args.name, config)
    for line in status_lines(state):
        print(line)
    return 0


def down_main(args: argparse.Namespace) -> int:
    if args.all:
        removed = destroy_all()
        print(f"removed: {', '.join(removed)}" if removed else "nothing to remove")
        return 0
    problems = destroy(load_state(args.name))
    for p in problems:
        print(f"fabench: {p}", file=sys.stderr)
    print(f"testbed {args.name} removed" + (" (with problems above)" if problems else ""))
    return 1 if problems else 0


def status_main(args: argparse.Namespace) -> int:
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


def exec_main(args: argparse.Namespace) -> int:
    cmd = [c for c in args.command if c != "--"] if args.command[:1] == ["--"] else args.command
    if not cmd:
        raise FabenchError("testbed exec: give a command, e.g. -- ip addr")
    host = load_state(args.name).host(args.host)
    os.execvp(host.enter[0], [*host.enter, *cmd])
    return 0  # not reached
