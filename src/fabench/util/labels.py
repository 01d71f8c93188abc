"""Names a user gives to what fabench stores and prints (a campaign's name): printed on
terminals, in HTML and JUnit, and compared by `history`, so a control character (an escape
sequence that rewrites the terminal, a newline that forges a line) is refused, not kept.
No pydantic here: the CLI's parsers use label_arg; the spec models' field type is
util.yamlconf.Label."""

import argparse
import unicodedata

MAX_LABEL = 200


def check_label(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    if len(value) > MAX_LABEL:
        raise ValueError(f"at most {MAX_LABEL} characters ({len(value)} given)")
    bad = [c for c in value if unicodedata.category(c).startswith("C")]
    if bad:
        raise ValueError(f"control character {bad[0]!r} not allowed")
    return value


def label_arg(value: str) -> str:
    """check_label as an argparse type: a refusal is argparse's usage error (exit 2)."""
    try:
        return check_label(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
