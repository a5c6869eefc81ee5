"""A sweep YAML's ``axes:``: read, named as expressions call them, and each value checked
against the base scenario before any point runs (spec.py's load_sweep, step by step)."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from simpy_astra.config.cluster_fields import INTEGER_FIELDS, OLD_KEYS, check_field
from simpy_astra.config.scenario import SCENARIO_KEYS
from simpy_astra.errors import InputError
from simpy_astra.sweep.axes import (
    Axis,
    check_overlaps,
    own_name,
    parse_axis,
    refuse_unnameable,
    unique_with_repeats,
)
from simpy_astra.sweep.axis_paths import check_axis_path
from simpy_astra.sweep.integer_ranges import refuse_a_range_in_floats
from simpy_astra.sweep.megatron_args import (
    canonical_path,
    check_integers,
    check_values,
    flag_of,
    is_args_path,
    short_name,
    takes_several,
    words_of,
)
from simpy_astra.sweep.result_names import RESULT_NAMES, ROW_COLUMNS


def read_axes(path: str, raw_axes: Any, warnings: list[str]) -> tuple[list[Axis], list[str]]:
    """The axes of the sweep YAML at ``path`` (its ``axes:``, ``raw_axes``) and the dotted
    paths they set; values written twice are noted in ``warnings``."""
    if raw_axes is None or raw_axes == {}:  # else the base alone, reported as a sweep's best
        raise InputError(f"{path}: axes: give at least one axis, e.g. axes: {{network.bandwidth: [50, 100]}} "
                         f"(to run the base alone: simpy-astra run BASE)")
    if not isinstance(raw_axes, dict):
        raise InputError(f"{path}: field 'axes' must map dotted paths to values")
    for col, raw in raw_axes.items():  # as written: 2.0 beside 2 would count as 2 and vanish
        check_integers(str(col), raw, f"{path}: axes: {col}")
        if str(col).startswith("cluster.") and _field_of(str(col)).removeprefix("cluster.") in INTEGER_FIELDS:
            refuse_a_range_in_floats(raw, str(col), f"{path}: axes: {col}")
    axes = _short_names([_one_per_argument(parse_axis(str(col), raw, f"{path}: axes: {col}"))
                         for col, raw in raw_axes.items()], list(raw_axes.values()))
    warnings += [f"axes: {a.column}: {said} are one value, which runs once; give each value once" for a in axes
                 for said in a.repeats]
    refuse_unnameable(path, axes)
    names = [a.name for a in axes]
    clash = sorted({n for n in names if names.count(n) > 1})
    if clash:
        raise InputError(f"{path}: axes: several axes are called {clash} in expressions; give one "
                         f"{{values: [...], as: OTHER_NAME}}")
    clash = sorted(set(names) & set(RESULT_NAMES))
    if clash:
        raise InputError(f"{path}: axes: {clash} is a result name; rename the axis with 'as:'")
    # a bundle axis's key is its column: 'status' gave results.csv two, and the sweep could not resume
    taken = sorted({a.column for a in axes} & {*RESULT_NAMES, *ROW_COLUMNS})
    if taken:
        raise InputError(f"{path}: axes: {taken[0]}: results.csv has a column of that name already; call the "
                         f"axis something else (its values stay the same)")
    _refuse_bundles_named_as_fields(path, axes)
    axis_paths = [p for a in axes for p in (a.bundles and {k for b in a.bundles.values() for k in b}
                                            or [a.column])]
    check_overlaps(path, axes, _field_of)
    return axes, axis_paths


def check_axis_values(path: str, axes: list[Axis], base: dict[str, Any], axis_paths: list[str]) -> None:
    """Each axis's paths and values checked against the base scenario ``base``: a point's
    fault is refused at load, not found at its run."""
    sweep_dir = os.path.dirname(os.path.abspath(path))  # a preset's path in an axis resolves beside it
    generator_fixed = not {"workload", "workload.generate"} & set(axis_paths)
    for axis in axes:
        for dotted in (axis.bundles and {k for b in axis.bundles.values() for k in b} or [axis.column]):
            check_axis_path(dotted, base, f"{path}: axes: {axis.column}", generator_fixed, axis_paths)
        if axis.bundles is None and is_args_path(axis.column):
            check_values(axis.column, axis.values, f"{path}: axes: {axis.column}")
        for value in axis.values if axis.bundles is None and axis.column.startswith("cluster.") else ():
            check_field(axis.column, value, f"{path}: axes: {axis.column}", sweep_dir)
        for name, bundle in (axis.bundles or {}).items():
            for dotted, value in bundle.items():
                if is_args_path(dotted):
                    check_values(dotted, (value,), f"{path}: axes: {axis.column}: named: {name}")
                elif dotted.startswith("cluster."):
                    check_field(dotted, value, f"{path}: axes: {axis.column}: named: {name}: {dotted}", sweep_dir)


def _field_of(dotted: str) -> str:
    """The field ``dotted`` sets, named one way: a Megatron flag under its first name, a cluster
    key under its name with units (``cluster.inter_node_gbps`` is ``cluster.inter_node_gbit_s``)."""
    parts = canonical_path(dotted).split(".")
    if parts[0] == "cluster":
        parts[-1] = OLD_KEYS.get(parts[-1], parts[-1])
    return ".".join(parts)


def _short_names(axes: list[Axis], raws: list[Any]) -> list[Axis]:
    """Plain axes on Megatron's well-known flags called as Megatron users say them (tp, pp,
    vp, ...), unless ``as:`` names the axis or another axis has that name already: the summary's
    columns and each point's line then fit 80 columns."""
    taken = {a.name for a in axes}
    out = []
    for axis, raw in zip(axes, raws, strict=True):
        short = None if axis.bundles is not None or isinstance(raw, dict) and "as" in raw else short_name(axis.column)
        if short is not None and short not in taken:
            taken.add(short)
            axis = dataclasses.replace(axis, name=short)
        out.append(axis)
    return out


