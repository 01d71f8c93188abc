"""`fabench store check`: SQLite's integrity check and fabench's own invariants.

Arguments only: fabench.actions.store does the work."""

import argparse

from . import COMMANDS
from ._common import add_store_argument


@COMMANDS.register("store")
def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = sub.add_parser("store", help="look after the result store (check)",
                       description="Look after the result store. See docs/store.md.")
    ssub = p.add_subparsers(dest="store_command", metavar="ACTION")
    ssub.required = True
    c = ssub.add_parser(
        "check", help="check a store: SQLite's integrity and fabench's invariants",
        description="Read the store without changing it: SQLite's integrity check, then "
                    "fabench's invariants (results refer to runs, runs to campaigns, sample "
                    "counts match their data, statuses and JSON columns are ones fabench "
                    "writes, ok runs hold results). Exit status: 0 sound, 3 problems found, "
                    "2 unreadable (not a store, damaged beyond reading, or written by a newer "
                    "fabench).")
    add_store_argument(c)
    c.add_argument("--json", action="store_true", help="the findings as one JSON object")
    c.set_defaults(func="fabench.actions.store:check_main")
