"""The two ways a run can fail on purpose: bad inputs, and a simulation that cannot progress.

ASTRA-sim reacts to many bad inputs with a crash, a hang or silently odd figures; we stop at
the edge instead, with one line that names the file, the field and how to fix it. The CLI
prints ``error: <message>`` and exits with status 2 for an :class:`InputError`.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

#: a run of digits (and thousands commas) too long to read: shown by its first digits and count
_LONG_NUMBER = re.compile(r"\d[\d,]{39,}")


def _shortened(found: re.Match[str]) -> str:
    digits = found[0].replace(",", "")
    return f"{found[0][:20]}... ({len(digits)} digits)"


def _one_line(message: object) -> str:
    """One line, whatever a parser put into the text we quote, and no number hundreds of digits
    long (num_stacks: 1e200 written out made a line of 750 characters)."""
    text = re.sub(r"\s*\n\s*", " ", str(message)).strip()
    return _LONG_NUMBER.sub(_shortened, text)


_E = TypeVar("_E", bound="AboutFile")


class AboutFile(Exception):
    """An error about one file, ``<file>: <problem>``, made by :meth:`in_file`, which keeps the
    two apart as ``file`` and ``problem`` (None for a line written whole): a caller that names
    the file otherwise (a generated trace, by the scenario's field) builds its line from them,
    never by taking the text apart."""

    file: str | None = None
    problem: str | None = None

    @classmethod
    def in_file(cls: type[_E], path: str, problem: str) -> _E:
        """``cls("<path>: <problem>")``, its parts kept."""
        exc = cls(f"{path}: {problem}")
        exc.file, exc.problem = path, problem
        return exc

    def keeping_parts(self: _E, other: AboutFile) -> _E:
        """This error (``other`` reworded), with ``other``'s file and problem."""
        self.file, self.problem = other.file, other.problem
        return self


@dataclass(frozen=True)
class Param:
    """A generator's parameter named in its error: the command line spells it as its flag
    (``--num-npus``), a scenario as its field (``workload.num_npus``)."""

    name: str

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


#: an error's line as text and the parameters it names (:attr:`InputError.parts`)
Parts = tuple["str | Param", ...]


def spelt(parts: Parts, name: Callable[[Param], str]) -> str:
    """``parts`` as one line, each parameter spelt by ``name``."""
    return "".join(p if isinstance(p, str) else name(p) for p in parts)


_I = TypeVar("_I", bound="InputError")


class InputError(AboutFile):
    """An input file or flag is invalid; the message is one line naming file, field and fix."""

    #: a generator's error as parts (:meth:`of_params`): a :class:`Param` first when the error is
    #: about that parameter, text first when about the whole job; None for a line written whole.
    #: A front end names the parameters its own way from them, never by taking the text apart
    parts: Parts | None = None

    @classmethod
    def of_params(cls, *parts: str | Param) -> InputError:
        """The error ``parts`` make, worded for the command line (``--size: must be ...``)."""
        return cls(spelt(parts, lambda p: p.flag)).with_parts(*parts)

    def with_parts(self: _I, *parts: str | Param) -> _I:
        """This error, keeping ``parts`` (the same line, its parameters as :class:`Param`)."""
        self.parts = parts
        return self

    def __init__(self, message: str) -> None:
        super().__init__(_one_line(message))

    def reworded(self: _I, message: str) -> _I:
        """This error (its class, rule and parts kept) saying ``message`` instead."""
        self.args = (_one_line(message),)
        return self

    @property
    def message(self) -> str:
        return str(self.args[0])

    @classmethod
    def at(
        cls,
        path: str | os.PathLike[str],
        field: str | int | None,
        problem: str,
        *,
        kind: str = "field",
    ) -> InputError:
        """``<path>: <kind> '<field>' <problem>``, or ``<path>: <problem>`` without a field.

        ``kind`` names what ``field`` is ("field", "node", "group", ...), e.g.
        ``InputError.at("system.json", "preferred-dataset-splits", "must be an integer >= 1
        (got 0); set it to the number of chunks per collective")``.
        """
        where = os.fspath(path)
        if field is None:
            return cls.in_file(where, problem)
        return cls.in_file(where, f"{kind} '{field}' {problem}")


def non_ascii(key: object) -> str:
    """Why ``key`` is not the key it looks like, when it holds a character outside ASCII (a
    Cyrillic ``о`` in ``wоrkload`` reads as ``workload``), else ''. Every key of our formats is
    ASCII, so the character is the whole fault."""
    odd = next((c for c in str(key) if not c.isascii()), None)
    if odd is None:
        return ""
    import unicodedata

    name = unicodedata.name(odd, "a character without a name")
    return f" (its {odd!r} is U+{ord(odd):04X} {name}, not ASCII: retype it)"


class InvalidConfigurationError(InputError):
    """Well-formed inputs describing a job the real framework refuses to launch (Megatron-LM's
    argument validation: heads not divisible by tensor parallelism, FP8 on a GPU without FP8
    units, a GPU count that is not a multiple of tp x pp x cp, ...).

    ``rule`` names the rule in a few words (``"heads divisible by tp"``); the message says the
    rule, the values and Megatron's reason in one line. A sweep records such a point as
    ``status: invalid`` rather than a failure; the CLI treats it as any bad input (status 2).
    """

    def __init__(self, message: str, rule: str) -> None:
        super().__init__(message)
        self.rule = rule

    def __reduce__(self):  # noqa: ANN204 - a sweep's worker process sends it back whole, rule included
        return type(self), (self.message, self.rule)


def with_article(word: str) -> str:
    """``word`` after 'a' or 'an' as its first letter asks: 'an all_reduce', 'a ring'."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


def refuse(where: str, rule: str, message: str) -> NoReturn:
    """Refuse a job the framework refuses: ``message`` under the file and field ``where``."""
    raise InvalidConfigurationError(f"{where}: {message}", rule)


class StalledError(Exception):
    """The simulation ran out of events while some NPU still had work it could never start.

    ASTRA-sim silently omits the "finished" line of such an NPU (e.g. a receive nobody sends,
    or a collective some group member never joins) and silently drops a message nobody
    receives; the engine raises this instead so a stalled run is never mistaken for a finished
    one. The message is one line naming each waiting NPU, the nodes it waits on, and the
    unmatched messages; the CLI exits with status 3.
    """

    def __init__(self, message: str) -> None:
        super().__init__(re.sub(r"\s*\n\s*", " ", str(message)).strip())


def printable(text: str) -> str:
    """``text`` safe to print: each character a terminal would act on (ESC starting a colour, a
    newline, a zero-width mark) written as its escape, ``\\x1b``; an error quotes a file's own
    text, which may carry them."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


#: a size written with a byte unit (``1MB``, ``64 MiB``, ``1.5gb``): number, unit
_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmgt])(i?)b\s*", re.IGNORECASE)


