"""Reading ASTRA-sim's JSON and YAML files, and coercing their values as the reference does.

Every error names the file and the field; numbers are converted the way ASTRA-sim converts them
(a float in an integer field is truncated, ``true`` counts as 1) because the reference figures
were produced that way.
"""

from __future__ import annotations

import json
import math
import os
import struct
from pathlib import Path
from typing import Any

import yaml

from simpy_astra.errors import InputError

PathLike = str | os.PathLike[str]



INT32_MAX = 2**31 - 1


UINT64_MAX = 2**64 - 1


def show_value(value: Any) -> str:
    """A value as the user wrote it (JSON spelling: true, null, "text")."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def read_text(src: str, what: str) -> str:
    path = Path(src)
    if not path.exists():
        raise InputError(f"{src}: {what} file does not exist (relative paths resolve from {os.getcwd()})")
    if path.is_dir():
        raise InputError(f"{src}: is a directory; expected the {what} file")
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{src}: is not UTF-8 text (byte {exc.start}); expected the {what} file") from None
    except OSError as exc:
        raise InputError(f"{src}: cannot be read ({exc.strerror})") from None


class _NonFiniteNumber(Exception):
    pass


def _reject_constant(name: str) -> float:
    raise _NonFiniteNumber(name)


def load_json(src: str, what: str) -> Any:
    text = read_text(src, what)
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InputError(f"{src}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except _NonFiniteNumber as exc:
        raise InputError(f"{src}: invalid JSON: {exc} is not a JSON number; write a finite number") from None


def load_json_object(src: str, what: str) -> dict[str, Any]:
    data = load_json(src, what)
    if not isinstance(data, dict):
        raise InputError(
            f"{src}: the top level must be a JSON object {{...}} (got {type(data).__name__}); "
            f"expected the {what}"
        )
    return data


class ConfigLoader(yaml.SafeLoader):
    """PyYAML's safe loader, reading scalars as ASTRA-sim's yaml-cpp does.

    yaml-cpp converts on demand, so ``5e1`` and ``1e-3`` are numbers where a number is read
    (YAML 1.1 wants a dot and a signed exponent and PyYAML leaves them strings), and
    ``2024-01-01`` stays the text the user wrote (PyYAML makes it a ``date``), so a
    misplaced date is reported as written.
    """


def parse_yaml(text: str) -> Any:
    """YAML text as config files are read (:class:`ConfigLoader`); raises yaml.YAMLError."""
    return yaml.load(text, Loader=ConfigLoader)  # noqa: S506 - a SafeLoader subclass


def load_yaml(src: str, what: str) -> Any:
    text = read_text(src, what)
    try:
        return parse_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        if mark is not None:
            raise InputError(
                f"{src}: invalid YAML at line {mark.line + 1}, column {mark.column + 1}: {problem}"
            ) from None
        raise InputError(f"{src}: invalid YAML: {problem}") from None


def read_yaml_file(src: str, what: str) -> Any:
    """A YAML file's data as config files are read; every failure is one InputError line."""
    return load_yaml(src, what)


def load_yaml_mapping(src: str, what: str, example: str) -> dict[Any, Any]:
    data = load_yaml(src, what)
    if not isinstance(data, dict):
        got = "an empty file" if data is None else type(data).__name__
        raise InputError(
            f"{src}: the top level must be a mapping like '{example}' (got {got}); expected the {what}"
        )
    return data


# nlohmann::json converts numbers the C++ way: a float assigned to an integer is truncated
# toward zero and a boolean counts as 0/1. Anything else (string, null, list) throws there.
def json_int(
    src: str, key: str, value: Any, *, minimum: int, maximum: int = INT32_MAX, hint: str = ""
) -> int:
    if isinstance(value, bool):
        number = int(value)
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float) and math.isfinite(value):
        number = int(value)  # truncation toward zero, like static_cast
    else:
        raise InputError.at(src, key, f"must be an integer >= {minimum} (got {show_value(value)}){hint}")
    if number < minimum:
        raise InputError.at(src, key, f"must be an integer >= {minimum} (got {show_value(value)}){hint}")
    if number > maximum:
        raise InputError.at(src, key, f"must be at most {maximum} (got {show_value(value)})")
    return number


def json_float(src: str, key: str, value: Any, *, minimum: float = 0.0) -> float:
    if isinstance(value, bool):
        number = float(value)
    elif isinstance(value, int | float):
        number = float(value)
    else:
        raise InputError.at(src, key, f"must be a number >= {minimum:g} (got {show_value(value)})")
    if not math.isfinite(number) or number < minimum:
        raise InputError.at(src, key, f"must be a finite number >= {minimum:g} (got {show_value(value)})")
    return number


def as_c_float(src: str, key: str, value: float) -> float:
    """Round to IEEE single precision: ASTRA-sim keeps L, o, g, G in C ``float`` members."""
    try:
        return struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        raise InputError.at(src, key, f"is too large for a C float (got {value:g})") from None


def json_choice(src: str, key: str, value: Any, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise InputError.at(
            src, key, f"must be one of {', '.join(choices)} (case-sensitive; got {show_value(value)})"
        )
    return value


def json_string(src: str, key: str, value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise InputError.at(src, key, f"must be a non-empty string, {what} (got {show_value(value)})")
    return value


def json_switch(src: str, key: str, value: Any) -> bool:
    """ASTRA-sim's ``j[key] != 0``: on for any non-zero number, and for ANY non-number.

    That makes ``false`` switch the feature on, so we accept numbers only.
    """
    if isinstance(value, bool):
        raise InputError.at(
            src,
            key,
            f"must be 0 or 1 (got {show_value(value)}); use 0 or 1 (ASTRA-sim treats both true and false as on)",
        )
    if not isinstance(value, int | float):
        raise InputError.at(
            src,
            key,
            f"must be 0 or 1 (got {show_value(value)}); use 0 or 1 (ASTRA-sim treats any non-number as on)",
        )
    return value != 0


def require_mapping(data: Any, src: str, what: str, example: str) -> dict[Any, Any]:
    """``data`` if it is a mapping (an inline block of a scenario), else an error naming ``src``."""
    if not isinstance(data, dict):
        raise InputError(f"{src}: must be a mapping like '{example}' (got {show_value(data)}); expected the {what}")
    return data
