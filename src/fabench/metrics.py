"""Metrics derived from a kernel's per-iteration times, each with its unit and direction."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


class Better(StrEnum):
    LOWER = "lower"
    HIGHER = "higher"


@dataclass(frozen=True)
class Metric:
    """How one figure is derived from a result record's samples.

    Kernels report times only; rates are derived here so that every kernel shares one
    methodology: bandwidth = bytes moved per sample / sample time (bytes/us == MB/s, MB = 1e6,
    as OSU prints), message rate = messages per sample / sample time. A computing kernel
    (hpcc's HPL, DGEMM, FFT) counts its work per sample in `messages_per_sample`, in units of
    1e3 flop, so that work / time (us) is Gflop/s (source "work").
    """

    name: str
    unit: str
    better: Better
    source: str  # "time", "bytes", "messages" or "work"

    def values(self, times_us: Sequence[float] | np.ndarray, bytes_per_sample: float = 0,
               messages_per_sample: float = 0) -> np.ndarray:
        # numpy here, not at the top: the kernel registry imports this module, and building
        # the command line (every --help) lists the kernels without deriving any figure.
        import numpy as np

        t = np.asarray(times_us, dtype=float)
        if self.source == "time":
            return t
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.source == "bytes":
                return np.where(t > 0, bytes_per_sample / t, np.nan)
            return np.where(t > 0, messages_per_sample / t, np.nan)


LATENCY = Metric("latency", "us", Better.LOWER, "time")
BANDWIDTH = Metric("bandwidth", "MB/s", Better.HIGHER, "bytes")
MESSAGE_RATE = Metric("message_rate", "Mmsg/s", Better.HIGHER, "messages")
GFLOPS = Metric("gflops", "Gflops", Better.HIGHER, "work")

METRICS = {m.name: m for m in (LATENCY, BANDWIDTH, MESSAGE_RATE, GFLOPS)}


def get_metric(name: str) -> Metric:
    try:
        return METRICS[name]
    except KeyError:
        raise ValueError(f"unknown metric {name!r}; known: {', '.join(METRICS)}") from None
