"""Checking a stored hierarchy: the ZOM schema, a template, value rules.

ZEP 6, "Validating Zarr Object Models": communities define conventions for
their hierarchies (xarray: every array has ``_ARRAY_DIMENSIONS``), and "not
every invariant of a structured hierarchy can be expressed statically --
consider the constraint 'the length of the _ARRAY_DIMENSIONS attribute must
match the length of the shape attribute'. ... Such value-dependent validation
can be added by runtime type checkers." :func:`check` does three things and
collects every problem in a :class:`Report` instead of stopping at the first:

1. **schema**: the hierarchy's ZOM document against :func:`~zarrdask.zom.json_schema`;
2. **template** (optional): a ZOM document (or spec) the hierarchy must match,
   or a JSON Schema (a document with ``"$schema"``, ``"$defs"``,
   ``"definitions"`` or ``"$ref"``) its ZOM document must validate against.
   A ZOM template may be partial: each node and field it gives must be
   present and equal, ``attributes`` it gives must be present with equal
   values, members it does not name and fields it leaves out are not checked
   (``exact=True`` asks for equality instead: every :func:`~zarrdask.zom.diff`
   record is a problem);
3. **rules**: value-dependent checks run on every node (:data:`DEFAULT_RULES`:
   :data:`dimension_names_match_shape`; also :data:`require_dimension_names`,
   :data:`consistent_dimension_sizes` — together, xarray's data model).

A rule is a :class:`Rule`: a name and a function ``(path, node) -> iterable of
messages``.

Example::

    >>> report = check("data.zarr", template={"zarr_format": 2, "members": {"t": {"shape": [3, 4]}}},
    ...                rules=[*DEFAULT_RULES, require_dimension_names])
    >>> print(report)
    2 problem(s) in 3 node(s):
      /t: [dimension-names] attribute '_ARRAY_DIMENSIONS' has 1 name(s) ['x'], expected 2 (one per dimension of shape [3, 4])
      /u: [require-dimension-names] the array has no attribute '_ARRAY_DIMENSIONS'
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import MetadataError, ZarrdaskError
from ._frozen import json_equal, thaw
from .diff import diff
from .fields import child_path
from .io import from_zarr
from .schema import schema_errors
from .spec import ArraySpec, GroupSpec, NodeSpec, from_json

__all__ = [
    "DEFAULT_RULES",
    "Problem",
    "Report",
    "Rule",
    "check",
    "consistent_dimension_sizes",
    "dimension_names_match_shape",
    "require_dimension_names",
]


@dataclass(frozen=True)
class Problem:
    """One problem: at node ``path``, what ``rule`` found (``message``)."""

    path: str
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: [{self.rule}] {self.message}"


@dataclass(frozen=True)
class Report:
    """What :func:`check` found: ``ok``, the ``problems``, how many nodes were checked."""

    problems: tuple[Problem, ...] = ()
    checked: int = 0
    target: str = ""

    @property
    def ok(self) -> bool:
        return not self.problems

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        where = f"{self.target}: " if self.target else ""
        if self.ok:
            return f"{where}OK ({self.checked} node(s) checked, no problems)"
        lines = "\n  ".join(str(p) for p in self.problems)
        return f"{where}{len(self.problems)} problem(s) in {self.checked} node(s):\n  {lines}"

    def to_json(self) -> dict[str, Any]:
        """``{"ok", "checked", "problems": [{"path", "rule", "message"}]}``."""
        return {"ok": self.ok, "checked": self.checked,
                "problems": [{"path": p.path, "rule": p.rule, "message": p.message} for p in self.problems]}


@dataclass(frozen=True)
class Rule:
    """A value-dependent check: ``func(path, node)`` yields a message per problem."""

    name: str
    func: Callable[[str, NodeSpec], Iterable[str]] = field(repr=False)
    description: str = ""

    def __call__(self, path: str, node: NodeSpec) -> Iterable[str]:
        return self.func(path, node)


def _dimension_names(node: ArraySpec) -> tuple[str, Any] | None:
    """(where, names) of an array's dimension names, if it gives any."""
    if node.zarr_format == 3:
        names = getattr(node, "dimension_names", None)
        return None if names is None or not isinstance(names, tuple) else ("dimension_names", names)
    if "_ARRAY_DIMENSIONS" in node.attributes:
        return "attribute '_ARRAY_DIMENSIONS'", node.attributes["_ARRAY_DIMENSIONS"]
    return None


