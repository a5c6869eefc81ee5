"""Reading ASTRA-sim's JSON and YAML files, and coercing their values as the reference does.

Every error names the file and the field; numbers are converted the way ASTRA-sim converts them
(a float in an integer field is truncated, ``true`` counts as 1) because the reference figures
were produced that way.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import os
import re
import struct
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml

from simpy_astra.errors import InputError, non_ascii
from simpy_astra.infra import files

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
    """A config file's text; a missing, unreadable, non-UTF-8, oddly named or non-regular file
    (a FIFO, a device) is one line. Read through :mod:`simpy_astra.infra.files`, the one door."""
    if not src:
        raise InputError(f"<empty path>: expected the path of the {what} file (got an empty string)")
    if src == "-" and not os.path.lexists(src):  # stdin to many tools ('cat s.yaml | simpy-astra run -')
        raise InputError(f"-: '-' is not read as stdin here; save the {what} to a file and give its path")
    path = Path(src)
    try:
        if not path.exists() and not path.is_symlink():
            raise InputError.in_file(short_path(src), f"{what} file does not exist{files.where_relative(src)}")
        if path.is_dir():
            raise InputError.in_file(short_path(src), f"is a directory; expected the {what} file")
    except (OSError, ValueError) as exc:  # too long a name, a NUL byte, no permission, ...
        why = getattr(exc, "strerror", None) or str(exc)
        raise InputError.in_file(short_path(src), f"cannot be read ({why}); expected the {what} file") from None
    return files.read_text(src, f"{what} file", files.CONFIG_LIMIT_BYTES)


def short_path(src: str) -> str:
    """A path fit for a one-line message (a 5000-character name is cut in the middle)."""
    return src if len(src) <= 120 else f"{src[:60]}...{src[-57:]}"


#: deepest nesting accepted in a config file: real configs need 4-5 levels, and deeper data
#: would exhaust Python's recursion in the readers
MAX_NESTING = 100
#: values a YAML document may expand to through aliases (``*a``): a few aliases of aliases
#: (the "billion laughs") would otherwise expand to billions of values
MAX_ALIAS_EXPANSION = 100_000


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


class _LongNumber(Exception):
    pass


def _past_double(value: int) -> str | None:
    """Why an integer no field can take, if it is past the largest double (1.8e308): every
    number is checked as one (``math.isfinite``, a rate times a size), which raised
    OverflowError, an internal error, and ASTRA-sim's own readers (a C++ double) stop there."""
    if abs(value) <= sys.float_info.max:
        return None
    return f"a number past {sys.float_info.max:.1e}, the largest a double holds, and more than any field takes"


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
    problem = _past_double(value)
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


