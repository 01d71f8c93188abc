"""The package's shape: no import cycles among fabench's modules, and no import hidden in a
function to dodge one. Computed from the source with `ast`, so it needs nothing built."""

import ast
import functools
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "fabench"

# Imports that may stay inside a function, each with why (never "it would be a cycle").
ALLOWED_LOCAL: dict[str, str] = {}


def module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def resolve(mod: str, is_pkg: bool, node: ast.ImportFrom, modules: set[str]) -> list[str]:
    """Absolute fabench module names an ImportFrom needs: the submodules it names, and the
    module or package it imports from when it takes a name defined there."""
    if node.level:
        base = mod.split(".") if is_pkg else mod.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        target = ".".join([*base, *(node.module.split(".") if node.module else [])])
    else:
        target = node.module or ""
    if not target.startswith("fabench"):
        return []
    subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules]
    takes_names = len(subs) < len(node.names)
    return ([target] if takes_names else []) + subs


def inside_function(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return True
    return False


@functools.cache  # one parse of the package for the four tests that read it (5 s each)
def _import_graph() -> tuple[dict[str, frozenset[str]], tuple[str, ...]]:
    graph, local = _parse_graph()
    return {m: frozenset(t) for m, t in graph.items()}, tuple(local)


def import_graph() -> tuple[dict[str, set[str]], list[str]]:
    """The package's import graph (module -> modules it imports) and its function-level
    imports; a fresh copy each call, so a test may plant edges in it."""
    graph, local = _import_graph()
    return {m: set(t) for m, t in graph.items()}, list(local)


def _parse_graph() -> tuple[dict[str, set[str]], list[str]]:
    files = {module_name(p): p for p in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in files}
    local: list[str] = []
    for mod, path in files.items():
        tree = ast.parse(path.read_text(), str(path))
        parents = {c: p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                targets = resolve(mod, path.name == "__init__.py", node, set(files))
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("fabench")]
            else:
                continue
            targets = [t for t in targets if t in files]
            # an import for annotations only still ties the two modules' concepts together:
            # it counts for cycles like any other
            if not targets:
                continue
            if inside_function(node, parents):
                local.append(f"{mod}:{node.lineno} {ast.unparse(node)}")
            graph[mod].update(t for t in targets if t != mod)
    return graph, local


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles() -> None:
    graph, _ = import_graph()
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_no_function_level_imports_of_fabench() -> None:
    _, local = import_graph()
    unexplained = [x for x in local if x.split(" ", 1)[0].split(":")[0] not in ALLOWED_LOCAL]
    assert not unexplained, "imports inside functions:\n" + "\n".join(unexplained)


def test_the_checker_finds_a_planted_cycle() -> None:
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(g) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


# The pipeline's layers, lowest first (docs/DEVELOPING.md): a package or top-level module may
# import its own layer and those below, never one above; within a layer, no circles.
LAYERS: tuple[frozenset[str], ...] = tuple(frozenset(s.split()) for s in (
    "fabench errors records metrics choices util",   # the shared vocabulary, no domain helpers
    "host",                      # this host: processes, probes, topology, installed kernels
    "store hpc",                 # results database; HPCC's input/output/BLAS/peak
    "kernels importers",         # what can run; what can be read in
    "mpi",                       # MPI flavours: command lines per transport request
    "plan",                      # spec -> typed planned runs
    "analysis",                  # series, comparisons, history over a store
    "model testbed",             # predictions; the emulated cluster
    "sim starters",              # SimGrid platforms; how ranks start
    "schedulers",                # where ranks run
    "run",                       # the runner
    "tune congestion matrix diagnose hpl doctor report accept",   # features and the report
    "commands actions cli __main__",   # the command line
))


def unit_of(module: str) -> str:
    """fabench.X.y -> X (a package or top-level module); fabench -> fabench."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for mod, targets in graph.items():
        out.setdefault(unit_of(mod), set()).update(
            unit_of(t) for t in targets if unit_of(t) != unit_of(mod))
    return out


def layering_violations(pkgs: dict[str, set[str]]) -> list[str]:
    layer = {name: i for i, names in enumerate(LAYERS) for name in names}
    out = [f"{p} is in no layer of LAYERS" for p in sorted(pkgs) if p not in layer]
    for p, targets in sorted(pkgs.items()):
        out += [f"{p} (layer {layer[p]}) imports {t} (layer {layer[t]})"
                for t in sorted(targets) if p in layer and t in layer and layer[t] > layer[p]]
    return out


def test_packages_are_layered_and_have_no_circles() -> None:
    graph, _ = import_graph()
    pkgs = package_graph(graph)
    found = cycles(pkgs)
    assert not found, "package circles:\n" + "\n".join(" <-> ".join(c) for c in found)
    assert not layering_violations(pkgs), "\n".join(layering_violations(pkgs))


def test_the_layering_check_catches_a_planted_violation() -> None:
    graph, _ = import_graph()
    graph = {m: set(t) for m, t in graph.items()}
    graph["fabench.store.database"].add("fabench.run.runner")  # the store reaching up
    graph["fabench.util.stats"].add("fabench.util.units")       # within a layer: fine
    assert layering_violations(package_graph(graph)) == [
        "store (layer 2) imports run (layer 10)"]
    graph["fabench.run.runner"].add("fabench.newthing.x")
    graph["fabench.newthing.x"] = set()
    assert "newthing is in no layer of LAYERS" in layering_violations(package_graph(graph))
