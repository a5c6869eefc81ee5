"""One Chakra node as the simulator sees it (:class:`EtNode`): flattened fields and typed
attribute getters that follow ASTRA-sim's feeder rules, each error one line naming the file and
the node.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from simpy_astra.errors import AboutFile
from simpy_astra.workloads.chakra.schema import (
    ATTR_VALUE_FIELDS,
    INTEGER_VALUE_FIELDS,
    NODE_TYPE_NAMES,
)

AttrValue = tuple[str | None, object]
"""(oneof field name such as ``"int64_val"`` or ``None`` when no value is set, Python value)."""



class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<required>"


_MISSING: Final = _Missing()


ATTR_KINDS: Final = frozenset(ATTR_VALUE_FIELDS)


_INTEGER_KINDS_TEXT: Final = "an integer kind (int32/int64/uint32/uint64/sint/fixed/sfixed/bool)"


class EtError(AboutFile):
    """A Chakra ET file (or a node in it) that cannot be simulated; the message is one line."""


def _type_label(node_type: int) -> str:
    name = NODE_TYPE_NAMES.get(node_type)
    return name.removesuffix("_NODE") if name is not None else f"type-{node_type}"


def _describe(kind: str | None, value: object) -> str:
    if kind is None:
        return "set without a value"
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"of kind {kind} ({text})"


@dataclass(slots=True)
class EtNode:
    """One ``ChakraProtoMsg.Node``, flattened for the simulator.

    ``deps`` is ctrl_deps followed by data_deps with duplicates removed (ASTRA-sim waits for the
    union of both). ``attrs`` keeps the *first* attribute of each name, as the feeder's lookup
    does. ``source`` is the file path (one shared string per file) so errors can name it.
    """

    id: int
    name: str
    type: int
    deps: tuple[int, ...]
    duration_micros: int
    inputs_values: str
    attrs: dict[str, AttrValue]
    source: str = ""
    #: the decoded fields this node was made from; ranks repeating a record share one tuple
    #: (``read_et``'s ``record_cache``), which lets callers compare ranks cheaply
    shared: tuple = field(default=(), compare=False, repr=False)

    @property
    def type_label(self) -> str:
        """``COMM_COLL`` for type 7 etc.; used in messages."""
        return _type_label(self.type)

    def error(self, what: str, path: str | None = None) -> EtError:
        """An :class:`EtError` ``"<file>: node <id>: <what>"`` for this node."""
        return EtError.in_file(path or self.source or '<memory>', f"node {self.id}: {what}")

    def has_attr(self, name: str) -> bool:
        return name in self.attrs

    def _missing(self, name: str, path: str | None, required_for: str | None) -> EtError:
        why = required_for or f"{self.type_label} nodes"
        return self.error(f"attribute '{name}' is missing (required for {why})", path)

    def _wrong(self, name: str, kind: str | None, value: object, expected: str, path: str | None) -> EtError:
        return self.error(f"attribute '{name}' is {_describe(kind, value)}; expected {expected}", path)

    def _value(self, name: str, default: object, kinds: frozenset[str] | tuple[str, ...], expected: str,
               path: str | None, required_for: str | None) -> tuple[bool, object]:
        """(True, value) of attribute ``name`` when it is of one of ``kinds``; (False, default)
        when it is absent and a default was given; else the one-line error every getter gives."""
        found = self.attrs.get(name)
        if found is None:
            if default is _MISSING:
                raise self._missing(name, path, required_for)
            return False, default
        kind, value = found
        if kind not in kinds:
            raise self._wrong(name, kind, value, expected, path)
        return True, value

    def get_int(self, name: str, default: object = _MISSING, *, path: str | None = None,
                bits: int | None = None, required_for: str | None = None) -> int:
        """Integer attribute under the feeder's rules: any integer kind or bool, by plain cast.

        Floating values never convert (ASTRA-sim throws ``bad_cast``). ``bits`` mimics
        ``static_cast<uintN_t>`` (e.g. 32 for ``comm_src``), wrapping negative values.
        """
        present, value = self._value(name, default, INTEGER_VALUE_FIELDS, _INTEGER_KINDS_TEXT, path, required_for)
        if not present:
            return value  # type: ignore[return-value]
        result = int(value)  # type: ignore[call-overload]
        if bits is not None:
            result &= (1 << bits) - 1
        return result

    def get_bool(self, name: str, default: object = _MISSING, *, path: str | None = None,
                 required_for: str | None = None) -> bool:
        """Boolean attribute: bool or any integer kind (non-zero is true), never float/string."""
        present, value = self._value(name, default, INTEGER_VALUE_FIELDS, "bool_val or " + _INTEGER_KINDS_TEXT,
                                     path, required_for)
        return bool(value) if present else value  # type: ignore[return-value]

    def get_str(self, name: str, default: object = _MISSING, *, path: str | None = None,
                required_for: str | None = None) -> str:
        """String attribute: only ``string_val`` (an integer ``pg_name`` is an error)."""
        return self._value(name, default, ("string_val",), "string_val", path, required_for)[1]  # type: ignore[return-value]

    def get_bool_list(self, name: str, default: object = _MISSING, *, path: str | None = None,
                      required_for: str | None = None) -> tuple[bool, ...]:
        """``bool_list`` attribute (e.g. ``involved_dim``); any other kind is an error."""
        return self._value(name, default, ("bool_list",), "bool_list", path, required_for)[1]  # type: ignore[return-value]

    def get_string_list(self, name: str, default: object = _MISSING, *, path: str | None = None,
                        strict: bool = True, required_for: str | None = None) -> tuple[str, ...]:
        """``string_list`` attribute (e.g. ``inputs``/``outputs``).

        With ``strict=False`` a present attribute of another kind (or without a value) reads as
        empty, which is what ASTRA-sim's memory tracker does (``!has_string_list() -> skip``).
        """
        if not strict and name in self.attrs and self.attrs[name][0] != "string_list":
            return ()
        return self._value(name, default, ("string_list",), "string_list", path, required_for)[1]  # type: ignore[return-value]
