"""What one launch of a kernel gives back to the runner, whoever started it."""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..records import KernelOutput

# Called with each JSON record of the kernel as it arrives (results are stored at once).
RecordCallback = Callable[[dict[str, Any]], None]


@dataclass
class LaunchResult:
    output: KernelOutput
    returncode: int
    command: list[str]
    stderr: str
    selected_transport: str | None = None
    selected_detail: str | None = None
    notes: list[str] = field(default_factory=list)
    oversubscribed: bool = False
    flags: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
