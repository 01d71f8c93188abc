"""An emulated cluster: hosts in network namespaces behind a bridge, with MTU, rate limits,
offloads and per-host sysctls (docs/testbed.md)."""

from .plumbing import create, destroy, destroy_all, leftovers
from .state import HostState, TestbedConfig, TestbedState, list_states, load_state

__all__ = [
    "HostState",
    "TestbedConfig",
    "TestbedState",
    "create",
    "destroy",
    "destroy_all",
    "leftovers",
    "list_states",
    "load_state",
]
