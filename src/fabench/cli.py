"""Command-line entry point: argument handling only; the work is in the modules it calls."""

import argparse
import importlib
import sys
from collections.abc import Callable

from . import __version__
from .commands import register_all
from .errors import FabenchError
from .host.leftovers import reap_orphans
from .util.interrupts import Interrupted, raise_on_signals
from .util.registry import plugin_error
from .util.startup import loading


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fabench",
        description="Measure, compare, tune, diagnose and predict HPC interconnects.",
        epilog="Start with `fabench doctor` (what this host can measure), then "
               "`fabench bench mpi.latency` or `fabench run --quick`.")
    parser.add_argument("--version", action="version", version=f"fabench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    register_all(sub)
    return parser


def action_of(args: argparse.Namespace) -> Callable[[argparse.Namespace], int | None]:
    """The function that does the command's work. Built-in commands name it as
    "module:function" so that only the command that runs imports its code; a plugin's command
    may set the function itself."""
    func = args.func
    if isinstance(func, str):
        module, _, name = func.partition(":")
        func = getattr(importlib.import_module(module), name)
    return func  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> int:
    try:
        # Building the parser loads the commands, plugins included: a broken plugin is an
        # error that names it.
        parser = build_parser()
    except FabenchError as exc:
        print(f"fabench: error: {exc}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    raise_on_signals()
    left = reap_orphans()  # what a killed fabench (and its supervisor) left running
    if left:
        print(f"fabench: cleaned up after a fabench that is gone: {'; '.join(left[:5])}"
              + (f" and {len(left) - 5} more" if len(left) > 5 else ""), file=sys.stderr)
    try:
        broken = plugin_error()
        if broken is not None and args.command != "doctor":
            raise broken  # `fabench doctor` shows it among the plugins; nothing else runs
        with loading():  # the command's code, numpy among it
            action = action_of(args)
        return int(action(args) or 0)
    except FabenchError as exc:
        print(f"fabench: error: {exc}", file=sys.stderr)
        return 2
    except UnicodeDecodeError as exc:
        # A file read somewhere without textfile.read_text: still a message, not a traceback.
        print(f"fabench: error: an input is not UTF-8 text ({exc.reason} at byte {exc.start})",
              file=sys.stderr)
        return 2
    except Interrupted as exc:
        print(f"\nfabench: {exc}; the run in progress is marked interrupted, finished runs "
              "are kept in the store", file=sys.stderr)
        return exc.exit_status
    except RecursionError:
        # a hostile input nested thousands deep (JSON, YAML): a refusal, not a traceback
        print("fabench: error: an input is nested too deeply to read", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nfabench: interrupted; finished runs are kept in the store", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:
        # A path the system refuses (a name too long, a directory where a file belongs) that
        # no check before it caught: still one line that names it, not a traceback.
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"fabench: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
