"""Which part filled most of each column of a drawn timeline (the terminal's characters,
timeline.png's pixel columns).

Array sums over a row's stretches: the time a part holds before an instant x is its
stretches' lengths that end by x plus the part of the one x falls in, so each column's share
of each part comes from one search over the row and a running sum per part, and a row of a
million kernels costs about what a row of ten does (issue 51: the reports must cost a few per
cent of the simulation at any scale).
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter

#: below this much work (segments, not columns) a row is measured in plain Python: a small
#: run never imports numpy
SMALL_WORK = 20_000


def _dominant_small(segments: list[tuple[int, int, str]], width: int, end_ns: float,
                    classify: Callable[[str], str] | None, past: str | None) -> list[str]:
    """:func:`dominant` one stretch at a time."""
    bucket = end_ns / width
    cover: list[dict[str, float]] = [{} for _ in range(width)]
    for s, e, part in segments:
        cls = part if classify is None else classify(part)
        b = min(int(s / bucket), width - 1)
        while b < width and b * bucket < e:
            lo, hi = max(s, b * bucket), min(e, (b + 1) * bucket)
            if hi > lo:
                cover[b][cls] = cover[b].get(cls, 0.0) + hi - lo
            b += 1
    cells = []
    for b in range(width):
        filled = sum(cover[b].values())
        if past is not None and bucket - filled > 1e-9 * bucket:
            cover[b][past] = cover[b].get(past, 0.0) + bucket - filled
        cells.append(max(cover[b], key=lambda k, c=cover[b]: c[k]) if cover[b] else "")
    return cells


def as_arrays(segments: list[tuple[int, int, str]]):
    """(starts, ends, codes, labels) of a row's stretches, the form :func:`dominant` reads
    (a breakdown made by the sweep keeps it: ``Breakdown.segment_arrays``)."""
    import numpy as np

    labels = list(dict.fromkeys(map(itemgetter(2), segments)))  # in order of first appearance
    code = {label: k for k, label in enumerate(labels)}
    codes = np.fromiter(map(code.__getitem__, map(itemgetter(2), segments)), np.int64, len(segments))
    starts = np.fromiter(map(itemgetter(0), segments), np.int64, len(segments))
    ends = np.fromiter(map(itemgetter(1), segments), np.int64, len(segments))
    return starts, ends, codes, labels


def dominant(segments: list[tuple[int, int, str]] | None, width: int, end_ns: float,
             classify: Callable[[str], str] | None = None, past: str | None = None,
             arrays=None) -> list[str]:
    """Per column of ``end_ns / width`` ns, the class (``classify(part)``, default the part)
    whose stretches of ``segments`` (disjoint, in time order; or ``arrays``, their
    :func:`as_arrays` form) fill most of it; time past the row's last stretch counts as
    ``past`` when given, else a column nothing fills is "" (an exact tie between two parts
    may go to either)."""
    if width <= 0:
        return []
    if arrays is None and len(segments or ()) * 4 < SMALL_WORK:
        return _dominant_small(segments or [], width, end_ns, classify, past)
    best, order = dominant_codes(segments, width, end_ns, classify, past, arrays)
    return ["" if k < 0 else order[k] for k in best.tolist()]


def dominant_codes(segments: list[tuple[int, int, str]] | None, width: int, end_ns: float,
                   classify: Callable[[str], str] | None = None, past: str | None = None, arrays=None):
    """:func:`dominant` as arrays: (per column the class's place in the list, -1 where nothing
    fills the column; the classes), for a picture that maps them to colours without a string
    per pixel column."""
    import numpy as np

    bucket = end_ns / width
    edges = np.arange(width + 1, dtype=np.float64) * bucket
    starts, ends, codes, labels = arrays if arrays is not None else as_arrays(segments or [])
    if not len(starts):
        return np.full(width, 0 if past else -1, dtype=np.int64), [past or ""]
    classes = [p if classify is None else classify(p) for p in labels]
    order = list(dict.fromkeys(classes))
    of_code = np.array([order.index(c) for c in classes])
    code = of_code[codes]
    starts, ends = starts.astype(np.float64), ends.astype(np.float64)
    count, kinds = len(starts), len(order)
    # every class at once: a class holds before an edge its stretches ended by it plus the part
    # of the one the edge falls in (the stretches are disjoint, in time order). Each stretch's
    # length is added at the first edge at or after its end, then summed over the edges: sums
    # of exact integers, as a running sum over the stretches would give
    # (width + 1: past the last edge, as a stretch past a column's end when rounding puts it there)
    if bucket > 0:
        first = np.clip(np.ceil(ends / bucket), 0, width + 1).astype(np.int64)
        first -= (first > 0) & (edges[np.minimum(first - 1, width)] >= ends)  # the division's rounding,
        first += (first <= width) & (edges[np.minimum(first, width)] < ends)  # corrected by the edges
    else:
        first = np.where(ends <= 0, 0, width + 1)
    before = np.bincount(first * kinds + code, weights=ends - starts,
                         minlength=(width + 2) * kinds).reshape(width + 2, kinds)[:width + 1]
    before = np.cumsum(before, axis=0)
    done = np.searchsorted(ends, edges, side="right")  # stretches ended by each edge
    within = np.minimum(done, count - 1)
    inside = np.where(done < count, np.clip(edges - starts[within], 0.0, None), 0.0)
    before = before.T.copy()
    before[code[within], np.arange(width + 1)] += inside
    cover = np.zeros((len(order) + 1, width))
    cover[:-1] = np.diff(before, axis=1)
    filled = cover[:-1].sum(axis=0)
    if past is not None:  # the part of a column past the row's end
        rest = np.maximum(bucket - filled, 0.0)
        if past in order:
            cover[order.index(past)] += rest
        else:
            cover[-1] = rest
            order.append(past)
    best = cover.argmax(axis=0)
    if past is None:
        best[filled <= 0] = -1
    return best, order
