"""The package's shape (design decisions 8, 10 and 13): no import cycles inside folioperf/ (imports inside
functions included, so none can be hidden there), no registries kept at module or class level, the seeder
never imports the sandbox, and nothing to compile."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "folioperf"
EMPTY_CONTAINERS = ("dict", "list", "set", "WeakKeyDictionary", "WeakValueDictionary", "defaultdict", "OrderedDict")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_nodes(tree: ast.AST):
    """Every node, but those under `if TYPE_CHECKING:` (imports for type hints only never run)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                stack.extend(child.orelse)
            else:
                stack.append(child)


def _imports() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        for node in _runtime_nodes(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            found |= {t for t in targets if t in modules and t != name and t != "folioperf"}
        graph[name] = found
    return graph


def test_no_import_cycles():
    graph = _imports()
    cycles = []
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def _empty_container(value: ast.expr | None) -> bool:
    if isinstance(value, (ast.Dict, ast.List, ast.Set)):
        return not (value.keys if isinstance(value, ast.Dict) else value.elts)
    if isinstance(value, ast.Call):
        func = value.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return called in EMPTY_CONTAINERS
    return False


def test_no_module_or_class_level_registries():
    found = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        scopes = [tree.body] + [n.body for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
        for body in scopes:
            for node in body:
                if isinstance(node, (ast.Assign, ast.AnnAssign)) and _empty_container(node.value):
                    found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert not found, f"state kept at module or class level: {found}"


def test_the_seeder_never_imports_the_sandbox():
    graph = _imports()
    offenders = {m: sorted(t for t in targets if t.startswith("folioperf.sandbox"))
                 for m, targets in graph.items() if m.startswith("folioperf.seed")}
    assert not any(offenders.values()), offenders


def test_folioperf_installs_as_pure_python():
    """No extension module to build, so no install needs a compiler."""
    root = PACKAGE.parent
    setuptools = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "ext-modules" not in setuptools, setuptools["ext-modules"]
    packaged = [PACKAGE, *(root / d for d in setuptools["package-dir"].values())]  # workflows/ and the data
    native = [str(f.relative_to(root)) for d in packaged for f in d.rglob("*") if f.suffix in (".c", ".h", ".pyx", ".cpp")]
    assert not native, native
