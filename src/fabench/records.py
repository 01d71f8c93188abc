"""Records that flow through the pipeline: kernel output -> store -> analysis."""

import json
from dataclasses import dataclass, field
from typing import Any

from .errors import KernelError

SERIES = ("times", "times_min", "times_mean")


@dataclass
class ResultRecord:
    """One message size of one run, with every per-iteration time (us) the kernel reported."""

    kernel: str
    size: int
    iterations: int
    warmup: int
    unit: str
    times: list[float]
    datatype: str = ""
    count: int = 0
    validated: bool | None = None
    bytes_per_sample: float = 0.0
    messages_per_sample: float = 0.0
    times_min: list[float] | None = None
    times_mean: list[float] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "ResultRecord":
        known = {
            "kernel", "size", "iterations", "warmup", "unit", "times", "datatype", "count",
            "validated", "bytes_per_sample", "messages_per_sample", "times_min", "times_mean",
        }
        try:
            return cls(
                kernel=str(obj["kernel"]), size=int(obj["size"]),
                iterations=int(obj.get("iterations", len(obj["times"]))),
                warmup=int(obj.get("warmup", 0)), unit=str(obj.get("unit", "us")),
                times=[float(t) for t in obj["times"]],
                datatype=str(obj.get("datatype", "")), count=int(obj.get("count", 0)),
                validated=obj.get("validated"),
                bytes_per_sample=float(obj.get("bytes_per_sample", 0)),
                messages_per_sample=float(obj.get("messages_per_sample", 0)),
                times_min=obj.get("times_min"), times_mean=obj.get("times_mean"),
                extra={k: v for k, v in obj.items() if k not in known and k != "type"},
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise KernelError(f"malformed result record ({exc}): {json.dumps(obj)[:200]}") from exc


@dataclass
class KernelOutput:
    """Everything parsed from one kernel invocation's stdout."""

    meta: dict[str, Any] = field(default_factory=dict)
    results: list[ResultRecord] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    skip_reason: str | None = None
    end: dict[str, Any] | None = None


def parse_line(line: str) -> dict[str, Any] | None:
    """A JSON object from one stdout line; non-JSON lines (library chatter) are ignored."""
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        obj = json.loads(line)
    except json.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) and "type" in obj else None
