"""Import structure of the source tree: cycles, private names, imports inside functions (stdlib only).

    python3 ci/check_imports.py [SRC_DIR] [--exclude-type-checking] [--internal-only]

Reads every ``*.py`` file under ``SRC_DIR`` (default ``src/zarrdask``) with
``ast`` (nothing is imported) and reports:

(a) **Import cycles inside a package.** For each package, the graph of its
    direct members (modules, subpackages taken as one node, and the package's
    own ``__init__``): member A → member B when a module in A imports a module
    in B, whether the import is at module level, inside a function or under
    ``if TYPE_CHECKING:`` (``--exclude-type-checking`` leaves the last out).
    ``from pkg import name`` imports the module ``pkg.name`` when there is one,
    else ``pkg`` itself (its ``__init__``); the parent packages Python
    initialises along the way are not counted. Every cycle is printed as a
    chain, each step with the file and line of one import that makes it.
(b) **Private names imported from another module**: ``from .x import _y`` or
    ``import a._b`` where ``_y`` / ``_b`` begins with an underscore and is not a
    dunder, and ``x._y`` attribute access on a name an import bound to a
    module (``import m``, ``import m as x``, ``from pkg import module`` for
    this package's modules; a name is taken to stay bound to its module
    throughout the file). A private *module* (``zarrdask/_json.py``, ``codecs/_util.py``) is
    private to the package holding it, so importing it from inside that
    package is allowed; importing it from outside is reported. Private names
    of other libraries count as well (reported apart; ``--internal-only``
    ignores them).
(c) **Imports inside functions**: import statements counted per module
    (reported only, never a failure).

Exits with status 1 if (a) or (b) found anything, 2 if a file cannot be parsed.
ARCHITECTURE.md: "packages have no inner cycles and modules import no one
else's private names".
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

DEFAULT_SRC = Path(__file__).resolve().parent.parent / "src" / "zarrdask"
MAX_CYCLES_PER_COMPONENT = 50


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the module imported (dotted)
    path: str  # file of the importing module
    line: int
    function: str | None  # the enclosing function's qualified name, or None at module level
    type_checking: bool  # under `if TYPE_CHECKING:`

    def where(self) -> str:
        extra = []
        if self.function:
            extra.append(f"in {self.function}()")
        if self.type_checking:
            extra.append("TYPE_CHECKING")
        return f"{self.path}:{self.line}" + (f" ({', '.join(extra)})" if extra else "")


@dataclass(frozen=True)
class PrivateUse:
    path: str
    line: int
    module: str  # the importing module
    text: str  # what was written, e.g. "from .x import _y, _z"
    internal: bool
    names: int = 1  # private names it imports


class Tree:
    """The modules under a source directory: dotted name → (path, is package)."""

    def __init__(self, src: Path) -> None:
        self.src = src
        self.root = src.name
        self.modules: dict[str, Path] = {}
        self.packages: set[str] = set()
        for path in sorted(src.rglob("*.py")):
            parts = list(path.relative_to(src.parent).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
                self.packages.add(".".join(parts))
            self.modules[".".join(parts)] = path

    def is_module(self, name: str) -> bool:
        return name in self.modules

    def is_internal(self, name: str) -> bool:
        return name == self.root or name.startswith(self.root + ".")

    def package_of(self, module: str) -> str:
        """The package a module's relative imports start from."""
        return module if module in self.packages else module.rpartition(".")[0]


