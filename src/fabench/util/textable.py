"""Terminal tables, one convention for every command: a header line starting with "# " (so a
script reading the output skips it as a comment), rows indented by two spaces, numbers right-
aligned, text left-aligned and cut to its column."""

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Col:
    title: str
    width: int
    text: bool = False  # left-aligned and cut to the width; numbers are right-aligned

    def cell(self, value: str) -> str:
        if self.text:
            if len(value) > self.width:
                value = value[:self.width - 3] + "..."
            return f"{value:<{self.width}}"
        return f"{value:>{self.width}}"


def header(cols: Sequence[Col], tail: str = "") -> str:
    return "# " + " ".join(c.cell(c.title) for c in cols) + tail


def row(cols: Sequence[Col], cells: Sequence[str], tail: str = "") -> str:
    return "  " + " ".join(c.cell(v) for c, v in zip(cols, cells, strict=True)) + tail


def signed_percent(fraction: float, digits: int = 1) -> str:
    """A relative difference as "+1.2%": a residue that rounds to zero prints as "+0.0%",
    never "-0.0%" (a reader takes the sign as a direction that is not there)."""
    value = round(fraction * 100, digits) + 0.0  # adding 0.0 turns -0.0 into 0.0
    return f"{value:+.{digits}f}%"
