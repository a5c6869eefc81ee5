"""What a config file may hold at most, JSON or YAML alike: how deep it nests, what YAML's
aliases expand to, and how long and large an integer is, so that no file crashes or stalls
a reader.
"""

from __future__ import annotations

import sys
from typing import Any

#: deepest nesting accepted in a config file: real configs need 4-5 levels, and deeper data
#: would exhaust Python's recursion in the readers
MAX_NESTING = 100
#: values a YAML document may expand to through aliases (``*a``): a few aliases of aliases
#: (the "billion laughs") would otherwise expand to billions of values
MAX_ALIAS_EXPANSION = 100_000


def nesting_depth(data: Any) -> int:
    """How deep lists and mappings nest in ``data`` (a scalar: 0), without recursion; stops
    counting past :data:`MAX_NESTING`. Level by level, keeping only the containers of each: a
    scalar costs one type check (a comm-group file's million member ids were each a step of
    their own, a fifth of reading it)."""
    depth, level = 0, [data] if isinstance(data, (dict, list)) else []
    while level and depth <= MAX_NESTING:
        depth += 1
        inner = []
        for value in level:
            inner += [c for c in (value.values() if isinstance(value, dict) else value)
                      if isinstance(c, (dict, list))]
        level = inner
    return depth


#: the longest integer a JSON or YAML file may write (Python's int() reads 4,300 digits by default)
MAX_INT_DIGITS = 4000


def past_double(value: int) -> str | None:
    """Why an integer no field can take, if it is past the largest double (1.8e308): every
    number is checked as one (``math.isfinite``, a rate times a size), which raised
    OverflowError, an internal error, and ASTRA-sim's own readers (a C++ double) stop there."""
    if abs(value) <= sys.float_info.max:
        return None
    return f"a number past {sys.float_info.max:.1e}, the largest a double holds, and more than any field takes"
