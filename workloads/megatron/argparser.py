"""argparse as Megatron-LM's arguments are read here: an error is raised, not printed with an
exit, so the caller can name the file and field; a float given to a flag of integers is
answered with the integer to write."""

from __future__ import annotations

import argparse
import re

from simpy_astra.errors import integer_fix


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
        raise ArgparseError(message + _float_for_int(message))


def _float_for_int(message: str) -> str:
    """The integer to write for a float given to a flag of integers (``--num-layers 8.0``)."""
    found = re.search(r"invalid int value: '([^']*)'$", message)
    try:
        return int_flag_fix(float(found.group(1))) if found else ""
    except ValueError:  # not a number at all
        return ""


def int_flag_fix(value: object) -> str:
    """The fix for a float given to a Megatron flag of integers, in ``run``'s arguments or a
    sweep's axis (a number, or a list for a flag of several): the one rule's
    (:func:`~simpy_astra.errors.integer_fix`), and that Megatron-LM's argparse refuses it alike
    (``int('8.0')``), '' when there is no integer to name."""
    fix = integer_fix(value)
    return f"{fix} (Megatron-LM's int() refuses it too)" if fix else ""
