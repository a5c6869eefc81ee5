"""The searches: which translations of a frame keep every rank's key, and the orbits they make.

A candidate translation fails on the first rank it moves whose key differs, so a run that a
frame cannot help costs only a few key comparisons.
"""

from __future__ import annotations

from collections.abc import Callable

from simpy_astra.folding.frames import Folding, Frame, IdShifts, XorIds
from simpy_astra.folding.keys import RankClasses, RankKey


def find_folding(frame: Frame, ranks: RankClasses, allows: Callable[[int], bool]) -> Folding | None:
    """The largest translation group of ``frame`` that maps every rank onto a rank of the
    same class.

    ``ranks`` has classed every rank (equal keys, equal numbers); ``allows(h)`` says
    whether translation ``h`` keeps every delay (and the dimension rings' algorithms, when
    collectives run on them). A rank and its image use groups with different ids but in the
    same places; lining their group ids up node by node gives the map that relabels tags."""
    cls, group_ids = ranks.cls, ranks.group_ids
    if len(set(cls.values())) == frame.size:
        return None
    translations = [0]
    for h in range(1, frame.size):
        if cls[h] != cls[0]:
            continue
        if not allows(h):
            continue
        if all(cls[frame.add(r, h)] == c for r, c in cls.items()):
            translations.append(h)
    if len(translations) == 1:
        return None
    rep_of = [-1] * frame.size
    shift_of = [0] * frame.size
    group_map: dict[tuple[int, int], int] = {}
    for r in range(frame.size):
        if rep_of[r] >= 0:
            continue
        for h in translations:
            s = frame.add(r, h)
            rep_of[s] = r
            shift_of[s] = h
            for g_member, g_rep in zip(group_ids[s], group_ids[r], strict=True):
                if group_map.setdefault((g_member, h), g_rep) != g_rep:
                    return None  # one group seen as two in the representative's frame
    return Folding(frame, rep_of, shift_of, translations, group_map)


class _CannotFold(Exception):
    """A rank's trace cannot be compared in this frame."""


def find_id_shift_folding(frame: IdShifts, below: int, allowed: Callable[[int], bool],
                          key_of: Callable[[int], RankKey | None]) -> Folding | None:
    """The id-shift folding that leaves fewer than ``below`` NPUs; None if there is none.

    The id shifts that keep a run form a subgroup of Z_N: the multiples of its smallest
    member ``g``, a divisor of N, and the folded run simulates NPUs 0..g-1. So divisors
    ``g < below`` are tried in increasing order; each needs ``key(r) == key(r - g)`` for every
    rank, checked in rank order, and a candidate that does not fold usually fails on rank
    ``g`` already. ``key_of(rank)`` gives a rank's key in ``frame`` (keys are worked out
    once, in rank order, as the checks reach them)."""
    n = frame.size
    ranks = RankClasses()

    def cls(rank: int) -> int:
        while len(ranks.cls) <= rank:
            key = key_of(len(ranks.cls))
            if key is None or key.uses_dims:  # collectives on the dimension rings: never id shifts
                raise _CannotFold
            ranks.add(len(ranks.cls), key)
        return ranks.cls[rank]

    try:
        for g in range(1, below):
            if n % g or not allowed(g):
                continue
            if all(cls(r) == cls(r - g) for r in range(g, n)):
                folding = find_folding(frame, ranks, allowed)
                if folding is not None:
                    return folding
    except _CannotFold:
        return None
    return None


def find_xor_folding(frame: XorIds, below: int, generators: list[int], dims_ok: bool,
                     key_of: Callable[[int], RankKey | None]) -> Folding | None:
    """A XOR folding that leaves fewer than ``below`` NPUs; None if there is none.

    The XOR translations that keep a run form a group; this takes the one spanned by those
    of ``generators`` (XORs that keep every delay) that keep the run too. Each needs
    ``key(r ^ h) == key(r)`` for every rank, checked from rank 0, so one that does not keep
    the run usually fails on rank ``h`` already. ``key_of(rank)`` gives a rank's key in
    ``frame``; ``dims_ok``: collectives may run on the dimension rings (their algorithms
    commute with XOR)."""
    n = frame.size
    ranks = RankClasses()

    def class_of(rank: int) -> int:
        if rank not in ranks.cls:
            key = key_of(rank)
            if key is None or (key.uses_dims and not dims_ok):
                raise _CannotFold
            ranks.add(rank, key)
        return ranks.cls[rank]

    span = {0}
    try:
        for g in generators:
            if g not in span and all(class_of(r ^ g) == class_of(r) for r in range(n)):
                span |= {h ^ g for h in span}
    except _CannotFold:
        return None
    if len(span) == 1 or n // len(span) >= below:
        return None
    return find_folding(frame, ranks, lambda h: h in span)
