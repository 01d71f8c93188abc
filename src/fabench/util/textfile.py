"""Reading a user's text file (spec, hostfile, profile, journal, table): one clear error for a
file that cannot be read or is not UTF-8 text, naming the file and where the first bad byte
is, instead of a traceback."""

from pathlib import Path

from ..errors import FabenchError


def read_text(path: str | Path, what: str,
              error: type[FabenchError] = FabenchError) -> str:
    """The file's text; ``error`` naming ``what`` it is when it cannot be read or decoded.
    A missing file raises FileNotFoundError for callers that treat absence as a state."""
    p = Path(path)
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
