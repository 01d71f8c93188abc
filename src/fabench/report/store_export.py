"""Exports of a store for analysis elsewhere.

- Parquet (`samples`, `runs`, `campaigns`, `provenance`): one row per sample, so pandas,
  polars or DuckDB read a campaign without fabench. JSON columns stay JSON text.
- OpenMetrics text of the latest medians, for a Prometheus node-exporter textfile collector:
  one gauge per metric, the median of the newest ok run of each configuration and size.
  Written to a temporary file and renamed into place, as the collector's documentation asks
  (a scrape must never read a half-written file).
"""

import json
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..analysis.selection import config_key, run_label, run_metrics, run_source
from ..errors import FabenchError
from ..store.database import RunRow, Store

# Prometheus names carry base units (seconds, bytes): times in seconds, bandwidth in bytes/s.
_OPENMETRICS = {
    "latency": ("fabench_latency_seconds", "seconds", 1e-6,
                "median time per iteration of the newest ok run"),
    "bandwidth": ("fabench_bandwidth_bytes_per_second", "bytes_per_second", 1e6,
                  "median bandwidth of the newest ok run"),
    "message_rate": ("fabench_message_rate_per_second", None, 1e6,
                     "median message rate (messages per second) of the newest ok run"),
    "gflops": ("fabench_flops_per_second", None, 1e9,
               "median floating-point rate (flop per second) of the newest ok run"),
}


def _pyarrow() -> Any:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise FabenchError("the Parquet export needs pyarrow (pip install pyarrow); it is one "
                           "of fabench's dependencies") from None
    return pa, pq


def _ok_runs(store: Store) -> list[RunRow]:
    return store.runs(status="ok")


def export_parquet(store: Store, target: Path) -> list[Path]:
    pa, pq = _pyarrow()
    target.mkdir(parents=True, exist_ok=True)
    runs = store.runs()
    camps = store.campaigns()
    written = []

    def write(name: str, table: Any) -> None:
        path = target / f"{name}.parquet"
        tmp = path.with_name(path.name + ".tmp")
        pq.write_table(table, tmp)
        os.replace(tmp, path)
        written.append(path)

    write("campaigns", pa.table({
        "campaign_id": pa.array([c["id"] for c in camps], pa.int64()),
        "name": [c["name"] for c in camps],
        "started": pa.array([c["started"] for c in camps], pa.float64()),
        "finished": pa.array([c["finished"] for c in camps], pa.float64()),
        "status": [c["status"] for c in camps],
        "spec": [json.dumps(c["spec"]) for c in camps]}))
    write("runs", pa.table({
        "run_id": pa.array([r.id for r in runs], pa.int64()),
        "campaign_id": pa.array([r.campaign_id for r in runs], pa.int64()),
        "kernel": [r.kernel for r in runs], "transport": [r.transport for r in runs],
        "selected_transport": [r.selected_transport for r in runs],
        "mpi": [r.mpi for r in runs], "ranks": pa.array([r.ranks for r in runs], pa.int64()),
        "launcher": [r.launcher for r in runs],
        "repeat": pa.array([r.repeat for r in runs], pa.int64()),
        "label": [run_label(r) for r in runs], "source": [run_source(r) for r in runs],
        "status": [r.status for r in runs], "reason": [r.reason for r in runs],
        "started": pa.array([r.started for r in runs], pa.float64()),
        "finished": pa.array([r.finished for r in runs], pa.float64()),
        "oversubscribed": [r.oversubscribed for r in runs],
        "settings": [json.dumps(r.settings) for r in runs],
        "flags": [json.dumps(r.flags) for r in runs],
        "command": [r.command for r in runs]}))
    prov_rows: dict[str, list[Any]] = {"campaign_id": [], "run_id": [], "key": [],
                                       "value": []}
    for c in camps:
        for k, v in _flatten(store.campaign(c["id"]).provenance):
            prov_rows["campaign_id"].append(c["id"])
            prov_rows["run_id"].append(None)
            prov_rows["key"].append(k)
            prov_rows["value"].append(v)
    for r in runs:
        for k, v in _flatten(r.provenance):
            prov_rows["campaign_id"].append(r.campaign_id)
            prov_rows["run_id"].append(r.id)
            prov_rows["key"].append(k)
            prov_rows["value"].append(v)
    write("provenance", pa.table({
        "campaign_id": pa.array(prov_rows["campaign_id"], pa.int64()),
        "run_id": pa.array(prov_rows["run_id"], pa.int64()),
        "key": pa.array(prov_rows["key"], pa.string()),
        "value": pa.array(prov_rows["value"], pa.string())}))
    write("samples", _samples_table(pa, store, runs))
    return written


