"""Symmetry folding: find the network translations under which a run is the same on every NPU.

NPU ids are points of the network's coordinate grid (dimension 0 varies fastest). A
translation ``h`` moves NPU ``r`` to ``r + h``, in one of three frames: per-dimension
addition, wrapping in each dimension (:class:`~simpy_astra.grid.Grid`); addition of the ids
modulo the NPU count, carrying from one dimension into the next (:class:`IdShifts`); or
``r XOR h`` on power-of-two networks (:class:`XorIds`). The run folds in whichever frame
leaves fewer NPUs to simulate. If

* the congestion-unaware delay between any two NPUs is unchanged by ``h`` (rings, switches
  and fully connected dimensions are; an explicit graph usually is not), and
* the trace of NPU ``r + h`` is the trace of NPU ``r`` with every peer and every
  communicator group moved by ``h``, for every ``r``,

then NPU ``r + h`` does at every tick what NPU ``r`` does, with ids moved by ``h``. The
translations with that property form a group ``H``; each orbit ``r + H`` is simulated once,
by its lowest id, and every other member reports its representative's figures. Messages to
a non-representative are delivered to its representative in the representative's frame
(see :class:`simpy_astra.network.folded.FoldedNetwork`).

Equivalence is decided on the decoded traces, exactly (no hashing shortcuts): each rank's
trace is turned into a rank-relative key (peers as offsets, groups as member offsets) and
ranks are classed by key equality.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from simpy_astra.collectives import resolve, subset_algorithm_name
from simpy_astra.grid import Grid
from simpy_astra.workloads.chakra_types import COMM_COLL_NODE, METADATA_NODE

GROUP_ID_LIMIT = 500  # group stream ids (gid * 1e6) must stay below the collective tag space


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

    @property
    def representatives(self) -> list[int]:
        return sorted(set(self.rep_of))

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


@dataclass
class FoldSetup:
    """What folding needs to know before any trace is read."""

    grid: Grid
    #: per dimension, the shifts that keep every unaware delay
    allowed: list[set[int]]
    #: ... that also rotate the algorithm configured there (when collectives use the dimensions)
    with_dims: list[set[int]]
    #: communicator-group subsets may be compared in ring order from each NPU
    rotate_groups: bool
    #: the network's dimensions (BasicTopology), for the XOR masks that keep their delays
    dims: list = field(default_factory=list)
    #: the algorithms configured on the dimensions commute with XOR (collectives may use them)
    xor_dims: bool = False
    #: communicator-group subsets may be compared in XOR order from each NPU
    xor_groups: bool = False
    #: some configured algorithm commutes with XOR: XOR translations are tried only then
    #: (without one they may only keep every group position, which rotations mostly already
    #: do, and each try reads a few traces again)
    xor_algorithms: bool = False

    @property
    def id_shifts(self) -> bool:
        """Id shifts (:class:`IdShifts`) differ from grid translations: several dimensions."""
        return len(self.grid.dims) > 1

    @property
    def xor_possible(self) -> bool:
        """XOR translations are worth trying: an algorithm commutes with them and every
        dimension is a power of two."""
        return self.xor_algorithms and bool(self.dims) and all(
            not t.npus_count & (t.npus_count - 1) for t in self.dims)

    @cached_property
    def xor_allowed(self) -> list[set[int]]:
        """Per dimension, the XOR masks that keep every unaware delay (worked out on first
        use: O(n^2) per dimension, paid only by runs that other frames did not fold fully)."""
        return [delay_invariant_xors(t.npus_count, t.path_profile) for t in self.dims]

    def xor_generators(self) -> list[int]:
        """XOR translations, each within one dimension, that generate all that keep every
        unaware delay: on power-of-two dimensions a XOR changes each coordinate on its own
        (no carries), so the two NPUs of a pair still first differ in the same dimension,
        where its mask must keep delays; those masks form a group per dimension, of which a
        few generate the rest (a switch: the single bits; a ring of 8: 3 and 4)."""
        out = []
        for d, masks in enumerate(self.xor_allowed):
            span = {0}
            for c in sorted(masks):
                if c not in span:
                    span |= {x ^ c for x in span}
                    out.append(c * self.grid.strides[d])
        return out

    def allows(self, ranks: RankClasses) -> Callable[[int], bool]:
        """Which grid translations keep every delay (and, when collectives of ``ranks`` run
        on the dimension rings, their algorithms)."""
        allowed = self.with_dims if ranks.uses_dims else self.allowed
        return lambda h: all(c in allowed[d] for d, c in enumerate(self.grid.coords(h)))

    def id_shift_allowed(self, h: int) -> bool:
        """Whether id shift ``h`` keeps every unaware delay (collectives on the dimension
        rings are never moved by id shifts: a carry breaks a dimension's line).

        A delay is decided in the lowest dimension in which two NPUs differ, by their two
        coordinates there. Let ``j`` be the lowest dimension of ``h`` with a non-zero
        coordinate ``h_j``: below it nothing moves. Two NPUs that first differ in ``j`` both
        move by ``h_j`` there (no carry comes from below), so ``h_j`` must keep that
        dimension's delays. Two NPUs that first differ in ``d > j`` share every lower
        coordinate, hence the carry into ``d``: both move by ``h_d`` or both by ``h_d + 1``;
        shifts that keep a dimension's delays are a subgroup, so holding both means holding
        every shift of ``d``."""
        coords = self.grid.coords(h)
        j = next(d for d, c in enumerate(coords) if c)
        return coords[j] in self.allowed[j] and all(
            len(self.allowed[d]) == self.grid.dims[d] for d in range(j + 1, len(coords)))

    @classmethod
    def for_run(cls, backend: str, system: Any, remote_memory: Any, dims: list) -> FoldSetup | None:
        """None when folding cannot apply: it needs NPUs that interact only through messages
        (the congestion-unaware backend, no shared remote-memory server) and no custom
        collective files (their rank maps are not moved by translations)."""
        if backend != "congestion_unaware" or math.prod(t.npus_count for t in dims) < 2:
            return None
        if system.custom_implementations or system.per_node_custom:
            return None
        if remote_memory.memory_type in ("PER_NODE_MEMORY_EXPANSION", "MEMORY_POOL"):
            return None
        allowed = [delay_invariant_shifts(t.npus_count, t.path_profile) for t in dims]
        with_dims = [set(a) for a in allowed]
        xor_dims = True
        xor_algorithms = False
        for names in system.implementations.values():
            for d, name in enumerate(names):
                choice = resolve(name)
                if choice is None:
                    return None
                xor_algorithms = xor_algorithms or choice.algorithm.xor_symmetric
                if choice.spans_all_npus:  # one ring over NPU ids: only 1-D grids rotate it
                    if len(dims) > 1 or not choice.algorithm.rotation_symmetric:
                        with_dims = [{0} for _ in dims]
                    xor_dims = False
                elif d < len(with_dims):
                    if not choice.algorithm.rotation_symmetric:
                        with_dims[d] = {0}
                    xor_dims = xor_dims and choice.algorithm.xor_symmetric
        # a group subset runs the configured algorithm if the list has one entry, else ring
        subsets = [resolve(subset_algorithm_name(names)).algorithm
                   for names in system.implementations.values() if names]
        setup = cls(Grid([t.npus_count for t in dims]), allowed, with_dims,
                    all(a.rotation_symmetric for a in subsets), dims=list(dims), xor_dims=xor_dims, xor_groups=all(a.xor_symmetric for a in subsets),
                    xor_algorithms=xor_algorithms)
        if all(a == {0} for a in allowed) and not setup.xor_possible:
            return None
        return setup


def _group_key(members: tuple[int, ...], rank: int, frame: Frame, order: str | None) -> tuple | None:
    """A communicator group as seen from ``rank``: member offsets, in ring order from ``rank``
    itself when the group's algorithms only see ring-position differences (``order`` is
    "rotate"), or with positions relabelled by XOR with ``rank``'s when they only see
    position XORs ("xor"); in the listed order otherwise."""
    if len(members) == frame.size:
        return ("all",)  # runs on the network's dimensions, like the default communicator
    if rank not in members:
        return None
    i = members.index(rank)
    if order == "rotate":
        members = members[i:] + members[:i]
    elif order == "xor":
        if len(members) & (len(members) - 1):
            return None  # XOR relabels positions of power-of-two groups only
        members = tuple(members[k ^ i] for k in range(len(members)))
    return tuple(frame.sub(m, rank) for m in members)


@dataclass
class RankKey:
    """What must match between symmetric ranks, plus the group ids used (in node order)."""

    key: tuple
    group_ids: tuple[int, ...]
    #: a collective runs on the network's dimension rings (no group, or a group of all NPUs)
    uses_dims: bool = False


class KeyCache:
    """Attribute dictionaries are shared between ranks (decoded once per distinct bytes), so
    their rank-independent part is worked out once per dictionary for all ranks."""

    def __init__(self) -> None:
        #: id(attrs) -> (items with None where an NPU id sits, those NPU-id fields as
        #: (position, name, kind, value), the pg_name group id or None; -1 if not a number)
        self.by_dict: dict[int, tuple[tuple, list[tuple[int, str, str, int]], int | None]] = {}
        self.keep: list[dict] = []  # the dictionaries, so their ids stay theirs
        #: id(node.shared) -> the key of a node without NPU ids, for records ranks repeat
        self.by_record: dict[int, tuple] = {}


def _split_attrs(attrs: dict, cache: KeyCache):
    """An attribute dictionary's rank-independent items and the fields that hold NPU ids."""
    hit = cache.by_dict.get(id(attrs))
    if hit is not None:
        return hit
    items: list = []
    ranked: list[tuple[int, str, str, int]] = []  # (position, name, kind, NPU id) moved per rank
    group = None
    for name, (kind, value) in attrs.items():
        if name in ("comm_src", "comm_dst") and isinstance(value, int) and not isinstance(value, bool):
            ranked.append((len(items), name, kind, value))
            items.append(None)
        elif name == "pg_name" and isinstance(value, str) and value not in ("", "0"):
            try:
                group = int(value)
            except ValueError:
                group = -1
            ranked.append((len(items), name, kind, -1))
            items.append(None)
        else:
            items.append((name, kind, value if not isinstance(value, list) else tuple(value)))
    hit = cache.by_dict[id(attrs)] = (tuple(items), ranked, group)
    cache.keep.append(attrs)
    return hit


