"""Constraint and objective expressions: arithmetic and comparisons over named numbers.

Expressions come from YAML files, so they are evaluated by ``simpleeval`` and never by
``eval``, and they are checked before any point runs: only arithmetic, comparisons, ``and``/
``or``/``not``, ``x if c else y`` and the calls ``min``, ``max``, ``abs``, ``round`` are allowed
(no attributes, subscripts or other calls). Every arithmetic operator is bounded, not only
powers: an integer result may not exceed :data:`MAX_BITS` bits, so an expression such as
``(4000000**4000000)*(4000000**4000000) > 1`` fails at once instead of hanging expansion.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from simpleeval import SimpleEval

from simpy_astra.config.unknown_keys import nearest_key
from simpy_astra.errors import InputError

MAX_BITS = 1024  # integers beyond 2**1024 (also the float range) are refused
MAX_TEXT = 2000  # characters of one expression
#: the deepest an expression may nest: its evaluator recurses about twice a level and runs out
#: of Python's stack (1,000 frames) near 500; Python's own parser stops at 200 parentheses
MAX_DEPTH = 200
MAX_ROUND_DIGITS = 400


class ExpressionLimit(ArithmeticError):
    """An intermediate value of an expression outgrew :data:`MAX_BITS`."""


def _num(x: Any) -> int | float:
    if isinstance(x, bool):
        return int(x)
    if isinstance(x, int):
        if x.bit_length() > MAX_BITS:
            raise ExpressionLimit(f"a number beyond 2**{MAX_BITS}")
        return x
    if isinstance(x, float):
        return x
    raise TypeError(f"{x!r} is not a number")


def _checked(result: Any) -> Any:
    return _num(result)


def _mult(a: Any, b: Any) -> int | float:
    a, b = _num(a), _num(b)
    if isinstance(a, int) and isinstance(b, int) and a.bit_length() + b.bit_length() > MAX_BITS + 1:
        raise ExpressionLimit(f"a product beyond 2**{MAX_BITS}")
    return _checked(a * b)


def _power(a: Any, b: Any) -> int | float:
    a, b = _num(a), _num(b)
    if isinstance(a, int) and isinstance(b, int) and b > 0 and abs(a) > 1 and \
            (b - 1) * (abs(a).bit_length() - 1) > MAX_BITS:
        raise ExpressionLimit(f"a power beyond 2**{MAX_BITS}")
    result = a ** b
    if isinstance(result, complex):
        raise ValueError(f"{a!r} ** {b!r} is not a real number")
    return _checked(result)


def _lshift(a: Any, b: Any) -> int:
    a, b = _num(a), _num(b)
    if not isinstance(a, int) or not isinstance(b, int):
        raise TypeError("<< needs integers")
    if b > MAX_BITS:
        raise ExpressionLimit(f"a shift beyond 2**{MAX_BITS}")
    return _checked(a << b)


def _binary(fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    return lambda a, b: _checked(fn(_num(a), _num(b)))


def _unary(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda a: _checked(fn(_num(a)))


OPERATORS: dict[type, Callable[..., Any]] = {
    ast.Add: _binary(operator.add), ast.Sub: _binary(operator.sub), ast.Mult: _mult,
    ast.Div: _binary(operator.truediv), ast.FloorDiv: _binary(operator.floordiv),
    ast.Mod: _binary(operator.mod), ast.Pow: _power, ast.LShift: _lshift,
    ast.RShift: _binary(operator.rshift), ast.BitOr: _binary(operator.or_),
    ast.BitXor: _binary(operator.xor), ast.BitAnd: _binary(operator.and_),
    ast.USub: _unary(operator.neg), ast.UAdd: _unary(operator.pos), ast.Invert: _unary(operator.invert),
    ast.Not: operator.not_,
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge,
}


def _round(x: Any, digits: Any = None) -> int | float:
    if digits is None:
        return round(_num(x))
    if not isinstance(digits, int) or abs(digits) > MAX_ROUND_DIGITS:
        raise ExpressionLimit(f"round() takes at most {MAX_ROUND_DIGITS} digits")
    return round(_num(x), digits)


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "min": lambda *a: min(_num(x) for x in a), "max": lambda *a: max(_num(x) for x in a),
    "abs": lambda x: _checked(abs(_num(x))), "round": _round,
}
#: the names of those functions, which no axis may take (it would hide one)
FUNCTION_NAMES = frozenset(_FUNCTIONS)
#: YAML's words for no value and the switches, as the sweep file writes an axis's values and
#: --list shows them (``nccl_algo=null``): names in every expression, which no axis may take
YAML_WORDS: dict[str, Any] = {"null": None, "true": True, "false": False}
_ALLOWED = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Call,
            ast.Name, ast.Constant, ast.Load, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)


def _depth(tree: ast.AST) -> int:
    """How deep ``tree``'s expressions nest, counted without recursing (a deep tree is the case)."""
    deepest, todo = 0, [(tree, 0)]
    while todo:
        node, depth = todo.pop()
        deepest = max(deepest, depth)
        todo.extend((child, depth + 1) for child in ast.iter_child_nodes(node) if isinstance(child, ast.expr))
    return deepest


