"""Congestion-unaware network for a folded run: only orbit representatives exist.

A message from ``src`` to a non-representative ``dst = rep + h`` is, by the symmetry, the
message ``rep`` receives from ``src - h`` in the same run moved by ``h``; so it is posted to
``rep`` from ``src - h``, with a communicator-group tag moved back by ``h`` too (group ids
differ between frames, stream counters do not). Group ids 500 apart share tags (stream ids
wrap, :mod:`simpy_astra.engine.tags`), so a tag names a residue class of groups; the one meant is
the class member the pair belongs to (:func:`tag_clash` refuses runs where two would be). Its delay is the real pair's delay, which
the symmetry guarantees equals the moved pair's. Receives are always posted by a
representative in its own frame and need no mapping. :class:`OrbitAddresses` does this
mapping for every folded backend (the congestion-aware one: :mod:`simpy_astra.folding.links`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from simpy_astra.engine.tags import (
    COLLECTIVE_TAG_BASE,
    GROUP_STREAM_ID_BASE,
    GROUP_TAG_PERIOD,
    NATIVE_TAG_SPACE,
    group_residue_of_stream_tag,
    moved_group_tag,
)
from simpy_astra.folding.frames import Folding
from simpy_astra.network.congestion_unaware import CongestionUnawareNetwork
from simpy_astra.network.faults import WithoutLinks
from simpy_astra.network.messages import Handler
from simpy_astra.plugins import PluginError, class_name

if TYPE_CHECKING:
    import networkx as nx


class OrbitAddresses:
    """Where a message to a non-representative is delivered in a folded run: to the
    representative, from the sender moved back by the receiver's shift, with a group tag
    moved back too (see the module docstring). Every folded backend sends through one."""

    def __init__(self, folding: Folding) -> None:
        self.folding = folding
        self._rep_of = folding.rep_of
        self._moved: dict[tuple[int, int], int] = {}  # (npu, h) -> npu - h
        #: (group id residue, h) -> every (group, its image) with that residue under h
        self._by_residue: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for (gid, h), image in folding.group_map.items():
            if h:
                self._by_residue.setdefault((gid % GROUP_TAG_PERIOD, h), []).append((gid, image))
        self._members = {gid: frozenset(m) for gid, m in folding.groups.items()}
        self._picked: dict[tuple[int, int, int, int], tuple[int, int]] = {}  # (a group, h, src, dst)
        #: (group residue, h) -> how far the residue's stream tags move, where one group (or
        #: none) has that residue: the per-message path is then arithmetic, no lookup of pairs
        self._delta: dict[tuple[int, int], int] = {}
        self._sub = folding.frame.sub

    def to_representative(self, src: int, dst: int, tag: int, h: int) -> tuple[int, int, int]:
        """(src, dst, tag) of the message ``src -> dst`` as the representative of ``dst``
        receives it; ``h`` (non-zero) is ``dst``'s shift from its representative."""
        if tag >= COLLECTIVE_TAG_BASE:
            delta = self._delta.get(((tag - COLLECTIVE_TAG_BASE) // GROUP_STREAM_ID_BASE, h))
            if delta is None:
                tag = self._moved_tag(tag, src, dst, h)
            elif delta:
                tag = (tag - COLLECTIVE_TAG_BASE + delta) % NATIVE_TAG_SPACE + COLLECTIVE_TAG_BASE
        key = (src, h)
        moved = self._moved.get(key)
        if moved is None:
            moved = self._moved[key] = self._sub(src, h)
        return moved, self._rep_of[dst], tag

    def _moved_tag(self, tag: int, src: int, dst: int, h: int) -> int:
        """A collective tag between ``src`` and ``dst`` as the representative's frame numbers it."""
        residue = group_residue_of_stream_tag(tag)
        found = self._by_residue.get((residue, h))
        if not found:  # not a group's stream (the default communicator's): unchanged
            self._delta[residue, h] = 0
            return tag
        if len(found) > 1:  # groups 500 apart: the one both NPUs are in
            key = (found[0][0], h, src, dst)
            pick = self._picked.get(key)
            if pick is None:
                members = self._members
                pick = self._picked[key] = next(
                    ((g, i) for g, i in found if src in members.get(g, ()) and dst in members.get(g, ())), found[0])
            gid, image = pick
        else:
            gid, image = found[0]
            self._delta[residue, h] = (image - gid) * GROUP_STREAM_ID_BASE
        return moved_group_tag(tag, gid, image)


class FoldedNetwork(WithoutLinks):
    """The unaware network of a folded run, as its representatives see it."""

    name = "congestion_unaware"
    pair_delays_only = True
    #: pair delays are the same in every frame: nothing in the run can break the symmetry
    may_break_symmetry = False
    broken_symmetry: str | None = None

    def __init__(self, inner: CongestionUnawareNetwork, folding: Folding) -> None:
        self.inner = inner
        self.name = inner.name  # a plug-in backend's own name, in what it says of itself
        self.env = inner.env
        self.board = inner.board
        self.folding = folding
        self._shift_of = folding.shift_of
        self._to_rep = OrbitAddresses(folding).to_representative

    def send(self, src: int, dst: int, tag: int, size: int, fn: Handler, arg: Any) -> None:
        delay = self.inner.delay_ns(src, dst, size)  # the real pair's (cached) delay
        h = self._shift_of[dst]
        if h:
            src, dst, tag = self._to_rep(src, dst, tag, h)
        board = self.board
        board.schedule_arrival(delay, board.post_send(src, dst, tag, size, fn, arg))

    def recv(self, dst: int, src: int, tag: int, size: int, fn: Handler, arg: Any) -> None:
        self.board.post_recv(dst, src, tag, size, fn, arg)

    @property
    def graph(self) -> nx.DiGraph:
        """The whole network's graph (every NPU, not only the representatives)."""
        return self.inner.graph

    def label(self, device: int) -> int | str:
        return self.inner.label(device)


class ClaimCheckedFoldedNetwork(FoldedNetwork):
    """A folded run of a user's backend: ``folds="pairs"`` promises delays the symmetry keeps,
    which no test of ours has checked. Each timed (pair, size) is compared once with the pairs
    the symmetry maps it onto; a wrong promise would give every orbit member the
    representative's delays (a wrong figure, no sign of it). The built-in backend, whose
    delays are the route's, folds without this check on its per-message path."""

    def __init__(self, inner: CongestionUnawareNetwork, folding: Folding) -> None:
        own_send = type(inner).send is not CongestionUnawareNetwork.send
        if own_send or not inner.pair_delays_only:
            # folded, messages are timed by message_delay_ns alone: its own send would be skipped
            how = "in its own send()" if own_send else "beyond its pair delays (pair_delays_only is False)"
            raise PluginError(
                f"network backend '{class_name(type(inner))}' times messages {how}, which a folded run "
                f"never calls, but is registered with folds=\"pairs\": register it with folds=None "
                f"(docs/backends.md), or run with --fold-symmetry off (fold_symmetry: false)")
        super().__init__(inner, folding)
        self._checked: set[tuple[int, int, int]] = set()

    def send(self, src: int, dst: int, tag: int, size: int, fn: Handler, arg: Any) -> None:
        if (src, dst, size) not in self._checked:
            self._check_claim(src, dst, size, self.inner.delay_ns(src, dst, size))
        super().send(src, dst, tag, size, fn, arg)

    def _check_claim(self, src: int, dst: int, size: int, delay: int) -> None:
        self._checked.add((src, dst, size))
        add = self.folding.frame.add
        for h in self.folding.translations[1:]:
            a, b = add(src, h), add(dst, h)
            moved = self.inner.delay_ns(a, b, size)
            if moved != delay:
                raise PluginError(
                    f"network backend '{class_name(type(self.inner))}': message_delay_ns({a}, {b}, {size}) "
                    f"= {moved} but ({src}, {dst}, {size}) = {delay}, a pair the topology's symmetry "
                    f"maps onto it; folds=\"pairs\" promises equal delays there (a delay set by "
                    f"the route, not by which NPUs): use folds=None, or run with --fold-symmetry off (fold_symmetry: false)")


def tag_clash(folding: Folding, uses_dims: bool) -> str | None:
    """Why group tags could not be told apart in a folded run, or None.

    Groups whose ids differ by a multiple of 500 share message tags; :class:`FoldedNetwork`
    tells them apart by the pair of NPUs, which needs no two of them to share two members,
    and a group whose id is a multiple of 500 shares tags with the default communicator."""
    by_residue: dict[int, list[int]] = {}
    for gid in sorted({g for g, _ in folding.group_map}):
        by_residue.setdefault(gid % GROUP_TAG_PERIOD, []).append(gid)
    if uses_dims and by_residue.get(0):
        return (f"communicator group {by_residue[0][0]} shares message tags with the default "
                f"communicator (ids wrap every {GROUP_TAG_PERIOD})")
    for gids in by_residue.values():
        sets = [frozenset(folding.groups.get(g, ())) for g in gids]
        for i, a in enumerate(sets):
            for j in range(i + 1, len(sets)):
                if len(a & sets[j]) > 1:
                    return (f"communicator groups {gids[i]} and {gids[j]} share members and message "
                            f"tags (ids wrap every {GROUP_TAG_PERIOD})")
    return None