def rank_key(rank: int, nodes: list, frame: Frame, known: dict[int, tuple[int, ...]],
             parse_groups: Callable[[str], list[tuple[int, tuple[int, ...]]]],
             group_order: str | None, cache: KeyCache) -> RankKey | None:
    """The trace of ``rank`` with every NPU id made relative to ``rank``; None = cannot fold.

    Two ranks have equal keys exactly when one's trace is the other's moved by the
    translation between them: names, types, dependencies, durations and every attribute
    equal; node ids equal up to an order-preserving renumbering (converters number nodes
    across ranks, and ids only order nodes); peers and group members equal up to that
    translation, their positions as ``group_order`` says (see :func:`_group_key`). ``known``
    holds the communicator groups (id -> members); groups a METADATA node defines are added
    to it, and a group defined twice differently stops folding."""
    ids = [n.id for n in nodes]
    base = min(ids, default=0)
    if ids == list(range(base, base + len(ids))):  # numbered in file order: shift, no lookup
        order = None
    else:
        order = {nid: i for i, nid in enumerate(sorted(ids))}
    relative: dict[int, tuple] = {}  # id(attrs) -> relative items, for this rank
    group_keys: dict[int, tuple | None] = {}
    out = []
    gids = []
    uses_dims = False
    split = _split_attrs
    known_dicts = cache.by_dict
    by_record = cache.by_record
    for node in nodes:
        attrs = node.attrs
        if node.type == METADATA_NODE and node.inputs_values:
            try:
                for gid, members in parse_groups(node.inputs_values):
                    if known.get(gid, members) != members:
                        return None
                    known[gid] = members
            except (ValueError, KeyError, TypeError):
                return None
        hit = known_dicts.get(id(attrs))
        static, ranked, group = split(attrs, cache) if hit is None else hit
        if not ranked and order is None and not base and node.shared:
            # no NPU id in it and ids as written: its key depends on the record alone
            nkey = by_record.get(id(node.shared))
            if nkey is None:
                nkey = by_record[id(node.shared)] = (node.id, node.name, node.type, node.deps,
                                                     node.duration_micros, node.inputs_values, static)
                cache.keep.append(node.shared)
            out.append(nkey)
            if node.type == COMM_COLL_NODE:  # no group: it runs on the dimension rings
                uses_dims = True
            continue
        if ranked:
            akey = relative.get(id(attrs))
            if akey is None:
                items = list(static)
                for pos, name, kind, value in ranked:
                    if name == "pg_name":
                        members = known.get(group)
                        if members is None or group >= GROUP_ID_LIMIT:
                            return None
                        gkey = group_keys.get(group, ())
                        if gkey == ():
                            gkey = group_keys[group] = _group_key(members, rank, frame, group_order)
                        if gkey is None:
                            return None
                        items[pos] = (name, kind, "group", gkey)
                    else:
                        if not 0 <= value < frame.size:
                            return None
                        items[pos] = (name, kind, "rel", frame.sub(value, rank))
                akey = relative[id(attrs)] = tuple(items)
            if group is not None:
                gids.append(group)
                uses_dims = uses_dims or group_keys.get(group) == ("all",)
        else:
            akey = static
        if node.type == COMM_COLL_NODE and group is None:
            uses_dims = True
        deps = node.deps
        if order is None:
            nid = node.id - base
            if base and deps:
                deps = tuple(d - base for d in deps)
        else:
            nid = order[node.id]
            if deps:
                try:
                    deps = tuple(order[d] for d in deps)
                except KeyError:  # a dependency outside the file: validation will say so
                    return None
        out.append((nid, node.name, node.type, deps, node.duration_micros, node.inputs_values, akey))
    return RankKey(tuple(out), tuple(gids), uses_dims)


class RankClasses:
    """Ranks classed by their keys in one frame (equal keys, equal class), in any order."""

    __slots__ = ("classes", "cls", "group_ids", "uses_dims")

    def __init__(self) -> None:
        self.classes: dict[tuple, int] = {}
        self.cls: dict[int, int] = {}  # rank -> its class number
        self.group_ids: dict[int, tuple[int, ...]] = {}  # rank -> the group ids it uses, in node order
        self.uses_dims = False  # some collective runs on the dimension rings

    def add(self, rank: int, key: RankKey) -> bool:
        """Class ``rank`` by ``key``; True when it is the first of its class."""
        c = self.cls[rank] = self.classes.setdefault(key.key, len(self.classes))
        self.group_ids[rank] = key.group_ids
        self.uses_dims = self.uses_dims or key.uses_dims
        return c == len(self.classes) - 1


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
