"""A list of NPU ids as a line can hold it: a table's cell and an error's line alike (a job of
1,024 NPUs named each of them)."""

from __future__ import annotations

from collections.abc import Sequence


def npu_list(npus: Sequence[int]) -> str:
    """``0-3`` for a run of ids, else the ids (shortened past 8)."""
    ids = list(npus)
    if ids == list(range(ids[0], ids[0] + len(ids))) and len(ids) > 2:
        return f"{ids[0]}-{ids[-1]}"
    text = ",".join(map(str, ids[:8]))
    return text + (",..." if len(ids) > 8 else "")
