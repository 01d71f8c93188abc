"""Byte sizes as engineers write them: 4K, 1M, 4MiB, 1:4M sweeps."""

import re

from ..errors import FabenchError

_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
# One grammar with the kernels' (native/common/fb_opts.h; both pass the cases of
# native/tests/sizes_grammar.tsv): digits, then K/M/G with an optional iB or B, or a lone B;
# no spaces, since the text goes to the kernel as written.
_SIZE_RE = re.compile(r"(\d+)(?:([KMG])(?:I?B)?|B)?", re.IGNORECASE)
SIZE_MAX = 1 << 31  # FB_SIZE_MAX: MPI counts are ints
MAX_SIZES = 4096  # FB_MAX_SIZES


def parse_size(text: str | int) -> int:
    """'4K' -> 4096, '1MiB' -> 1048576, '8' -> 8 (binary multiples, as OSU and IMB use)."""
    if isinstance(text, int):
        return text
    m = _SIZE_RE.fullmatch(text)
    if not m or not text.isascii():
        raise ValueError(f"not a byte size: {text!r} (examples: 8, 4K, 1M, 4MiB)")
    return int(m.group(1)) * _SUFFIX[(m.group(2) or "").upper()]


def _bounded(text: str, part: str) -> int:
    v = parse_size(part)
    if v > SIZE_MAX:
        raise ValueError(f"size {part!r}: each size must be 0 .. 2 GiB")
    return v


def parse_sizes(text: str) -> list[int]:
    """'1:4M' is a power-of-two sweep, '8,64,1K' an explicit list (the kernels' grammar)."""
    text = str(text)
    if not text:
        raise ValueError("names no size (examples: 8, 1:4M, 8,64,1K)")
    if ":" in text:
        lo_s, hi_s = text.split(":", 1)
        lo, hi = _bounded(text, lo_s), _bounded(text, hi_s)
        if lo > hi:
            raise ValueError(f"size range {text!r}: minimum is larger than maximum")
        sizes, s = [], lo
        if s == 0:
            sizes.append(0)
            s = 1
        while s <= hi:
            sizes.append(s)
            s *= 2
        return sizes
    parts = text.split(",")
    if len(parts) > MAX_SIZES:
        raise ValueError(f"size list {text[:40]!r}...: at most {MAX_SIZES} sizes")
    return [_bounded(text, p) for p in parts]


def format_size(n: int, long: bool = False) -> str:
    """4096 -> "4K" (tables, options), or "4 KiB" with ``long`` (charts, HTML)."""
    names = (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))
    for suffix, mult in names:
        if n >= mult and n % mult == 0:
            return f"{n // mult} {suffix}" if long else f"{n // mult}{suffix[0]}"
    return f"{n} B" if long else str(n)


def format_number(v: float) -> str:
    """A measured value as engineers read it: 14,338 (never 1.434e+04), 123.4, 0.36, 0.0123;
    "-" for a missing one."""
    if v != v:  # NaN
        return "-"
    a = abs(v)
    if a == 0:
        return "0"
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.1f}"
    if a >= 0.1:
        return f"{v:.2f}"
    return f"{v:.3g}"


_RATE_UNITS = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}


def rate_bits(rate: str) -> float:
    """A tc rate in bit/s ("bps" is bytes per second in tc's units)."""
    m = re.match(r"^(\d+(?:\.\d+)?)([kmgt]?)(bit|bps)$", rate.lower())
    if not m:
        raise ValueError(f"rate {rate!r}: use tc units such as 100mbit, 1gbit")
    return float(m.group(1)) * _RATE_UNITS[m.group(2)] * (8 if m.group(3) == "bps" else 1)


# The longest a run may be given (a watchdog timer takes at most ~9.2e9 s; a month is
# longer than any benchmark, and a timeout beyond it is a typo).
MAX_TIMEOUT_S = 30 * 86400.0


def check_timeout(value: float) -> float:
    """--timeout's value (the plan checks it again for every run); called first by commands
    that store a campaign before they plan its runs: diagnose left one `running` when the
    plan refused 1e300."""
    if not 0 < value <= MAX_TIMEOUT_S:
        raise FabenchError(f"--timeout must be 0..{MAX_TIMEOUT_S:.0f} seconds (30 days), "
                           f"got {value}")
    return value