def _samples_table(pa: Any, store: Store, runs: list[RunRow]) -> Any:
    cols: dict[str, list[Any]] = {k: [] for k in (
        "run_id", "campaign_id", "kernel", "size", "series", "iteration")}
    values: list[np.ndarray] = []
    for r in runs:
        for rec in store.results(r.id):
            for series in ("times", "times_min", "times_mean"):
                data = getattr(rec, series)
                if not data:
                    continue
                n = len(data)
                cols["run_id"].append(np.full(n, r.id, np.int64))
                cols["campaign_id"].append(np.full(n, -1 if r.campaign_id is None
                                                   else r.campaign_id, np.int64))
                cols["kernel"] += [r.kernel] * n
                cols["size"].append(np.full(n, rec.size, np.int64))
                cols["series"] += [series] * n
                cols["iteration"].append(np.arange(n, dtype=np.int64))
                values.append(np.asarray(data, dtype=np.float64))

    def cat(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
        return np.concatenate(parts) if parts else np.array([], dtype)

    camp = cat(cols["campaign_id"], np.int64)
    return pa.table({
        "run_id": pa.array(cat(cols["run_id"], np.int64)),
        "campaign_id": pa.array(camp, mask=camp < 0),
        "kernel": pa.array(cols["kernel"], pa.string()).dictionary_encode(),
        "size": pa.array(cat(cols["size"], np.int64)),
        "series": pa.array(cols["series"], pa.string()).dictionary_encode(),
        "iteration": pa.array(cat(cols["iteration"], np.int64)),
        "time_us": pa.array(cat(values, np.float64))})


def _flatten(value: Any, prefix: str = "") -> Iterator[tuple[str, str]]:
    """A provenance record as dotted keys and JSON values (lists whole: a NIC list is one
    fact)."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _flatten(v, f"{prefix}.{k}" if prefix else str(k))
    else:
        yield prefix, json.dumps(value)


# -- OpenMetrics ---------------------------------------------------------------------------
_LABEL_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n"})


def _label(value: object) -> str:
    return str(value).translate(_LABEL_ESCAPES)


def _number(x: float) -> str:
    return repr(float(x)) if math.isfinite(x) else ("NaN" if math.isnan(x) else
                                                    ("+Inf" if x > 0 else "-Inf"))


def openmetrics_text(store: Store) -> str:
    latest: dict[tuple[Any, ...], tuple[RunRow, Any]] = {}
    for r in _ok_runs(store):  # ordered by id: the newest run of a configuration wins
        for rec in store.results(r.id):
            latest[(config_key(r), rec.size)] = (r, rec)
    families: dict[str, list[str]] = {}
    for (_, size), (r, rec) in sorted(latest.items(), key=lambda kv: (kv[1][0].kernel,
                                                                      kv[0][1], kv[1][0].id)):
        for metric in run_metrics(r):
            if metric.name not in _OPENMETRICS:
                continue
            name, _, scale, _ = _OPENMETRICS[metric.name]
            vals = metric.values(rec.times, rec.bytes_per_sample, rec.messages_per_sample)
            vals = vals[np.isfinite(vals)]
            if not vals.size:
                continue
            env = r.settings.get("env") or {}
            labels = {"kernel": r.kernel, "transport": r.transport, "mpi": r.mpi,
                      "ranks": r.ranks, "size": size, "label": run_label(r),
                      "env": ",".join(f"{k}={v}" for k, v in sorted(env.items())),
                      "campaign": r.campaign_id if r.campaign_id is not None else "",
                      "run": r.id}
            text = ",".join(f'{k}="{_label(v)}"' for k, v in labels.items())
            # No timestamp: node-exporter's textfile collector refuses samples that carry one.
            families.setdefault(name, []).append(
                f"{name}{{{text}}} {_number(float(np.median(vals)) * scale)}")
    lines = []
    for metric, (name, unit, _, help_text) in _OPENMETRICS.items():
        if name not in families:
            continue
        lines.append(f"# TYPE {name} gauge")
        if unit:
            lines.append(f"# UNIT {name} {unit}")
        lines.append(f"# HELP {name} fabench {metric}: {help_text} of each configuration")
        lines += families[name]
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def export_openmetrics(store: Store, target: Path) -> Path:
    if target.is_dir():
        raise FabenchError(f"{target} is a directory: name the .prom file to write")
    if not re.search(r"\.prom$", target.name):
        # node-exporter's textfile collector reads only *.prom
        raise FabenchError(f"{target}: the textfile collector reads files ending in .prom")
    text = openmetrics_text(store)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_text(text)
    os.replace(tmp, target)
    return target
