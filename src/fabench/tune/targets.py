"""Which targets a tune command acts on: testbed hosts (default), named namespaces, or the
host itself (only with --host-wide). Each kind of target is a plugin: a function from its
words (`--on testbed NAME`, `--netns NS...`) to the Targets it names, registered in
TUNE_TARGETS, so a site can tune its own kind of node."""

from collections.abc import Callable

from ..errors import FabenchError
from ..host.target import Target
from ..schedulers import OnWords
from ..testbed import list_states, load_state
from ..testbed.plumbing import outer_ctx
from ..testbed.state import NAME_RE
from ..util.registry import Registry

TargetsFn = Callable[[list[str]], list[Target]]
TUNE_TARGETS: Registry[TargetsFn] = Registry("tune target")


@TUNE_TARGETS.register("testbed")
def testbed_targets_from(words: list[str]) -> list[Target]:
    if len(words) > 1:
        raise FabenchError("--on testbed takes one testbed name")
    if words and not NAME_RE.match(words[0]):
        raise FabenchError(f"--on testbed {words[0][:40]!r}: a testbed name is 1-16 lower-case "
                           "letters/digits, starting with a letter")
    return testbed_targets(words[0] if words else None)


@TUNE_TARGETS.register("netns")
def netns_targets(words: list[str]) -> list[Target]:
    for ns in words:
        # A name is a file of /run/netns (ip-netns(8)) and an operand of `ip netns exec`:
        # no '/', not '.' or '..', never an option.
        if not ns or ns.startswith("-") or "/" in ns or ns in (".", "..") or len(ns) > 255 \
                or any(ord(c) < 33 or ord(c) == 127 for c in ns):
            raise FabenchError(f"--netns {ns[:60]!r}: not a network namespace name")
    return [Target.namespace(ns) for ns in words]


@TUNE_TARGETS.register("host")
def host_targets(words: list[str]) -> list[Target]:
    if words:
        raise FabenchError("--host-wide takes no argument")
    return [Target.host()]


def testbed_targets(name: str | None = None) -> list[Target]:
    """Every host of a testbed, plus its switch (the ports must carry a host's new MTU)."""
    if name is None:
        states = [s for s in list_states() if s.complete]
        if not states:
            raise FabenchError("no testbed is up: `fabench testbed up`, or name namespaces "
                               "with --netns NS, or tune this host with --host-wide")
        if len(states) > 1:
            raise FabenchError("several testbeds are up (" + ", ".join(s.name for s in states)
                               + "): choose one with --on testbed NAME")
        st = states[0]
    else:
        st = load_state(name)
    out = [Target(h.name, tuple(h.enter), h.netns, {"testbed": st.name}) for h in st.hosts]
    ctx = outer_ctx(st)
    # `ip netns exec` (not nsenter --net) so that /sys shows the switch's own interfaces.
    switch_prefix = (*ctx, "ip", "netns", "exec", st.switch_ns)
    ports = [h.port for h in st.hosts]
    out.append(Target(f"{st.name}-switch", switch_prefix, st.switch_ns,
                      {"role": "switch", "testbed": st.name, "ports": ports,
                       "bridge": st.bridge}))
    return out


def resolve(on: OnWords | None, netns: list[str] | None, host_wide: bool) -> list[Target]:
    targets: list[Target] = []
    if netns:
        targets += TUNE_TARGETS.get("netns")(netns)
    if on is not None:
        if on.name == "local":
            if not host_wide:
                raise FabenchError("changing this host needs --host-wide (it affects "
                                   "everything running here); testbed hosts are the default "
                                   "target")
        elif on.name in ("netns", "host") or on.name not in TUNE_TARGETS:
            raise FabenchError(f"tune acts on testbed hosts, namespaces or this host, not on "
                               f"--on {on.name}")
        else:
            targets += TUNE_TARGETS.get(on.name)(on.words)
    if host_wide:
        targets += TUNE_TARGETS.get("host")([])
    if not targets:
        targets = testbed_targets(None)
    return targets
