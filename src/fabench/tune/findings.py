"""A finding of `tune check`: one item, its value, what is recommended, why, and any verdict."""

from dataclasses import asdict, dataclass
from typing import Any


@dataclass
class Finding:
    target: str
    area: str  # sysctl, mtu, offload, delayed-ack, numa, irq, cpu, env, socket, lossless, ...
    item: str
    current: str
    recommended: str
    status: str  # ok, differs, no-op, info, unknown
    scope: str  # per-netns, host-wide, root-ns only, per-interface, run-time
    why: str = ""
    source: str = ""
    risk: str = ""
    verdict: str = ""  # a diagnosis by name (lossless.VERDICTS); "" when none

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