def _check_depth(tree: ast.AST, text: str, where: str) -> None:
    depth = _depth(tree)
    if depth > MAX_DEPTH:
        shown = text if len(text) <= 60 else f"{text[:40]}... ({len(text):,} characters)"
        raise InputError(f"{where}: '{shown}' nests {depth:,} levels deep (at most {MAX_DEPTH}); write it "
                         f"with fewer nested operations (a doubled - or not cancels, like terms add up to one "
                         f"product), or split a test into several constraints, which must all hold")


def _check_tree(tree: ast.AST, text: str, where: str) -> None:
    """Refuse what the evaluator would only refuse (or choke on) once points have run."""
    for node in ast.walk(tree):
        what = None
        if not isinstance(node, _ALLOWED) or type(node) not in OPERATORS and isinstance(
                node, ast.operator | ast.unaryop | ast.cmpop):
            what = f"'{ast.unparse(node) if isinstance(node, ast.expr) else type(node).__name__}'"
        elif isinstance(node, ast.Call) and (not isinstance(node.func, ast.Name) or node.func.id not in
                                             _FUNCTIONS or node.keywords):
            what = f"the call '{ast.unparse(node)}' (only {', '.join(_FUNCTIONS)} with plain arguments)"
        elif isinstance(node, ast.Constant) and not (
                isinstance(node.value, int | float | str) and
                (not isinstance(node.value, int) or node.value.bit_length() <= MAX_BITS) and
                (not isinstance(node.value, str) or len(node.value) <= 200)):
            what = f"the constant {ast.unparse(node)[:40]}"
        if what:
            raise InputError(f"{where}: '{text}' uses {what}, which is not allowed; use numbers, names, "
                             f"arithmetic, comparisons, and/or/not, if/else and {', '.join(_FUNCTIONS)}")


def _why(exc: Exception) -> str:
    """Why an evaluation failed, in parentheses: past the number bound (ours, or a float's
    overflow, whose text is C's errno tuple) in the expression's terms and with the fix;
    else Python's words."""
    if isinstance(exc, ExpressionLimit | OverflowError):
        what = str(exc) if isinstance(exc, ExpressionLimit) else f"a number beyond 2**{MAX_BITS} (about 1.8e308)"
        return f"({what}); keep its numbers within 2**{MAX_BITS} (smaller exponents or units)"
    return f"({type(exc).__name__}: {exc})"


