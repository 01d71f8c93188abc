"""The importer interface and registry, and writing imported runs into the store.

Peer tools print aggregates (OSU: the mean per size; IMB: min/avg/max over ranks), not
per-iteration samples, except where the tool can dump them (sockperf --full-log, iperf3's
per-interval records). An aggregate is stored as a one-sample result whose `extra.statistic`
says what it is; the statistics then give it no confidence interval, and a comparison against
it holds it fixed (docs/statistics.md).
"""

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import FabenchError
from ..records import ResultRecord
from ..registry import Registry
from ..store import Store


@dataclass
class ImportedRun:
    kernel: str
    ranks: int
    results: list[ResultRecord]
    metrics: list[str]  # metric names, for kernels this build may not have registered
    transport: str = ""
    notes: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)  # tool version, header, options


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


def import_file(store: Store, tool: str, path: Path, *, transport: str | None = None,
                label: str | None = None, mpi: str = "unknown",
                ranks: int | None = None, size: int | None = None) -> tuple[int, list[int]]:
    """Parse `path` with the named importer and store it as one campaign; returns
    (campaign id, run ids)."""
    imp = get_importer(tool)
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise FabenchError(f"cannot read {path}: {exc.strerror}") from exc
    runs = imp.parse(text, str(path))
    if not runs:
        raise FabenchError(f"{path}: no {tool} results found (is this {tool} output?)")
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
        rid = store.begin_run(campaign_id=cid, key=f"{digest}-{i}", kernel=r.kernel,
                              transport=tr, mpi=mpi, ranks=ranks or r.ranks,
                              launcher=f"import:{tool}", repeat=0, settings=settings)
        for rec in r.results:
            if size is not None and rec.size == 0:  # a tool that does not print it
                rec.size = rec.bytes_per_sample = size
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
