"""A path written in a config as a launch script writes it: only a shell expands ``$HOME`` or
drops the spaces around a word, and no shell reads a scenario or a sweep."""

from __future__ import annotations

import os
import re

#: ``$NAME`` or ``${NAME}``: a shell's variable, which no shell expands in a scenario
_VARIABLE = re.compile(r"\$(\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)")


def shell_words(value: str, folder: str) -> str | None:
    """What is wrong with a path written as a launch script writes it, which only a shell reads
    so, and the fix: ``$HOME/traces/x`` (the error was a missing ``FOLDER/$HOME/...`` file) or
    spaces around it (a missing ``' traces/x.0.et'``); None when it is neither, or a file (or an
    ET prefix) in ``folder`` is literally so named."""
    joined = os.path.join(folder, value)
    if any(os.path.lexists(path) for path in (joined, f"{joined}.0.et")):
        return None
    variable = _VARIABLE.search(value)
    if variable:
        name = variable.group(1).strip("{}")
        expanded = os.path.expandvars(value)
        fix = f"write {expanded}" if name in os.environ and not _VARIABLE.search(expanded) else \
            "write the path itself"
        return f"${name} is a shell's variable, which no shell expands here: {fix}"
    if value != value.strip():
        return "it starts or ends with a space: remove it"
    return None
