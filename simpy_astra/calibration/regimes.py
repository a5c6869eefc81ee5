"""Where NCCL changes protocol or algorithm with size, found in the logs, and a fit per side.

NCCL switches protocol (LL, LL128, Simple) and algorithm (ring, tree, NVLS) as the size
grows, each with its own latency and achieved bandwidth; a simulated collective is one
straight line in time against size, so across such a switch the ratio of simulated to
measured time jumps from one size to the next (the OCI two-node all-reduce: -8% at 512 MiB,
+28% at 1 GiB, as its busbw leaps from 156 to 219 GB/s). Within one protocol the ratio
drifts smoothly. So a switch is read off the single-line fit: the largest jump of that ratio
between neighbouring fitted sizes of one log, if above ``MIN_JUMP``, with at least
``MIN_SIDE`` fitted sizes on each side. Each side is then fitted on its own, and the
switch size, the first fitted size above it, is recorded with both networks
(``regimes.json``); ``validate --regimes`` simulates each size with its side's network.
No documented NCCL default is used: its switch points come from a tuning model that depends
on the machine, so they are taken from the logs or not at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simpy_astra.calibration.inputs import read_record
from simpy_astra.calibration.model import MIB, Calibration, calibrate
from simpy_astra.errors import InputError
from simpy_astra.network.backends import DEFAULT_BACKEND

#: a change of simulated/measured time between neighbouring sizes above this is a switch
MIN_JUMP = 0.25
#: fitted sizes each side of a switch needs for its own network (two unknowns per side)
MIN_SIDE = 2


@dataclass
class Switch:
    """A protocol/algorithm switch seen in one log: sizes below ``size_bytes`` run one way."""

    log: str
    size_bytes: int  # the first fitted size above the switch
    below_bytes: int  # the last fitted size under it
    jump: float  # (1 + error above) / (1 + error below) - 1 of the single-line fit


def find_switch(cal: Calibration, min_size: int = MIB) -> Switch | None:
    """The largest jump of simulated/measured time between neighbouring fitted sizes of a log."""
    used = [o for o in cal.observations if o.nccl_size >= min_size]
    by_log: dict[str, list[tuple[int, float]]] = {}
    for o, err in zip(used, cal.sim_errors, strict=True):
        by_log.setdefault(o.log, []).append((o.nccl_size, err))
    best: Switch | None = None
    for log, pts in sorted(by_log.items()):
        pts.sort()
        for i in range(MIN_SIDE - 1, len(pts) - MIN_SIDE):
            (s0, e0), (s1, e1) = pts[i], pts[i + 1]
            jump = (1 + e1) / (1 + e0) - 1
            if abs(jump) > MIN_JUMP and (best is None or abs(jump) > abs(best.jump)):
                best = Switch(log, s1, s0, jump)
    return best


def fit_regimes(logs: list, network: dict[str, Any], system: dict[str, Any], single: Calibration,
                min_size: int = MIB, in_place: bool = False, backend: str = DEFAULT_BACKEND,
                held_out: frozenset[tuple[str, int]] = frozenset(),
                gpu_memory_gbps: float | None = None) -> dict[str, Any] | None:
    """Both sides of the switch :func:`find_switch` sees, each fitted alone; None if none."""
    switch = find_switch(single, min_size)
    if switch is None:
        return None
    above = frozenset((log.path, r.line) for log in logs for r in log.rows if r.size_bytes >= switch.size_bytes)
    below = frozenset((log.path, r.line) for log in logs for r in log.rows if r.size_bytes < switch.size_bytes)
    try:
        low = calibrate(logs, network, system, min_size, in_place, backend=backend, held_out=held_out | above,
                        gpu_memory_gbps=gpu_memory_gbps)
        high = calibrate(logs, network, system, switch.size_bytes, in_place, backend=backend,
                         held_out=held_out | below, gpu_memory_gbps=gpu_memory_gbps)
    except InputError:  # too few sizes on one side for its unknowns
        return None
    return {
        "switch": {"log": switch.log, "from_bytes": switch.size_bytes, "last_below_bytes": switch.below_bytes,
                   "jump": round(switch.jump, 4)},
        "regimes": [
            {"from_bytes": 0, "to_bytes": switch.size_bytes, "network": low.network,
             "fitted_sizes": low.fit.used_points},
            {"from_bytes": switch.size_bytes, "to_bytes": None, "network": high.network,
             "fitted_sizes": high.fit.used_points},
        ],
    }


def load_regimes(path: str):
    """``validate --regimes``: a function from nccl-tests size to the network of its side."""
    doc = read_record(path, "--regimes", "regimes JSON", "regimes.json")
    regimes = doc.get("regimes") if isinstance(doc, dict) else None
    if not isinstance(regimes, list) or not regimes or not all(
            isinstance(r, dict) and isinstance(r.get("network"), dict) and isinstance(r.get("from_bytes"), int)
            for r in regimes):
        raise InputError.at(path, "regimes", "expected calibrate --protocol-regimes' list of size "
                                             "ranges, each with from_bytes and a network")
    ordered = sorted(regimes, key=lambda r: r["from_bytes"])

    def network_for(size_bytes: int) -> dict[str, Any]:
        chosen = ordered[0]
        for r in ordered:
            if size_bytes >= r["from_bytes"]:
                chosen = r
        return chosen["network"]

    return network_for
