"""What several commands do with their shared arguments (fabench.commands._common declares
them)."""

from pathlib import Path

from ..commands._common import STORE_NAME
from ..errors import FabenchError
from ..schedulers import Scheduler, make_scheduler


def scheduler_from(values: list[str], out: Path | None = None,
                   oversubscribe: bool = False) -> Scheduler:
    scheduler = make_scheduler(values)
    scheduler.results_dir = str(out) if out is not None else None
    scheduler.oversubscribe = oversubscribe
    return scheduler


def store_path(out: Path) -> Path:
    return out / STORE_NAME


def resolve_store(path: Path, must_exist: bool = True) -> Path:
    """A results directory or the store file itself."""
    p = path if path.suffix in (".sqlite", ".db") else store_path(path)
    if must_exist and not p.exists():
        raise FabenchError(f"no store at {p} (run `fabench run` or `fabench bench` first, "
                           f"or point --store at a results directory)")
    return p
