"""Byte sizes as engineers write them: 4K, 1M, 4MiB, 1:4M sweeps."""

import re

_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
_SIZE_RE = re.compile(r"^\s*(\d+)\s*([KMG]?)(?:I?B)?\s*$", re.IGNORECASE)


def parse_size(text: str | int) -> int:
    """'4K' -> 4096, '1MiB' -> 1048576, '8' -> 8 (binary multiples, as OSU and IMB use)."""
    if isinstance(text, int):
        return text
    m = _SIZE_RE.match(text)
    if not m:
        raise ValueError(f"not a byte size: {text!r} (examples: 8, 4K, 1M, 4MiB)")
    return int(m.group(1)) * _SUFFIX[m.group(2).upper()]


def parse_sizes(text: str) -> list[int]:
    """'1:4M' is a power-of-two sweep, '8,64,1K' an explicit list."""
    text = str(text).strip()
    if ":" in text:
        lo_s, hi_s = text.split(":", 1)
        lo, hi = parse_size(lo_s), parse_size(hi_s)
        if lo > hi:
            raise ValueError(f"size range {text!r}: minimum is larger than maximum")
        sizes, s = [], max(lo, 0)
        if s == 0:
            sizes.append(0)
            s = 1
        while s <= hi:
            sizes.append(s)
            s *= 2
        return sizes
    return [parse_size(p) for p in text.split(",") if p.strip()]


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
