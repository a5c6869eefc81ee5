"""A communicator group's key as seen from each of its members, worked out once per group.

A rank's view of a group is the members' offsets from the rank (``frame.sub(m, rank)``), in
an order that depends on the group's algorithms (``order``: listed, ring order from the rank,
or positions relabelled by XOR with the rank's). Written out per member, that view costs the
group's size per member, so the square of the size per group: 16.8 million subtractions for
a data-parallel group of 4,096. Here each group's structure is reduced once to something
interned (equal structures, equal numbers), and each member's view is named in O(1) by that
number and the member's place in the structure. Two views are equal exactly when their keys
are: the interning compares whole tuples (a dictionary), never hashes alone.

Offsets live in an abelian group (the frame's translations), so a view is determined by the
differences between consecutive members:

* listed order: view ``T_j = m_j - r`` with ``r = m_i``. ``T`` determines the differences
  ``D_j = m_{j+1} - m_j`` and the rank's offset from the first member, ``m_i - m_0``, and
  those two determine ``T``: the key is (the interned ``D``, ``m_i - m_0``).
* ring order: view ``T_j = m_{i+j} - m_i`` (indices mod L) determines and is determined by
  the cyclic differences ``D`` rotated by ``i``. Rotations of one sequence are equal exactly
  when their amounts agree modulo its smallest period ``p``; so the key is (the interned
  least rotation of ``D`` (Booth's algorithm), ``(i - c) mod p``) with ``c`` the rotation
  that gives the least one.
* XOR order (L a power of two): view ``T_k = m_{k^i} - m_i``. Split the positions into
  halves: a rank's view is its own half's view, then the other half's view from the same
  local place shifted by the offset between the two halves' members there. So each
  position's key is interned bottom-up, (block size, own half's id, other half's id,
  offset), log2(L) levels of L positions each.
* as a set (:meth:`GroupKeys.set_key`, for collectives whose time depends on the members
  alone): the offsets from the first member, and the coset of the rank's offset modulo the
  translations that map them onto themselves.
"""

from __future__ import annotations

from simpy_astra.folding.frames import Frame


def least_rotation(seq: list[int]) -> int:
    """The amount ``k`` that makes ``seq[k:] + seq[:k]`` the lexicographically least rotation
    (the lowest such ``k``; Booth's algorithm, linear time)."""
    s = seq + seq
    fail = [-1] * len(s)
    k = 0
    for j in range(1, len(s)):
        sj = s[j]
        i = fail[j - k - 1]
        while i != -1 and sj != s[k + i + 1]:
            if sj < s[k + i + 1]:
                k = j - i - 1
            i = fail[i]
        if sj != s[k + i + 1]:  # i == -1
            if sj < s[k]:
                k = j
            fail[j - k] = -1
        else:
            fail[j - k] = i + 1
    return k


def smallest_period(seq: list[int]) -> int:
    """The least ``p > 0`` with ``seq`` equal to itself rotated by ``p`` (a divisor of its length)."""
    n = len(seq)
    border = [0] * n  # prefix function: longest proper border of seq[:j + 1]
    k = 0
    for j in range(1, n):
        while k and seq[j] != seq[k]:
            k = border[k - 1]
        if seq[j] == seq[k]:
            k += 1
        border[j] = k
    p = n - border[-1] if n else 1
    return p if n % p == 0 else n


#: the most translates of a set (cosets of its stabiliser) searched for its canonical origin:
#: the search costs their count times the set's size
SET_ORIGINS = 64


