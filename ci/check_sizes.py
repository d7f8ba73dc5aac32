"""Size limits for the source tree: modules and function bodies (stdlib only).

    python3 ci/check_sizes.py [SRC_DIR] [--max-module-lines N] [--max-function-lines N]

Checks every ``*.py`` file under ``SRC_DIR`` (default ``src/zarrdask``):

- a module has at most ``--max-module-lines`` lines (default 800), counted as
  the file's physical lines;
- a function or method body has at most ``--max-function-lines`` lines
  (default 80): from its first statement after the docstring to its last line,
  so the signature, decorators and docstring do not count; blank lines and
  comments inside the body do. A nested function counts in its own right and
  as part of the function around it.

Prints the offenders, largest first, and exits with status 1 if there are any
(2 if a file cannot be parsed). ARCHITECTURE.md: "a module holds one concept and
stays under ~800 lines, a function under ~80".
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
from pathlib import Path
from typing import Iterator, NamedTuple

DEFAULT_SRC = Path(__file__).resolve().parent.parent / "src" / "zarrdask"


class Offender(NamedTuple):
    lines: int
    where: str  # path:line
    name: str  # module path or qualified function name


def _is_docstring(stmt: ast.stmt) -> bool:
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str))


def body_lines(func: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Physical lines of the body without the docstring (0 for a docstring-only body)."""
    body = func.body[1:] if func.body and _is_docstring(func.body[0]) else func.body
    if not body:
        return 0
    first = body[0]
    start = min([first.lineno] + [d.lineno for d in getattr(first, "decorator_list", [])])
    return func.end_lineno - start + 1


def functions(tree: ast.AST) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function and method with its qualified name (``Class.method``, ``outer.<locals>.inner``)."""
    def walk(node: ast.AST, prefix: str) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                yield name, child
                yield from walk(child, name + ".<locals>.")
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, prefix + child.name + ".")
            else:
                yield from walk(child, prefix)
    yield from walk(tree, "")


def check(src: Path, max_module: int, max_function: int) -> tuple[list[Offender], list[Offender], list[str]]:
    modules: list[Offender] = []
    funcs: list[Offender] = []
    errors: list[str] = []
    for path in sorted(src.rglob("*.py")):
        rel = Path(os.path.relpath(path)).as_posix()
        text = path.read_text(encoding="utf-8")
        n = len(text.splitlines())
        if n > max_module:
            modules.append(Offender(n, rel, rel))
        try:
            tree = ast.parse(text, filename=str(path))
        except SyntaxError as e:
            errors.append(f"{rel}:{e.lineno}: cannot parse: {e.msg}")
            continue
        for name, func in functions(tree):
            lines = body_lines(func)
            if lines > max_function:
                funcs.append(Offender(lines, f"{rel}:{func.lineno}", name))
    modules.sort(key=lambda o: (-o.lines, o.where))
    funcs.sort(key=lambda o: (-o.lines, o.where))
    return modules, funcs, errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src", nargs="?", type=Path, default=DEFAULT_SRC,
                        help="package directory (default: src/zarrdask)")
    parser.add_argument("--max-module-lines", type=int, default=800)
    parser.add_argument("--max-function-lines", type=int, default=80)
    args = parser.parse_args(argv)
    if not args.src.is_dir():
        print(f"check_sizes: {args.src} is not a directory", file=sys.stderr)
        return 2
    modules, funcs, errors = check(args.src, args.max_module_lines, args.max_function_lines)
    for e in errors:
        print(e)
    print(f"modules over {args.max_module_lines} lines: {len(modules)}")
    for o in modules:
        print(f"  {o.lines:6d}  {o.name}")
    print(f"function bodies over {args.max_function_lines} lines (docstrings excluded): {len(funcs)}")
    for o in funcs:
        print(f"  {o.lines:6d}  {o.where}  {o.name}")
    if errors:
        return 2
    if modules or funcs:
        print("check_sizes: FAILED (split the modules and functions listed above)")
        return 1
    print("check_sizes: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
