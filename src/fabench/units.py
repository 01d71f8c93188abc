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


def format_size(n: int) -> str:
    for suffix, mult in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= mult and n % mult == 0:
            return f"{n // mult}{suffix}"
    return str(n)
