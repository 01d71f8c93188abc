"""CLI subcommands. Each module here registers its `register(subparsers)` function with
``@COMMANDS.register("name")``; the CLI adds every registered command, so adding one (here or
in a plugin) never edits the CLI itself.

Every `--help` and usage error builds the whole parser, so these modules declare arguments
only and name the function that does the work (``func="fabench.actions.bench:main"``), which
the CLI imports when the command runs; they import nothing beyond argparse, ``_common`` and
``fabench.choices`` (tests/test_cli_startup.py)."""

import argparse
from collections.abc import Callable

from ..util.registry import PluginError, Registry

CommandFn = Callable[[argparse._SubParsersAction], None]  # type: ignore[type-arg]
COMMANDS: Registry[CommandFn] = Registry("command", __name__)


def register_all(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Every command; when a site plugin fails to load, the built-in ones (the CLI then
    refuses to run anything but `doctor`, which shows the error)."""
    try:
        commands = COMMANDS.in_order()
    except PluginError:
        commands = COMMANDS.in_order_loaded()
    for register in sorted(commands, key=lambda f: COMMANDS.name_of(f)):
        register(sub)
