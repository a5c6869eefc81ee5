"""Reading YAML files as ASTRA-sim's yaml-cpp reads them (YAML 1.2's core schema), and
writing YAML that reads back as written.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import yaml

from simpy_astra.config.file_text import read_text
from simpy_astra.config.input_bounds import MAX_ALIAS_EXPANSION, MAX_INT_DIGITS, MAX_NESTING, past_double
from simpy_astra.errors import InputError
from simpy_astra.infra.files import line_and_column


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
                if (isinstance(key_node, yaml.ScalarNode) and key_node.style is None
                        and key_node.tag in (_CORE + "bool", _CORE + "null")):
                    key_node.tag = _CORE + "str"  # a key is its text, as yaml-cpp keys are: ``true:`` is
                    # no field, and its error must name what was written, not Python's True
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
        problem = past_double(value)
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
    """YAML text as config files are read (:class:`ConfigLoader`), each alias (``*name``) a copy of
    its anchor's value; raises yaml.YAMLError."""
    return unshared(yaml.load(text, Loader=ConfigLoader))  # noqa: S506 - a SafeLoader subclass


def unshared(value: Any) -> Any:
    """``value`` with every list and mapping its own copy. PyYAML gives an alias the very object
    its anchor names: a sweep's ``network.bandwidth.0`` axis set latency too where the base wrote
    ``latency: *bw``, a wrong figure. Aliases expand to at most :data:`MAX_ALIAS_EXPANSION`
    values and nest :data:`MAX_NESTING` deep, so the copy is bounded."""
    if isinstance(value, dict):
        return {key: unshared(item) for key, item in value.items()}
    if isinstance(value, list):
        return [unshared(item) for item in value]
    return value


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
    and each caller gets its own copy to change (:func:`unshared`)."""
    text = read_text(src, what)
    try:
        return unshared(_parsed_once(text)) if len(text) <= _KEPT_PARSE_CHARS else parse_yaml(text)
    except yaml.reader.ReaderError as exc:  # its own words: '... in "<unicode string>", position 716'
        raise InputError(f"{src}: invalid YAML at {line_and_column(text, exc.position)}: character "
                         f"U+{exc.character:04X} ({_control_name(exc.character)}) cannot be in YAML text; delete "
                         f"it (a binary file, or one pasted with control characters?)") from None
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


def _control_name(code: int) -> str:
    """What a character YAML refuses is, for a person who cannot see it."""
    return "a NUL byte" if code == 0 else "a control character" if code < 0x20 or 0x7F <= code < 0xA0 \
        else "half of a surrogate pair" if 0xD800 <= code < 0xE000 else "a character YAML refuses"


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