def _one_per_argument(axis: Axis) -> Axis:
    """A Megatron argument's axis without values that write the argument alike (4 and '4' both
    write --num-layers 4: two points of one scenario); the first of each is kept. A list for a
    flag of several values is written as its words (``[8, 2]`` is ``8 2``: one key, one label)."""
    if axis.bundles is not None or not is_args_path(axis.column):
        return axis
    flag = flag_of(axis.column)
    values = []
    for value in axis.values:  # a list for a flag of several values as its words
        words = words_of(flag, value) if isinstance(value, list) and takes_several(flag) else None
        values.append(" ".join(words) if words else value)
    # a switch's true/false/null as itself, any other value as written
    kept, repeats = unique_with_repeats(values, lambda v: v if isinstance(v, bool) or v is None else str(v))
    return dataclasses.replace(axis, values=tuple(kept), repeats=axis.repeats + repeats)


def _refuse_bundles_named_as_fields(path: str, axes: list[Axis]) -> None:
    """A bundle axis's key is its results.csv column and holds its bundles' names: called as a
    field (``system.endpoint-delay``, ``backend``), the column read as that field's values
    ('slow', 'fast') while the bundles set other fields."""
    for axis in axes:
        if axis.bundles is None or "." not in axis.column and axis.column not in SCENARIO_KEYS:
            continue
        sets = sorted({k for b in axis.bundles.values() for k in b})
        raise InputError(f"{path}: axes: {axis.column}: a named-bundle axis is called as the field it names, but "
                         f"its results.csv column holds the bundles' names ({', '.join(axis.values)}) and they "
                         f"set {', '.join(sets)}; call the axis a word that is no field, e.g. machine")


def refuse_axes_named_as_flags(path: str, axes: list[Axis], flags: frozenset[str]) -> None:
    """An axis called (``as:``) as a Megatron argument it does not set hid it in every expression."""
    for axis in axes:
        own = is_args_path(axis.column) and axis.bundles is None and \
            own_name(axis.column) == axis.name
        if axis.name in flags and not own:
            raise InputError(f"{path}: axes: {axis.column}: its name in expressions, {axis.name!r}, is what they call "
                             f"a Megatron argument of each point, which it would hide (a constraint on it would read "
                             f"this axis); call the axis another name with as:, e.g. {axis.name}_axis")