@dataclass(frozen=True)
class Expression:
    text: str
    names: frozenset[str]  # the variables it reads

    def evaluate(self, values: dict[str, Any], where: str) -> Any:
        missing = self.names - set(values)
        if missing:
            raise InputError(f"{where}: '{self.text}' needs {sorted(missing)}, which this point lacks")
        evaluator = SimpleEval(names={**YAML_WORDS, **values}, functions=_FUNCTIONS, operators=OPERATORS)
        try:
            return evaluator.eval(self.text)
        except Exception as exc:  # noqa: BLE001 - any evaluation failure is the expression's fault
            unset = sorted(n for n in self.names if values[n] is None)
            if unset and not isinstance(exc, ArithmeticError):  # Python's "'>=' not supported ... 'NoneType'"
                from simpy_astra.sweep.megatron_args import names as flag_names  # deferred: Megatron's parser

                flag = "--" + unset[0].replace("_", "-")
                why = (f"the arguments leave {flag} unset, to a default Megatron derives; give {flag} in the base's "
                       f"args or on an axis" if unset[0] in flag_names() else "null; compare it with == or != only, e.g. == null")
                raise InputError(f"{where}: '{self.text}' cannot be evaluated: {unset[0]} has no value at this point "
                                 f"({why})") from None
            raise InputError(f"{where}: '{self.text}' cannot be evaluated {_why(exc)}") \
                from (exc if isinstance(exc, ArithmeticError) else None)

    def value(self, values: dict[str, Any], where: str, measured: bool = False) -> Any:
        """The value; None where this point's figures make it undefined (a division by zero, a
        float overflow), so one odd point cannot stop ranking the others. Past :data:`MAX_BITS`
        is refused, but over ``measured`` figures (a finished point's) it is undefined too:
        those are known only once every point has run, too late to refuse the expression."""
        try:
            return self.evaluate(values, where)
        except InputError as exc:
            if isinstance(exc.__cause__, ArithmeticError) and (measured or not isinstance(exc.__cause__,
                                                                                           ExpressionLimit)):
                return None
            raise

    def number(self, values: dict[str, Any], where: str, measured: bool = False) -> float | None:
        """The value as a number to rank by (None where undefined, see :meth:`value`)."""
        value = self.value(values, where, measured)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InputError(f"{where}: '{self.text}' must give a number (got {value!r})")
        return None if isinstance(value, float) and math.isnan(value) else value


def _number_in(text: str) -> int | float | None:
    try:
        return int(text)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            return None
        return value if math.isfinite(value) else None


def type_mismatch(text: str, values: dict[str, Any], choices: dict[str, tuple[Any, ...]]) -> str | None:
    """Why a comparison in ``text`` cannot mean what it says: a name whose values are numbers
    compared with a string constant (``tp > "4"``), or one whose values are strings with a
    number (``model == 3``): never equal, and not ordered. Says the fix; None when no comparison
    mixes them. ``values``: one point's; ``choices``: an axis's every value (a mixed axis,
    ``[1, "auto"]``, compares with either kind)."""
    for node in ast.walk(ast.parse(text.strip(), mode="eval")):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for i, (a, b) in enumerate(zip(operands, operands[1:], strict=False)):
            for name, const in ((a, b), (b, a)):
                if not (isinstance(name, ast.Name) and isinstance(const, ast.Constant) and name.id in values):
                    continue
                said = const.value
                seen = choices.get(name.id, (values[name.id],))
                equality = isinstance(node.ops[i], ast.Eq | ast.NotEq)
                if all(v is None for v in seen) and said is not None and equality:  # was "values are numbers (None)"
                    return (f"compares {name.id}, which is null at every point (nothing sets it), with {said!r}: "
                            f"never equal; set it in the base or on an axis, or compare it with == null")
                seen = tuple(v for v in seen if v is not None) or seen  # a null is neither kind
                if not all(isinstance(v, str) != isinstance(said, str) for v in seen):
                    continue
                kind = "strings" if isinstance(seen[0], str) else "numbers"
                if isinstance(said, str):
                    number = _number_in(said)
                    fix = None if number is None else ast.Constant(number)
                    hint = "write the number without quotes"
                else:
                    fix = ast.Constant(str(said)) if str(said) in seen else None
                    hint = "quote it as the axis spells its values"
                shown = ", ".join(repr(v) for v in seen[:6]) + (", ..." if len(seen) > 6 else "")
                never = "equal" if isinstance(node.ops[i], ast.Eq | ast.NotEq | ast.In | ast.NotIn) else "order"
                what = (f"compares {name.id}, whose values are {kind} ({shown}), with the "
                        f"{'string' if isinstance(said, str) else 'number'} {said!r}: a number and a string "
                        f"{'are never equal' if never == 'equal' else 'cannot be ordered'}")
                if fix is not None:
                    fixed = ast.Compare(a if a is name else fix, [node.ops[i]], [b if b is name else fix])
                    return f"{what}; {hint}: {ast.unparse(fixed)}"
                return f"{what}; compare {name.id} with one of its values"
    return None


