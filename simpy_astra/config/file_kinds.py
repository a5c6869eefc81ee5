"""Which ASTRA-sim input a file holds, told from its keys: a file given to the wrong flag (the
system JSON as the network YAML, say) is named as that file, instead of being reported as
missing a field its own kind never has."""

from __future__ import annotations

from collections.abc import Iterable

from simpy_astra.errors import InputError

#: how each input is shown, with an example of its own, for the fix
_EXAMPLES = {
    "system JSON": '{"preferred-dataset-splits": 4, ...}',
    "network YAML": "topology: [ Ring ]",
    "remote-memory JSON": '{"memory-type": "NO_MEMORY_EXPANSION"}',
    "communicator-group JSON": '{"1": [0, 1]}',
}


#: each input's keys, as its reader registers them when imported (simpy_astra.config imports
#: every reader, so all are here before any file is read; the readers cannot import each other)
_KNOWN_KEYS: dict[str, frozenset[str]] = {}


def register_keys(kind: str, keys: Iterable[str]) -> None:
    """Record the keys a reader reads for ``kind`` (one of the inputs in _EXAMPLES)."""
    assert kind in _EXAMPLES, kind
    _KNOWN_KEYS[kind] = frozenset(keys)


def refuse_another_kind(j: dict, src: str, expected: str) -> None:
    """Raise if ``j``, read as the ``expected`` input, holds none of that input's keys but some
    of another's; called where ``j`` is refused anyway, so only the words of the error change."""
    if set(map(str, j)) & _KNOWN_KEYS.get(expected, frozenset()):
        return
    for what, keys in _KNOWN_KEYS.items():
        theirs = [str(k) for k in j if what != expected and str(k) in keys]
        if theirs:
            shown = ", ".join(theirs[:3]) + (", ..." if len(theirs) > 3 else "")
            raise InputError(f"{src}: holds a {what}'s fields ({shown}) and none of a {expected}'s; give "
                             f"the {expected} file, e.g. {_EXAMPLES[expected]}")
