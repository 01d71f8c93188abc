"""The importer interface and registry, and writing imported runs into the store.

Peer tools print aggregates (OSU: the mean per size; IMB: min/avg/max over ranks), not
per-iteration samples, except where the tool can dump them (sockperf --full-log, iperf3's
per-interval records). An aggregate is stored as a one-sample result whose `extra.statistic`
says what it is; the statistics then give it no confidence interval, and a comparison against
it holds it fixed (docs/statistics.md).
"""

import hashlib
import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import FabenchError
from ..records import ResultRecord
from ..store.database import Store
from ..util.registry import Registry
from ..util.textfile import check_regular


@dataclass
class ImportedRun:
    kernel: str
    ranks: int | None  # None: the file does not say (then --ranks must)
    results: list[ResultRecord]
    metrics: list[str]  # metric names, for kernels this build may not have registered
    transport: str = ""
    notes: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)  # tool version, header, options
    rejected: list[str] = field(default_factory=list)  # "line N: why", rows not imported


class Importer(ABC):
    name: str = ""
    default_transport: str = "unknown"

    @abstractmethod
    def parse(self, text: str, source: str) -> list[ImportedRun]:
        """Every benchmark found in one file of the tool's output."""


IMPORTERS: Registry[type[Importer]] = Registry("importer", "fabench.importers")


def register_importer(name: str) -> Callable[[type[Importer]], type[Importer]]:
    def deco(cls: type[Importer]) -> type[Importer]:
        cls.name = name
        return IMPORTERS.add(name, cls)
    return deco


def available_importers() -> list[str]:
    return IMPORTERS.names()


def get_importer(name: str) -> Importer:
    return IMPORTERS.get(name)()


def aggregate(kernel: str, size: int, value_us: float, statistic: str, *, iterations: int = 1,
              bytes_per_sample: float = 0.0, messages_per_sample: float = 1.0,
              extra: dict[str, Any] | None = None) -> ResultRecord:
    """A one-value result: `value_us` is a time in microseconds standing for `statistic`."""
    return ResultRecord(kernel=kernel, size=size, iterations=iterations, warmup=0, unit="us",
                        times=[value_us], bytes_per_sample=bytes_per_sample,
                        messages_per_sample=messages_per_sample,
                        extra={"statistic": statistic, **(extra or {})})


MAX_SIZE = (1 << 63) - 1  # the store keeps sizes as SQLite INTEGER (signed 64 bits)
MAX_RANKS = (1 << 31) - 1  # an MPI rank count is a C int


def record_problem(rec: ResultRecord) -> str | None:
    """Why an imported value cannot be stored as a measurement: a size that is not a
    non-negative integer in range, a time or bandwidth that is not finite and positive."""
    if isinstance(rec.size, bool) or not isinstance(rec.size, int) \
            or not 0 <= rec.size <= MAX_SIZE:
        return f"size {rec.size!r} is not an integer 0..{MAX_SIZE}"
    if not rec.times:
        return "no value"
    for t in rec.times:
        if not (isinstance(t, int | float) and math.isfinite(t) and t > 0):
            return f"value {t!r} is not a finite positive time (or bandwidth)"
    if not (math.isfinite(rec.bytes_per_sample) and rec.bytes_per_sample >= 0):
        return f"bytes {rec.bytes_per_sample!r} is not finite and >= 0"
    return None


def _line(rec: ResultRecord, k: int) -> str:
    n = rec.extra.get("line")
    return f"line {n}" if isinstance(n, int) else f"record {k}"


