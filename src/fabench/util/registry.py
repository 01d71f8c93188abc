"""One plugin mechanism for every kind of plugin: a named registry per kind, filled by
decorators when the modules that define plugins are imported.

Where plugins come from, in order:
1. fabench's own modules, listed per kind by the package that owns the kind (`Registry(...,
   modules=...)` names a package whose every module is imported);
2. installed distributions that declare an entry point in the group ``fabench.plugins``
   (the entry point names a module; importing it registers whatever it defines);
3. ``FABENCH_PLUGINS``: module names separated by ``,``, importable from ``sys.path``
   (``PYTHONPATH``): the way a site, or a test, adds a plugin without installing anything.

A plugin that fails to import is an error naming it (never a silent skip), and two plugins
of one kind under one name are an error too.
"""

import importlib
import importlib.util
import os
import pkgutil
import threading
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

from ..errors import FabenchError

T = TypeVar("T")

ENTRY_POINT_GROUP = "fabench.plugins"
PLUGINS_ENV = "FABENCH_PLUGINS"
_LOAD_LOCK = threading.RLock()


class PluginError(FabenchError):
    """A plugin could not be loaded or registered; the message names it."""


@dataclass(frozen=True)
class PluginInfo:
    kind: str
    name: str
    origin: str  # the module that registered it


def _import(module: str, what: str) -> None:
    try:
        importlib.import_module(module)
    except Exception as exc:  # any failure of a plugin module is that plugin's error
        last = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
        where = f" ({last.filename}:{last.lineno})" if last else ""
        raise PluginError(f"{what} {module!r} failed to load: {type(exc).__name__}: "
                          f"{exc}{where}") from exc


_external: list[PluginError | None] = []  # [] not tried yet, [None] loaded, [error] failed


def load_external_plugins() -> None:
    """Import every site plugin once: entry points, then FABENCH_PLUGINS. A failure is raised
    now and on every later use of any registry, so no command runs on a partial set."""
    if not _external:
        # importlib.metadata (20-25 ms) only when a registry is first read: the parser reads
        # the commands' (a site plugin may add one), nothing else at start-up
        from importlib.metadata import entry_points

        try:
            for ep in entry_points(group=ENTRY_POINT_GROUP):
                _import(ep.value.split(":", 1)[0], f"plugin (entry point {ep.name!r})")
            for module in filter(None, (m.strip() for m in
                                        os.environ.get(PLUGINS_ENV, "").split(","))):
                _import(module, f"plugin ({PLUGINS_ENV})")
            _external.append(None)
        except PluginError as exc:
            _external.append(exc)
    if _external[0] is not None:
        raise _external[0]


def plugin_error() -> PluginError | None:
    """Why the site plugins failed to load (None when they loaded or none is asked for)."""
    try:
        load_external_plugins()
    except PluginError as exc:
        return exc
    return None


def package_module_names(package: str) -> list[str]:
    """The non-private modules of a package, found without importing it or them: names for a
    --help text that must not load what the modules import (fabench's importers pull in the
    store and the records)."""
    spec = importlib.util.find_spec(package)
    paths = spec.submodule_search_locations if spec is not None else None
    return sorted(m.name for m in pkgutil.iter_modules(list(paths or []))
                  if not m.name.startswith("_"))


class Registry(Generic[T]):
    """Plugins of one kind, by name.

    ``package`` is the fabench package whose modules define the built-in plugins of this kind
    (every non-private module in it is imported on first use); ``what`` words errors.
    """

    def __init__(self, kind: str, package: str | None = None, what: str | None = None) -> None:
        self.kind = kind
        self.package = package
        self.what = what or kind
        self._items: dict[str, T] = {}
        self._origin: dict[str, str] = {}
        self._loaded = False
        _ALL.append(self)

    def add(self, name: str, item: T, origin: str | None = None) -> T:
        if name in self._items:
            raise PluginError(f"{self.what} {name!r} registered twice (by "
                              f"{self._origin[name]} and {origin or '?'})")
        if isinstance(item, type) and hasattr(item, "name") and "name" not in vars(item):
            item.name = name  # a plugin class knows the name it was registered under
        self._items[name] = item
        self._origin[name] = origin or getattr(item, "__module__", "?")
        return item

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator form: ``@REGISTRY.register("name")``."""
        def deco(item: T) -> T:
            return self.add(name, item)
        return deco

    def load(self) -> None:
        # One lock for every registry: a thread that finds `_loaded` set while another is
        # still importing would see half the plugins (two matrix pair jobs starting at once
        # were told "unknown starter 'pair'"); reentrant, since one kind's modules may load
        # another kind.
        with _LOAD_LOCK:
            if self._loaded:
                load_external_plugins()
                return
            self._loaded = True
            if self.package is not None:
                for name in package_module_names(self.package):
                    _import(f"{self.package}.{name}", f"{self.what} module")
            load_external_plugins()

    def get(self, name: str) -> T:
        self.load()
        try:
            return self._items[name]
        except KeyError:
            known = ", ".join(sorted(self._items)) or "none"
            raise FabenchError(f"unknown {self.what} {name!r}; known: {known}") from None

    def names(self) -> list[str]:
        self.load()
        return sorted(self._items)

    def items(self) -> Iterator[tuple[str, T]]:
        self.load()
        for name in sorted(self._items):
            yield name, self._items[name]

    def in_order(self) -> list[T]:
        """Plugins in the order they registered (built-ins first, as their modules define
        them)."""
        self.load()
        return list(self._items.values())

    def names_for_help(self) -> list[str]:
        """Names for a --help text: every one, or those loaded when a site plugin is broken
        (the command that runs then reports it)."""
        try:
            return self.names()
        except PluginError:
            return sorted(self._items)

    def in_order_loaded(self) -> list[T]:
        """What has registered so far, without loading anything more."""
        return list(self._items.values())

    def name_of(self, item: T) -> str:
        return next(n for n, i in self._items.items() if i is item)

    def __contains__(self, name: object) -> bool:
        self.load()
        return name in self._items

    def info(self) -> list[PluginInfo]:
        self.load()
        return self.info_loaded()

    def info_loaded(self) -> list[PluginInfo]:
        """What has registered so far (a broken site plugin stops loading the rest)."""
        try:
            self.load()
        except PluginError:
            pass
        return [PluginInfo(self.kind, n, self._origin[n]) for n in sorted(self._items)]


_ALL: list[Registry] = []  # type: ignore[type-arg]


def all_registries() -> list[Registry]:  # type: ignore[type-arg]
    """Every plugin kind, for `fabench doctor`."""
    return list(_ALL)
