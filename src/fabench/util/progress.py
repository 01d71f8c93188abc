"""A progress line over the runs of a campaign, on stderr so stdout stays parseable."""

import sys
import time
from typing import TextIO


class Progress:
    def __init__(self, total: int, stream: TextIO | None = None, enabled: bool = True) -> None:
        self.total = total
        self.done = 0
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = self.stream.isatty()
        self.start = time.monotonic()

    def _bar(self) -> str:
        width = 24
        filled = int(width * self.done / self.total) if self.total else width
        return "[" + "#" * filled + "." * (width - filled) + "]"

    def begin(self, label: str) -> None:
        if not self.enabled:
            return
        msg = f"{self._bar()} {self.done + 1}/{self.total} {label}"
        if self.tty:
            self.stream.write("\r\033[K" + msg)
        else:
            self.stream.write(msg + "\n")
        self.stream.flush()

    def end(self, label: str, status: str, seconds: float) -> None:
        self.done += 1
        if not self.enabled:
            return
        msg = f"{self._bar()} {self.done}/{self.total} {label}: {status} ({seconds:.1f} s)"
        if self.tty:
            self.stream.write("\r\033[K" + msg + "\n")
        else:
            self.stream.write(msg + "\n")
        self.stream.flush()

    def finish(self) -> None:
        if self.enabled:
            elapsed = time.monotonic() - self.start
            self.stream.write(f"{self.done}/{self.total} runs in {elapsed:.0f} s\n")
            self.stream.flush()
