"""Every time of an NPU's or a job's figures under a name with its unit (``finished_ns``): the
reference prints them as "cycles" (they are ns), and its names (``finished_cycles``,
``wall_time``, ``gpu_time``) stay beside the new ones for one release. One place, read by
``NpuReport.as_dict()`` and by ``--json-out``'s writers, so a script's ``as_dict()`` holds the
names the file holds.
"""

from __future__ import annotations

from typing import Any

#: old name -> the name with its unit (every figure of the reference is in ns, which it prints
#: as "cycles"); both are written until the old names are dropped
NS_NAMES = {"finished_cycles": "finished_ns", "exposed_comm_cycles": "exposed_comm_ns",
            "wall_time": "wall_time_ns", "comp_comm_overlap": "comp_comm_overlap_ns",
            "alone_cycles": "alone_ns"}
NAMES_NOTE = ("times are ns; the *_ns names replace finished_cycles, exposed_comm_cycles, wall_time, "
              "*_time, comp_comm_overlap and alone_cycles, which are still written with the same values "
              "and will be dropped in a later release")


def with_ns_names(figures: dict[str, Any]) -> dict[str, Any]:
    """``figures`` (an NPU's or a job's) with a ``_ns`` name beside each time: ``gpu_time`` ->
    ``gpu_time_ns``, ``finished_cycles`` -> ``finished_ns``."""
    out = dict(figures)
    for name, value in figures.items():
        new = NS_NAMES.get(name) or (f"{name}_ns" if name.endswith("_time") else None)
        if new is not None:
            out[new] = value
    return out
