"""The HTML report, opened in headless Chromium (Debian's): every chart present and drawn, no
console errors, user-supplied labels escaped; CSV and JSON exports; `fabench run` ends with it."""

import csv
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import ROOT, fabench_run, missing

EVIL = '<script>window.pwned=1</script>"&'


def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        missing("chromium not installed (Debian package chromium)")
    return exe


def browse(page: Path, *mode: str) -> subprocess.CompletedProcess[str]:
    """Headless Chromium on a file: URL, console messages on stderr."""
    with tempfile.TemporaryDirectory(prefix="fabench-chromium-") as profile:
        return subprocess.run(
            [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
             "--window-size=1400,2600", *mode, page.as_uri()],
            capture_output=True, text=True, timeout=120, check=False)


def console_errors(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines()
            if "CONSOLE" in ln or "Uncaught" in ln or "SyntaxError" in ln]


@pytest.fixture(scope="module")
def results(openmpi: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report")
    for kernel, transport in (("mpi.latency", "shm"), ("mpi.latency", "tcp"), ("mpi.bw", "shm"),
                              ("mpi.bw", "tcp"), ("mpi.latency", "shm")):
        fabench_run("bench", kernel, "--transport", transport, "--sizes", "8,64K",
                    "--iterations", "100", "--out", str(out))
    fabench_run("bench", "mpi.allreduce", "--sizes", "4,1K", "--iterations", "100",
                "--out", str(out))
    fabench_run("import", "osu", str(ROOT / "tests/fixtures/import/osu_latency_z.txt"),
                "--label", EVIL, "--store", str(out))
    return out


@pytest.fixture(scope="module")
def report(results: Path) -> Path:
    html = results / "r" / "report.html"
    proc = fabench_run("report", "kernel=mpi.latency", "kernel=mpi.bw", "kernel=mpi.allreduce",
                       "-o", str(html), "--store", str(results))
    assert "wrote" in proc.stdout
    return html


def test_report_is_self_contained_and_escapes_labels(report: Path) -> None:
    text = report.read_text()
    assert "<script>window.pwned" not in text
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;&quot;&amp;" in text
    assert not re.search(r"(src|href)=\"https?://", text)  # nothing fetched from a network
    assert text.count("<script>") == 1  # only the report's own


@pytest.mark.browser
def test_report_in_chromium(report: Path, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    snap = browse(report, f"--screenshot={shot}")
    assert shot.exists() and shot.stat().st_size > 20000, snap.stderr[-2000:]
    dom = browse(report, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert console_errors(dom.stderr + snap.stderr) == []
    # The inline script ran (it stamps the chart count) and the payload did not.
    m = re.search(r'<body[^>]*data-charts="(\d+)"', dom.stdout)
    assert m, "inline script did not run"
    charts = re.findall(r'<svg class="chart".*?</svg>', dom.stdout, re.S)
    rows = json.loads(report.with_suffix(".json").read_text())["rows"]
    expected = {(r["kernel"], r["metric"]) for r in rows}  # one chart per kernel and metric
    assert len(expected) >= 3
    assert int(m.group(1)) == len(charts) == len(expected)
    for svg in charts:
        paths = re.findall(r'<path class="median" d="([^"]+)"', svg)
        assert paths and all(p.count("L") >= 1 for p in paths), svg[:300]
        assert "<circle" in svg
    latency = next(s for s in charts if "mpi.latency: latency" in s)
    assert latency.count('class="band"') >= 2  # shm (2 runs pooled) and tcp have CI bands
    assert "<script>window.pwned" not in dom.stdout and dom.stdout.count("<script") == 1
    assert "slower by" in dom.stdout  # the comparison sentence tcp vs shm


@pytest.mark.browser
def test_console_error_detection_works(tmp_path: Path) -> None:
    # The check above must be able to fail: a page that throws is caught.
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><script>throw new Error('boom')</script></body></html>")
    assert console_errors(browse(bad, "--dump-dom").stderr)


def test_csv_and_json_exports(report: Path) -> None:
    rows = list(csv.DictReader(report.with_suffix(".csv").open()))
    pooled = [r for r in rows if r["scope"] == "pooled"]
    per_run = [r for r in rows if r["scope"] == "run"]
    assert pooled and per_run
    shm8 = next(r for r in pooled if r["kernel"] == "mpi.latency" and r["transport"] == "shm"
                and r["size"] == "8")
    # The pooled row against its own runs' rows: the median of two runs' samples lies between
    # the runs' medians, and the two-stage interval is reported as computed (not widened).
    runs8 = [float(r["median"]) for r in per_run if r["kernel"] == "mpi.latency"
             and r["transport"] == "shm" and r["size"] == "8"]
    assert shm8["runs"] == "2" and len(runs8) == 2
    assert min(runs8) <= float(shm8["median"]) <= max(runs8)
    assert float(shm8["ci_low"]) < float(shm8["ci_high"]) and shm8["ci_point_outside"] in (
        "False", "True")
    assert shm8["unit"] == "us" and shm8["better"] == "lower"
    doc = json.loads(report.with_suffix(".json").read_text())
    assert {"runs", "rows", "comparisons", "summary_table", "warnings"} <= set(doc)
    assert any(c["kernel"] == "mpi.latency" for c in doc["comparisons"])
    assert any(r["label"] == EVIL for r in doc["rows"])  # kept verbatim in data exports


def test_run_ends_with_its_report(openmpi: str, tmp_path: Path) -> None:
    spec = tmp_path / "tiny.yaml"
    spec.write_text("name: tiny\nruns:\n  - kernel: mpi.latency\n    transport: [shm]\n"
                    "    sizes: 8,64\n    iterations: 100\n")
    out = tmp_path / "res"
    proc = fabench_run("run", str(spec), "--out", str(out), "--no-progress")
    html = out / "campaign-1-report.html"
    assert html.exists() and f"wrote {html}" in proc.stdout
    assert (out / "campaign-1-report.csv").exists() and (out / "campaign-1-report.json").exists()
    assert '<svg class="chart"' in html.read_text()
