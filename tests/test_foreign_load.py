"""Issue 31: a benchmark notices a process that is not its own busy beside it, names it in
the run's notes and stores how much CPU it took (the issue's case: aggressors left running
by a killed fabench, beside which the next benchmark's latency tail read 4.5 ms against a
median of 12 us, with no warning)."""

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import fabench_cli


@pytest.mark.timing
def test_a_busy_process_beside_a_benchmark_is_named(tmp_path: Path) -> None:
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        fabench_cli("bench", "tcp.latency", "--sizes", "8", "--iterations", "30000",
                    "--out", str(tmp_path))
    finally:
        hog.kill()
        hog.wait()
    db = sqlite3.connect(tmp_path / "fabench.sqlite")
    notes, prov = db.execute("SELECT notes, provenance FROM runs").fetchone()
    db.close()
    load = json.loads(prov)["foreign_load"]
    # the hog alone is a whole core whenever it runs; a fifth of one is the note's threshold
    assert load["cores"] >= 0.2, load
    assert hog.pid in [t["pid"] for t in load["top"]], load
    assert "foreign load" in (notes or "") and f"pid {hog.pid}" in notes, notes
