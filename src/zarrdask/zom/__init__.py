"""The Zarr Object Model (ZEP 6): hierarchies as declarative specs.

ZEP 6 ("A Zarr Object Model", ``specs/seeds/004_*``) models a Zarr hierarchy's
*structure* — the tree of arrays and groups and their metadata, not the array
data — as ZOM arrays (the metadata document's fields plus ``attributes``) and
ZOM groups (plus ``members``). This package implements it for Zarr v2 and v3:

* :mod:`.spec` — frozen :class:`ArraySpec` / :class:`GroupSpec` (one class
  per format: :class:`ArraySpecV2`, :class:`ArraySpecV3`, :class:`GroupSpecV2`,
  :class:`GroupSpecV3`, in :mod:`.v2` / :mod:`.v3`), their JSON form ("Zarr
  Object Models in JSON"), the flat form (``to_flat`` / :func:`from_flat`)
  and ``like``; :mod:`.fields` holds the field checks the classes share;
* :mod:`.diff` — :func:`diff`, every differing path and field;
* :mod:`.schema` — :func:`json_schema` ("Zarr Object Models in JSON schema"),
  :func:`validate_json`;
* :mod:`.io` — :func:`from_zarr` / :func:`to_zarr` (the only link to
  :mod:`zarrdask.core`);
* :mod:`.convert` — :func:`convert_v2_to_v3`;
* :mod:`.template` — :func:`check`: schema, template and value rules
  ("Validating Zarr Object Models").

Example::

    >>> import zarrdask, zarrdask.zom as zom
    >>> spec = zom.GroupSpec.from_zarr(zarrdask.open_group("data.zarr", mode="r"))
    >>> spec.to_json()["members"]["temperature"]["shape"]
    [365, 180, 360]
    >>> copy = spec.to_zarr(zarrdask.MemoryStore())   # the same hierarchy, no data
    >>> print(zom.check("data.zarr", template=spec))
    data.zarr: OK (4 node(s) checked, no problems)
"""

from ._frozen import UNSET, FrozenDict
from .convert import convert_v2_to_v3
from .diff import ABSENT, Difference, diff
from .io import from_zarr, to_zarr
from .schema import json_schema, schema_errors, validate_json
from .spec import ArraySpec, GroupSpec, NodeSpec, Operations, from_flat, from_json, install_operations
from .template import (
    DEFAULT_RULES,
    Problem,
    Report,
    Rule,
    check,
    consistent_dimension_sizes,
    dimension_names_match_shape,
    require_dimension_names,
)
from .v2 import ArraySpecV2, GroupSpecV2
from .v3 import ArraySpecV3, GroupSpecV3

# the spec methods that read, write, compare and convert (spec.py cannot import these modules: they import it)
install_operations(Operations(from_zarr=from_zarr, to_zarr=to_zarr, diff=diff, convert_v2_to_v3=convert_v2_to_v3))

__all__ = [
    "ABSENT",
    "DEFAULT_RULES",
    "UNSET",
    "ArraySpec",
    "ArraySpecV2",
    "ArraySpecV3",
    "Difference",
    "FrozenDict",
    "GroupSpec",
    "GroupSpecV2",
    "GroupSpecV3",
    "NodeSpec",
    "Problem",
    "Report",
    "Rule",
    "check",
    "consistent_dimension_sizes",
    "convert_v2_to_v3",
    "diff",
    "dimension_names_match_shape",
    "from_flat",
    "from_json",
    "from_zarr",
    "json_schema",
    "require_dimension_names",
    "schema_errors",
    "to_zarr",
    "validate_json",
]
