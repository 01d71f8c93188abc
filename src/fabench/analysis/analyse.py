"""From stored results to per-size summaries of each metric."""

from dataclasses import dataclass

from ..kernels import get_kernel
from ..metrics import Metric
from ..records import ResultRecord
from ..util.stats import Summary, summarize
from .peer_stats import peer_fields


@dataclass(frozen=True)
class SizeSummary:
    size: int
    metric: Metric
    summary: Summary
    iterations: int
    validated: bool | None
    datatype: str
    # A collective's OSU-comparable latencies (fabench.analysis.peer_stats), None where not
    # measured.
    median_rank_mean: float | None = None
    osu_avg: float | None = None


def metric_values(rec: ResultRecord, metric: Metric) -> list[float]:
    return list(metric.values(rec.times, rec.bytes_per_sample, rec.messages_per_sample))


def summarize_result(rec: ResultRecord, metric: Metric) -> SizeSummary:
    peers = peer_fields([rec]) if metric.source == "time" else {}
    return SizeSummary(rec.size, metric, summarize(metric_values(rec, metric)),
                       rec.iterations, rec.validated, rec.datatype, **peers)


def summarize_results(kernel_name: str, results: list[ResultRecord],
                      metric: Metric | None = None) -> list[SizeSummary]:
    kernel = get_kernel(kernel_name)
    m = metric or kernel.primary
    return [summarize_result(r, m) for r in results]
