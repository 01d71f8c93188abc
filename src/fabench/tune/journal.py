"""The tuning journal: every previous value, on disk, before the first change.

The journal is written (fsync'd file, atomic rename, fsync'd directory) before anything is
changed, so a fabench killed mid-apply — even by SIGKILL — leaves a journal that `tune revert`
uses to put every value back. Restoring a value that was never changed is a no-op, so revert
does not need to know how far apply got.
"""

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import FabenchError
from ..host.target import Target
from ..util.textfile import read_text

JOURNAL_ENV = "FABENCH_TUNE_JOURNAL"


def default_journal_path() -> Path:
    env = os.environ.get(JOURNAL_ENV)
    if env:
        return Path(env)
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "fabench" / "tune-journal.json"


@dataclass
class Change:
    """One value to change on one target; `previous` is what revert writes back.

    kind: file (a /proc/sys or /sys path), mtu, offloads (every settable feature of one
    interface), route (one route line, restored verbatim).
    """

    target: dict[str, Any]
    kind: str
    key: str  # path, interface name, or route destination
    previous: Any
    new: Any
    label: str = ""  # what the user reads: "net.ipv4.tcp_rmem", "veth0 mtu"

    @property
    def tgt(self) -> Target:
        return Target.from_json(self.target)


@dataclass
class Journal:
    profile: str
    changes: list[Change]
    state: str = "applying"  # applying -> applied (revert removes the file)
    created: float = field(default_factory=time.time)
    pid: int = field(default_factory=os.getpid)

    def to_json(self) -> dict[str, Any]:
        return {"version": 1, "profile": self.profile, "state": self.state,
                "created": self.created, "pid": self.pid,
                "changes": [asdict(c) for c in self.changes]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Journal":
        return cls(d["profile"], [Change(**c) for c in d["changes"]], d.get("state", "?"),
                   float(d.get("created", 0)), int(d.get("pid", 0)))


def write_durably(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    dfd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def save(path: Path, journal: Journal) -> None:
    write_durably(path, journal.to_json())


def load(path: Path) -> Journal | None:
    try:
        text = read_text(path, "tuning journal (it holds the values to restore)")
    except FileNotFoundError:
        return None
    try:
        return Journal.from_json(json.loads(text))
    except (ValueError, KeyError, TypeError) as exc:
        raise FabenchError(f"tuning journal {path} is unreadable ({exc}); it holds the values "
                           "to restore: inspect it before deleting it") from exc


def retire(path: Path) -> Path:
    """Keep the last reverted journal beside the live one, for the record."""
    done = path.with_name(path.stem + ".reverted.json")
    os.replace(path, done)
    return done
