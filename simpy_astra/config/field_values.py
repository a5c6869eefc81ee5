"""A config field's value coerced as ASTRA-sim's reader (nlohmann::json) converts it (a float
in an integer field is truncated, ``true`` counts as 1), because the reference figures were
produced that way; shown in errors as the user wrote it, each error naming the file and field.
"""

from __future__ import annotations

import json
import math
import struct
from typing import Any

from simpy_astra.errors import InputError, digit_groups_fix

INT32_MAX = 2**31 - 1


UINT64_MAX = 2**64 - 1


def show_value(value: Any) -> str:
    """A value as the user wrote it (JSON spelling: true, null, "text")."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _text_fix(src: str, value: Any) -> str:
    """The number to write for one given as text (``"10"`` in quotes, ``1_000``), as the file
    that gave it reads it: a system JSON, or an inline block of a YAML scenario or sweep."""
    return digit_groups_fix(value, "JSON" if src.endswith(".json") else "YAML")


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
        raise InputError.at(src, key, f"must be an integer >= {minimum} (got {show_value(value)})"
                                      f"{_text_fix(src, value)}{hint}")
    if number < minimum:
        raise InputError.at(src, key, f"must be an integer >= {minimum} (got {show_value(value)}){hint}")
    if number > maximum:
        raise InputError.at(src, key, f"must be at most {maximum} (got {show_value(value)}){hint}")
    return number


def json_float(src: str, key: str, value: Any, *, minimum: float = 0.0) -> float:
    if isinstance(value, bool):
        number = float(value)
    elif isinstance(value, int | float):
        number = float(value)
    else:
        raise InputError.at(src, key, f"must be a number >= {minimum:g} (got {show_value(value)}){_text_fix(src, value)}")
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
