"""Command-line parsing with the one error rule: a bad flag is one ``error:`` line, exit 2.

argparse prints a usage block and then its error, and ignores nothing but accepts any unique
abbreviation (``--network`` for ``--network-backend``); both are wrong for a simulator whose
flags are copied from scripts. Here an unknown flag is an error naming the nearest real one,
and abbreviations are not accepted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from simpy_astra.errors import InputError


class ArgumentParser(argparse.ArgumentParser):
    """argparse, but every error is an :class:`InputError` (``error: <prog>: <problem>``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise InputError(f"{self.prog}: {message} (see {self.prog} --help)")

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # noqa: ANN401
        argv = list(sys.argv[1:] if args is None else args)
        known = self.known_flags()
        # a mistyped flag first: it is why a required flag looks missing
        wrong = [a for a in argv if a.startswith("-") and a not in ("-", "--") and not a[1:2].isdigit()
                 and a[1:2] != "." and a.split("=", 1)[0] not in known]
        if wrong:
            self.error(unknown_flag_problem(wrong[0], known))
        parsed, extra = self.parse_known_args(argv, namespace)
        if extra:
            self.error(unknown_flag_problem(extra[0], self.known_flags()))
        return parsed

    def known_flags(self) -> list[str]:
        return [flag for action in self._actions for flag in action.option_strings]


def unknown_flag_problem(given: str, known: list[str]) -> str:
    """``--netwrok-backend=packet`` -> "--netwrok-backend: unknown flag; did you mean
    --network-backend?" (a mistyped flag must not silently leave its default in place)."""
    flag = given.split("=", 1)[0]
    if not flag.startswith("-"):
        return f"{given!r}: unexpected argument"
    if flag == given and given in known:  # a known flag without its value
        return f"{flag}: needs a value"
    import difflib

    near = difflib.get_close_matches(flag, known, n=1, cutoff=0.6)
    hint = f"; did you mean {near[0]}?" if near else ""
    return f"{flag}: unknown flag{hint}"
