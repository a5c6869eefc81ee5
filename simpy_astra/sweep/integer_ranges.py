"""A from/to/step axis counts in the kind of its numbers: one float among them makes every
value a float, which a field of integers then refuses value by value."""

from __future__ import annotations

from typing import Any

from simpy_astra.errors import InputError


def refuse_a_range_in_floats(raw: Any, field: str, where: str) -> None:
    """A range for ``field``, which takes integers, with a float among its from, to and step:
    it counts in floats (``to: 64.0`` makes 8.0, 16.0, ...), and the field refusing 8.0 would
    tell to write the 8 already written."""
    given = next(((k, raw[k]) for k in ("from", "to", "step") if isinstance(raw.get(k), float)), None) \
        if isinstance(raw, dict) and "from" in raw else None
    if given is not None:
        raise InputError(f"{where}: {field} takes integers, and a range with {given[0]} {given[1]!r} counts in "
                         f"floats; write from, to and step as integers (e.g. {{from: 1, to: 8, step: 1}})")