def bytes_fix(value: object) -> str:
    """The fix for a size in bytes written with a unit: the bytes it means (``; a size is a
    number of bytes: write 1000000 (or 1048576 for 1 MiB)``: MB is SI, and read as MiB as often),
    or '' for anything else."""
    found = _SIZE.fullmatch(value) if isinstance(value, str) else None
    if found is None:
        return ""
    from fractions import Fraction  # only for an error: every run imports this module

    number, prefix, binary = found[1], found[2].upper(), bool(found[3])
    power = "KMGT".index(prefix) + 1
    si, iec = (Fraction(number) * base ** power for base in (1000, 1024))
    if binary:
        return f"; a size is a number of bytes: write {int(iec)}" if iec.denominator == 1 else ""
    if si.denominator != 1:
        return ""
    also = f" (or {int(iec)} for {number} {prefix}iB)" if iec.denominator == 1 else ""
    return f"; a size is a number of bytes: write {int(si)}{also}"


#: a number written with Python's digit groups (``1_000``), which YAML 1.2 reads as text
_DIGIT_GROUPS = re.compile(r"[+-]?\d+(?:_\d+)+(?:\.\d+)?")
#: a plain number, as text only for the quotes around it
_QUOTED_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def digit_groups_fix(value: object, reader: str = "YAML") -> str:
    """The fix for a number YAML (or JSON, ``reader``) read as text: one in quotes (``'16'``),
    or written with ``_`` between its digits (``1_000``, as Python and YAML 1.1 write it), which
    YAML 1.2 (ASTRA-sim's yaml-cpp and this reader) reads as text; the field then refused it
    with no number to write ('' for anything else)."""
    if isinstance(value, str) and _QUOTED_NUMBER.fullmatch(value.strip()):  # gpus: '16' (a number in quotes)
        return f"; write {value.strip()} without quotes (in quotes, {reader} reads it as text)"
    if not isinstance(value, str) or not _DIGIT_GROUPS.fullmatch(value):
        return ""
    return f"; write {value.replace('_', '')} (YAML 1.2 reads a number with '_' in it as text)"


def integer_fix(value: object, minimum: int | None = None, maximum: int | None = None) -> str:
    """The fix for a float where a whole number goes, one rule for every integer field of a
    scenario, cluster, job, generator or sweep: YAML reads ``16.0`` and ``1e6`` as floats, and
    such a field refuses them, naming the integer to write (``; write 16``), or the two nearest
    for a fraction (``; write 1 or 2``); a list of them (a Megatron flag of several integers) is
    written back whole (``; write [8, 2]``), else given its first fraction's fix (the message
    names that value); anything else gets no fix here (''). ``minimum`` and ``maximum``: the
    field's least and largest values, so a fix never names one it refuses (0.5 for a positive
    count: 'write 1', not '0 or 1'; 1e9 queues of at most 4096: no integer to write)."""
    if isinstance(value, str):
        return digit_groups_fix(value)
    if isinstance(value, list):
        fixes = {i: integer_fix(v, minimum, maximum) for i, v in enumerate(value) if isinstance(v, float)}
        if not fixes or not all(fixes.values()):
            return ""
        fraction = next((fixes[i] for i in fixes if not value[i].is_integer()), None)
        if fraction is not None:
            return fraction
        return "; write [" + ", ".join(fixes[i][len("; write "):] if i in fixes else str(v)
                                       for i, v in enumerate(value)) + "]"
    if isinstance(value, bool) or not isinstance(value, float) or not math.isfinite(value) or abs(value) >= 2**63:
        return ""
    floor = -2**63 if minimum is None else minimum
    ceiling = 2**63 - 1 if maximum is None else maximum
    if value.is_integer():
        return f"; write {int(value)}" if floor <= value <= ceiling else ""
    near = [n for n in (math.floor(value), math.ceil(value)) if floor <= n <= ceiling]
    return f"; write {' or '.join(map(str, near))}" if near else ""


def a_kind(value: Any) -> str:
    """What ``value`` is, for a message: 'an int', 'a list'."""
    return with_article(type(value).__name__)
