"""Constraint and objective expressions: arithmetic and comparisons over named numbers.

Expressions come from YAML files, so they are evaluated by ``simpleeval`` (a whitelist of
operators, no attribute access, no calls besides a few math helpers) and never by ``eval``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from simpleeval import SimpleEval

from simpy_astra.errors import InputError

_FUNCTIONS = {"min": min, "max": max, "abs": abs, "round": round}


@dataclass(frozen=True)
class Expression:
    text: str
    names: frozenset[str]  # the variables it reads

    def evaluate(self, values: dict[str, Any], where: str) -> Any:
        missing = self.names - set(values)
        if missing:
            raise InputError(f"{where}: '{self.text}' needs {sorted(missing)}, which this point lacks")
        evaluator = SimpleEval(names=values, functions=_FUNCTIONS)
        try:
            return evaluator.eval(self.text)
        except Exception as exc:  # noqa: BLE001 - any evaluation failure is the expression's fault
            raise InputError(f"{where}: '{self.text}' cannot be evaluated ({exc})") from None


def parse_expression(text: Any, where: str, known: set[str]) -> Expression:
    """Check syntax and that every variable is one of ``known``; errors name the file and field."""
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{where}: must be an expression string such as 'dp*tp == 64' (got {text!r})")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise InputError(f"{where}: '{text}' is not a valid expression ({exc.msg})") from None
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - set(_FUNCTIONS)
    unknown = names - known
    if unknown:
        raise InputError(f"{where}: '{text}' uses unknown name(s) {sorted(unknown)}; "
                         f"known: {', '.join(sorted(known))}")
    return Expression(text.strip(), frozenset(names))
