"""Exceptions that reach the user as a one-line message, not a traceback."""


class FabenchError(Exception):
    """An error the user can act on; the CLI prints it and exits non-zero."""


class SpecError(FabenchError):
    """A campaign spec is invalid; the message names the key and the line."""


class KernelError(FabenchError):
    """A native kernel failed (bad exit status, validation mismatch, unparsable output)."""
