"""A sweep's axes: how each is written (a list, a range, powers of two, named bundles) and the
values it takes, checked once (finite, distinct, at most ``MAX_POINTS``); axes that set the
same field twice are refused (:func:`check_overlaps`)."""

from __future__ import annotations

import json
import keyword
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from simpy_astra.config.unknown_keys import nearest_key
from simpy_astra.errors import InputError, printable
from simpy_astra.sweep.expressions import FUNCTION_NAMES, YAML_WORDS

MAX_POINTS = 100_000

#: the keys of an axis written as a mapping
AXIS_KEYS = ("values", "from", "to", "step", "powers_of_two", "named", "as")


@dataclass(frozen=True)
class Axis:
    column: str  # CSV column: the dotted path, or the bundle axis's key
    name: str  # name in expressions
    values: tuple[Any, ...]
    # bundle axes: value name -> {dotted path: value}; plain axes: None (the column is the path)
    bundles: dict[str, dict[str, Any]] | None = None
    #: what a warning says of values dropped as repeats (``16 and 16``), the first kept
    repeats: tuple[str, ...] = ()

    def assignments(self, value: Any) -> dict[str, Any]:
        return dict(self.bundles[value]) if self.bundles is not None else {self.column: value}


def _finite(value: Any, where: str) -> Any:
    """``value`` unless it holds NaN or an infinity (YAML's .nan, .inf), which no field accepts."""
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"{where}: {value} is not a finite number; give finite values")
    if isinstance(value, list):
        for v in value:
            _finite(v, where)
    elif isinstance(value, dict):
        for v in value.values():
            _finite(v, where)
    return value