class GroupKeys:
    """Keys of communicator groups as seen from their members, in one frame and one order
    (``"rotate"``, ``"xor"`` or None for listed order); equal keys exactly when the members'
    offsets from the rank, in that order, are equal."""

    def __init__(self, frame: Frame, order: str | None) -> None:
        self.frame = frame
        self.order = order
        self._interned: dict[tuple, int] = {}
        #: group id -> (its members, member -> first position, what positions are keyed by)
        self._groups: dict[int, tuple[tuple[int, ...], dict[int, int], object]] = {}
        #: group id -> (its members, its set's interned id, member -> coset)
        self._sets: dict[int, tuple[tuple[int, ...], int, dict[int, int]]] = {}
        #: offsets from a group's first member -> :meth:`_set_shape` of them
        self._set_shapes: dict[frozenset, tuple[int, int, dict[int, int]]] = {}
        #: a canonical set's interned id -> its element -> its coset of the set's stabiliser
        self._cosets: dict[int, dict[int, int]] = {}

    def _intern(self, value: tuple) -> int:
        return self._interned.setdefault(value, len(self._interned))

    def key(self, gid: int, members: tuple[int, ...], rank: int) -> tuple | None:
        """Group ``gid`` (``members``) as seen from ``rank``; None when it cannot be compared
        (``rank`` is no member; XOR order on a group whose size is no power of two)."""
        if len(members) == self.frame.size:
            return ("all",)  # runs on the network's dimensions, like the default communicator
        seen = self._groups.get(gid)
        if seen is None or seen[0] is not members:
            seen = self._groups[gid] = self._structure(members)
        _members, position, shape = seen
        i = position.get(rank)
        if i is None or shape is None:
            return None
        if self.order == "rotate":
            necklace, start, period = shape
            return (necklace, (i - start) % period)
        if self.order == "xor":
            return (shape[i],)
        return (shape, self.frame.sub(rank, members[0]))

    def set_key(self, gid: int, members: tuple[int, ...], rank: int) -> tuple | None:
        """Group ``gid`` as the *set* of offsets from ``rank``, the members' order aside: the
        view of a group whose collectives take a time set by who is in it alone (a cluster
        preset's NCCL-timed ones: :mod:`simpy_astra.engine.nccl_collectives` sorts the members).
        A tensor-parallel group over two nodes looks the same from all eight GPUs of a node
        in this view, and different from each in ring order. None when ``rank`` is no member.

        The view from ``r`` is ``C - d``, ``C`` the group's offsets from a canonical origin (of
        its translates, the least when sorted) and ``d`` the offset of ``r``; two members see
        the same set exactly when their ``d`` differ by a translation that maps ``C`` onto
        itself (its stabiliser), so the key is ``C``'s id and the coset of ``d``."""
        if len(members) == self.frame.size:
            return ("all",)  # as :meth:`key`: runs on the network's dimensions
        seen = self._sets.get(gid)
        if seen is None or seen[0] is not members:
            sub = self.frame.sub
            base = members[0]
            offsets = frozenset(sub(m, base) for m in members)
            shape = self._set_shapes.get(offsets)
            if shape is None:
                shape = self._set_shapes[offsets] = self._set_shape(offsets, sub(base, base))
            set_id, origin, cosets = shape
            seen = self._sets[gid] = (members, set_id, {m: cosets[sub(sub(m, base), origin)] for m in members})
        coset = seen[2].get(rank)
        return None if coset is None else ("set", seen[1], coset)

    def _set_shape(self, offsets: frozenset, zero: int) -> tuple[int, int, dict[int, int]]:
        """(the interned id of ``C``, its origin among ``offsets``, each element of ``C`` ->
        its coset). The translates ``offsets - a`` are one per coset of the stabiliser; past
        :data:`SET_ORIGINS` of them the first member stays the origin (translates of such a
        group may then key apart: less folding, never a wrong one)."""
        sub, add = self.frame.sub, self.frame.add
        stabiliser = self._stabiliser(offsets, zero)
        origins: list[int] = []
        covered: set[int] = set()
        for e in sorted(offsets):
            if e not in covered:
                origins.append(e)
                covered.update(add(e, h) for h in stabiliser)
        if len(origins) > SET_ORIGINS:
            origins = [zero]
        canonical, origin = min((tuple(sorted(sub(x, a) for x in offsets)), a) for a in origins)
        set_id = self._intern(("set", canonical))
        cosets = self._cosets.get(set_id)
        if cosets is None:  # C's own stabiliser is that of its translate ``offsets``
            cosets = self._cosets[set_id] = {}
            labels = 0
            for e in canonical:
                if e not in cosets:
                    for h in stabiliser:
                        cosets[add(e, h)] = labels
                    labels += 1
        return set_id, origin, cosets

    def _stabiliser(self, offsets: frozenset, zero: int) -> set[int]:
        """``H = {t : offsets + t = offsets}``. It lies in ``offsets`` (``0 + t`` is one); it
        is grown by each offset that maps the set onto itself, closed under adding it, so a set
        that is one coset costs one check of its elements per generator, not one per element."""
        add = self.frame.add
        stabiliser = {zero}
        for t in sorted(offsets):
            if t in stabiliser or any(add(s, t) not in offsets for s in offsets):
                continue
            frontier = list(stabiliser)
            while frontier:
                moved = add(frontier.pop(), t)
                if moved not in stabiliser:
                    stabiliser.add(moved)
                    frontier.append(moved)
        return stabiliser

    def _structure(self, members: tuple[int, ...]) -> tuple[tuple[int, ...], dict[int, int], object]:
        position: dict[int, int] = {}
        for i, m in enumerate(members):
            position.setdefault(m, i)
        sub = self.frame.sub
        n = len(members)
        if self.order == "rotate":
            diffs = [sub(members[(j + 1) % n], members[j]) for j in range(n)]
            start = least_rotation(diffs)
            least = diffs[start:] + diffs[:start]
            shape: object = (self._intern(tuple(least)), start, smallest_period(least))
        elif self.order == "xor":
            shape = self._xor_ids(members) if n and not n & (n - 1) else None
        else:
            shape = self._intern(tuple(sub(members[j + 1], members[j]) for j in range(n - 1)))
        return members, position, shape

    def _xor_ids(self, members: tuple[int, ...]) -> list[int]:
        """Per position, the interned id of its XOR-ordered view, built up over blocks of 2,
        4, .. len(members) positions."""
        sub = self.frame.sub
        intern = self._intern
        n = len(members)
        ids = [intern((1,))] * n  # a block of one: the view (0,)
        size = 2
        while size <= n:
            half = size // 2
            new = [0] * n
            for lo_start in range(0, n, size):
                for lo in range(lo_start, lo_start + half):
                    hi = lo + half
                    new[lo] = intern((size, ids[lo], ids[hi], sub(members[hi], members[lo])))
                    new[hi] = intern((size, ids[hi], ids[lo], sub(members[lo], members[hi])))
            ids = new
            size *= 2
        return ids