def _unread_names(unknown: list[str]) -> str:
    """Why a name an expression cannot read is none: a cluster's field that no axis sweeps
    (``gpus``), or a Megatron-LM flag that cannot change a step's time (``lr``); it was told
    only a list of every known name."""
    from simpy_astra.config.cluster_fields import CLUSTER_KEYS  # deferred: only an unknown name needs them
    from simpy_astra.workloads.megatron.flag_kinds import cannot_change_time

    said = []
    for name in unknown:
        if name in CLUSTER_KEYS:
            said.append(f"{name} is a field of cluster:, which an expression reads only from an axis: sweep "
                        f"cluster.{name}")
        elif cannot_change_time("--" + name.replace("_", "-")):
            said.append(f"--{name.replace('_', '-')} cannot change a step's time, so no expression reads it")
    return f" ({'; '.join(said)})" if said else ""


#: a name written with dashes, perhaps under a dotted path (system.endpoint-delay)
_DASHED = re.compile(r"(?<![\w.])((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:-[A-Za-z_]\w*)+)")


def _dashed_names(text: str, known: set[str]) -> dict[str, str]:
    """Each dashed name written -> the known name it means (its last dotted part, _ for -)."""
    out = {}
    for match in _DASHED.finditer(text):
        name = match.group(1).rsplit(".", 1)[-1].replace("-", "_")
        if name in known:
            out[match.group(1)] = name
    return out


