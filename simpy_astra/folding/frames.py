"""How NPU ids move under a translation (the three frames), and the folding a search finds.

A translation ``h`` moves NPU ``r`` to ``frame.add(r, h)``: per dimension with wrap-around
(:class:`~simpy_astra.infra.grid.Grid`), as integers modulo N with carries (:class:`IdShifts`), or bit by
bit (:class:`XorIds`). Which translations keep every congestion-unaware delay is decided per
dimension from the topology's path profile.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from simpy_astra.infra.grid import Grid


class IdShifts:
    """NPU ids as the integers modulo N: translation ``h`` moves NPU ``r`` to ``(r + h) mod N``.

    Unlike a grid translation it carries into the next dimension: on a 4x4x4 torus +8 moves
    (0,2,0) to (0,0,1). Communicator groups laid out by id stride, such as data-parallel groups
    {j, j+8, .., j+56} beside tensor-parallel groups {8k, .., 8k+7}, are rotated by these
    shifts (+8) where no grid translation but those along the last dimension keeps them."""

    def __init__(self, size: int) -> None:
        self.size = size

    def add(self, a: int, b: int) -> int:
        return (a + b) % self.size

    def sub(self, a: int, b: int) -> int:
        return (a - b) % self.size


class XorIds:
    """NPU ids as bit strings (N a power of two): translation ``h`` moves NPU ``r`` to
    ``r XOR h``. Halving-doubling pairs group positions by XOR, which no rotation keeps but
    these relabellings do; on power-of-two dimensions they act on each coordinate alone."""

    def __init__(self, size: int) -> None:
        self.size = size

    def add(self, a: int, b: int) -> int:
        return a ^ b

    sub = add


#: how NPU ids are moved by a translation: per dimension, as plain ids, or bit by bit
Frame = Grid | IdShifts | XorIds


@dataclass
class Folding:
    """The result: which NPUs are simulated and how every NPU maps onto one of them."""

    #: the frame the translations below are taken in
    frame: Frame
    #: NPU -> the representative that simulates it
    rep_of: list[int]
    #: NPU -> the translation (an NPU id, see ``frame.add``) from its representative to it
    shift_of: list[int]
    #: translations in the symmetry group, 0 first
    translations: list[int]
    #: (group id used by an NPU, its shift) -> the id its representative uses in that place
    group_map: dict[tuple[int, int], int]
    #: communicator group id -> members (the run's groups; group tags are told apart by them)
    groups: dict[int, tuple[int, ...]] = field(default_factory=dict)

    #: (group id a representative uses, shift) -> the member's own group in that place, built
    #: on first use (:meth:`member_group`)
    _member_groups: dict[tuple[int, int], int] | None = field(default=None, repr=False, compare=False)

    @property
    def representatives(self) -> list[int]:
        return sorted(set(self.rep_of))

    def member_group(self, npu: int, rep_group: int) -> int:
        """The communicator group NPU ``npu`` uses where its representative uses ``rep_group``
        (its own group, translated: what a report of ``npu``'s own events names)."""
        if self._member_groups is None:
            self._member_groups = {(g_rep, h): g for (g, h), g_rep in self.group_map.items()}
        return self._member_groups.get((rep_group, self.shift_of[npu]), rep_group)

    def orbit(self, rep: int) -> list[int]:
        return sorted(self.frame.add(rep, h) for h in self.translations)


def delay_invariant_shifts(n: int, profile: Callable[[int, int], tuple[float, float]]) -> set[int]:
    """Shifts ``k`` of one dimension with ``profile(a+k, b+k) == profile(a, b)`` for all a != b.

    They form a subgroup of Z_n: the multiples of its smallest positive member, which
    divides n; so divisors are tried in increasing order (one O(n^2) check for rings and
    switches, whose shift 1 already works)."""
    def keeps(k: int) -> bool:
        return all(profile((a + k) % n, (b + k) % n) == profile(a, b)
                   for a in range(n) for b in range(n) if a != b)

    for g in range(1, n + 1):
        if n % g == 0 and (g == n or keeps(g)):
            return set(range(0, n, g))
    return {0}


def delay_invariant_xors(n: int, profile: Callable[[int, int], tuple[float, float]]) -> set[int] | None:
    """Masks ``c`` of one dimension with ``profile(a^c, b^c) == profile(a, b)`` for all a != b;
    None unless ``n`` is a power of two.

    They form a group under XOR, so a mask already generated is not checked again, and a
    dimension whose pairs all look alike (a switch) keeps every mask: one O(n^2) pass, as
    for shifts, plus an early-failing check per other mask."""
    if n & (n - 1):
        return None
    def pairs():
        return ((a, b) for a in range(n) for b in range(n) if a != b)

    first = profile(0, 1) if n > 1 else None
    if all(profile(a, b) == first for a, b in pairs()):
        return set(range(n))
    group = {0}
    for c in range(1, n):
        if c not in group and all(profile(a ^ c, b ^ c) == profile(a, b) for a, b in pairs()):
            group |= {x ^ c for x in group}
    return group


def dimension_shifts(topology) -> set[int]:
    """:func:`delay_invariant_shifts` of one network dimension, without the O(n^2) check
    when its topology states its delays' symmetry (``delay_symmetry``: a ring's depend on
    the position difference alone, a switch's and a fully connected dimension's on nothing)."""
    if getattr(topology, "delay_symmetry", None) in ("uniform", "rotate"):
        return set(range(topology.npus_count))
    return delay_invariant_shifts(topology.npus_count, topology.path_profile)


def dimension_xors(topology) -> set[int] | None:
    """:func:`delay_invariant_xors` of one network dimension, stated rather than checked for
    the topologies that say how their delays behave: a switch keeps every mask; a ring of
    ``n >= 8`` (a power of two) keeps 0, ``n/2`` (a rotation by half: both NPUs of a pair
    move by +-n/2, distances stay), ``n-1`` (the reflection k -> n-1-k) and their product
    ``n/2-1``; any other mask changes some pair's distance (checked against the pairwise
    test for every ring of 8 to 256 NPUs in ``tests/test_fold_scale.py``)."""
    n = topology.npus_count
    if n & (n - 1):
        return None
    symmetry = getattr(topology, "delay_symmetry", None)
    if symmetry == "uniform":
        return set(range(n))
    if symmetry == "rotate" and n >= 8:
        return {0, n // 2 - 1, n // 2, n - 1}
    return delay_invariant_xors(n, topology.path_profile)
