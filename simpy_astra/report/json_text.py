"""``--json-out``'s text: exactly what ``json.dump(data, f, indent=1)`` writes, faster.

With ``indent`` the standard library encodes in Python, value by value (its C encoder serves
only compact output): the 1,536 NPUs of the SC'21 step took 0.05 to 0.1 s, as long as a
tenth of the simulation. A folded run's NPUs share their representative's figures (8
distinct among the 1,536), so each distinct NPU entry is indented once, found again by its
compact text, which the C encoder makes.
"""

from __future__ import annotations

import json
from typing import Any


def indented_json(data: dict[str, Any], shared: tuple[str, ...] = ("npus",)) -> str:
    """``json.dumps(data, indent=1)``; the mappings under the top-level keys ``shared`` have
    their values indented once per distinct value."""
    if not data or not all(isinstance(k, str) for k in data):  # keys json.dumps would convert
        return json.dumps(data, indent=1)
    items = []
    for key, value in data.items():
        if key in shared and isinstance(value, dict) and value and all(isinstance(k, str) for k in value):
            text = _shared_values(value)
        else:
            text = json.dumps(value, indent=1).replace("\n", "\n ")
        items.append(f" {json.dumps(key)}: {text}")
    return "{\n" + ",\n".join(items) + "\n}"


def _shared_values(mapping: dict[str, Any]) -> str:
    """A mapping two levels deep, each distinct value encoded (and indented) once."""
    compact = json.JSONEncoder(separators=(",", ":")).encode  # the C encoder: the look-up key
    # a key as json.dumps writes a string (ASCII, escaped), by the C function it calls, without
    # its argument checks per key (16,384 NPUs)
    key_text = json.encoder.encode_basestring_ascii
    seen: dict[str, str] = {}
    same: dict[int, str] = {}  # by identity: one entry shared by many keys is not even encoded again
    items = []
    for key, value in mapping.items():
        text = same.get(id(value))
        if text is None:
            known = compact(value)
            text = seen.get(known)
            if text is None:
                text = seen[known] = json.dumps(value, indent=1).replace("\n", "\n  ")
            same[id(value)] = text
        items.append(f"  {key_text(key)}: {text}")
    return "{\n" + ",\n".join(items) + "\n }"
