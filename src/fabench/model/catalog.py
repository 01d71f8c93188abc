"""Finding a fabric by name: a calibration or definition saved beside the store, a file, or a
preset. Fabric files live as `<results dir>/fabrics/<name>.json`: plain files a user can read,
diff and copy to another results directory; every read validates them (schema.py)."""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import FabenchError
from ..util.textfile import read_text
from .fabric import Fabric
from .presets import PRESETS
from .schema import NAME_RE, fabric_json, parse_fabric_text

FABRICS_DIR = "fabrics"
FILE_SUFFIXES = (".json", ".yaml", ".yml")


def fabrics_dir(out: Path) -> Path:
    return out / FABRICS_DIR


def _no_constant(word: str) -> object:
    raise FabenchError(f"the fabric holds {word}, which is no figure: nothing written")


def save_fabric(fabric: Fabric, out: Path) -> Path:
    text = fabric_json(fabric)
    if fabric.name in PRESETS and text != fabric_json(PRESETS[fabric.name]()):
        # a saved fabric is found before a preset: it would silently replace the built-in one
        raise FabenchError(f"{fabric.name!r} is a built-in preset (fabench model list); give "
                           "the fabric another name")
    json.loads(text, parse_constant=_no_constant)  # NaN or Infinity in a figure: refused
    d = fabrics_dir(out)
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{fabric.name}.json"
    path.write_text(text)
    return path


def read_fabric_file(path: Path) -> Fabric:
    try:
        return parse_fabric_text(read_text(path, "fabric file"), str(path))
    except FileNotFoundError:
        raise FabenchError(f"cannot read fabric file {path}: no such file") from None


def load_fabric(name: str, out: Path | None = None) -> Fabric:
    """A fabric saved under `out`, a fabric file path, or a preset, in that order."""
    if out is not None and NAME_RE.match(name) and ".." not in name:
        path = fabrics_dir(out) / f"{name}.json"
        if path.is_file():
            return read_fabric_file(path)
    p = Path(name)
    if p.suffix in FILE_SUFFIXES and p.is_file():
        return read_fabric_file(p)
    if name in PRESETS:
        return PRESETS[name]()
    saved = saved_names(out)
    raise FabenchError(f"unknown fabric {name!r}; presets: {', '.join(PRESETS)}"
                       + (f"; saved: {', '.join(saved)}" if saved else ""))


def saved_names(out: Path | None) -> list[str]:
    return sorted(x.stem for x in fabrics_dir(out).glob("*.json")) if out else []


def list_fabrics(out: Path | None = None) -> list[str]:
    return [*PRESETS, *saved_names(out)]