def _type_checking_test(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


class _Visitor(ast.NodeVisitor):
    """Collects one module's imports, private imports and module-bound names."""

    def __init__(self, tree: Tree, module: str, path: str) -> None:
        self.tree, self.module, self.path = tree, module, path
        self.imports: list[Import] = []
        self.private: list[PrivateUse] = []
        self.module_names: dict[str, str] = {}  # local name → module it is bound to
        self._functions: list[str] = []
        self._scope: list[str] = []
        self._type_checking = 0

    # -- scopes --------------------------------------------------------------------------
    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._functions.append(".".join(self._scope + [node.name]))
        self._scope.append(node.name)
        self.generic_visit(node)
        self._scope.pop()
        self._functions.pop()

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._scope.append(node.name)
        self.generic_visit(node)
        self._scope.pop()

    def visit_If(self, node: ast.If) -> None:
        if _type_checking_test(node.test):
            self._type_checking += 1
            for stmt in node.body:
                self.visit(stmt)
            self._type_checking -= 1
            for stmt in node.orelse:
                self.visit(stmt)
        else:
            self.generic_visit(node)

    # -- imports -------------------------------------------------------------------------
    def _record(self, target: str, node: ast.stmt) -> None:
        self.imports.append(Import(self.module, target, self.path, node.lineno,
                                   self._functions[-1] if self._functions else None, self._type_checking > 0))

    def _private_module_allowed(self, target: str) -> bool:
        """A private module may be imported from inside the package that holds it."""
        parts = target.split(".")
        for i, part in enumerate(parts):
            if is_private(part):
                owner = ".".join(parts[:i])
                if not (self.module == owner or self.module.startswith(owner + ".")):
                    return False
        return True

    def _check_private_target(self, target: str, text: str, node: ast.stmt) -> None:
        internal = self.tree.is_internal(target)
        if any(is_private(p) for p in target.split(".")) and not (internal and self._private_module_allowed(target)):
            self.private.append(PrivateUse(self.path, node.lineno, self.module, text, internal))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._record(alias.name, node)
            self._check_private_target(alias.name, f"import {alias.name}", node)
            if alias.asname:
                self.module_names[alias.asname] = alias.name
            else:
                top = alias.name.split(".")[0]
                self.module_names[top] = top

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.tree.package_of(self.module).split(".")
            if node.level > 1:
                base = base[: len(base) - (node.level - 1)]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        if source == "__future__":
            return
        dots = "." * node.level + (node.module or "")
        self._check_private_target(source, f"from {dots} import {', '.join(a.name for a in node.names)}", node)
        internal = self.tree.is_internal(source)
        private_names: list[str] = []
        for alias in node.names:
            if alias.name == "*":
                self._record(source, node)
                continue
            candidate = f"{source}.{alias.name}"
            is_mod = self.tree.is_module(candidate) if internal else None
            self._record(candidate if is_mod else source, node)
            if is_mod:  # (whether an external `from pkg import name` binds a module is not known without importing)
                self.module_names[alias.asname or alias.name] = candidate
            if is_private(alias.name) and not (is_mod and self._private_module_allowed(candidate)):
                private_names.append(alias.name)
        if private_names:
            self.private.append(PrivateUse(self.path, node.lineno, self.module,
                                           f"from {dots} import {', '.join(private_names)}", internal,
                                           len(private_names)))


class _AttributeVisitor(ast.NodeVisitor):
    """``m._y`` (and ``m.sub._y``) where ``m`` is a name an import bound to a module."""

    def __init__(self, imports: _Visitor) -> None:
        self.v = imports

    def visit_Attribute(self, node: ast.Attribute) -> None:
        v = self.v
        chain = []
        value: ast.expr = node
        while isinstance(value, ast.Attribute):
            chain.append(value.attr)
            value = value.value
        if not (isinstance(value, ast.Name) and value.id in v.module_names):
            self.generic_visit(node)
            return
        chain.reverse()
        resolved = v.module_names[value.id]
        internal = v.tree.is_internal(resolved)
        for k, attr in enumerate(chain):
            name = f"{resolved}.{attr}"
            if is_private(attr):
                if not (internal and v.tree.is_module(name) and v._private_module_allowed(name)):
                    v.private.append(PrivateUse(v.path, node.lineno, v.module,
                                                f"{value.id}.{'.'.join(chain[:k + 1])}", internal))
                break
            if internal and not v.tree.is_module(name):
                break  # an attribute of the module (a class, a function): its attributes are not the module's
            resolved = name


def scan(tree: Tree) -> tuple[list[Import], list[PrivateUse], list[str]]:
    imports: list[Import] = []
    private: list[PrivateUse] = []
    errors: list[str] = []
    for module, path in tree.modules.items():
        rel = Path(os.path.relpath(path)).as_posix()
        try:
            ast_tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        except SyntaxError as e:
            errors.append(f"{rel}:{e.lineno}: cannot parse: {e.msg}")
            continue
        v = _Visitor(tree, module, rel)
        v.visit(ast_tree)
        _AttributeVisitor(v).visit(ast_tree)
        imports += v.imports
        # one report per (line, text): `a._b._c` is one use
        seen = set()
        for p in v.private:
            if (p.line, p.text) not in seen:
                seen.add((p.line, p.text))
                private.append(p)
    return imports, private, errors


# -- cycles ----------------------------------------------------------------------------------
def member_of(package: str, module: str) -> str | None:
    """The direct member of ``package`` that ``module`` lies in (``__init__`` for the package itself)."""
    if module == package:
        return "__init__"
    if module.startswith(package + "."):
        return module[len(package) + 1:].split(".")[0]
    return None


def package_graph(package: str, imports: Iterable[Import]) -> dict[str, dict[str, Import]]:
    """member → {member it imports: the first import that does}."""
    graph: dict[str, dict[str, Import]] = defaultdict(dict)
    for imp in imports:
        a, b = member_of(package, imp.module), member_of(package, imp.target)
        if a is None or b is None or a == b:
            continue
        graph[a].setdefault(b, imp)
    return graph


def strongly_connected(graph: dict[str, dict[str, Import]]) -> list[list[str]]:
    """Tarjan's algorithm (iterative); components of more than one node, sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    nodes = sorted(set(graph) | {b for targets in graph.values() for b in targets})
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, {}))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, {})))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return sorted(out)


def elementary_cycles(graph: dict[str, dict[str, Import]], component: list[str], limit: int) -> list[list[str]]:
    """The cycles within one component, each starting at its smallest node (at most ``limit``)."""
    members = set(component)
    cycles: list[list[str]] = []
    for start in component:  # sorted: a cycle is found once, from its smallest node
        path = [start]
        on_path = {start}

        def dfs(node: str) -> bool:
            for nxt in sorted(graph.get(node, {})):
                if nxt not in members or nxt < start:
                    continue
                if nxt == start:
                    cycles.append(path + [start])
                    if len(cycles) >= limit:
                        return True
                elif nxt not in on_path:
                    path.append(nxt)
                    on_path.add(nxt)
                    if dfs(nxt):
                        return True
                    path.pop()
                    on_path.discard(nxt)
            return False

        if dfs(start):
            break
    return cycles


def find_cycles(tree: Tree, imports: list[Import]) -> list[tuple[str, list[str], dict[str, dict[str, Import]], bool]]:
    """(package, chain, graph, truncated) for every cycle of every package."""
    found = []
    for package in sorted(tree.packages):
        graph = package_graph(package, imports)
        for component in strongly_connected(graph):
            cycles = elementary_cycles(graph, component, MAX_CYCLES_PER_COMPONENT)
            truncated = len(cycles) >= MAX_CYCLES_PER_COMPONENT
            for chain in cycles:
                found.append((package, chain, graph, truncated))
    return found


# -- report ----------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src", nargs="?", type=Path, default=DEFAULT_SRC,
                        help="package directory (default: src/zarrdask)")
    parser.add_argument("--exclude-type-checking", action="store_true",
                        help="leave imports under `if TYPE_CHECKING:` out of the cycle check")
    parser.add_argument("--internal-only", action="store_true",
                        help="report private names of this package only, not of other libraries")
    args = parser.parse_args(argv)
    if not args.src.is_dir():
        print(f"check_imports: {args.src} is not a directory", file=sys.stderr)
        return 2
    tree = Tree(args.src)
    imports, private, errors = scan(tree)
    for e in errors:
        print(e)

    graph_imports = [i for i in imports if not (args.exclude_type_checking and i.type_checking)]
    cycles = find_cycles(tree, graph_imports)
    print(f"(a) import cycles inside a package: {len(cycles)}")
    for package, chain, graph, truncated in cycles:
        print(f"  in {package}: {' -> '.join(chain)}")
        for a, b in zip(chain, chain[1:]):
            imp = graph[a][b]
            print(f"      {a} -> {b}: {imp.module} imports {imp.target}  [{imp.where()}]")
    if any(t for *_, t in cycles):
        print(f"  (at most {MAX_CYCLES_PER_COMPONENT} cycles listed per strongly connected set)")

    internal = [p for p in private if p.internal]
    external = [p for p in private if not p.internal]
    print(f"(b) private names imported from another module: {sum(p.names for p in internal)} of {tree.root}'s "
          f"in {len(internal)} statements"
          + ("" if args.internal_only else f", {sum(p.names for p in external)} of other libraries'"))
    for p in internal:
        print(f"  {p.path}:{p.line}  {p.text}")
    if not args.internal_only and external:
        print("  other libraries':")
        for p in external:
            print(f"  {p.path}:{p.line}  {p.text}")

    in_functions = {(i.path, i.line) for i in imports if i.function}  # import statements
    per_module: dict[str, int] = defaultdict(int)
    for path, _ in in_functions:
        per_module[path] += 1
    print(f"(c) import statements inside functions (report only): {len(in_functions)} in {len(per_module)} modules")
    for path, n in sorted(per_module.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {n:4d}  {path}")

    if errors:
        return 2
    failed = bool(cycles) or bool(internal) or (bool(external) and not args.internal_only)
    print("check_imports: FAILED" if failed else "check_imports: OK")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
