"""CLI subcommands. Each module here defines `register(subparsers)`; the CLI finds them all,
so adding a command never edits the CLI itself."""

import argparse
import importlib
import pkgutil


def register_all(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(sub)
