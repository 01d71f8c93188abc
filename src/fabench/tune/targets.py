"""Which targets a tune command acts on: testbed hosts (default), named namespaces, or the
host itself (only with --host-wide)."""

from typing import Any

from ..errors import FabenchError
from .target import Target


def testbed_targets(name: str | None = None) -> list[Target]:
    """Every host of a testbed, plus its switch (the ports must carry a host's new MTU)."""
    try:
        from ..testbed import list_states, load_state
        from ..testbed.plumbing import outer_ctx
    except ImportError as exc:  # the testbed package is optional in a partial build
        raise FabenchError(f"no testbed support in this build ({exc})") from exc
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


def resolve(on: tuple[str, dict[str, Any]] | None, netns: list[str] | None,
            host_wide: bool) -> list[Target]:
    targets: list[Target] = []
    if netns:
        targets += [Target.namespace(ns) for ns in netns]
    if on is not None:
        name, opts = on
        if name == "testbed":
            targets += testbed_targets(opts.get("testbed"))
        elif name != "local":
            raise FabenchError(f"tune acts on testbed hosts, namespaces or this host, not on "
                               f"--on {name}")
        elif not host_wide:
            raise FabenchError("changing this host needs --host-wide (it affects everything "
                               "running here); testbed hosts are the default target")
    if host_wide:
        targets.append(Target.host())
    if not targets:
        targets = testbed_targets(None)
    return targets
