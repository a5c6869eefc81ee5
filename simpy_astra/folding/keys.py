"""Rank keys: a rank's trace written relative to the rank (peers as offsets, groups as the
rank sees their members: :mod:`~simpy_astra.folding.group_keys`), so that two ranks are
equivalent under a translation exactly when their keys are equal.

Equivalence is decided on the decoded traces, exactly (no hashing shortcuts: what is interned
is compared whole).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from simpy_astra.folding.frames import Frame
from simpy_astra.folding.group_keys import GroupKeys
from simpy_astra.workloads.chakra.types import COMM_COLL_NODE, METADATA_NODE


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
        #: (id(frame), group order) -> the groups' keys in that frame (the frame kept alive)
        self._group_keys: dict[tuple[int, str | None], GroupKeys] = {}

    def groups(self, frame: Frame, order: str | None) -> GroupKeys:
        """Communicator groups' keys in ``frame`` and ``order``, worked out once per group."""
        keys = self._group_keys.get((id(frame), order))
        if keys is None or keys.frame is not frame:
            keys = self._group_keys[(id(frame), order)] = GroupKeys(frame, order)
        return keys


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
    translation, their positions as ``group_order`` says (see
    :class:`~simpy_astra.folding.group_keys.GroupKeys`). ``known``
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
    group_key = cache.groups(frame, group_order).key
    for node in nodes:
        attrs = node.attrs
        if node.type == METADATA_NODE and node.inputs_values:
            try:
                for gid, members in parse_groups(node.inputs_values):
                    # the first tuple is kept: group keys are worked out once per group object
                    if known.setdefault(gid, members) != members:
                        return None
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
                        if members is None:
                            return None
                        gkey = group_keys.get(group, ())
                        if gkey == ():
                            gkey = group_keys[group] = group_key(group, members, rank)
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


def summary_key(rank: int, cls: int, kinds: str, slots: list[int], frame: Frame,
                known: dict[int, tuple[int, ...]], group_keys: GroupKeys, sets: bool = False) -> RankKey | None:
    """A rank's key from a generator's rank summary (``LazyTraces``), not from its trace.

    A summarised rank's trace is its class's records with, per slot, a group id or a peer
    filled in; so two ranks' full keys (:func:`rank_key`) are equal when their classes and
    their slots made relative to each rank are, and the group ids in slot order line up as
    the node-by-node ones do. ``group_keys``: the groups' keys in ``frame`` (one for all
    ranks, as it works each group out once). A slot of kind ``G`` is a group whose collectives
    a run's collective timer may time by who is in it, not in what order (a cluster preset's
    NCCL model): with ``sets``
    (:attr:`~simpy_astra.folding.setup.FoldSetup.timed_sets`) it is compared as a set
    (:meth:`GroupKeys.set_key`), else as ``g``. None = cannot fold (an unknown group, a peer
    out of range)."""
    out: list = [cls]
    gids = []
    uses_dims = False
    for kind, value in zip(kinds, slots, strict=True):
        if kind in "gG":
            members = known.get(value)
            if members is None:
                return None
            timed = sets and kind == "G"
            gkey = (group_keys.set_key if timed else group_keys.key)(value, members, rank)
            if gkey is None:
                return None
            # a group of every NPU runs on the network's dimensions, with their algorithms,
            # unless NCCL times its collectives: then by its members alone, every NPU, which
            # any translation maps onto itself
            uses_dims = uses_dims or (gkey == ("all",) and not timed)
            gids.append(value)
            out.append(gkey)
        else:
            if not 0 <= value < frame.size:
                return None
            out.append(frame.sub(value, rank))
    return RankKey(tuple(out), tuple(gids), uses_dims)