def import_file(store: Store, tool: str, path: Path, *, transport: str | None = None,
                label: str | None = None, mpi: str = "unknown", ranks: int | None = None,
                size: int | None = None, strict: bool = False,
                warn: Callable[[str], None] | None = None) -> tuple[int, list[int]]:
    """Parse `path` with the named importer and store it as one campaign, in one
    transaction (a failure leaves the store as it was); returns (campaign id, run ids).
    A row whose values fail the checks is rejected with its line number, or, with
    ``strict``, the whole file."""
    imp = get_importer(tool)
    try:
        check_regular(path, f"{tool} output")
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise FabenchError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        runs = imp.parse(text, str(path))
    except (ValueError, TypeError, KeyError, AttributeError, IndexError, OverflowError) as exc:
        # A file of the right shape with values of the wrong kind (JSON whose fields are
        # lists, a count of 1e999): the file is at fault, and the user sees which.
        raise FabenchError(f"{path}: not {tool} output fabench can read "
                           f"({type(exc).__name__}: {str(exc)[:200]})") from None
    if not runs:
        raise FabenchError(f"{path}: no {tool} results found (is this {tool} output?)")
    if ranks is not None and not 1 <= ranks <= MAX_RANKS:
        raise FabenchError(f"--ranks must be 1..{MAX_RANKS}, got {ranks}")
    for r in runs:
        if size is not None:
            for rec in r.results:
                if rec.size == 0:  # a tool that does not print it
                    rec.size = size
                    rec.bytes_per_sample = size
        good = []
        for k, rec in enumerate(r.results, 1):
            why = record_problem(rec)
            if why is None:
                good.append(rec)
            else:
                r.rejected.append(f"{_line(rec, k)}: {why}")
        r.results = good
        if r.ranks is not None and not 1 <= r.ranks <= MAX_RANKS:
            raise FabenchError(f"{path}: {r.kernel}: {r.ranks} ranks is not 1..{MAX_RANKS}")
        if r.ranks is None:
            if ranks is None:
                raise FabenchError(f"{path}: {r.kernel} results do not say how many ranks "
                                   "ran them; give --ranks N")
            r.ranks = ranks
    rejected = [f"{path} {why} ({r.kernel})" for r in runs for why in r.rejected]
    if rejected and strict:
        more = f" (and {len(rejected) - 5} more)" if len(rejected) > 5 else ""
        raise FabenchError("--strict: nothing imported; rejected rows:\n  "
                           + "\n  ".join(rejected[:5]) + more)
    for line in rejected:
        if warn is not None:
            warn(f"rejected {line}")
    if not any(r.results for r in runs):
        # an import that keeps nothing is a failure to say, not a campaign of empty runs
        raise FabenchError(f"{path}: no row kept ({len(rejected)} rejected by the value "
                           "checks); nothing imported")
    with store.transaction():
        return _store_runs(store, tool, path, text, runs, transport=transport, label=label,
                           mpi=mpi)


def _store_runs(store: Store, tool: str, path: Path, text: str, runs: list[ImportedRun], *,
                transport: str | None, label: str | None, mpi: str) -> tuple[int, list[int]]:
    imp = get_importer(tool)
    digest = hashlib.sha1(text.encode()).hexdigest()[:16]
    cid = store.begin_campaign(f"import {tool} {path.name}",
                               {"import": {"tool": tool, "file": str(path), "sha1": digest,
                                           "transport": transport, "label": label}},
                               {"imported_from": str(path.resolve()), "tool": tool,
                                "sha1": digest})
    ids = []
    for i, r in enumerate(runs):
        tr = transport or r.transport or imp.default_transport
        if transport in ("tcp", "udp") and r.kernel.split(".")[0] in ("tcp", "udp"):
            r.kernel = f"{transport}.{r.kernel.split('.', 1)[1]}"  # the user knows better
            for rec in r.results:
                rec.kernel = r.kernel
        settings = {"label": label or "", "metrics": r.metrics, "env": {}, "source_file":
                    str(path), "tool": tool, "statistic": sorted({
                        str(x.extra.get("statistic", "samples")) for x in r.results})}
        if r.rejected:
            r.notes.append(f"{len(r.rejected)} rows rejected: " + "; ".join(r.rejected[:10]))
            r.flags.append(f"{len(r.rejected)} rows of the file failed the value checks")
        rid = store.begin_run(campaign_id=cid, key=f"{digest}-{i}", kernel=r.kernel,
                              transport=tr, mpi=mpi, ranks=r.ranks or 0,
                              launcher=f"import:{tool}", repeat=0, settings=settings)
        for rec in r.results:
            store.add_result(rid, rec)
        store.finish_run(rid, status="ok" if r.results else "failed",
                         reason=None if r.results else "no result rows",
                         selected_transport=None, notes=[f"imported from {path}", *r.notes],
                         kernel_meta=r.meta, provenance={"imported_from": str(path.resolve()),
                                                         "tool": tool, **r.meta},
                         flags=r.flags)
        ids.append(rid)
    store.end_campaign(cid, "finished")
    return cid, ids
