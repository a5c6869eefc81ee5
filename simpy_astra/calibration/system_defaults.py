"""The system knobs and collective algorithms calibrate runs with where ``--system`` does not
set them (docs/calibration.md, "Calibrating to a real cluster").
"""

from __future__ import annotations

from typing import Any

#: the system knobs calibrate sets when --system does not (docs/calibration.md, "Calibrating to a real cluster")
DEFAULT_SYSTEM: dict[str, Any] = {
    "scheduling-policy": "LIFO",
    "collective-optimization": "localBWAware",
    "endpoint-delay": 10,
    "active-chunks-per-dimension": 1,
    "preferred-dataset-splits": 1,
    # NCCL reduces while it forwards (the reduction is fused into the copy kernel), so no
    # separate reduction pass: a local memory this fast makes ASTRA-sim's 3 x bytes / bw
    # negligible (1 ns a pass per 10^6 B, truncated: none under 1 MB)
    "local-mem-bw": 1_000_000,
}


def default_implementations(npus_count: list[int]) -> dict[str, list[str]]:
    """Algorithms whose latency structure matches NCCL's (docs/calibration.md explains the choice).

    All-reduce: halving-doubling (bandwidth-optimal like a ring, but log2(n) steps, close to
    NCCL's tree for small sizes) where a dimension is a power of two, else ring. All-gather
    and reduce-scatter: ring, as NCCL. All-to-all: direct with a window of one, i.e. one
    peer at a time at the full link rate (the congestion-unaware backend would otherwise let
    n-1 messages use n-1 full links at once).
    """
    ar = ["halvingDoubling" if n & (n - 1) == 0 else "ring" for n in npus_count]
    dims = len(npus_count)
    return {
        "all-reduce-implementation": ar,
        "all-gather-implementation": ["ring"] * dims,
        "reduce-scatter-implementation": ["ring"] * dims,
        "all-to-all-implementation": ["direct1"] * dims,
    }


def default_system(network: dict[str, Any]) -> dict[str, Any]:
    return {**DEFAULT_SYSTEM, **default_implementations(list(network["npus_count"]))}
