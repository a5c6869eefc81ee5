"""A sweep YAML's expressions: ``constraints:``, ``minimise:``, ``report:`` and
``memory_cap_gb``, parsed and checked against the axes' and the results' names (spec.py's
load_sweep, its last step)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from simpy_astra.config.readers import show_value
from simpy_astra.errors import InputError
from simpy_astra.sweep.axes import Axis
from simpy_astra.sweep.axis_paths import megatron_args_of
from simpy_astra.sweep.expressions import Expression, parse_expression, refuse_a_number_as_a_test
from simpy_astra.sweep.megatron_args import names as flag_names
from simpy_astra.sweep.result_names import DEFAULT_OBJECTIVE, DEFAULT_REPORT, MEGATRON_REPORT, RESULT_NAMES
from simpy_astra.sweep.spec_axes import refuse_axes_named_as_flags


@dataclass
class Goals:
    """What a sweep asks of its points (the fields of :class:`~simpy_astra.sweep.spec.SweepSpec`
    of the same names)."""

    point_filters: list[Expression] = field(default_factory=list)
    result_constraints: list[Expression] = field(default_factory=list)
    objective: Expression | None = None
    report: list[Expression] = field(default_factory=list)
    memory_cap_gb: float | None = None
    flag_names: frozenset[str] = frozenset()


def read_goals(path: str, doc: dict[str, Any], axes: list[Axis], base: dict[str, Any]) -> Goals:
    """The point filters, result constraints, objective, report and memory cap of the sweep
    YAML ``doc`` at ``path``, whose ``axes`` and ``base`` scenario are read already."""
    goals = Goals()
    names = [a.name for a in axes]
    raw_constraints = doc.get("constraints") or []
    if not isinstance(raw_constraints, list):
        example = f"[{json.dumps(raw_constraints)}]" if isinstance(raw_constraints, str) else "['dp * tp == 64']"
        raise InputError(f"{path}: field 'constraints' must be a list of expressions (got {type(raw_constraints).__name__}); "
                         f"write constraints: {example}")
    megatron = megatron_args_of(base) is not None
    if megatron:  # every modelled flag is a name (axis names win)
        goals.flag_names = frozenset(flag_names() - set(RESULT_NAMES))
    refuse_axes_named_as_flags(path, axes, goals.flag_names)
    coords = set(names) | goals.flag_names
    # the flags' names are summed up in an error, not listed one by one (data_parallel_size is no flag)
    flags = goals.flag_names - {"data_parallel_size", *names}
    words = {v: a.name for a in reversed(axes) for v in a.values if isinstance(v, str) and v.isidentifier()}
    bundled = {k: (a.name, next(iter(a.bundles))) for a in reversed(axes) if a.bundles
               for b in a.bundles.values() for k in b if k not in {p.column for p in axes if not p.bundles}}
    for i, text in enumerate(raw_constraints):
        expr = parse_expression(text, f"{path}: constraints[{i}]", coords | set(RESULT_NAMES), flags=flags,
                                words=words, bundled=bundled)
        refuse_a_number_as_a_test(expr, f"{path}: constraints[{i}]", set(RESULT_NAMES) - {"fits"})
        (goals.point_filters if expr.names <= coords else goals.result_constraints).append(expr)
    figure = "iteration_time_ns" if megatron else DEFAULT_OBJECTIVE  # a figure's example: a number
    goals.objective = parse_expression(doc.get("minimise", DEFAULT_OBJECTIVE), f"{path}: minimise",
                                      coords | set(RESULT_NAMES), figure, flags)
    raw_report = doc.get("report", list(MEGATRON_REPORT if megatron else DEFAULT_REPORT))
    if not isinstance(raw_report, list) or not raw_report:
        example = f"[{json.dumps(raw_report)}]" if isinstance(raw_report, str) and raw_report else "[finish_ns]"
        raise InputError(f"{path}: field 'report' must be a non-empty list of result names or expressions (got "
                         f"{show_value(raw_report)}); write report: {example}")
    goals.report = [parse_expression(text, f"{path}: report[{i}]", coords | set(RESULT_NAMES), figure, flags)
                   for i, text in enumerate(raw_report)]
    shown = [e.text for e in goals.report]
    if len(set(shown)) < len(shown):  # the table would show the column twice
        twice = next(t for i, t in enumerate(shown) if t in shown[:i])
        raise InputError(f"{path}: field 'report' names {twice!r} twice; list each figure once")
    if doc.get("memory_cap_gb") is not None:
        cap = doc["memory_cap_gb"]
        if isinstance(cap, bool) or not isinstance(cap, int | float) or not math.isfinite(cap) or cap <= 0:
            raise InputError(f"{path}: field 'memory_cap_gb' must be a finite number of GB > 0 "
                             f"(got {cap!r})")
        goals.memory_cap_gb = float(cap)
        # the cap selects a best under it, as the constraint it stands for (it only drew a line)
        figure = "memory_per_gpu_gib" if megatron else "peak_memory_gb"
        text = f"{figure} <= {goals.memory_cap_gb:g}"
        if all(c.text.replace(" ", "") != text.replace(" ", "") for c in goals.result_constraints):
            goals.result_constraints.append(parse_expression(text, f"{path}: memory_cap_gb", set(RESULT_NAMES)))
    return goals
