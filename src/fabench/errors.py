"""Exceptions that reach the user as a one-line message, not a traceback."""


class FabenchError(Exception):
    """An error the user can act on; the CLI prints it and exits non-zero."""


class SpecError(FabenchError):
    """A campaign spec is invalid; the message names the key and the line."""


class KernelError(FabenchError):
    """A native kernel failed (bad exit status, validation mismatch, unparsable output)."""


class StoreError(FabenchError):
    """The result store cannot be used as it is (damaged, too new, not a store, busy)."""


class StoreDamagedError(StoreError):
    """The store file is not a sound SQLite database; the message says where and what next."""


class StoreVersionError(StoreError):
    """The store was written by a newer fabench than this one."""
