"""Collective algorithms, one file each, looked up by the names system configs use.

To add one: write ``collectives/my_algo.py`` with a generator function ``my_algo(ctx)``
(see :mod:`collectives.base` for the events and the context it may use), wrap it in a
:class:`~collectives.base.CollectiveAlgorithm`, and add it to ``REGISTRY`` below. A system
JSON then selects it with ``"all-reduce-implementation": ["my_algo"]``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from collectives.base import CollectiveAlgorithm
from collectives.bidirectional_ring import BIDIRECTIONAL_RING
from collectives.direct import DIRECT
from collectives.double_binary_tree import DOUBLE_BINARY_TREE
from collectives.halving_doubling import HALVING_DOUBLING
from collectives.ring import RING

REGISTRY: dict[str, CollectiveAlgorithm] = {
    "ring": RING,
    "direct": DIRECT,
    "halvingDoubling": HALVING_DOUBLING,
    "doubleBinaryTree": DOUBLE_BINARY_TREE,
    # beyond ASTRA-sim: researchers' algorithms
    "bidirectionalRing": BIDIRECTIONAL_RING,
}

# "one<Name>" runs <Name> over a single ring of all NPUs; "direct<K>" limits the window
_ONE_VARIANTS = {"oneRing": "ring", "oneDirect": "direct", "oneHalvingDoubling": "halvingDoubling"}
_WINDOWED = re.compile(r"^(direct|oneDirect)(\d{1,5})$")


@dataclass(frozen=True)
class ImplementationChoice:
    """One entry of an ``*-implementation`` list, resolved."""

    algorithm: CollectiveAlgorithm
    spans_all_npus: bool = False
    window: int | None = None


def resolve(name: str) -> ImplementationChoice | None:
    """Map a config name (``ring``, ``direct4``, ``oneHalvingDoubling``, ...) to an algorithm.

    The one place that knows the names: config validation and the system layer both use it."""
    if name in REGISTRY:
        return ImplementationChoice(REGISTRY[name])
    if name in _ONE_VARIANTS:
        return ImplementationChoice(REGISTRY[_ONE_VARIANTS[name]], spans_all_npus=True)
    m = _WINDOWED.match(name)
    if m and int(m.group(2)) > 0:  # a window of 0 would send nothing
        return ImplementationChoice(
            DIRECT, spans_all_npus=m.group(1) == "oneDirect", window=int(m.group(2))
        )
    return None


def known_names() -> list[str]:
    """Every accepted name; K is a window of 1-5 digits, e.g. direct4."""
    return sorted([*REGISTRY, *_ONE_VARIANTS, "directK", "oneDirectK"])


__all__ = ["REGISTRY", "ImplementationChoice", "resolve", "known_names"]
