"""The package's shape: no import cycles among fabench's modules, and no import hidden in a
function to dodge one. Computed from the source with `ast`, so it needs nothing built."""

import ast
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


def resolve(mod: str, is_pkg: bool, node: ast.ImportFrom) -> list[str]:
    """Absolute fabench module names an ImportFrom refers to (a name may be a submodule)."""
    if node.level:
        base = mod.split(".") if is_pkg else mod.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        target = ".".join([*base, *(node.module.split(".") if node.module else [])])
    else:
        target = node.module or ""
    if not target.startswith("fabench"):
        return []
    return [target] + [f"{target}.{a.name}" for a in node.names]


def in_type_checking(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def inside_function(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return True
    return False


def import_graph() -> tuple[dict[str, set[str]], list[str]]:
    files = {module_name(p): p for p in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in files}
    local: list[str] = []
    for mod, path in files.items():
        tree = ast.parse(path.read_text(), str(path))
        parents = {c: p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                targets = resolve(mod, path.name == "__init__.py", node)
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("fabench")]
            else:
                continue
            targets = [t for t in targets if t in files]
            if not targets or in_type_checking(node, parents):
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
