"""Which algorithm each collective ran, fitted from the logs where they decide it.

NCCL picks ring, tree or direct send/receive per collective; the simulator's counterparts
differ in how many sequential steps a collective takes (halving-doubling log2(n) per phase,
ring n-1, direct one per peer) while moving the same bytes per link. A log of one collective
alone cannot tell them apart: the fit rescales latency and bandwidth to reproduce it with any
of them (on the DGX A100 all-reduce, 2.7% whichever). Logs of several collectives on one
network can, since they share that latency and bandwidth. So each collective that has a log
tries its candidates with the others held (one pass, in a fixed order), and a candidate
replaces the current choice only when the whole fit improves by more than ``MIN_GAIN``;
otherwise, and for collectives without a log, the documented default stays
(``system_defaults.default_implementations``: NCCL's tree-like latency for all-reduce, ring for
all-gather and reduce-scatter, one peer at a time for all-to-all).
"""

from __future__ import annotations

from typing import Any

from simpy_astra.calibration.geomean_solver import geomean_error
from simpy_astra.calibration.model import MIB, calibrate
from simpy_astra.errors import InputError
from simpy_astra.network.backends import DEFAULT_BACKEND

#: collective -> (system key, candidates, the default first)
CANDIDATES: dict[str, tuple[str, tuple[str, ...]]] = {
    "all_reduce": ("all-reduce-implementation", ("halvingDoubling", "ring", "doubleBinaryTree")),
    "all_gather": ("all-gather-implementation", ("ring", "halvingDoubling")),
    "reduce_scatter": ("reduce-scatter-implementation", ("ring", "halvingDoubling")),
    "all_to_all": ("all-to-all-implementation", ("direct1", "ring")),
}
#: relative improvement of the fit's geometric-mean error factor a candidate must bring
MIN_GAIN = 0.01


def _per_dim(name: str, npus_count: list[int]) -> list[str]:
    """``name`` on every dimension; halving-doubling needs a power of two (else ring)."""
    return [("ring" if name == "halvingDoubling" and n & (n - 1) else name) for n in npus_count]


def fit_algorithms(logs: list, network: dict[str, Any], system: dict[str, Any], min_size: int = MIB,
                   in_place: bool = False, backend: str = DEFAULT_BACKEND,
                   held_out: frozenset[tuple[str, int]] = frozenset(),
                   gpu_memory_gbps: float | None = None) -> tuple[dict[str, Any], dict[str, dict]]:
    """The system with each logged collective's best algorithm, and per collective what was
    chosen and why (``{"implementation": [...], "source": "fitted" | "default ..."}``)."""
    counts = [int(n) for n in network["npus_count"]]
    current = dict(system)

    def score(sys_: dict[str, Any]) -> float | None:
        try:
            cal = calibrate(logs, network, sys_, min_size, in_place, backend=backend, held_out=held_out,
                            gpu_memory_gbps=gpu_memory_gbps)
        except InputError:  # e.g. an algorithm that cannot run this collective on this topology
            return None
        return geomean_error(cal.sim_errors)

    best = score(current)
    if best is None:
        raise InputError("calibrate: the given system does not fit these logs; drop --fit-algorithms "
                         "to see why")
    logged = {log.collective for log in logs}
    choices: dict[str, dict] = {}
    for coll, (key, names) in CANDIDATES.items():
        if coll not in logged:
            choices[coll] = {"implementation": current.get(key), "source": "default (no log of it)"}
            continue
        tried: dict[str, float | None] = {}
        for name in names:
            impl = _per_dim(name, counts)
            if impl == current.get(key):
                tried[name] = best
                continue
            tried[name] = score(dict(current, **{key: impl}))
        winner, gain = None, 0.0
        for name, err in tried.items():
            if err is not None and (1 + best) / (1 + err) - 1 > max(MIN_GAIN, gain):
                winner, gain = name, (1 + best) / (1 + err) - 1
        if winner is not None:
            current[key] = _per_dim(winner, counts)
            best = tried[winner]
        ties = [n for n, e in tried.items() if e is not None and _per_dim(n, counts) != current.get(key)
                and (1 + e) / (1 + best) - 1 <= MIN_GAIN]
        if ties:
            source = f"kept: the logs do not tell it from {', '.join(ties)}"
        else:
            source = "fitted: the logs favour it over " + ", ".join(
                n for n in tried if _per_dim(n, counts) != current.get(key))
        choices[coll] = {"implementation": current.get(key), "source": source,
                         "geomean_error_factor": {n: (None if e is None else round(e, 5)) for n, e in tried.items()}}
    return current, choices
