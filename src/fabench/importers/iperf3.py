"""iperf3 JSON (`iperf3 -J`). Each reporting interval is one sample: its throughput, stored as
the time one block (`blksize`, the size of iperf3's writes) takes at that rate, so bandwidth
derives as for fabench's own runs. Intervals iperf3 marks `omitted` (its -O warm-up) are left
out and counted in the notes. One stream gives kernel tcp.bw, several tcp.streams (UDP:
udp.stream); the end summary, retransmits and CPU use are kept in the run's metadata.
"""

import json
from typing import Any

from ..errors import FabenchError
from ..records import ResultRecord
from .base import ImportedRun, Importer, register_importer


@register_importer("iperf3")
class Iperf3Importer(Importer):
    default_transport = "tcp"

    def parse(self, text: str, source: str) -> list[ImportedRun]:
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise FabenchError(f"{source}: not iperf3 JSON (run iperf3 with -J): {exc}") from None
        except RecursionError:
            # iperf3 nests a few levels; thousands are a hostile file, not a result
            raise FabenchError(f"{source}: not iperf3 JSON: nested too deeply") from None
        docs = [d for d in (doc if isinstance(doc, list) else [doc]) if isinstance(d, dict)]
        runs = [self._one(d, source) for d in docs if d.get("intervals")]
        if not runs:
            # iperf3 writes its own failure into the JSON ("error"), sometimes with exit 0.
            why = "; ".join(str(d["error"]) for d in docs if d.get("error"))
            raise FabenchError(f"{source}: iperf3 JSON without any reporting interval"
                               + (f" (iperf3 said: {why})" if why else ""))
        return runs

    @staticmethod
    def _one(doc: dict[str, Any], source: str) -> ImportedRun:
        start = doc.get("start", {})
        ts = start.get("test_start", {})
        proto = str(ts.get("protocol", "TCP")).upper()
        streams = int(ts.get("num_streams", 1))
        blk = int(ts.get("blksize", 131072))
        kernel = "udp.stream" if proto == "UDP" else ("tcp.bw" if streams == 1 else
                                                      "tcp.streams")
        times, omitted = [], 0
        for iv in doc.get("intervals", []):
            s = iv.get("sum", {})
            if s.get("omitted"):
                omitted += 1
                continue
            bps = float(s.get("bits_per_second", 0))
            if bps > 0:
                times.append(blk / (bps / 8 / 1e6))  # us per block at this interval's rate
        end = doc.get("end", {})
        rec = ResultRecord(kernel=kernel, size=blk, iterations=len(times), warmup=omitted,
                           unit="us", times=times, bytes_per_sample=blk, messages_per_sample=1,
                           extra={"statistic": "per-interval samples (iperf3)",
                                  "interval_s": float(doc["intervals"][0]
                                                      .get("sum", {}).get("seconds", 0) or 0),
                                  "streams": streams})
        notes = [f"{len(times)} intervals of {streams} stream(s), block {blk} B"]
        if omitted:
            notes.append(f"{omitted} omitted (warm-up) intervals left out")
        meta = {"version": start.get("version", ""), "protocol": proto, "streams": streams,
                "connecting_to": start.get("connecting_to"),
                "sum_sent": end.get("sum_sent"), "sum_received": end.get("sum_received"),
                "cpu_utilization_percent": end.get("cpu_utilization_percent"),
                "system_info": start.get("system_info", "")}
        return ImportedRun(kernel, 2, [rec] if times else [], ["bandwidth"], "tcp"
                           if proto == "TCP" else "udp", notes, meta=meta)