def _dotted_paths(tree: ast.AST, known: set[str]) -> dict[str, tuple[str, str]]:
    """Root name -> (the dotted path written, its last part) where that part is a known name:
    ``network.bandwidth`` read as the attribute of a name ``network``."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in known:
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name):
                out.setdefault(root.id, (ast.unparse(node), node.attr))
    return out


def _refuse_unquoted_values(tree: ast.AST, text: str, where: str, unknown: set[str], words: dict[str, str]) -> None:
    """``machine == s1`` reads s1 as a name: where every unknown name is an axis's value, say
    so and give the expression with them quoted (the long list of known names never helps)."""
    if not unknown or not unknown <= set(words):
        return
    nodes = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in unknown),
                   key=lambda n: (n.lineno, n.col_offset))
    said = ", and ".join(f"{name}, a value of axis {words[name]}" for name in dict.fromkeys(n.id for n in nodes))

    class Quote(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            return ast.Constant(node.id) if node.id in unknown else node

    fixed = ast.unparse(Quote().visit(tree))
    many = len(unknown) > 1
    raise InputError(f"{where}: '{text}' names {said}, as if {'they were names' if many else 'it were a name'}; "
                     f"quote {'them' if many else 'it'}: {fixed}")


def _refuse_bundled_fields(tree: ast.AST, text: str, where: str, bundled: dict[str, tuple[str, str]]) -> None:
    """``network.bandwidth > 150`` where a named axis's bundles set the bandwidth: no name holds
    the field; the axis does (the long list of known names never says so)."""
    for node in ast.walk(tree):
        written = ast.unparse(node) if isinstance(node, ast.Attribute) else ""
        if written in bundled:
            axis, first = bundled[written]
            raise InputError(f"{where}: '{text}' names {written}, which the bundles of axis {axis} set; a "
                             f"constraint names the axis and its bundles ({axis} == {first!r}), or give the field "
                             f"an axis of its own")


def refuse_a_number_as_a_test(expr: Expression, where: str, figures: set[str]) -> None:
    """A constraint keeps the points where it holds: one that is a number (``finish_ns``,
    ``tp * pp``, ``bandwidth - 10``) held wherever it was not 0, every point kept without a word.
    A bare axis name may be a switch's (``sequence_parallel``), so only ``figures`` are refused
    bare."""
    body = ast.parse(expr.text, mode="eval").body
    numeric = (isinstance(body, ast.BinOp | ast.Call) or isinstance(body, ast.UnaryOp) and not isinstance(
        body.op, ast.Not) or isinstance(body, ast.Constant) and not isinstance(body.value, bool | str)
        or isinstance(body, ast.Name) and body.id in figures)
    if numeric:
        raise InputError(f"{where}: '{expr.text}' is a number, not a test: it would hold wherever it is not 0; "
                         f"write a comparison, such as '{expr.text} > 0' or '{expr.text} <= 100'")


def _long_name(name: str, known: set[str], flags: frozenset[str]) -> str | None:
    """The name a Megatron base knows ``pp`` or ``dp`` by, where no axis is called so (the
    nearest spelling of 'dp' was 'cp', another parallelism)."""
    if not flags:
        return None
    from simpy_astra.sweep.megatron_args import abbreviated  # deferred: Megatron's parser

    full = abbreviated().get(name)
    return full if full in known else None


def parse_expression(text: Any, where: str, known: set[str], example: str = "dp*tp == 64",
                     flags: frozenset[str] = frozenset(), words: dict[str, str] | None = None,
                     bundled: dict[str, tuple[str, str]] | None = None) -> Expression:
    """Check syntax, allowed operations and that every variable is one of ``known``; errors name
    the file and field (and give ``example``: a constraint's is a test, a figure's a number).
    ``flags`` (among ``known``): a Megatron base's flag names, summed up in an error rather than
    listed (about 150 of them made a line of 3,000 characters). ``words``: each axis value that
    reads as a name -> its axis, so that one written unquoted is told to be quoted; ``bundled``:
    each field a named axis's bundles set -> (that axis, its first bundle)."""
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{where}: must be an expression string such as '{example}' (got {text!r})")
    if len(text) > MAX_TEXT:
        raise InputError(f"{where}: the expression is {len(text)} characters long (at most {MAX_TEXT})")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        hint = ("; compare with '==', not '='" if re.search(r"(?<![=!<>])=(?!=)", text) else "")
        raise InputError(f"{where}: '{text}' is not a valid expression "
                         f"({getattr(exc, 'msg', None) or type(exc).__name__}){hint}") from None
    _check_depth(tree, text, where)
    written = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    # an axis's string value 'null' written bare would read as no value: told to quote it
    _refuse_unquoted_values(tree, text, where, written & set(YAML_WORDS) & set(words or {}), words or {})
    names = written - set(_FUNCTIONS) - set(YAML_WORDS)
    unknown = names - known
    if unknown:
        dashed = _dashed_names(text, known)
        if dashed:  # endpoint-delay read as endpoint minus delay
            fixes = ", ".join(f"'{name}' for '{written}'" for written, name in dashed.items())
            raise InputError(f"{where}: '{text}' reads {sorted(unknown)}: a - in a name is a minus; write {fixes} "
                             f"(an axis is called by its path's last part, with _ for -, or its as: name)")
        _refuse_unquoted_values(tree, text, where, unknown, words or {})
        _refuse_bundled_fields(tree, text, where, bundled or {})
        paths = _dotted_paths(tree, known)
        near = [f"'{paths[name][1]}' for '{paths[name][0]}'" if name in paths else f"'{close}' for '{name}'"
                for name in sorted(unknown) if name in paths or (close := _long_name(name, known, flags)
                                                                 or nearest_key(name, known))]
        guess = f"; did you mean {', '.join(near)}?" if near else ""
        if paths:  # an axis written as under axes: (network.bandwidth): its last part names it
            guess += " (an axis is called by its path's last part, or its as: name)"
        guess += _unread_names(sorted(unknown - set(paths)))
        also = ("; and each Megatron-LM flag this simulator reads, with _ for - (tensor_model_parallel_size; "
                "simpy-astra generate megatron --help lists them)" if flags else "")
        raise InputError(f"{where}: '{text}' uses unknown name(s) {sorted(unknown)}{guess}; "
                         f"known: {', '.join(sorted(known - flags))}{also}")
    _check_tree(tree, text, where)
    return Expression(text.strip(), frozenset(names))
