"""A compute node that holds kernels of several kinds (``kind_split``: ``gemm:812,attention:60``,
the Megatron generator's) charged to each kind in turn, its share of the node's interval.

One node a kind would charge each kind its own time too, but would give the simulation a node
more for each (1.7x the nodes of a 2021-style Megatron step); the node keeps its time and the
breakdown (:mod:`simpy_astra.report.breakdown`) cuts its interval instead. A part of a split
node is ``(class, part name, ((part name, weight), ...))``; the pieces keep the node's id, so
its share is their sum.
"""

from __future__ import annotations

from simpy_astra.workloads.chakra.types import MAX_SPLIT_WEIGHT


def kind_split(text: str) -> tuple[tuple[str, int], ...]:
    """``gemm:812,attention:60`` as ((``compute.gemm``, 812), (``compute.attention``, 60)); empty
    when there is none or it is not of that form (a trace's own attribute: never an error)."""
    if not text:
        return ()
    split = []
    for item in text.split(","):
        kind, _, weight = item.partition(":")
        if not kind or not weight.isascii() or not weight.isdigit() or int(weight) <= 0:
            return ()
        split.append((f"compute.{kind}", int(weight)))
    if len(split) < 2 or sum(weight for _kind, weight in split) > MAX_SPLIT_WEIGHT:
        return ()
    return tuple(split)


def split_span(start: int, end: int, part: tuple) -> list[tuple[int, int, str]]:
    """(start, end, part name) of a node's interval: a piece for each kind of its split (the
    k-th ends where the running sum of the weights puts it), else the whole interval."""
    if len(part) < 3:
        return [(start, end, part[1])]
    total = sum(weight for _name, weight in part[2])
    pieces, done, at = [], 0, start
    for name, weight in part[2]:
        done += weight
        until = start + (end - start) * done // total
        pieces.append((at, until, name))
        at = until
    return pieces


def split_intervals(ids, begins, ends, code, kinds):
    """The intervals of nodes of a split kind (a ``kind_split``) cut into a piece for each
    of its kinds, in order, each its share of the interval as :func:`split_span` cuts it
    (the same node id: the node's share is their sum); the kinds list grows by the parts
    the splits name."""
    import numpy as np

    kinds = list(kinds)
    place = {kind: k for k, kind in enumerate(kinds)}
    split_codes = [k for k, kind in enumerate(kinds) if kind is not None and len(kind) > 2]
    width = max(len(kinds[k][2]) for k in split_codes)
    # per code: the running sums of the pieces' weights and their parts; a shorter split ends
    # in empty pieces
    done = np.ones((len(kinds), width + 1), dtype=np.int64)
    done[:, 0] = 0
    piece = np.zeros((len(kinds), width), dtype=np.int64)
    for k in split_codes:
        split = kinds[k][2]
        for j, (name, weight) in enumerate(split):
            part = (kinds[k][0], name)
            if part not in place:
                place[part] = len(kinds)
                kinds.append(part)
            done[k, j + 1] = done[k, j] + weight
            piece[k, j] = place[part]
        done[k, len(split) + 1:] = done[k, len(split)]
        piece[k, len(split):] = piece[k, len(split) - 1]
    is_split = np.zeros(len(kinds), dtype=bool)
    is_split[split_codes] = True
    cut = is_split[code]
    keep = ~cut
    c, start = code[cut], begins[cut]
    # start + span x done / total, rounded down, exactly (int64: span x done could overflow);
    # each cut node's row of running sums gathered once
    sums = done[c]
    total = sums[:, -1:]
    whole, rest = np.divmod((ends[cut] - start)[:, None], total)
    cuts = start[:, None] + whole * sums + rest * sums // total
    return (np.concatenate((ids[keep], np.repeat(ids[cut], width))),
            np.concatenate((begins[keep], cuts[:, :-1].ravel())),
            np.concatenate((ends[keep], cuts[:, 1:].ravel())),
            np.concatenate((code[keep], piece[c].ravel())), kinds)
