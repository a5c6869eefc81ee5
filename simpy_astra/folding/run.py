"""Folding at the level of a run: which traces to read, and the figures of orbit members.

:func:`read_traces` decides the folding while it reads the traces (through a reader it is
given, so it knows nothing of files), and :class:`OrbitReports` gives every orbit member its
representative's figures when the representative finishes. A folded run that does not finish
cleanly is diagnosed by running it again unfolded (:class:`~simpy_astra.simulation.Simulation`
does that, as only it can build a run).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from simpy_astra.folding.frames import Folding, Frame, IdShifts, XorIds
from simpy_astra.folding.keys import KeyCache, RankClasses, RankKey, rank_key
from simpy_astra.folding.search import find_folding, find_id_shift_folding, find_xor_folding
from simpy_astra.folding.setup import FoldSetup
from simpy_astra.statistics import NpuReport

FOLD_DEFAULT = True

#: rank -> (trace path, decoded nodes)
TraceReader = Callable[[int], tuple[str, list]]


def fold_requested(fold_symmetry: bool | None) -> bool:
    """Whether symmetry folding may be used: the inputs' switch, else SIMPY_ASTRA_FOLD, else on."""
    if fold_symmetry is not None:
        return fold_symmetry
    env = os.environ.get("SIMPY_ASTRA_FOLD", "").strip().lower()
    if env:
        return env not in ("0", "off", "false", "no")
    return FOLD_DEFAULT


def read_traces(total_npus: int, read: TraceReader, fold: FoldSetup | None,
                groups: dict[int, tuple[int, ...]], parse_groups: Callable[[str], Any],
                ) -> tuple[dict[int, tuple[str, list]], Folding | None]:
    """(path, decoded nodes) of every NPU that will be simulated, and the folding found.

    When folding may apply (``fold`` is not None), each rank is decoded once to compare it
    with the others and kept only if it is the first of its kind: an orbit member is never
    simulated, so its nodes are dropped at once (a rank that turns out to be needed after all
    is read again). Frames are tried cheapest first: the grid, then id shifts, then XOR, each
    only when it could leave fewer NPUs than the folding found so far."""
    n = total_npus
    if fold is None:
        return {i: read(i) for i in range(n)}, None
    key_cache = KeyCache()
    kept: dict[int, tuple[str, list]] = {}
    folding: Folding | None = None

    def left() -> int:
        return n if folding is None else len(folding.representatives)

    def key_in(frame: Frame, group_order: str | None) -> Callable[[int], RankKey | None]:
        """A rank's key in ``frame`` (its trace read again unless kept)."""
        def key(rank: int) -> RankKey | None:
            trace = kept.get(rank) or read(rank)
            return rank_key(rank, trace[1], frame, groups, parse_groups, group_order, key_cache)
        return key

    rotate = "rotate" if fold.rotate_groups else None
    ranks = RankClasses()
    grid_moves = any(a != {0} for a in fold.allowed)
    for i in range(n if grid_moves else 0):
        trace = read(i)
        key = rank_key(i, trace[1], fold.grid, groups, parse_groups, rotate, key_cache)
        if key is None:  # in every frame
            kept[i] = trace  # cannot fold: keep this and read every other rank
            return {r: kept.get(r) or read(r) for r in range(n)}, None
        if key.uses_dims and all(a == {0} for a in fold.with_dims):
            grid_moves = False  # no grid translation moves the dimension rings' algorithms
            break
        if ranks.add(i, key):
            kept[i] = trace
    if grid_moves:
        ranks.classes.clear()  # the keys themselves are no longer needed
        folding = find_folding(fold.grid, ranks, fold.allows(ranks))
        if fold.id_shifts and not ranks.uses_dims:
            # id shifts only when they leave fewer NPUs: candidates fail on the first
            # ranks they move, so this usually reads only a few traces again
            ids = IdShifts(n)
            fewer = find_id_shift_folding(ids, left(), fold.id_shift_allowed, key_in(ids, rotate))
            folding = fewer or folding
    if fold.xor_possible and left() > 1:
        xor = XorIds(n)
        fewer = find_xor_folding(xor, left(), fold.xor_generators(), fold.xor_dims,
                                 key_in(xor, "xor" if fold.xor_groups else None))
        folding = fewer or folding
    wanted = range(n) if folding is None else folding.representatives
    return {i: kept[i] if i in kept else read(i) for i in wanted}, folding


class OrbitReports:
    """Hands out a finished representative's report once per orbit member.

    Reports of one tick are held until the clock moves on and then given out in NPU-id
    order, the order an unfolded run of a symmetric workload finishes in."""

    def __init__(self, folding: Folding, emit: Callable[[NpuReport], None]) -> None:
        self.folding = folding
        self.emit = emit
        self._pending: list[NpuReport] = []

    def finished(self, report: NpuReport) -> None:
        """A representative finished: so did its whole orbit, with the same figures."""
        pending = self._pending
        if pending and pending[0].finished_cycles != report.finished_cycles:
            self.flush()
        for member in self.folding.orbit(report.npu_id):
            pending.append(report if member == report.npu_id else replace(report, npu_id=member))

    def flush(self) -> None:
        for report in sorted(self._pending, key=lambda r: r.npu_id):
            self.emit(report)
        self._pending.clear()