def _names_match_shape(path: str, node: NodeSpec) -> Iterable[str]:
    if not isinstance(node, ArraySpec):
        return
    found = _dimension_names(node)
    if found is None:
        return
    where, names = found
    shape = list(node.shape)
    if not isinstance(names, tuple) or not all(isinstance(n, str) or (n is None and node.zarr_format == 3)
                                               for n in names):
        yield f"{where} is {thaw(names)!r:.100}, expected a list of names (strings)"
    elif len(names) != len(shape):
        yield (f"{where} has {len(names)} name(s) {list(names)}, expected {len(shape)} "
               f"(one per dimension of shape {shape})")


def _require_names(path: str, node: NodeSpec) -> Iterable[str]:
    if isinstance(node, ArraySpec) and _dimension_names(node) is None:
        yield ("the array has no 'dimension_names'" if node.zarr_format == 3
               else "the array has no attribute '_ARRAY_DIMENSIONS'")


def _consistent_sizes(path: str, node: NodeSpec) -> Iterable[str]:
    if not isinstance(node, GroupSpec):
        return
    uses: dict[str, list[tuple[int, str]]] = {}
    for name, child in node.members.items():
        if not isinstance(child, ArraySpec):
            continue
        found = _dimension_names(child)
        if found is None or not isinstance(found[1], tuple) or len(found[1]) != len(child.shape):
            continue
        for dim, size in zip(found[1], child.shape):
            if isinstance(dim, str):
                uses.setdefault(dim, []).append((size, name))
    for dim, sizes in uses.items():
        if len({size for size, _ in sizes}) > 1:
            where = ", ".join(f"{size} in {name!r}" for size, name in sizes)
            yield f"dimension {dim!r} has different sizes: {where}"


#: an array's dimension names (v2 attribute ``_ARRAY_DIMENSIONS``, v3 ``dimension_names``), when
#: given, are a list with one name per dimension (ZEP 6's example of a value-dependent rule)
dimension_names_match_shape = Rule(
    "dimension-names", _names_match_shape,
    "_ARRAY_DIMENSIONS / dimension_names, when present, has one name per dimension")
#: every array names its dimensions (xarray's convention)
require_dimension_names = Rule(
    "require-dimension-names", _require_names,
    "every array has _ARRAY_DIMENSIONS (v2) / dimension_names (v3)")
#: in a group, a dimension name has one size across the arrays that use it (xarray's Dataset)
consistent_dimension_sizes = Rule(
    "dimension-sizes", _consistent_sizes,
    "within a group, a dimension name has the same size in every array")

DEFAULT_RULES: tuple[Rule, ...] = (dimension_names_match_shape,)

_SCHEMA_KEYS = ("$schema", "$defs", "definitions", "$ref")


def _template_json(template: Any) -> Any:
    if isinstance(template, NodeSpec):
        return template.to_json()
    if isinstance(template, (str, bytes)) or hasattr(template, "__fspath__"):
        with open(os.fspath(template), encoding="utf-8") as f:
            return json.load(f)
    if not isinstance(template, Mapping):
        raise TypeError(f"template: expected a spec, a JSON document or a JSON file path, found {template!r:.80}")
    return thaw(template)


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _match(tmpl: Any, node: NodeSpec, path: str, out: list[Problem]) -> None:
    """The problems of ``node`` against a (partial) ZOM template node."""
    if not isinstance(tmpl, Mapping):
        out.append(Problem(path, "template", f"the template node is {tmpl!r:.80}, not a JSON object"))
        return
    fmt = tmpl.get("zarr_format", tmpl.get("zarr_version"))
    if fmt is not None and fmt != node.zarr_format:
        out.append(Problem(path, "template", f"a v{node.zarr_format} {node.node_type}, the template "
                                             f"expects zarr_format {fmt}"))
        return
    kind = tmpl.get("node_type") or ("array" if "shape" in tmpl else "group" if "members" in tmpl else None)
    if kind is not None and kind != node.node_type:
        out.append(Problem(path, "template", f"{_a(node.node_type)}, the template expects {_a(kind)}"))
        return
    doc = node.to_json() if isinstance(node, ArraySpec) else node.replace(members={}).to_json()
    for key, want in tmpl.items():
        if key in ("members", "attributes", "zarr_format", "zarr_version", "node_type"):
            continue
        if key not in doc:
            out.append(Problem(path, "template", f"field {key!r} is missing, the template expects {want!r:.100}"))
        elif not json_equal(doc[key], want):
            out.append(Problem(path, "template", f"field {key!r} is {doc[key]!r:.100}, the template expects "
                                                 f"{want!r:.100}"))
    attrs = doc.get("attributes", {})
    for key, want in (tmpl.get("attributes") or {}).items():
        if key not in attrs:
            out.append(Problem(path, "template", f"attribute {key!r} is missing, the template expects "
                                                 f"{want!r:.100}"))
        elif not json_equal(attrs[key], want):
            out.append(Problem(path, "template", f"attribute {key!r} is {attrs[key]!r:.100}, the template "
                                                 f"expects {want!r:.100}"))
    members = tmpl.get("members") or {}
    if members and not isinstance(node, GroupSpec):
        return
    for name, sub in members.items():
        child = child_path(path, name)
        if name not in node.members:  # type: ignore[attr-defined]
            what = sub.get("node_type") or ("array" if "shape" in sub else "node") if isinstance(sub, Mapping) \
                else "node"
            out.append(Problem(child, "template", f"missing: the template expects {_a(what)} here"))
        else:
            _match(sub, node.members[name], child, out)  # type: ignore[attr-defined]