class ConfigLoader(yaml.SafeLoader):
    """YAML 1.2 core schema, as ASTRA-sim's yaml-cpp reads it (PyYAML implements YAML 1.1).

    So ``0764`` is 764 (not octal 500), ``1:30`` and ``2024-01-01`` stay the text written (not
    90 and a date), ``yes``/``on`` are text (not true), and ``5e1`` is a number. Only the core
    tags exist (``!!binary``, ``!!set``, ``!!timestamp`` are errors), a key given twice is an
    error, nesting is bounded (:data:`MAX_NESTING`) and so is what aliases expand to
    (:data:`MAX_ALIAS_EXPANSION`), so no file can crash or stall the reader.
    """

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._depth = 0
        self._sizes: dict[int, int] = {}  # id(node) -> values it expands to
        self._aliases = False

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if self._depth >= MAX_NESTING:
            raise yaml.composer.ComposerError(
                None, None, f"lists and mappings nest more than {MAX_NESTING} levels deep", event.start_mark)
        is_alias = isinstance(event, yaml.events.AliasEvent)
        self._depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if is_alias:
            self._aliases = True
            if id(node) not in self._sizes:
                raise yaml.composer.ComposerError(
                    None, None, f"alias *{event.anchor} refers to a node that contains it", event.start_mark)
            return node
        if isinstance(node, yaml.SequenceNode):
            size = 1 + sum(self._sizes.get(id(child), 1) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            size = 1 + sum(self._sizes.get(id(k), 1) + self._sizes.get(id(v), 1) for k, v in node.value)
        else:
            size = 1
        if self._aliases and size > MAX_ALIAS_EXPANSION:
            raise yaml.composer.ComposerError(
                None, None, f"aliases (*name) expand to more than {MAX_ALIAS_EXPANSION:,} values; write "
                            f"the values out or use fewer aliases", node.start_mark)
        self._sizes[id(node)] = size
        return node

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}  # key -> line it is first given on
            for key_node, _ in node.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.value == "<<" and key_node.style is None:
                    raise yaml.constructor.ConstructorError(
                        None, None, "a YAML merge key (<<) is not supported; write the fields out "
                                    "(aliases such as *name work)", key_node.start_mark)
                key = self.construct_object(key_node, deep=True)
                try:
                    if key in seen:
                        raise yaml.constructor.ConstructorError(
                            None, None, f"duplicate key '{key}' (first given on line {seen[key]}); keep one",
                            key_node.start_mark)
                    seen[key] = key_node.start_mark.line + 1
                except TypeError:  # an unhashable key: the base class reports it
                    continue
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: Any) -> int:
        text = self.construct_scalar(node)
        if len(text) > MAX_INT_DIGITS:  # Python refuses to read it, naming its own setting
            raise yaml.constructor.ConstructorError(
                None, None, f"a number of {len(text):,} digits, more than any field takes (at most "
                            f"{MAX_INT_DIGITS:,} are read); check the value", node.start_mark)
        sign, digits = (-1, text[1:]) if text[0] == "-" else (1, text.lstrip("+"))
        base = {"0o": 8, "0x": 16}.get(digits[:2], 10)
        value = sign * int(digits[2:] if base != 10 else digits, base)
        problem = _past_double(value)
        if problem:
            raise yaml.constructor.ConstructorError(None, None, f"{problem}; check the value", node.start_mark)
        return value