def _same_key(value: Any) -> str:
    """Values that set a field alike (50 and 50.0) give one point, not two rows."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return json.dumps(value, sort_keys=True, default=str)


def unique_with_repeats(values: Iterable[Any], key: Callable[[Any], Any]) -> tuple[list[Any], tuple[str, ...]]:
    """The first of the ``values`` of each ``key``, and each repeat dropped as a warning says it
    (``16 and 16``, ``50 and 50.0``: a typo for [16, 32] ran one point without a word)."""
    firsts: dict[Any, Any] = {}
    repeats: list[str] = []
    for v in values:
        k = key(v)
        if k not in firsts:
            firsts[k] = v
        elif (said := f"{_written(firsts[k])} and {_written(v)}") not in repeats:
            repeats.append(said)
    return list(firsts.values()), tuple(repeats)


def _written(value: Any) -> str:
    """A value as YAML would show it, so that '4' and 4 read apart (``"4"`` and ``4``)."""
    return json.dumps(value, separators=(",", ":"), default=str)


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _axis_values(raw: Any, where: str) -> tuple[list[Any], str | None]:
    """Values of one axis (repeats and all) and its optional ``as:`` name."""
    if raw is None:  # 'tp:' with nothing after it ran one point with the flag left out
        raise InputError(f"{where}: the axis is written empty (YAML reads it as null); give its values, e.g. "
                         f"[1, 2], or [null] for one point that leaves the field out")
    if not isinstance(raw, dict):
        values = list(raw) if isinstance(raw, list) else [raw]
        if not values:
            raise InputError(f"{where}: the axis has no values; give at least one, e.g. [50, 100]")
        return [_finite(v, where) for v in values], None
    alias = raw.get("as")
    if alias is not None and not (isinstance(alias, str) and alias.isidentifier() and alias.isascii()):
        # the axis's name in expressions and the summary's header (an escape code coloured it);
        # ASCII: tables fit 80 columns counting a character a column, which a CJK letter is not
        raise InputError(f"{where}: as: must be a name of ASCII letters, digits and _, not starting with a "
                         f"digit (expressions name it; tables count a character a column), e.g. tp "
                         f"(got {alias!r})")
    for key in raw:
        if key not in AXIS_KEYS:  # a mistyped 'stpe' would silently keep the step of 1
            near = nearest_key(str(key), AXIS_KEYS)
            raise InputError(f"{where}: '{key}' is not an axis key"
                             + (f"; did you mean '{near}'?" if near else f" (known: {', '.join(AXIS_KEYS)})"))
    forms = [k for k in ("values", "from", "powers_of_two", "named") if k in raw]
    if len(forms) != 1:
        raise InputError(f"{where}: give exactly one of values, from/to/step, powers_of_two, named "
                         f"(got keys {sorted(raw)})")
    form = forms[0]
    if form == "values":
        if raw["values"] is None:
            raise InputError(f"{where}: values: written empty (YAML reads it as null); give the axis's values, "
                             f"e.g. [1, 2], or [null] for one point that leaves the field out")
        values = raw["values"] if isinstance(raw["values"], list) else [raw["values"]]
        values = [_finite(v, f"{where}: values") for v in values]
        if not values:
            raise InputError(f"{where}: values: the axis has no values; give at least one, e.g. [50, 100]")
    elif form == "from":
        start, stop, step = raw.get("from"), raw.get("to"), raw.get("step", 1)
        for key, x in (("from", start), ("to", stop), ("step", step)):
            if not _is_number(x) or not math.isfinite(x):
                raise InputError(f"{where}: {key}: a range needs finite numbers from, to and a step > 0 "
                                 f"(got {x!r}; e.g. {{from: 1, to: 8, step: 1}})")
        if step <= 0:
            raise InputError(f"{where}: step: must be > 0 (got {step!r}; e.g. {{from: 1, to: 8, step: 1}})")
        if start > stop:  # else one point (from) or none, by how far back to is
            raise InputError(f"{where}: from {start} is past to {stop}: a range counts up from from to to; "
                             f"swap them (e.g. {{from: {stop}, to: {start}, step: {step}}})")
        span = (stop - start) / step
        if not math.isfinite(span) or span + 1 > MAX_POINTS:
            raise InputError(f"{where}: the range from {start} to {stop} in steps of {step} has more than "
                             f"{MAX_POINTS:,} values; use a larger step or a narrower range")
        values = _range_values(start, stop, step)
    elif form == "powers_of_two":
        bounds = raw["powers_of_two"]
        if isinstance(bounds, list):  # 6.4e1 is 64 (YAML reads scientific numbers as floats)
            bounds = [int(b) if isinstance(b, float) and b.is_integer() and abs(b) < 2**63 else b for b in bounds]
        if (not isinstance(bounds, list) or len(bounds) != 2 or
                not all(isinstance(b, int) and not isinstance(b, bool) for b in bounds)
                or bounds[0] < 1 or bounds[1] < bounds[0] or bounds[1] > 2 ** 62):
            raise InputError(f"{where}: powers_of_two needs [low, high] with 1 <= low <= high <= 2**62, "
                             f"e.g. [1, 64]")
        values, v = [], 1
        while v <= bounds[1]:
            if v >= bounds[0]:
                values.append(v)
            v *= 2
    else:
        return [], alias  # bundles are handled by the caller
    if not values:
        raise InputError(f"{where}: the axis has no values")
    return values, alias


def one_line(text: str, where: str) -> str:
    """A name the summary prints: printable, on one line (an escape code or a newline in it
    would colour a piped summary or forge a line of it)."""
    if not text.isprintable() or text != text.strip() or not text:
        raise InputError(f"{where}: must be printable text without newlines, control characters or "
                         f"surrounding spaces (got {text!r}); it names points in the summary")
    return text


def parse_axis(column: str, raw: Any, where: str) -> Axis:
    values, alias = _axis_values(raw, where)
    values, repeats = unique_with_repeats(values, _same_key)
    if isinstance(raw, dict) and "named" in raw:
        bundles = raw["named"]
        if not isinstance(bundles, dict) or not bundles or not all(
                isinstance(b, dict) and b for b in bundles.values()):
            raise InputError(f"{where}: named needs NAME: {{dotted.path: value, ...}} entries")
        for name, bundle in bundles.items():
            one_line(str(name), f"{where}: named")
            _finite(bundle, f"{where}: named: {name}")
        names = [str(k) for k in bundles]
        first = next((k for k in bundles if names.count(str(k)) > 1), None)
        twice = [k for k in bundles if first is not None and str(k) == str(first)]  # that name's keys
        if twice:  # YAML's 1: and '1': are two keys, one name: one bundle was dropped
            raise InputError(f"{where}: named: {str(twice[0])!r} names two bundles (the keys {twice[0]!r} and "
                             f"{twice[1]!r} read as one name); give each its own name")
        return Axis(column, alias or column.replace("-", "_"), tuple(str(k) for k in bundles),
                    {str(k): dict(v) for k, v in bundles.items()})
    for v in values:  # printed in each point's line (--list, the progress lines, the summary)
        if isinstance(v, str) and not v.isprintable():
            raise InputError(f"{where}: {v!r}: must be printable text on one line, without control characters "
                             f"(it is printed in each point's line)")
    return Axis(column, alias or own_name(column), tuple(values), repeats=repeats)


def own_name(column: str) -> str:
    """A plain axis's name in expressions and lines, without ``as:``: its last key, ``-`` as ``_``
    and a flag's leading dashes dropped (``workload.args.--num-layers`` is ``num_layers``, as
    ``workload.args.num-layers`` is; it read ``__num_layers=8``)."""
    return column.split(".")[-1].lstrip("-").replace("-", "_")


def shown(value: Any) -> str:
    """A coordinate as a line shows it: a switch's true/false as on/off (false also removes a
    flag that takes a value), a list or mapping as compact JSON (no spaces to wrap at), and no
    character a terminal would act on; null as the sweep file writes it (``nccl_algo=null``:
    NCCL's choice), not as Python's None."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if value is None:
        return "null"
    return printable(json.dumps(value, separators=(",", ":")) if isinstance(value, list | dict) else str(value))


def point_words(axes: list[Axis], coordinates: dict[str, Any], terse: bool = False) -> list[str]:
    """A point as its lines name it, ``tp=4 pp=2 vp=off``: each axis by its short name;
    ``terse``: a value that is a word says itself (``ring``, ``congestion_aware``, ``full``),
    only numbers and on/off keep their axis's name (``bandwidth=50 ring splits=4``), and an axis
    of one value, which tells no point from another, is left out (unless every axis is)."""
    if terse and any(len(a.values) > 1 for a in axes):
        axes = [a for a in axes if len(a.values) > 1]
    return [shown(v) if terse and isinstance(v, str) and any(c.isalpha() for c in v) else f"{a.name}={shown(v)}"
            for a, v in ((a, coordinates[a.column]) for a in axes)]


def check_overlaps(path: str, axes: list[Axis], canonical: Callable[[str], str] = lambda dotted: dotted) -> None:
    """Refuse two axes that set one field when the later would make the earlier's values
    vanish. A plain axis after a named bundle that sets the same field to a list is the one
    allowed overlap: the bundle gives the field its shape (a placeholder per dimension) and the
    plain axis fills it (a scalar on a per-dimension list fills every element), as
    ``scenarios/sweeps/cost_topology.yaml`` does; a bundle's single value (``tensor-model-
    parallel-size: 8``) has no shape to fill, and the plain axis would replace it.
    ``canonical`` names a field one way whatever its spelling (a Megatron flag's other names, :func:`~simpy_astra.sweep.megatron_args.canonical_path`)."""
    set_by_bundles: set[str] = set()
    set_by_plain: set[str] = set()
    scalar_in_bundles: set[str] = set()  # no shape to fill: a plain axis after it replaces the value
    for axis in axes:
        if axis.bundles:
            fields = {canonical(k) for b in axis.bundles.values() for k in b}
            clash = sorted(fields & (set_by_plain | set_by_bundles))
            scalar_in_bundles |= {canonical(k) for b in axis.bundles.values() for k, v in b.items()
                                  if not isinstance(v, list)}
        else:
            fields = {canonical(axis.column)}
            clash = sorted(fields & (set_by_plain | scalar_in_bundles))
        if clash:
            raise InputError(f"{path}: axes: {clash[0]} is set by two axes (the later would silently win); "
                             f"keep one, or fold both into one 'named' axis")
        for field in sorted(fields):  # set whole after an axis set a part of it: that part vanishes
            inside = sorted(e for e in set_by_plain | set_by_bundles if e.startswith(field + "."))
            if inside:
                raise InputError(f"{path}: axes: {field} is set whole after an axis on {inside[0]}, whose values "
                                 f"it would silently replace in every point; put the {field} axis first (the "
                                 f"later then sets a part of it), or keep one")
        (set_by_bundles if axis.bundles else set_by_plain).update(fields)


def _range_values(start: float, stop: float, step: float) -> list[float]:
    """``from``, ``from + step``, ... up to ``to``, counted in the decimals written: in binary
    floats ``{from: 0.1, to: 0.7, step: 0.1}`` gave 0.30000000000000004 and ended on
    0.7000000000000001, past ``to``, in every label, key and results row."""
    if all(isinstance(x, int) for x in (start, stop, step)):
        return list(range(start, stop + 1, step))
    first, last, by = (Decimal(repr(float(x))) for x in (start, stop, step))
    return [float(first + i * by) for i in range(int((last - first) / by) + 1)]


def refuse_unnameable(path: str, axes: list[Axis]) -> None:
    """An axis whose name in expressions is a Python keyword, one of their functions or a YAML
    word: ``as: for`` made every expression naming it a syntax error, ``min`` hid the function
    and ``null`` would hide no value."""
    for axis in axes:
        if keyword.iskeyword(axis.name) or axis.name in FUNCTION_NAMES or axis.name in YAML_WORDS:
            what = ("a Python keyword" if keyword.iskeyword(axis.name) else "a function of expressions"
                    if axis.name in FUNCTION_NAMES else "a YAML word (null, true, false)")
            fix = (f"call it another name, e.g. as: {axis.name}_value" if axis.name != axis.column.replace("-", "_")
                   else f"rename the axis, e.g. {axis.name}_value")
            raise InputError(f"{path}: axes: {axis.column}: its name in expressions, {axis.name!r}, is {what}, "
                             f"which no expression can name as an axis; {fix}")
