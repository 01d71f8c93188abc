"""Names a user gives to what fabench stores and prints (a campaign's name): printed on
terminals, in HTML and JUnit, and compared by `history`, so a control character (an escape
sequence that rewrites the terminal, a newline that forges a line) is refused, not kept."""

import unicodedata
from typing import TYPE_CHECKING, Annotated

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


def __getattr__(name: str) -> object:
    # The pydantic field type is built on first use: the CLI's parser imports this module
    # for label_arg, and pydantic's import is most of a `fabench --help` (issue 25).
    if name == "Label":
        from pydantic import AfterValidator

        label = Annotated[str, AfterValidator(check_label)]
        globals()["Label"] = label
        return label
    raise AttributeError(name)


if TYPE_CHECKING:
    from pydantic import AfterValidator

    Label = Annotated[str, AfterValidator(check_label)]


def label_arg(value: str) -> str:
    """check_label as an argparse type: a refusal is argparse's usage error (exit 2)."""
    import argparse

    try:
        return check_label(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