_CORE = "tag:yaml.org,2002:"
ConfigLoader.yaml_implicit_resolvers = {}
for _tag, _pattern, _first in (
    ("null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("bool", r"^(?:true|True|TRUE|false|False|FALSE)$", list("tTfF")),
    ("int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", list("-+0123456789")),
    ("float", r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
              r"|[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN)$", list("-+.0123456789")),
):
    ConfigLoader.add_implicit_resolver(_CORE + _tag, re.compile(_pattern), _first)
ConfigLoader.yaml_constructors = {
    tag: make for tag, make in yaml.SafeLoader.yaml_constructors.items()
    if tag is None or tag.removeprefix(_CORE) in ("null", "bool", "float", "str", "seq", "map")
}
ConfigLoader.add_constructor(_CORE + "int", ConfigLoader.construct_yaml_int)


class ConfigDumper(yaml.SafeDumper):
    """Writes YAML that :class:`ConfigLoader` reads back as written: a string that YAML 1.2
    reads as a number (``5e1``, ``0o17``) is quoted, one that only YAML 1.1 would (``yes``) is not."""


ConfigDumper.yaml_implicit_resolvers = ConfigLoader.yaml_implicit_resolvers


def dump_yaml(data: Any, stream: Any = None, **options: Any) -> Any:
    """``yaml.safe_dump`` for files simpy-astra reads again (scenarios of sweep points, fitted
    networks), in the schema it reads them with."""
    return yaml.dump(data, stream, Dumper=ConfigDumper, **options)


def parse_yaml(text: str) -> Any:
    """YAML text as config files are read (:class:`ConfigLoader`); raises yaml.YAMLError."""
    return yaml.load(text, Loader=ConfigLoader)  # noqa: S506 - a SafeLoader subclass


#: the fix for YAML's syntax errors a hand-written file makes most (the parser names none)
_YAML_FIXES = (("found character '\\t' that cannot start any token", "YAML indents with spaces: replace the tab "
                                                                     "with spaces"),
               ("mapping values are not allowed here", "a ': ' inside a value starts a mapping: put the value in "
                                                       "quotes"))


#: texts up to this size have their parse kept (:func:`_parsed_once`)
_KEPT_PARSE_CHARS = 64 * 1024


@functools.lru_cache(maxsize=64)
def _parsed_once(text: str) -> Any:
    """A small file's parse, kept by its text: a sweep reads its cluster preset once a point
    (``--list`` of 400 points parsed the same 50 lines 800 times, half of its 20 s)."""
    return parse_yaml(text)


def load_yaml(src: str, what: str) -> Any:
    """The file is read every time (an edit is seen); only parsing the same text again is saved,
    and each caller gets its own copy to change."""
    text = read_text(src, what)
    try:
        return copy.deepcopy(_parsed_once(text)) if len(text) <= _KEPT_PARSE_CHARS else parse_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        problem += next((f"; {fix}" for said, fix in _YAML_FIXES if problem.startswith(said)), "")
        if mark is not None:
            raise InputError(
                f"{src}: invalid YAML at line {mark.line + 1}, column {mark.column + 1}: {problem}"
            ) from None
        raise InputError(f"{src}: invalid YAML: {problem}") from None
    except (RecursionError, ValueError) as exc:  # a guard above missed a case; still the file's fault
        raise InputError(f"{src}: cannot be read as YAML ({type(exc).__name__}: {exc})") from None


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
        raise InputError.at(src, key, f"must be at most {maximum} (got {show_value(value)}){hint}")
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


def nearest_key(key: str, known: Iterable[str]) -> str | None:
    """The known key ``key`` most likely misspells (``bandwith`` -> ``bandwidth``,
    ``packet_size`` -> ``packet-size``), or None when none is close."""
    import difflib  # only when a key is unknown: the default run never needs it

    known = sorted(known)
    folded = {k.lower().replace("_", "-"): k for k in known}
    spelled = key.lower().replace("_", "-")
    if spelled in folded:
        return folded[spelled]
    close = difflib.get_close_matches(spelled, list(folded), n=1, cutoff=0.6)
    return folded[close[0]] if close else None


def refuse_unknown_keys(src: str, data: dict[Any, Any], known: Iterable[str], what: str,
                        home: Callable[[Any], str | None] = lambda key: None) -> None:
    """Our own formats (scenario, job, sweep) are strict: a key no reader uses is an error
    naming the nearest known key (a misspelt ``netwrok`` or ``axis`` would otherwise run on
    defaults), or ``home(key)``: where a key of another mapping belongs. A YAML merge key
    (``<<``) is refused by name: the reader does not expand it."""
    known = set(known)
    for key in data:
        if key in known:
            continue
        if key == "<<":
            raise InputError(f"{src}: field '<<' is a YAML merge key, which {what} files do not support; "
                             f"write the fields out (aliases such as *name work)")
        near = nearest_key(str(key), known)
        hint = home(key) or (f"did you mean '{near}'?" if near else f"known: {', '.join(sorted(known))}")
        raise InputError(f"{src}: field '{key}'{non_ascii(key)} is not a {what} field; {hint}")


def refuse_label_values(src: str, data: dict[Any, Any], what: str) -> None:
    """``name`` and ``description`` are text for the reader of the file: a list there
    (``name: [a, b]``, a sweep axis's form) ran once, its values never read."""
    for key in ("name", "description"):
        value = data.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, str | int | float)):
            raise InputError(f"{src}: field '{key}' is the {what}'s label, one line of text (got a "
                             f"{type(value).__name__}); several values to run are a sweep's axes: over fields a "
                             f"run reads (sweep --help)")


def unknown_key_warnings(src: str, data: dict[Any, Any], known: Iterable[str], what: str) -> list[str]:
    """One warning per key of ``data`` no reader uses, naming the nearest known key: a misspelt
    key would otherwise silently keep its default."""
    known = set(known)
    out = []
    for key in data:
        if key in known:
            continue
        near = nearest_key(str(key), known)
        hint = f"; did you mean '{near}'?" if near else f"; known: {', '.join(sorted(known))}"
        out.append(f"{src}: field '{key}'{non_ascii(key)} is not a {what} field and is ignored{hint}")
    return out
