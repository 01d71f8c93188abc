"""An emulated cluster: hosts in network namespaces behind a bridge, with MTU, rate limits,
offloads and per-host sysctls (docs/testbed.md)."""

from .counters import IfCounters, crossing_flag, delta, read_counters
from .plumbing import create, destroy, destroy_all, leftovers
from .state import HostState, TestbedConfig, TestbedState, list_states, load_state

__all__ = [
    "HostState",
    "IfCounters",
    "TestbedConfig",
    "TestbedState",
    "create",
    "crossing_flag",
    "delta",
    "destroy",
    "destroy_all",
    "leftovers",
    "list_states",
    "load_state",
    "read_counters",
]
