"""A generator's errors in a scenario's words: worded for ``simpy-astra generate``'s flags
(``--size: ...``), spelt as the fields of the scenario's workload mapping
(``s.yaml: workload.size: ...``)."""

from __future__ import annotations

from simpy_astra.errors import InputError, Param, Parts, spelt


def as_fields(error: InputError, where: str) -> str:
    """A generator's error (worded for ``simpy-astra generate``'s flags) in a scenario's terms:
    ``--size: must be ...`` -> ``scenario.yaml: workload.size: must be ...``, so the user is
    not sent to a flag they never gave. An error that keeps its parts (:attr:`InputError.parts`)
    is spelt from them; a line written whole is never taken apart (a value may read as a flag):
    as written when it names its place (a file's error, or the scenario's), else after ``where``."""
    scenario, _, key = where.rpartition(": ")
    if not key.isidentifier():  # ``where`` is a file (a text workload's), not a scenario field
        return error.message
    if error.parts is not None:
        return in_fields(error.parts, where)
    named = error.message.startswith(f"{scenario}: " if scenario else key)
    return error.message if error.file is not None or named else f"{where}: {error.message}"


def in_fields(parts: Parts, where: str) -> str:
    """``parts`` as a line of the scenario's workload mapping at ``where`` (``s.yaml: workload``):
    a parameter first is the line's field (``s.yaml: workload.size: ...``), text first is about
    the whole mapping (``s.yaml: workload: ...``); each parameter is spelt as its field."""
    key = where.rpartition(": ")[2]
    first, *rest = parts
    if not key.isidentifier():  # a file's, not a scenario's: the command line's spelling
        return spelt(parts, lambda p: p.flag)
    head = f"{where}.{first.name}" if isinstance(first, Param) else f"{where}: {first}"
    return head + spelt(tuple(rest), lambda p: f"{key}.{p.name}")
