"""What several commands do with their shared arguments (fabench.commands._common declares
them)."""

import argparse
from pathlib import Path

from ..commands._common import DEFAULT_OUT, STORE_NAME, StoreLocation
from ..errors import FabenchError
from ..schedulers import Scheduler, make_scheduler
from ..store.postgres import display_url, is_url


def scheduler_from(values: list[str], out: Path | None = None,
                   oversubscribe: bool = False) -> Scheduler:
    scheduler = make_scheduler(values)
    scheduler.results_dir = str(out) if out is not None else None
    scheduler.oversubscribe = oversubscribe
    return scheduler


def store_path(out: Path) -> Path:
    return out / STORE_NAME


def store_of(args: argparse.Namespace) -> StoreLocation:
    """The store a measuring command writes: --store, else the results directory's."""
    store = getattr(args, "store", None)
    return store if store is not None else store_path(args.out)


def shown(store: StoreLocation) -> str:
    """A store as messages name it: a URL without its password."""
    return display_url(store) if isinstance(store, str) else str(store)


def output_dir(store: StoreLocation) -> Path:
    """Where files derived from a store go by default: beside an SQLite file; the default
    results directory for a server's store."""
    return store.parent if isinstance(store, Path) else DEFAULT_OUT


def resolve_store(path: StoreLocation, must_exist: bool = True) -> StoreLocation:
    """A results directory, the store file itself, or a PostgreSQL URL."""
    if isinstance(path, str):
        if is_url(path):
            return path
        path = Path(path)
    p = path if path.suffix in (".sqlite", ".db") else store_path(path)
    if must_exist and not p.exists():
        raise FabenchError(f"no store at {p} (run `fabench run` or `fabench bench` first, "
                           f"or point --store at a results directory)")
    return p
