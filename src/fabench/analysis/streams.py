"""A multi-stream record split into one record per stream, for the per-stream columns."""

from dataclasses import replace

from ..records import ResultRecord


def stream_results(rec: ResultRecord) -> list[ResultRecord]:
    """tcp.streams: one record per stream (its own window times), so the Metric layer derives
    per-stream bandwidth exactly as it derives the total."""
    n = int(rec.extra.get("streams", 0) or 0)
    flat = rec.extra.get("stream_times") or []
    if n <= 0 or not flat or len(flat) % n:
        return []
    per = len(flat) // n
    bps = float(rec.extra.get("stream_bytes_per_sample", rec.bytes_per_sample / n))
    mps = rec.messages_per_sample / n
    return [replace(rec, times=[float(x) for x in flat[k * per:(k + 1) * per]],
                    bytes_per_sample=bps, messages_per_sample=mps,
                    extra={"stream": k}, times_min=None, times_mean=None)
            for k in range(n)]
