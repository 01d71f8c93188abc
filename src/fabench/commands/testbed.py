"""`fabench testbed up|down|status|exec`: an emulated cluster in network namespaces.

Arguments only: fabench.actions.testbed does the work."""

import argparse

from ..choices import TESTBED_QUEUE
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
                         f"{TESTBED_QUEUE}; 5ms for exchange-heavy runs, see docs/testbed.md)")
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
    up.set_defaults(func="fabench.actions.testbed:up_main")
    down = tsub.add_parser("down", help="remove a testbed (also after a crash)")
    # `up` and `exec` name the testbed with --name: the same spelling works here, as does a
    # bare NAME (one destination; the positional sets nothing when it is absent)
    down.add_argument("--name", default="tb", help="testbed name (default: tb)")
    down.add_argument("name", nargs="?", default=argparse.SUPPRESS, metavar="NAME",
                      help="the same as --name")
    down.add_argument("--all", action="store_true",
                      help="remove every testbed and leftover carrying fabench's name prefix")
    down.set_defaults(func="fabench.actions.testbed:down_main")
    st = tsub.add_parser("status", help="testbeds, hosts, addresses, link settings")
    st.add_argument("--name", help="one testbed (default: all)")
    st.add_argument("name", nargs="?", default=argparse.SUPPRESS, metavar="NAME",
                    help="the same as --name")
    st.add_argument("--json", action="store_true",
                    help="the state and every fb-link's counters, as JSON")
    st.set_defaults(func="fabench.actions.testbed:status_main")
    ex = tsub.add_parser("exec", help="run a command on a testbed host",
                         description="Run COMMAND inside HOST's namespaces, e.g. "
                                     "`fabench testbed exec h1 -- ip addr`.")
    ex.add_argument("--name", default="tb", help="testbed name (default: tb)")
    ex.add_argument("host", help="host name (h1, h2, ...) or address")
    ex.add_argument("command", nargs=argparse.REMAINDER, help="command and arguments")
    ex.set_defaults(func="fabench.actions.testbed:exec_main")
