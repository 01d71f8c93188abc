"""sockperf ping-pong output. With `--full-log FILE` sockperf writes every message's latency
(half the round trip, as fabench's latency kernels): those become the samples. From its
summary alone (stdout) only percentiles exist: the 50th percentile is stored as the median,
the others are kept in `extra`.
"""

import re

from ..records import ResultRecord
from .base import ImportedRun, Importer, aggregate, register_importer

_PCT = re.compile(r"--->\s*percentile\s+([\d.]+)\s*=\s*([\d.]+)")
_MINMAX = re.compile(r"--->\s*<(MIN|MAX)>\s*observation\s*=\s*([\d.]+)")
_AVG = re.compile(r"avg-latency=([\d.]+)\s*\(std-dev=([\d.]+)\)")
_SIZE = re.compile(r"--msg-size=(\d+)")
_ROW = re.compile(r"^\s*\d+,\s*[\d.]+,\s*[\d.]+,\s*([\d.]+)\s*$")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@register_importer("sockperf")
class SockperfImporter(Importer):
    default_transport = "tcp"

    def parse(self, text: str, source: str) -> list[ImportedRun]:
        text = _ANSI.sub("", text)
        samples = [float(m.group(1)) for line in text.splitlines()
                   if (m := _ROW.match(line))]
        pcts = {float(p): float(v) for p, v in _PCT.findall(text)}
        if not samples and 50.0 not in pcts:
            return []
        size_m = _SIZE.search(text)
        size = int(size_m.group(1)) if size_m else 0
        tcp = "# TCP" in text or "--tcp" in text
        udp_known = "# UDP" in text or "--udp" in text  # else: sockperf's default, UDP
        kernel = "tcp.latency" if tcp else "udp.latency"
        extra: dict[str, float | str] = {f"p{p:g}": v for p, v in pcts.items()}
        extra.update({k.lower(): float(v) for k, v in _MINMAX.findall(text)})
        if (m := _AVG.search(text)):
            extra["mean"], extra["stdev"] = float(m.group(1)), float(m.group(2))
        notes = [] if size_m else ["message size not in the file (import with --size)"]
        if not tcp and not udp_known:
            notes.append("protocol not stated in the file: sockperf's default (UDP) assumed; "
                         "import with --transport tcp if the run used --tcp")
        if samples:
            rec = ResultRecord(kernel=kernel, size=size, iterations=len(samples), warmup=0,
                               unit="us", times=samples, bytes_per_sample=size,
                               messages_per_sample=1,
                               extra={"statistic": "per-message samples (sockperf --full-log)",
                                      **extra})
            notes.append(f"{len(samples)} per-message samples from the full log")
        else:
            rec = aggregate(kernel, size, pcts[50.0], "median (sockperf percentile 50)",
                            bytes_per_sample=size, extra=extra)
            notes.append("summary only (no --full-log): one value per size, no interval")
        return [ImportedRun(kernel, 2, [rec], ["latency"], "tcp" if tcp else "udp", notes,
                            meta={"tool": "sockperf", **{k: v for k, v in extra.items()
                                                         if k in ("mean", "stdev")}})]
