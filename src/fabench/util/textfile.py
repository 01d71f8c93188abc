"""Reading a user's text file (spec, hostfile, profile, journal, table): one clear error for a
file that cannot be read or is not UTF-8 text, naming the file and where the first bad byte
is, instead of a traceback."""

import os
import stat
from pathlib import Path

from ..errors import FabenchError


def check_regular(p: Path, what: str, error: type[FabenchError] = FabenchError) -> None:
    """A FIFO, a device or a directory given as a file: reading one blocks for ever
    (`import osu FIFO` hung) or never ends (/dev/zero). Missing: FileNotFoundError."""
    try:
        mode = os.stat(p).st_mode
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise error(f"cannot read {what} {p}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        raise error(f"{what} {p} is not a regular file")


def read_text(path: str | Path, what: str,
              error: type[FabenchError] = FabenchError) -> str:
    """The file's text; ``error`` naming ``what`` it is when it cannot be read or decoded.
    A missing file raises FileNotFoundError for callers that treat absence as a state."""
    p = Path(path)
    check_regular(p, what, error)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise error(f"cannot read {what} {p}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise error(f"{what} {p} is not UTF-8 text (byte 0x{data[exc.start]:02x} at line "
                    f"{line}, offset {exc.start}); save it as UTF-8") from None
