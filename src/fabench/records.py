"""Records that flow through the pipeline: kernel output -> store -> analysis."""

import json
import math
import statistics
from collections.abc import Callable, Iterable
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
class PairRecord:
    """One measured direction of mpi.matrix (a `pair` record): ranks src -> dst, its 8-byte
    ping-pong samples (us, half round trip) and its bandwidth samples (us per window of
    bytes_per_sample bytes)."""

    src: int
    dst: int
    src_host: str
    dst_host: str
    round: int
    mode: str  # concurrent or isolated
    size: int
    window: int
    bytes_per_sample: float
    latency_us: list[float]
    bandwidth_us: list[float]

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "PairRecord":
        try:
            return cls(src=int(obj["src"]), dst=int(obj["dst"]), src_host=str(obj["src_host"]),
                       dst_host=str(obj["dst_host"]), round=int(obj["round"]),
                       mode=str(obj["mode"]), size=int(obj["size"]),
                       window=int(obj["window"]),
                       bytes_per_sample=float(obj["bytes_per_sample"]),
                       latency_us=[float(v) for v in obj["latency_us"]],
                       bandwidth_us=[float(v) for v in obj["bandwidth_us"]])
        except (KeyError, TypeError, ValueError) as exc:
            raise KernelError(f"malformed pair record ({exc}): {json.dumps(obj)[:200]}") from exc

    @property
    def latency(self) -> float:
        """Median half round trip, us."""
        return statistics.median(self.latency_us) if self.latency_us else math.nan

    @property
    def bandwidth(self) -> float:
        """Median bandwidth, MB/s (10^6 bytes per second)."""
        rates = [self.bytes_per_sample / t for t in self.bandwidth_us if t > 0]
        return statistics.median(rates) if rates else math.nan


@dataclass
class KernelOutput:
    """Everything parsed from one kernel invocation's stdout."""

    meta: dict[str, Any] = field(default_factory=dict)
    results: list[ResultRecord] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    skip_reason: str | None = None
    end: dict[str, Any] | None = None

    def add(self, obj: dict[str, Any],
            on_record: Callable[[dict[str, Any]], None] | None = None) -> None:
        """One record into its place, then to ``on_record`` (the store, a progress line)."""
        kind = obj.get("type")
        if kind == "meta":
            self.meta.update(obj)
        elif kind == "result":
            self.results.append(ResultRecord.from_json(obj))
        elif kind == "error":
            self.errors.append(obj)
        elif kind == "skip":
            self.skip_reason = str(obj.get("reason", "skipped"))
        elif kind == "end":
            self.end = obj
        if on_record is not None:
            on_record(obj)

    def add_lines(self, lines: Iterable[str],
                  on_record: Callable[[dict[str, Any]], None] | None = None) -> None:
        """Every record among lines of a kernel's stdout (other lines are chatter)."""
        for line in lines:
            obj = parse_line(line)
            if obj is not None:
                self.add(obj, on_record)


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
