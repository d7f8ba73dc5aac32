"""``zarrdask validate``: check a hierarchy's structure against the ZOM schema, a
template and value rules (:func:`zarrdask.zom.check`)."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

import click

from .. import zom
from ._common import EXIT_PROBLEMS, describe, emit_json, json_option, open_node, path_argument

__all__ = ["validate"]


def _load_template(path: str) -> Any:
    """The template in ``path``: a JSON file, or a Zarr hierarchy whose structure is the template."""
    if os.path.isdir(path) or path.lower().endswith(".zip"):
        return zom.from_zarr(open_node(path, "", ()))
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except ValueError as e:
        raise click.BadParameter(f"{path!r} is not valid JSON: {e}", param_hint="'--template'") from None
    except RecursionError:
        raise click.BadParameter(f"{path!r} is JSON nested too deeply to read", param_hint="'--template'") from None
    if not isinstance(doc, dict):
        raise click.BadParameter(
            f"{path!r} holds a JSON {type(doc).__name__}; a ZOM document or a JSON Schema is an object",
            param_hint="'--template'",
        )
    return doc


def _check_exact_template(tmpl: Any) -> None:
    """``--exact`` compares with a whole ZOM document: refuse a partial one here
    (zom.check would read a JSON object without ``zarr_format`` as a store)."""
    if not isinstance(tmpl, dict):
        return  # a hierarchy given as the template (a spec)
    if any(k in tmpl for k in ("$schema", "$defs", "definitions", "$ref")):
        return  # a JSON Schema: --exact does not apply
    if "zarr_format" not in tmpl and "zarr_version" not in tmpl:
        raise click.BadParameter(
            "--exact needs a complete ZOM document (with zarr_format); this one is partial",
            param_hint="'--template'",
        )
    try:
        zom.from_json(tmpl)
    except (ValueError, TypeError, KeyError) as e:
        raise click.BadParameter(f"--exact needs a complete ZOM document: {describe(e)}",
                                 param_hint="'--template'") from None


@click.command(short_help="Check a hierarchy against the ZOM schema, a template and rules.")
@path_argument
@click.option(
    "-t",
    "--template",
    type=click.Path(exists=True, dir_okay=True),
    default=None,
    metavar="FILE",
    help="A JSON file holding a (partial) ZOM document or a JSON Schema the hierarchy must match "
    "(or a Zarr hierarchy whose structure it must match).",
)
@click.option(
    "--exact",
    is_flag=True,
    help="With a ZOM template: the hierarchy must equal it (every difference is a problem), "
    "not just contain it.",
)
@click.option(
    "--require-dimension-names",
    is_flag=True,
    help="Every array must name its dimensions (v3 dimension_names, v2 attribute _ARRAY_DIMENSIONS).",
)
@click.option(
    "--consistent-dimension-sizes",
    is_flag=True,
    help="Within a group, a dimension name must have one size in every array that uses it.",
)
@click.option(
    "--xarray",
    "xarray_rules",
    is_flag=True,
    help="xarray's data model: both rules above.",
)
@click.option(
    "--schema/--no-schema",
    default=True,
    show_default=True,
    help="Check the hierarchy's ZOM document against the ZOM JSON Schema.",
)
@json_option
def validate(
    path: str,
    node: str,
    storage_options: tuple[str, ...],
    template: str | None,
    exact: bool,
    require_dimension_names: bool,
    consistent_dimension_sizes: bool,
    xarray_rules: bool,
    schema: bool,
    as_json: bool,
) -> None:
    """Check the structure (metadata, not data) of the hierarchy at PATH.

    Runs zarrdask.zom.check: the hierarchy's ZOM document against the ZOM JSON
    Schema, against --template if given, and the value rules on every node
    (always: dimension names, when given, have one name per dimension). Every
    problem is reported, one per line (node, rule, message); exits with status 1
    when there is any. Metadata that cannot be read is a problem too.
    """
    if exact and template is None:
        raise click.UsageError("--exact compares with a template; give one with --template")
    obj = open_node(path, node, storage_options)
    tmpl = None if template is None else _load_template(template)
    if exact:
        _check_exact_template(tmpl)
    rules = list(zom.DEFAULT_RULES)
    if require_dimension_names or xarray_rules:
        rules.append(zom.require_dimension_names)
    if consistent_dimension_sizes or xarray_rules:
        rules.append(zom.consistent_dimension_sizes)
    report = zom.check(obj, tmpl, rules=rules, exact=exact, schema=schema)
    label = path + (f" (node {node!r})" if node else "")
    report = dataclasses.replace(report, target=label)
    if as_json:
        emit_json(report.to_json())
    else:
        click.echo(str(report))
    if not report.ok:
        raise click.exceptions.Exit(EXIT_PROBLEMS)
