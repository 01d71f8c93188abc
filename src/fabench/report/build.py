"""Selectors in, report files out: the HTML page and its CSV and JSON exports."""

from pathlib import Path

from ..analysis.selection import select_runs
from ..errors import FabenchError
from ..model.fabric import Fabric
from ..store.database import Store
from .export import rows, write_csv, write_json
from .html import write_html
from .model import Report, build_report


def report_for(store: Store, selectors: list[str], title: str | None = None,
               fabric: Fabric | None = None) -> Report:
    runs = select_runs(store, selectors, include_failed=True)
    ok = [r for r in runs if r.status == "ok"]
    if not ok:
        raise FabenchError(f"{' '.join(selectors)}: no finished run to report on")
    return build_report(store, ok, [r for r in runs if r.status != "ok"],
                        title or f"fabench report: {' '.join(selectors)}", fabric=fabric)


def write_report(report: Report, html_path: Path, samples: bool = False) -> list[Path]:
    """The HTML file and, beside it, <stem>.csv and <stem>.json."""
    table = rows(report)
    return [write_html(report, html_path),
            write_csv(report, html_path.with_suffix(".csv"), table),
            write_json(report, html_path.with_suffix(".json"), samples, table)]
