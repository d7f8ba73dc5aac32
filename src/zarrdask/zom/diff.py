"""Differences between two hierarchies, path by path and field by field.

ZEP 6 defines a hierarchy's *structure* (section "Definition of hierarchy
structure"): the tree of nodes and their metadata, not the array data nor the
storage. Two hierarchies have the same structure exactly when :func:`diff` is
empty. Values are compared as JSON (``true`` is not ``1``, ``1`` is ``1.0``).

Records name the node path (``"/"``, ``"/a/b"``) and the field:

* a metadata field: ``"shape"``, ``"codecs"``, ...;
* one user attribute: ``"attributes.units"``;
* ``"node"`` when a member exists on one side only (the value is the node kind
  on the side that has it, :data:`ABSENT` on the other);
* ``"node_type"`` / ``"zarr_format"`` when the kinds or formats differ (the
  nodes' fields and members are then not compared further).

Example::

    >>> diff(a, b)
    [Difference(path='/temp', field='shape', left=[10, 20], right=[10, 30])]
    >>> print(diff(a, b)[0])
    /temp: field 'shape': [10, 20] != [10, 30]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._frozen import json_equal, thaw
from .fields import child_path
from .spec import GroupSpec, NodeSpec, as_spec

__all__ = ["ABSENT", "Difference", "diff"]


class _Absent:
    def __repr__(self) -> str:
        return "<absent>"

    def __reduce__(self) -> str:
        return "ABSENT"


#: the value on the side of a :class:`Difference` where the field or node is missing
ABSENT: Any = _Absent()


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:120] + "…"


@dataclass(frozen=True)
class Difference:
    """One difference: at node ``path``, ``field`` is ``left`` on one side and
    ``right`` on the other (:data:`ABSENT` where missing)."""

    path: str
    field: str
    left: Any
    right: Any

    def __str__(self) -> str:
        if self.field == "node":
            side, kind = ("left", self.left) if self.right is ABSENT else ("right", self.right)
            return f"{self.path}: {'an' if kind == 'array' else 'a'} {kind} only on the {side}"
        return f"{self.path}: field {self.field!r}: {_show(self.left)} != {_show(self.right)}"


def _fields(spec: NodeSpec) -> dict[str, Any]:
    doc = spec.to_json() if not isinstance(spec, GroupSpec) else spec.replace(members={}).to_json()
    doc.pop("members", None)
    return doc


def _diff_node(a: NodeSpec, b: NodeSpec, path: str, out: list[Difference]) -> None:
    if a.zarr_format != b.zarr_format:
        out.append(Difference(path, "zarr_format", a.zarr_format, b.zarr_format))
        return
    if a.node_type != b.node_type:
        out.append(Difference(path, "node_type", a.node_type, b.node_type))
        return
    fa, fb = _fields(a), _fields(b)
    attrs_a, attrs_b = fa.pop("attributes", {}), fb.pop("attributes", {})
    for key in [*fa, *(k for k in fb if k not in fa)]:
        va, vb = fa.get(key, ABSENT), fb.get(key, ABSENT)
        if va is ABSENT or vb is ABSENT or not json_equal(va, vb):
            out.append(Difference(path, key, va, vb))
    for key in [*attrs_a, *(k for k in attrs_b if k not in attrs_a)]:
        va, vb = attrs_a.get(key, ABSENT), attrs_b.get(key, ABSENT)
        if va is ABSENT or vb is ABSENT or not json_equal(va, vb):
            out.append(Difference(path, f"attributes.{key}", va, vb))
    if isinstance(a, GroupSpec):
        ma, mb = a.members, b.members  # type: ignore[attr-defined]
        for name in [*ma, *(n for n in mb if n not in ma)]:
            child = child_path(path, name)
            if name not in mb:
                out.append(Difference(child, "node", ma[name].node_type, ABSENT))
            elif name not in ma:
                out.append(Difference(child, "node", ABSENT, mb[name].node_type))
            else:
                _diff_node(ma[name], mb[name], child, out)


def diff(a: Any, b: Any, *, path: str = "/") -> list[Difference]:
    """Every difference between two hierarchies (empty when they are equal).

    Parameters
    ----------
    a, b
        Specs, ZOM JSON documents, or zarrdask arrays / groups (read with
        :func:`zarrdask.zom.from_zarr`).
    path
        The path that names the roots in the records.

    Returns
    -------
    list of Difference
        In document order: a node's fields, then its attributes, then its
        members (depth first).
    """
    out: list[Difference] = []
    _diff_node(as_spec(a), as_spec(b), path, out)
    return [Difference(d.path, d.field, thaw(d.left) if d.left is not ABSENT else ABSENT,
                       thaw(d.right) if d.right is not ABSENT else ABSENT) for d in out]
