"""A sweep YAML's expressions: ``constraints:``, ``minimise:``, ``report:`` and
``memory_cap_gb``, parsed and checked against the axes' and the results' names (spec.py's
load_sweep, its last step)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from simpy_astra.config.field_values import show_value
from simpy_astra.errors import InputError
from simpy_astra.sweep.axes import Axis
from simpy_astra.sweep.axis_paths import megatron_args_of
from simpy_astra.sweep.expressions import Expression, parse_expression, refuse_a_number_as_a_test
from simpy_astra.sweep.megatron_args import names as flag_names
from simpy_astra.sweep.result_names import DEFAULT_OBJECTIVE, DEFAULT_REPORT, MEGATRON_REPORT, RESULT_NAMES
from simpy_astra.sweep.spec_axes import refuse_axes_named_as_flags


@dataclass(frozen=True)
class Goals:
    """What a sweep asks of its points, read once from its YAML: the one home of these facts
    (a :class:`~simpy_astra.sweep.spec.SweepSpec` holds them as ``goals``)."""

    #: constraints over coordinates (and Megatron flags): they drop points before any runs
    point_filters: list[Expression]
    #: constraints naming a result: they filter results for best.json (the cap's included)
    result_constraints: list[Expression]
    #: ``minimise:``, the figure that ranks the points
    objective: Expression
    #: the figures (or expressions) of the terminal table, in order
    report: list[Expression]
    memory_cap_gb: float | None
    #: names the points' Megatron flags have in expressions (empty unless the base is Megatron)
    flag_names: frozenset[str]

    def first_use(self, names: set[str] | frozenset[str]) -> tuple[str, Any, str] | None:
        """Where the sweep first reads one of ``names``: its ``minimise``, its own ``report``
        (the default one reads what every run has), a result constraint or ``memory_cap_gb``;
        as (that field, the expression, the name), or None."""
        cap = f"peak_memory_gb <= {self.memory_cap_gb:g}" if self.memory_cap_gb is not None else None
        report = [] if [e.text for e in self.report] == list(DEFAULT_REPORT) else self.report
        uses = [("minimise", self.objective), *((f"report[{i}]", e) for i, e in enumerate(report)),
                *(("memory_cap_gb" if e.text == cap else "constraints", e) for e in self.result_constraints)]
        for where, expr in uses:
            used = sorted(expr.names & names)
            if used:
                return where, expr, used[0]
        return None


def read_goals(path: str, doc: dict[str, Any], axes: list[Axis], base: dict[str, Any]) -> Goals:
    """The point filters, result constraints, objective, report and memory cap of the sweep
    YAML ``doc`` at ``path``, whose ``axes`` and ``base`` scenario are read already."""
    names = [a.name for a in axes]
    raw_constraints = doc.get("constraints") or []
    if not isinstance(raw_constraints, list):
        example = f"[{json.dumps(raw_constraints)}]" if isinstance(raw_constraints, str) else "['dp * tp == 64']"
        raise InputError(f"{path}: field 'constraints' must be a list of expressions (got {type(raw_constraints).__name__}); "
                         f"write constraints: {example}")
    megatron = megatron_args_of(base) is not None
    # every modelled flag is a name (axis names win)
    flagged = frozenset(flag_names() - set(RESULT_NAMES)) if megatron else frozenset()
    refuse_axes_named_as_flags(path, axes, flagged)
    coords = set(names) | flagged
    # the flags' names are summed up in an error, not listed one by one (data_parallel_size is no flag)
    flags = flagged - {"data_parallel_size", *names}
    words = {v: a.name for a in reversed(axes) for v in a.values if isinstance(v, str) and v.isidentifier()}
    bundled = {k: (a.name, next(iter(a.bundles))) for a in reversed(axes) if a.bundles
               for b in a.bundles.values() for k in b if k not in {p.column for p in axes if not p.bundles}}
    point_filters: list[Expression] = []
    result_constraints: list[Expression] = []
    for i, text in enumerate(raw_constraints):
        expr = parse_expression(text, f"{path}: constraints[{i}]", coords | set(RESULT_NAMES), flags=flags,
                                words=words, bundled=bundled)
        refuse_a_number_as_a_test(expr, f"{path}: constraints[{i}]", set(RESULT_NAMES) - {"fits"})
        (point_filters if expr.names <= coords else result_constraints).append(expr)
    figure = "iteration_time_ns" if megatron else DEFAULT_OBJECTIVE  # a figure's example: a number
    objective = parse_expression(doc.get("minimise", DEFAULT_OBJECTIVE), f"{path}: minimise",
                                 coords | set(RESULT_NAMES), figure, flags)
    raw_report = doc.get("report", list(MEGATRON_REPORT if megatron else DEFAULT_REPORT))
    if not isinstance(raw_report, list) or not raw_report:
        example = f"[{json.dumps(raw_report)}]" if isinstance(raw_report, str) and raw_report else "[finish_ns]"
        raise InputError(f"{path}: field 'report' must be a non-empty list of result names or expressions (got "
                         f"{show_value(raw_report)}); write report: {example}")
    report = [parse_expression(text, f"{path}: report[{i}]", coords | set(RESULT_NAMES), figure, flags)
              for i, text in enumerate(raw_report)]
    shown = [e.text for e in report]
    if len(set(shown)) < len(shown):  # the table would show the column twice
        twice = next(t for i, t in enumerate(shown) if t in shown[:i])
        raise InputError(f"{path}: field 'report' names {twice!r} twice; list each figure once")
    memory_cap_gb = None
    if doc.get("memory_cap_gb") is not None:
        cap = doc["memory_cap_gb"]
        if isinstance(cap, bool) or not isinstance(cap, int | float) or not math.isfinite(cap) or cap <= 0:
            raise InputError(f"{path}: field 'memory_cap_gb' must be a finite number of GB > 0 "
                             f"(got {cap!r})")
        memory_cap_gb = float(cap)
        # the cap selects a best under it, as the constraint it stands for (it only drew a line)
        figure = "memory_per_gpu_gib" if megatron else "peak_memory_gb"
        text = f"{figure} <= {memory_cap_gb:g}"
        if all(c.text.replace(" ", "") != text.replace(" ", "") for c in result_constraints):
            result_constraints.append(parse_expression(text, f"{path}: memory_cap_gb", set(RESULT_NAMES)))
    return Goals(point_filters, result_constraints, objective, report, memory_cap_gb, flagged)
