"""Intel MPI Benchmarks (IMB-MPI1) text output.

Each "# Benchmarking NAME" block becomes a run: PingPong (t[usec] is half the round trip, as
fabench's mpi.latency), Uniband and Biband (Mbytes/sec), and the collectives, whose headline
is t_max[usec] (the slowest rank, closest to fabench's per-iteration max over ranks; t_min and
t_avg are kept). Rows where IMB gave up -- "time-out" (its per-sample time limit) or
"out-of-mem." -- carry no number: they are listed in the run's notes and flags, never turned
into values. Benchmarks fabench has no kernel for (Sendrecv, Exchange, ...) are skipped and
named in the notes of the first run.
"""

import math
import re

from ..records import ResultRecord
from .base import ImportedRun, Importer, aggregate, register_importer

_KERNELS = {"pingpong": "mpi.latency", "uniband": "mpi.bw", "biband": "mpi.bibw",
            "allreduce": "mpi.allreduce", "alltoall": "mpi.alltoall",
            "allgather": "mpi.allgather", "gather": "mpi.gather", "bcast": "mpi.bcast",
            "reduce": "mpi.reduce", "barrier": "mpi.barrier"}
_PAIRS = {"pingpong", "uniband", "biband"}
_BENCH = re.compile(r"^#\s*Benchmarking\s+(\S+)")
_PROCS = re.compile(r"^#\s*#processes\s*=\s*(\d+)")
_VERSION = re.compile(r"Intel\(R\) MPI Benchmarks\s+([\w.]+)")
_FAILED = re.compile(r"^\s*(\d+)\s+(time-out|out-of-mem|int-overflow)\.?;?\s*(.*)$")


@register_importer("imb")
class ImbImporter(Importer):
    default_transport = "imb"

    def parse(self, text: str, source: str) -> list[ImportedRun]:
        runs: list[ImportedRun] = []
        skipped: list[str] = []
        version = ""
        cur: ImportedRun | None = None
        cols: list[str] = []
        for n, raw in enumerate(text.splitlines(), 1):
            line = raw.rstrip()
            if not version and (m := _VERSION.search(line)):
                version = m.group(1)
            if m := _BENCH.match(line):
                name = m.group(1)
                kernel = _KERNELS.get(name.lower())
                cur, cols = None, []
                if kernel is None:
                    skipped.append(name)
                    continue
                metrics = ["bandwidth"] if kernel in ("mpi.bw", "mpi.bibw") else ["latency"]
                # PingPong, Uniband and Biband run between two ranks; a collective's count is
                # its "#processes" line (none: --ranks must say).
                cur = ImportedRun(kernel, 2 if name.lower() in _PAIRS else None, [], metrics,
                                  meta={"benchmark": name, "version": version})
                runs.append(cur)
                continue
            if cur is None:
                continue
            if m := _PROCS.match(line):
                cur.ranks = int(m.group(1))
                continue
            stripped = line.strip()
            if stripped.startswith("#bytes") or stripped.startswith("#repetitions"):
                cols = stripped.split()
                continue
            if not stripped or stripped.startswith("#") or not cols:
                if stripped.startswith("# All processes entering MPI_Finalize"):
                    cur = None
                continue
            if m := _FAILED.match(line):
                size, what, why = int(m.group(1)), m.group(2), m.group(3).strip()
                cur.notes.append(f"IMB {what} at {size} B: no result ({why[:120]})")
                flag = f"IMB {what} rows: some sizes have no result"
                if flag not in cur.flags:
                    cur.flags.append(flag)
                continue
            rec = self._row(cur, cols, stripped.split())
            if rec is not None:
                rec.extra["line"] = n
                cur.results.append(rec)
            else:
                cur.rejected.append(f"line {n}: not a result row: {stripped[:80]!r}")
        if skipped and runs:
            runs[0].notes.append("IMB benchmarks without a fabench kernel, not imported: "
                                 + ", ".join(skipped))
        return runs

    @staticmethod
    def _row(run: ImportedRun, cols: list[str], fields: list[str]) -> ResultRecord | None:
        if len(fields) != len(cols):
            return None
        try:
            vals = {c: float(v) for c, v in zip(cols, fields, strict=True)}
            size = int(fields[cols.index("#bytes")]) if "#bytes" in cols else 0
            reps = int(fields[cols.index("#repetitions")]) if "#repetitions" in cols else 1
        except ValueError:
            return None
        extra = {k: v for k, v in vals.items() if k not in ("#bytes", "#repetitions")}
        if run.kernel in ("mpi.bw", "mpi.bibw"):
            mbs = vals.get("Mbytes/sec", math.nan)
            if not (math.isfinite(mbs) and mbs > 0) or size <= 0:
                mbs = math.nan  # refused by the value checks, with this row's line number
            return aggregate(run.kernel, size, size / mbs, "mean (IMB Mbytes/sec)",
                             iterations=reps, bytes_per_sample=size, extra=extra)
        t = vals.get("t[usec]", vals.get("t_max[usec]"))
        if t is None:
            return None
        what = "mean (IMB t[usec])" if "t[usec]" in vals else "max over ranks of means (IMB)"
        return aggregate(run.kernel, size, t, what, iterations=reps, bytes_per_sample=size,
                         extra=extra)
