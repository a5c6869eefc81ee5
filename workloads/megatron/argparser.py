"""argparse as Megatron-LM's arguments are read here: an error is raised, not printed with an
exit, so the caller can name the file and field; a float given to a flag of integers is
answered with the integer to write."""

from __future__ import annotations

import argparse
import re
from fractions import Fraction

from simpy_astra.errors import integer_fix, non_ascii


class ArgparseError(Exception):
    """argparse's own message for arguments it cannot read."""


class Parser(argparse.ArgumentParser):
    """Megatron's arguments: a reading error is raised (the caller names the file and field),
    and the actions given are kept (argparse lists them only in a private field)."""

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003 - argparse's signature
        super().__init__(*args, **kwargs)
        self.options: list[argparse.Action] = []

    def add_argument(self, *args, **kwargs) -> argparse.Action:  # noqa: ANN002, ANN003
        action = super().add_argument(*args, **kwargs)
        self.options.append(action)
        return action

    def error(self, message: str):  # noqa: ANN201 - argparse's signature
        raise ArgparseError(message + _value_fix(message))


def _value_fix(message: str) -> str:
    """The fix for a number argparse refused: the integer to write for a count (``--num-layers
    8.0``, ``1,024``, ``4k``: :func:`int_text_fix`), the character to retype in one pasted from
    a page (``1e-4`` typed with a minus sign, U+2212)."""
    found = re.search(r"invalid (int|float) value: '([^']*)'$", message)
    if found is None:
        return ""
    return (int_text_fix(found.group(2)) if found.group(1) == "int" else "") or non_ascii(found.group(2))


def int_text_fix(text: str) -> str:
    """The fix for a count Megatron-LM's ``int()`` refuses, written as a person writes it: a
    float (``8.0``, ``1e6``), digits grouped (``1,024``), hexadecimal (``0x100``) or with a unit
    (``4k``: 4096, or 4000); '' where it names no number."""
    try:
        return int_flag_fix(float(text))
    except ValueError:  # not a float either
        pass
    if _GROUPED.fullmatch(text):
        return f"; write {text.replace(',', '')} (Megatron-LM's int() reads no thousands separators)"
    if _HEX.fullmatch(text):
        return f"; write {int(text, 0)} (Megatron-LM's int() reads decimal digits only)"
    unit = _UNIT.fullmatch(text)
    if unit is None:
        return ""
    power, letter = "kmgt".index(unit.group(2).lower()) + 1, unit.group(2)
    counts = [f"{int(count)} ({letter} as {base ** power:,})" for base in ((1024,) if unit.group(3) else (1024, 1000))
              if (count := Fraction(unit.group(1)) * base ** power).denominator == 1]
    return f"; write the count in full, {' or '.join(counts)} (Megatron-LM's int() reads no unit)" if counts else ""


#: a count written with thousands separators, a hexadecimal one, and one with a unit (``4k``, ``2Ki``)
_GROUPED = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+")
_HEX = re.compile(r"[+-]?0[xX][0-9a-fA-F]+")
_UNIT = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])(i?)")


def int_flag_fix(value: object) -> str:
    """The fix for a float given to a Megatron flag of integers, in ``run``'s arguments or a
    sweep's axis (a number, or a list for a flag of several): the one rule's
    (:func:`~simpy_astra.errors.integer_fix`), and that Megatron-LM's argparse refuses it alike
    (``int('8.0')``), '' when there is no integer to name."""
    fix = integer_fix(value)
    return f"{fix} (Megatron-LM's int() refuses it too)" if fix else ""
