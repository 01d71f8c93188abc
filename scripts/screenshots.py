#!/usr/bin/env python3
"""The screenshots of docs/accept.md and docs/history.md, from real runs on this machine,
drawn by headless Chromium (Debian's `chromium`, as the browser tests use it).

1. An acceptance of this host (`--on local`, shm): doctor, latency and bandwidth, an
   allreduce against the model, and one latency threshold set below what shared memory can
   do, so the table shows a fail with its evidence; then the same spec again with
   `--baseline` on the first, so the table carries the comparison with the earlier one.
   -> docs/img/accept-verdicts.png (the top of the report: the verdict table)
2. Nightly-like campaigns of one 4 KiB latency measurement, the site's environment steering
   Open MPI onto TCP from night CHANGE on (as test_history.py plants it), and `fabench
   history --html` over them. -> docs/img/history-trend.png

Every number in the pictures is measured when the script runs; nothing is drawn by hand.

    .venv/bin/python scripts/screenshots.py [--out docs/img] [--nights 8] [--change 6]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

from fabench.host.process import run_once

ACCEPT = """\
name: screenshot-acceptance
fabric: tcp-1g
repeats: 2
checks:
  - doctor
  - check: latency_us <= 50 @ 8
    transport: shm
    iterations: 300
  - check: latency_us <= 0.01 @ 8
    transport: shm
    iterations: 300
    id: below what shared memory can do
  - check: bandwidth_MBps >= 100 @ 1M
    transport: shm
    iterations: 50
  - check: allreduce <= 10000 x predicted @ 8
    transport: shm
    ranks_per_node: 2
    iterations: 200
"""

NIGHTLY = """\
name: nightly
runs:
  - kernel: [mpi.latency]
    transport: [auto]
    ranks: 2
    sizes: "4K"
    iterations: 300
    warmup: 20
"""
PLANTED = {"OMPI_MCA_pml": "ob1", "OMPI_MCA_btl": "tcp,self"}


def fabench(*args: str, env: dict[str, str] | None = None, ok: tuple[int, ...] = (0,)) -> str:
    proc = run_once([sys.executable, "-m", "fabench", *args], capture_output=True, text=True,
                    timeout=900, env={**os.environ, **(env or {})})
    if proc.returncode not in ok:
        raise SystemExit(f"fabench {' '.join(args)} exited {proc.returncode}:\n"
                         f"{proc.stdout}\n{proc.stderr}")
    return str(proc.stdout)


def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        raise SystemExit("chromium not installed (Debian package chromium)")
    return exe


def screenshot(page: Path, png: Path, width: int, height: int) -> None:
    with tempfile.TemporaryDirectory(prefix="fabench-chromium-") as profile:
        proc = run_once([chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                         "--no-first-run", "--disable-background-networking",
                         "--disable-component-update", "--disable-sync",
                         "--hide-scrollbars", f"--user-data-dir={profile}",
                         f"--window-size={width},{height}", f"--screenshot={png}",
                         page.as_uri()], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0 or not png.exists():
        raise SystemExit(f"chromium could not draw {page}: {proc.stderr[-2000:]}")
    print(f"# wrote {png} ({png.stat().st_size} bytes)")


def acceptance(work: Path, out: Path) -> None:
    spec = work / "accept.yaml"
    spec.write_text(ACCEPT)
    results = work / "accept"
    # exit 3: the strict threshold fails, as it is meant to
    fabench("accept", str(spec), "--out", str(results), ok=(0, 3, 4))
    fabench("accept", str(spec), "--out", str(results), "--baseline", "c1",
            "--html", str(work / "accept.html"), ok=(0, 3, 4))
    screenshot(work / "accept.html", out / "accept-verdicts.png", 1400, 820)


def history(work: Path, out: Path, nights: int, change: int) -> None:
    if any(k in os.environ for k in PLANTED):
        raise SystemExit("the environment already steers Open MPI (OMPI_MCA_pml/btl)")
    spec = work / "nightly.yaml"
    spec.write_text(NIGHTLY)
    store = work / "nightly.sqlite"
    for night in range(1, nights + 1):
        fabench("run", str(spec), "--store", str(store), "--out", str(work / "runs"),
                "--no-progress", env=PLANTED if night >= change else {})
    # --tolerance 1.0: the nightly spread on a shared host (docs/history.md)
    fabench("history", "nightly", "--store", str(store), "--tolerance", "1.0", "--html",
            str(work / "trend.html"), ok=(0, 3))
    screenshot(work / "trend.html", out / "history-trend.png", 1100, 760)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("docs/img"))
    ap.add_argument("--nights", type=int, default=8)
    ap.add_argument("--change", type=int, default=6, help="the first night with the change")
    ap.add_argument("--keep", type=Path, help="keep the stores and pages here")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="fabench-shots-")) if a.keep is None else a.keep
    work.mkdir(parents=True, exist_ok=True)
    try:
        acceptance(work, a.out)
        history(work, a.out, a.nights, a.change)
    finally:
        if a.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
