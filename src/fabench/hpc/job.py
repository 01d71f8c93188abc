"""One hpcc run's files: the input chosen for it (sized to the machines' memory) and its output
file read into records. The hpcc starter (starters/hpcc.py) places and starts the ranks and
moves these files; what they say is decided here."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import FabenchError
from ..host.files import HostFiles, mem_available_bytes, mem_total_bytes
from .blas import BlasSeen
from .convert import records_for, summary_meta
from .hpccinf import Asked, make_input, problem_size, read_input, read_input_file
from .options import HpccOptions
from .output import HpccRunError, check_parameters, header_used, parse_output, rejection
from .peak import Peak

OUTPUT = "hpccoutf.txt"
INPUT = "hpccinf.txt"


def check_memory(ns: Sequence[int], files: HostFiles, machines: int) -> None:
    """Refuse an N whose matrix (8 N^2 bytes of doubles, spread over the ranks) does not fit
    in what the machines have available now, read on the first of them: HPL would start,
    be killed for memory and leave no result."""
    if not ns:
        return
    n = max(ns)
    need = 8.0 * n * n
    have = mem_available_bytes(files) * machines
    if need > have:
        raise FabenchError(
            f"HPL N={n} needs {need / 2**30:.1f} GiB for its matrix; the {machines} "
            f"machine(s) it runs on have {have / 2**30:.1f} GiB available (MemAvailable); "
            f"give a smaller --sizes (at most about {int(math.sqrt(have / 8.0))}), or leave "
            "it out to size N from --memory-fraction")


def hpcc_input(opts: HpccOptions, ranks: int, sizes: Sequence[int] | None, files: HostFiles,
               machines: int) -> tuple[Asked, str]:
    """(what the input asks, its text): a ready file (`--hpccinf`) as it is, or one made for
    the plan's N (`--sizes`) or, without one, for N filling --memory-fraction."""
    if opts.hpccinf is not None:
        text = read_input_file(Path(opts.hpccinf))
        asked = read_input(text, str(opts.hpccinf))
        check_memory(asked.sizes, files, machines)
        return asked, text
    if sizes is not None:
        ns = tuple(sizes)
        check_memory(ns, files, machines)
    else:
        # N fills --memory-fraction of the memory of every machine the ranks are on (each
        # taken as the first one: a cluster's nodes are alike, `hpl nodes` checks); a
        # testbed's hosts are one machine and share its memory.
        ns = (problem_size(mem_total_bytes(files) * machines, opts.memory_fraction, opts.nb),)
    inp = make_input(ranks, ns, opts.nb, opts.threshold)
    return inp.asked, inp.text()


def meta_record(program: str, seen: BlasSeen, peak: Peak, input_text: str,
                asked: Asked) -> dict[str, Any]:
    """The run's meta record: what ran, on which BLAS and peak, asked for what."""
    return {"type": "meta", "program": program, "blas": seen.to_json(),
            "peak": peak.to_json(), "input": input_text,
            "asked": {"sizes": list(asked.sizes), "nb": asked.nb, "p": asked.p, "q": asked.q}}


@dataclass
class Results:
    records: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)  # what the meta record gains
    error: str | None = None  # why the output is no result (HPL's own words)


def read_results(text: str, kernel: str, asked: Asked, stderr: str, ranks: int, peak: Peak,
                 seen: BlasSeen, nodes: int) -> Results:
    """hpcc's output file as the records of `kernel`; parameters HPL did not use, or a
    failed residual, make an error and no record."""
    out = Results(meta={"hpccoutf": text})
    try:
        res = parse_output(text, OUTPUT)
        check_parameters(res, asked, stderr)
        out.meta["summary"] = summary_meta(res)
        out.records = records_for(kernel, res, ranks, peak, seen, nodes)
    except HpccRunError as exc:
        out.error = str(exc)
    return out


STOPPED = ("; hpcc was stopped early, as soon as its output file showed HPL's parameters, "
           "before its other tests and HPL ran at the defaults")


class FallbackWatch:
    """hpcc's output file read as it grows, until the HPL parameters it prints at its start
    are there: when they are not those asked (HPL rejected an input value and hpcc goes on
    with its built-in defaults, every other HPCC test first), the run is stopped there
    rather than after a long run whose result would be thrown away. After that block (or
    a test section without one) nothing more is read."""

    def __init__(self, files: HostFiles, path: str, asked: Asked) -> None:
        self.files, self.path, self.asked = files, path, asked
        # Read here, a few bytes a poll; through a prefix (a cluster node) each poll starts
        # a command, so less often.
        self.every_s = 0.25 if files.local else 1.0
        self.text = ""
        self._offset = 0
        self._done = False

    @property
    def done(self) -> bool:
        return self._done

    def poll(self) -> str | None:
        more = self.files.read_from(self.path, self._offset)
        self._offset += len(more.encode("utf-8"))
        self.text += more
        used = header_used(self.text)
        if used is None:
            return None
        self._done = True
        return rejection(used, self.asked) if used else None

    def error(self, stderr: str) -> str:
        """The run's error once it was stopped: today's message, HPL's complaint (on stderr,
        complete now) included, and that the run was stopped early."""
        why = rejection(header_used(self.text) or {}, self.asked, stderr)
        return (why or "HPL did not use the parameters asked") + STOPPED
