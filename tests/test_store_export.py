"""Exports for analysis: Parquet read back with pyarrow, OpenMetrics parsed by Prometheus's
own client library (its strict OpenMetrics parser, and the text-format parser that
node-exporter's textfile collector shares)."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, fabench_cli, missing
from fabench.analysis.selection import run_metrics
from fabench.store.database import Store


def _store(tmp_path: Path) -> Path:
    path = tmp_path / "fabench.sqlite"
    shutil.copy(ROOT / "tests" / "fixtures" / "store" / "v1-4d08b82.sqlite", path)
    return path


def test_parquet_holds_every_sample_run_and_provenance(tmp_path: Path) -> None:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        missing("pyarrow not installed (a dependency of fabench)")
    store = _store(tmp_path)
    proc = fabench_cli("store", "export", "parquet", str(tmp_path / "pq"), "--store", str(store))
    assert proc.stdout.count("# wrote") == 4
    samples = pq.read_table(tmp_path / "pq" / "samples.parquet").to_pydict()
    runs = pq.read_table(tmp_path / "pq" / "runs.parquet").to_pydict()
    prov = pq.read_table(tmp_path / "pq" / "provenance.parquet").to_pydict()
    with Store(store) as st:
        assert runs["run_id"] == [r.id for r in st.runs()]
        n = 0
        for r in st.runs():
            for rec in st.results(r.id):
                got = [t for rid, size, series, t in zip(
                    samples["run_id"], samples["size"], samples["series"], samples["time_us"],
                    strict=True) if rid == r.id and size == rec.size and series == "times"]
                assert got == rec.times  # every value, in order, to the bit
                n += len(rec.times) + len(rec.times_min or []) + len(rec.times_mean or [])
        assert len(samples["time_us"]) == n
        camp = st.campaign(1)
        kernel = [v for c, r, k, v in zip(prov["campaign_id"], prov["run_id"], prov["key"],
                                          prov["value"], strict=True)
                  if c == 1 and r is None and k == "kernel"]
        assert kernel == [json.dumps(camp.provenance["kernel"])]


def test_openmetrics_file_parses_and_holds_the_latest_medians(tmp_path: Path) -> None:
    try:
        from prometheus_client.openmetrics.parser import (
            text_string_to_metric_families as openmetrics_families,
        )
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        missing("prometheus_client not installed (a test dependency)")
    store = _store(tmp_path)
    target = tmp_path / "textfile" / "fabench.prom"
    fabench_cli("store", "export", "openmetrics", str(target), "--store", str(store))
    text = target.read_text()
    assert text.endswith("# EOF\n")
    families = {f.name: f for f in openmetrics_families(text)}  # strict: raises on any fault
    # the Prometheus text format (what the textfile collector reads) accepts it too
    assert {f.name for f in text_string_to_metric_families(text)} >= set(families)
    got = {(s.name, s.labels["run"], s.labels["size"]): s.value
           for f in families.values() for s in f.samples}
    assert got
    with Store(store) as st:
        newest: dict[tuple[str, str, str, int], tuple[int, float, float]] = {}
        for r in st.runs(status="ok"):
            metric = run_metrics(r)[0]
            for rec in st.results(r.id):
                v = metric.values(rec.times, rec.bytes_per_sample, rec.messages_per_sample)
                newest[(r.kernel, r.transport, r.mpi, rec.size)] = (
                    r.id, float(np.median(v[np.isfinite(v)])), 1e-6 if metric.name ==
                    "latency" else 1e6)
    names = {1e-6: "fabench_latency_seconds", 1e6: "fabench_bandwidth_bytes_per_second"}
    for (_, _, _, size), (rid, med, scale) in newest.items():
        assert got[(names[scale], str(rid), str(size))] == pytest.approx(med * scale,
                                                                         rel=1e-12)
    bad = fabench_cli("store", "export", "openmetrics", str(tmp_path / "x.txt"), "--store",
                      str(store), check=False)
    assert bad.returncode == 2 and ".prom" in bad.stderr
