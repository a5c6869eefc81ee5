"""One NPU's breakdown as a design-space sweep's result columns (:mod:`simpy_astra.sweep`):
the same columns for every point, whatever parts its run had."""

from __future__ import annotations

from simpy_astra.report.breakdown import Breakdown

#: a sweep's result columns (:mod:`simpy_astra.sweep`): the critical NPU's parts in fixed groups,
#: so that every point has the same columns; they sum to the point's ``finish_ns``
SWEEP_DIMENSIONS = ("tp", "sp", "cp", "ep", "dp", "edp", "pp")
SWEEP_COLUMNS = ("breakdown_compute_ns", "breakdown_memory_ns",
                 *(f"breakdown_comm_{d}_ns" for d in SWEEP_DIMENSIONS), "breakdown_comm_other_ns",
                 "breakdown_bubble_ns", "breakdown_idle_ns")


def sweep_column(part: str) -> str:
    """The sweep column a part is added to."""
    if part.startswith("compute."):
        return "breakdown_compute_ns"
    if part.startswith("comm."):
        dim = part.removeprefix("comm.")
        return f"breakdown_comm_{dim}_ns" if dim in SWEEP_DIMENSIONS else "breakdown_comm_other_ns"
    return f"breakdown_{part}_ns"


def sweep_figures(b: Breakdown) -> dict[str, int]:
    """One NPU's parts as the sweep's columns (every column, 0 where the part is absent)."""
    out = dict.fromkeys(SWEEP_COLUMNS, 0)
    for part, ns in b.parts.items():
        out[sweep_column(part)] += ns
    return out


