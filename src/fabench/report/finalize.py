"""What every campaign leaves in its results directory."""

from pathlib import Path

from ..errors import FabenchError
from ..store.database import Store
from .build import report_for, write_report
from .campaign_summary import full_tables


def finalize_campaign(store: Store, campaign_id: int, out_dir: Path) -> list[Path]:
    """Write the campaign's artefacts; returns the files written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    tables = out_dir / f"campaign-{campaign_id}-tables.txt"
    tables.write_text("\n".join(full_tables(store, campaign_id)) + "\n")
    try:
        report = report_for(store, [f"c{campaign_id}"], f"fabench campaign {campaign_id}")
    except FabenchError:  # no run finished: the tables say why, there is nothing to plot
        return [tables]
    return [tables, *write_report(report, out_dir / f"campaign-{campaign_id}-report.html")]
