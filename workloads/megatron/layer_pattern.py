"""``--moe-layer-freq``: which layers are mixtures of experts, as Megatron-LM reads it.

Megatron's ``moe_freq_type`` takes an integer N (layer ``i`` has experts when ``i % N == 0``)
or a Python list expression of 0s and 1s, one a layer (``"([0]*3+[1]*58)"``: three dense
layers, then 58 with experts), which ``gpt_layer_specs`` asserts is as long as the model. The
expression is read here by a small evaluator of list literals, ``+`` and ``*`` (never
``eval``): a pattern is data, not code.
"""

from __future__ import annotations

import argparse
import ast

#: a pattern longer than any model (Megatron's own layer counts are in the hundreds)
MAX_PATTERN = 100_000


def moe_layer_freq(text: str) -> int | tuple[bool, ...]:
    """argparse type of ``--moe-layer-freq``: an int, or the pattern of MoE layers."""
    if "[" not in text:
        try:
            every = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is neither a number N (every N-th layer has experts) nor a list pattern of 0s "
                f"and 1s such as '([0]*3+[1]*5)'") from None
        if every < 1:
            raise argparse.ArgumentTypeError(f"{text!r}: every N-th layer has experts, so N must be at least 1")
        return every
    try:
        value = _evaluate(ast.parse(text, mode="eval").body)
    except (SyntaxError, ValueError, TypeError) as exc:
        raise argparse.ArgumentTypeError(
            f"{text!r}: {exc if isinstance(exc, ValueError) else 'not a list pattern'}; give a list of 0s and 1s "
            f"built with [..], + and * (e.g. '([1]*3+[0]*1)*3')") from None
    if not isinstance(value, list) or not value:
        raise argparse.ArgumentTypeError(f"{text!r}: the pattern must be a non-empty list of 0s and 1s")
    return tuple(bool(x) for x in value)


def _evaluate(node: ast.expr) -> list[int] | int:
    if isinstance(node, ast.List):
        items = [_evaluate(e) for e in node.elts]
        if not all(isinstance(x, int) and x in (0, 1) for x in items):
            raise ValueError("each layer is 0 (dense) or 1 (experts)")
        return items
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mult):
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Add):
            if not (isinstance(left, list) and isinstance(right, list)):
                raise ValueError("+ joins two lists")
            return _bounded(left + right)
        count, items = (right, left) if isinstance(left, list) else (left, right)
        if not (isinstance(items, list) and isinstance(count, int) and count >= 0):
            raise ValueError("* repeats a list a whole number of times")
        if len(items) * count > MAX_PATTERN:
            raise ValueError(f"longer than {MAX_PATTERN:,} layers")
        return items * count
    raise TypeError("not a list pattern")


def _bounded(items: list[int]) -> list[int]:
    if len(items) > MAX_PATTERN:
        raise ValueError(f"longer than {MAX_PATTERN:,} layers")
    return items


def has_dense_layers(freq: int | tuple[bool, ...]) -> bool:
    """Some layer keeps a dense MLP."""
    return not all(freq) if isinstance(freq, tuple) else freq > 1
