"""The command line starts at once: building the parser (every `--help`, every usage error)
imports none of the numerical or model code the commands run, and every command names a
function that exists. bench/cli_startup.py times it."""

import argparse
import importlib
import json
import subprocess
import sys

from fabench.choices import COLLECTIVES, CONGESTION_VICTIMS
from fabench.cli import build_parser
from fabench.congestion.victims import VICTIMS
from fabench.model.collectives import ALGORITHMS

HEAVY = ("numpy", "scipy", "pydantic", "yaml")

# Runs ARGV through the CLI's entry function in a fresh interpreter and prints which heavy
# modules it loaded (a subprocess: this test process has loaded them all already).
PROBE = """
import contextlib, io, json, sys
from fabench.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
for extra in {extra!r}:
    __import__(extra)
print(json.dumps([m for m in {heavy!r} if m in sys.modules]))
"""


def heavy_loaded(*argv: str, extra: tuple[str, ...] = (),
                 heavy: tuple[str, ...] = HEAVY) -> list[str]:
    out = subprocess.run([sys.executable, "-c", PROBE.format(heavy=heavy, extra=extra),
                          *argv], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_help_imports_no_numerical_code() -> None:
    assert heavy_loaded("--help") == []
    assert heavy_loaded("bench", "--help") == []
    assert heavy_loaded("model", "predict", "--help") == []
    # a usage error builds the same parser
    assert heavy_loaded("bench", "--ranks", "two") == []


def test_help_loads_neither_the_importers_nor_the_store() -> None:
    """`fabench import`'s help names the importers from their modules' names: loading the
    importer registry for it (each importer imports the store and the records) was 30 ms of
    every start-up, --help's median 0.28-0.30 s against 0.23 s without it (10 runs each)."""
    store = ("fabench.importers", "fabench.store.database", "fabench.records")
    assert heavy_loaded("--help", heavy=store) == []
    assert heavy_loaded("--help", extra=("fabench.importers",), heavy=store) == list(store)


def test_the_probe_sees_a_heavy_import() -> None:
    # The check above can fail: the work behind a command does load them.
    assert set(heavy_loaded("--help", extra=("fabench.actions.run",))) >= {"numpy",
                                                                            "pydantic"}


def test_bench_and_matrix_load_no_spec_models() -> None:
    """`fabench bench`, `matrix`, `testbed`, `compare`, `history` read no campaign spec: the
    spec's pydantic models (and YAML) stay unloaded, a fifth of a bench's start-up (0.96
    against 1.18 CPU-s for a whole `fabench bench tcp.latency`, eight runs each). The probe
    above shows `run`, which reads a spec, does load them."""
    actions = ("bench", "matrix", "testbed", "compare", "history")
    assert heavy_loaded("--help", extra=tuple(f"fabench.actions.{a}" for a in actions)) \
        == ["numpy"]


def actions(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
            ) -> list[tuple[tuple[str, ...], object]]:
    found = []
    if "func" in parser._defaults:
        found.append((path, parser._defaults["func"]))
    for act in parser._actions:
        if isinstance(act, argparse._SubParsersAction):
            for name, sub in act.choices.items():
                found += actions(sub, (*path, name))
    return found


def test_every_command_names_a_function_that_exists() -> None:
    found = actions(build_parser())
    assert len(found) >= 30  # every command and action of the tree, not a part of it
    for path, func in found:
        assert isinstance(func, str), f"{' '.join(path)}: name the function, do not import it"
        module, _, name = func.partition(":")
        assert module.startswith("fabench.actions."), path
        assert callable(getattr(importlib.import_module(module), name)), path


def test_the_parsers_choices_are_the_tables_names() -> None:
    assert tuple(ALGORITHMS) == COLLECTIVES
    assert tuple(VICTIMS) == CONGESTION_VICTIMS
