"""OSU Micro-Benchmarks text output (osu_latency, osu_bw, osu_bibw, osu_mbw_mr and the
collectives), including the `-f` (min, max, iterations) and `-z` (P50/P90/P99 tail) columns.

The headline column is OSU's mean over iterations. With `-z` the P50 column is the median, and
that is what is stored (fabench's headline is the median); the mean and the other columns are
kept in `extra`. Bandwidth rows are stored as the time per message that gives OSU's MB/s
(size / MB/s), so bandwidth and message rate derive exactly as for fabench's own runs.
"""

import math
import re

from ..records import ResultRecord
from .base import ImportedRun, Importer, aggregate, register_importer

_TITLE = re.compile(r"^#\s*OSU\s+(?:MPI|OpenSHMEM|UPC\+?\+?)[- ]?(.*?)\s+Test(?:\s+v?([\w.]+))?",
                    re.IGNORECASE)
# The first word of OSU's title names the benchmark (OSU 7.4: "Latency", "Bandwidth",
# "Bi-Directional Bandwidth", "Multiple Bandwidth / Message Rate", "Allreduce Latency",
# "All-to-All Personalized Exchange Latency", "Broadcast Latency", ...).
_FIRST_WORD = {
    "latency": "mpi.latency", "bandwidth": "mpi.bw", "bi-directional": "mpi.bibw",
    "multiple": "mpi.mbw_mr", "allreduce": "mpi.allreduce", "all-to-all": "mpi.alltoall",
    "alltoall": "mpi.alltoall", "allgather": "mpi.allgather", "reduce": "mpi.reduce",
    "gather": "mpi.gather", "broadcast": "mpi.bcast", "bcast": "mpi.bcast",
    "barrier": "mpi.barrier",
}
# Benchmarks that share words with those above but measure something else (vector and
# non-blocking collectives, many pairs, one-sided, device buffers): not imported as them.
_OTHER = re.compile(r"\b(non-?blocking|multi|allgatherv|alltoallv|all-to-allv|gatherv|scatterv?|"
                    r"reduce[_-]scatter|put|get|accumulate|neighbou?rhood|persistent)\b")
_BW_KERNELS = {"mpi.bw", "mpi.bibw", "mpi.mbw_mr"}
_PAIR_KERNELS = {"mpi.latency", "mpi.bw", "mpi.bibw"}  # exactly two ranks by definition


def _kernel(title: str) -> str | None:
    t = title.lower().strip()
    if not t or _OTHER.search(t):
        return None
    return _FIRST_WORD.get(t.split()[0])


def _columns(header: str) -> list[str]:
    return [c.strip() for c in re.split(r"\s{2,}", header.lstrip("#").strip()) if c.strip()]


@register_importer("osu")
class OsuImporter(Importer):
    default_transport = "osu"

    def parse(self, text: str, source: str) -> list[ImportedRun]:
        runs: list[ImportedRun] = []
        cur: ImportedRun | None = None
        cols: list[str] = []
        for n, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            m = _TITLE.match(line)
            if m:
                kernel = _kernel(m.group(1))
                cur = None
                cols = []
                if kernel is None:
                    continue
                metrics = (["bandwidth", "message_rate"] if kernel == "mpi.mbw_mr" else
                           ["bandwidth"] if kernel in _BW_KERNELS else ["latency"])
                # OSU does not print how many ranks ran a collective or mbw_mr: --ranks says
                cur = ImportedRun(kernel, 2 if kernel in _PAIR_KERNELS else None, [], metrics,
                                  meta={"title": line, "version": m.group(2) or ""})
                runs.append(cur)
                continue
            if cur is None or not line:
                continue
            if line.startswith("#"):
                if re.match(r"#\s*(Size|Avg Latency)", line):
                    cols = _columns(line)
                else:
                    cur.meta.setdefault("header", []).append(line)
                continue
            rec = self._row(cur, cols, line.split())
            if rec is not None:
                rec.extra["line"] = n
                cur.results.append(rec)
            else:
                cur.rejected.append(f"line {n}: not a result row: {line[:80]!r}")
        return runs

    @staticmethod
    def _row(run: ImportedRun, cols: list[str], fields: list[str]) -> ResultRecord | None:
        if not cols:
            cols = ["Size", "Value"]
        if cols[0].lower() != "size":  # barrier: no size column
            cols = ["Size", *cols]
            fields = ["0", *fields]
        vals: dict[str, str] = dict(zip(cols, fields, strict=False))
        try:
            size = int(vals[cols[0]])
            main = float(fields[1])
        except (ValueError, IndexError, KeyError):
            return None
        extra: dict[str, float | str] = {}
        for c, v in list(vals.items())[2:]:
            try:
                extra[c] = float(v)
            except ValueError:
                extra[c] = v
        it = extra.get("Iterations")
        iters = int(it) if isinstance(it, float) and 1 <= it < 2**63 else 1
        validated = None
        if isinstance(extra.get("Validation"), str):
            validated = str(extra["Validation"]).lower().startswith("pass")
        if run.kernel in _BW_KERNELS:
            # a bandwidth that is not finite and positive gives no time: the value checks
            # refuse the row, with its line number
            t = size / main if math.isfinite(main) and main > 0 else math.nan
            rec = aggregate(run.kernel, size, t, "mean (OSU bandwidth)",
                            bytes_per_sample=size, messages_per_sample=1, iterations=iters,
                            extra={"osu_value": main, **extra})
        else:
            p50 = extra.get("P50 Tail Lat(us)")
            if isinstance(p50, float):
                rec = aggregate(run.kernel, size, p50, "median (OSU -z P50)", iterations=iters,
                                bytes_per_sample=size, extra={"osu_mean": main, **extra})
            else:
                rec = aggregate(run.kernel, size, main, "mean (OSU)", iterations=iters,
                                bytes_per_sample=size, extra={"osu_mean": main, **extra})
        rec.validated = validated
        return rec
