"""A campaign at a glance: one line per run with its headline figures."""

from ..analysis.analyse import summarize_results
from ..congestion.impact import impact_rows_from_store
from ..kernels import get_kernel
from ..records import ResultRecord
from ..store.database import RunRow, Store
from ..util.units import format_size
from .congestion import text_lines
from .table import header_lines, kernel_tables

SMALL_SIZE = 8  # the small-message latency figure, as document 004's table


def _at(results: list[ResultRecord], size: int | None) -> ResultRecord | None:
    if not results:
        return None
    if size is None:
        return results[-1]
    at_least = [r for r in results if r.size >= size]
    return at_least[0] if at_least else results[-1]


def headline(run: RunRow, results: list[ResultRecord]) -> tuple[str, str]:
    """(small-message figure, large-message figure) as text with units."""
    kernel = get_kernel(run.kernel)
    cols = []
    for size in (SMALL_SIZE, None):
        rec = _at(results, size)
        if rec is None:
            cols.append("-")
            continue
        s = summarize_results(run.kernel, [rec], kernel.primary)[0].summary
        cols.append(f"{s.median:.2f} {kernel.primary.unit} @{format_size(rec.size)}")
    return cols[0], cols[1]


def campaign_lines(store: Store, campaign_id: int) -> list[str]:
    runs = store.runs(campaign_id)
    lines = [f"{'kernel':<15} {'transport':<10} {'np':>3} {'mpi':<8} {'selected':<14}"
             f" {'status':<8} {'small (median)':<24} {'large (median)':<26} notes"]
    for run in runs:
        results = list(store.results(run.id))
        small, large = headline(run, results)
        notes = "; ".join([*run.flags, *run.notes, run.reason or ""]).strip("; ")
        lines.append(f"{run.kernel:<15} {run.transport:<10} {run.ranks:>3} {run.mpi:<8}"
                     f" {(run.selected_transport or '?'):<14} {run.status:<8} {small:<24}"
                     f" {large:<26} {notes}")
    congestion = impact_rows_from_store(store, campaign_id)
    if congestion:
        lines += ["", *text_lines(congestion)]
    return lines


def full_tables(store: Store, campaign_id: int) -> list[str]:
    lines: list[str] = []
    for run in store.runs(campaign_id):
        title = (f"run {run.id}: {run.kernel} transport={run.transport} "
                 f"(selected: {run.selected_transport or 'unknown'}) np={run.ranks} "
                 f"mpi={run.mpi} status={run.status}")
        lines += header_lines(title, [*run.notes, *run.flags, run.reason or ""])
        lines += kernel_tables(run.kernel, list(store.results(run.id)))
        lines.append("")
    return lines