def _walk(node: NodeSpec, path: str) -> Iterable[tuple[str, NodeSpec]]:
    yield path, node
    if isinstance(node, GroupSpec):
        for name, child in node.members.items():
            yield from _walk(child, child_path(path, name))


def _describe(target: Any) -> str:
    if isinstance(target, (str, bytes)) or hasattr(target, "__fspath__"):
        return str(target)
    return ""


def check(target: Any, template: Any = None, *, path: str = "", rules: Iterable[Rule] | None = None,
          exact: bool = False, schema: bool = True, storage_options: dict[str, Any] | None = None) -> Report:
    """Check a hierarchy against the ZOM schema, a template and value rules.

    Parameters
    ----------
    target
        A stored hierarchy — a :class:`zarrdask.Group` / :class:`zarrdask.Array`,
        a Store, a path or URL (opened read-only) — or a spec.
    template
        ``None``, a spec, a ZOM JSON document (possibly partial), a JSON Schema,
        or the path of a JSON file holding one of them.
    path
        The node in ``target`` to check.
    rules
        Value-dependent rules run on every node; default :data:`DEFAULT_RULES`.
    exact
        With a ZOM template: the hierarchy must equal it (every difference is a
        problem) rather than contain it.
    schema
        Check the hierarchy's document against the ZOM JSON Schema.
    storage_options
        For fsspec URLs.

    Returns
    -------
    Report
        ``report.ok``, ``report.problems`` (path, rule, message), and a
        readable ``str(report)``. Metadata that cannot be read is reported as
        a problem of the rule ``"read"``, not raised.
    """
    rules = tuple(DEFAULT_RULES if rules is None else rules)
    name = _describe(target)
    try:
        spec = target if isinstance(target, NodeSpec) and not path else from_zarr(
            target, path=path, storage_options=storage_options)
    except (ZarrdaskError, OSError, ValueError, KeyError) as e:
        return Report((Problem("/" + path.strip("/"), "read", f"cannot read the hierarchy: {e}"),), 0, name)
    problems: list[Problem] = []
    doc = spec.to_json()
    if schema:
        for err in schema_errors(doc, spec.zarr_format):
            pointer, _, message = err.partition(": ")
            problems.append(Problem(_node_of_pointer(pointer), "schema", f"{pointer}: {message}"))
    if template is not None:
        tmpl = _template_json(template)
        if isinstance(tmpl, Mapping) and any(k in tmpl for k in _SCHEMA_KEYS):
            import jsonschema  # slow to import (0.15 s): only JSON Schema templates need it here

            validator_cls = jsonschema.validators.validator_for(tmpl)
            for error in validator_cls(tmpl).iter_errors(doc):
                pointer = "/" + "/".join(str(p) for p in error.absolute_path)
                problems.append(Problem(_node_of_pointer(pointer), "template-schema", f"{pointer}: {error.message}"))
        elif exact:
            try:
                whole = from_json(tmpl)
            except MetadataError as e:
                raise MetadataError(f"template: exact=True compares with a complete ZOM document; {e}") from None
            problems.extend(Problem(d.path, "template", str(d).split(": ", 1)[1]) for d in diff(whole, spec))
        else:
            _match(tmpl, spec, "/", problems)
    nodes = list(_walk(spec, "/"))
    for node_path, node in nodes:
        for rule in rules:
            problems.extend(Problem(node_path, rule.name, msg) for msg in rule(node_path, node))
    return Report(tuple(problems), len(nodes), name)


def _node_of_pointer(pointer: str) -> str:
    """The node path of a JSON pointer into a ZOM document (``/members/a/shape`` → ``/a``)."""
    parts = [p for p in pointer.split("/") if p]
    names = []
    i = 0
    while i + 1 < len(parts) and parts[i] == "members":
        names.append(parts[i + 1])
        i += 2
    return "/" + "/".join(names)
