"""Reading ASTRA-sim's JSON files: a key given twice, NaN, a number past any double, nesting
thousands deep or no text at all are refused naming the file, and a hand-edited file's slips
(a trailing comma, a comment, YAML where JSON is read) are told with their fix.
"""

from __future__ import annotations

import json
import re
from typing import Any

from simpy_astra.config.file_text import read_text
from simpy_astra.config.input_bounds import MAX_INT_DIGITS, MAX_NESTING, nesting_depth, past_double
from simpy_astra.errors import InputError


class _NonFiniteNumber(Exception):
    pass


class _DuplicateKey(Exception):
    pass


def _reject_constant(name: str) -> float:
    raise _NonFiniteNumber(name)


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


class _LongNumber(Exception):
    pass


#: an integer written with this many characters or fewer (a sign included) is below 10^308,
#: so within the largest double (1.8e308)
_DOUBLE_SAFE_DIGITS = 308


#: a run of digits that may be an integer past the largest double: below it, every integer is
#: below 10^308 (:func:`_bounded_int` takes it as it is)
_LONG_DIGITS = re.compile(rf"[0-9]{{{_DOUBLE_SAFE_DIGITS + 1}}}")


def _bounded_int(text: str) -> int:
    """A JSON integer, unless it has more digits than Python reads (a ValueError naming
    ``sys.set_int_max_str_digits``) or than any field takes."""
    if len(text) <= _DOUBLE_SAFE_DIGITS:  # below 10^308: within a double (most numbers, one check)
        return int(text)
    if len(text) > MAX_INT_DIGITS:
        raise _LongNumber(f"a number of {len(text):,} digits, more than any field takes (at most "
                          f"{MAX_INT_DIGITS:,} are read)")
    value = int(text)
    problem = past_double(value)
    if problem:
        raise _LongNumber(problem)
    return value


def load_json(src: str, what: str) -> Any:
    return parse_json(src, read_text(src, what), what)


def _json_fix(text: str, pos: int) -> str:
    """The fix for a hand-edited JSON file's slips, which json names alike ('Expecting property
    name enclosed in double quotes' for each): a comma before a closing bracket, a comment."""
    rest, before = text[pos:].lstrip(), text[:pos].rstrip()
    if rest.startswith(("//", "/*", "#")):
        return "; JSON has no comments: remove it"
    if rest[:1] in "}]" and rest and before.endswith(","):
        return f"; JSON allows no comma before '{rest[0]}': remove the last one"
    return ""


def _yaml_not_json(text: str, what: str) -> str:
    """The fix for a config written in YAML where ASTRA-sim reads JSON (``system:
    configs/system.yaml`` beside a YAML scenario): json named only its first character."""
    if text.lstrip()[:1] in "{[":  # a JSON object with a slip ('single quotes'), not YAML's block style
        return ""
    import yaml

    try:
        data = yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError):
        return ""
    if not isinstance(data, dict):
        return ""
    return (f"; this {what} is written in YAML, which ASTRA-sim's JSON reader refuses: write it in JSON, or "
            f"give its fields inline in a scenario")


def parse_json(src: str, text: str, what: str) -> Any:
    """``text``, read from ``src``, as JSON: a key given twice, NaN, a number past any double,
    nesting thousands deep or no text at all are refused naming ``src``."""
    if not text.strip():  # json's "Expecting value at line 1, column 1" told neither what nor why
        raise InputError(f"{src}: the top level must be a JSON object {{...}} (got an empty file); expected the "
                         f"{what}")
    # an integer is checked only where the text has a run of digits long enough to be past a
    # double (rare): else every integer is one int() reads, and a file's million integers cost
    # no Python call each
    parse_int = _bounded_int if _LONG_DIGITS.search(text) else int
    try:
        data = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_unique_pairs,
                          parse_int=parse_int)
    except _LongNumber as exc:
        raise InputError(f"{src}: invalid JSON: {exc}; check the value") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{src}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
                         f"{_json_fix(text, exc.pos) or _yaml_not_json(text, what)}") from None
    except _NonFiniteNumber as exc:
        raise InputError(f"{src}: invalid JSON: {exc} is not a JSON number; write a finite number") from None
    except _DuplicateKey as exc:
        raise InputError(f"{src}: field '{exc}' appears twice; keep one (readers disagree on which "
                         f"one wins)") from None
    except RecursionError:  # nested thousands deep
        data = None
        too_deep = True
    else:
        too_deep = nesting_depth(data) > MAX_NESTING
    if too_deep:
        raise InputError(f"{src}: lists and objects nest more than {MAX_NESTING} levels deep; a {what} "
                         f"needs only a few")
    return data


def load_json_object(src: str, what: str, shown: str | None = None) -> dict[str, Any]:
    """The JSON object in ``src``; ``shown``: how its errors name it, if not by its path (a
    file that cannot be read too, not only its contents)."""
    try:
        text = read_text(src, what)
    except InputError as exc:
        if shown is None or exc.problem is None:
            raise
        raise InputError.in_file(shown, exc.problem) from None
    data = parse_json(shown or src, text, what)
    if not isinstance(data, dict):
        raise InputError(
            f"{shown or src}: the top level must be a JSON object {{...}} (got {type(data).__name__}); "
            f"expected the {what}"
        )
    return data
