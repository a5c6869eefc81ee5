"""A scenario's own ``system:`` beside a ``cluster:`` whose collectives NCCL's model times.

On the preset's own machine with a backend that times collectives as NCCL does (the analytical
one), every all-reduce, reduce-scatter and all-gather takes the time NCCL's tuning model gives
it (:mod:`simpy_astra.engine.nccl_collectives`); the algorithms a system names for them are
never run. A system that names others than the preset's own would change nothing, and a
researcher comparing algorithms (or running one of their own) would read NCCL's figure as
theirs, so it is refused, naming the key and both ways out.
"""

from __future__ import annotations

from typing import Any

from simpy_astra.config.system import SystemConfig
from simpy_astra.config.system_collectives import COLLECTIVE_KEY_STEMS
from simpy_astra.engine.collective_timer import CollectiveTimer
from simpy_astra.errors import InputError


def refuse_unplayed_algorithms(system: SystemConfig, preset_system: dict[str, Any], backend: str,
                               timer: CollectiveTimer) -> None:
    """Refuse an algorithm ``system`` names for a collective NCCL's model (``timer``) times,
    where the preset's own system (``preset_system``) names another: it would never run."""
    for kind in sorted(timer.replaces_algorithms):
        if kind in system.custom_implementations:  # custom collectives are played as written
            continue
        stem = COLLECTIVE_KEY_STEMS[kind]
        key = f"{stem}-implementation"
        given, preset = tuple(system.implementations.get(kind, ())), tuple(preset_system.get(key, ()))
        # dimension by dimension where the lists line up (ring on a dimension the preset gives
        # halvingDoubling would not run either), else any name the preset never gives
        unplayed = ([name for name, own in zip(given, preset, strict=True) if name != own] if len(given) == len(preset)
                    else [name for name in given if name not in preset])
        named = {key: unplayed,
                 f"{stem}-group-implementation": [name for name in [system.group_implementations.get(kind)] if name]}
        for key, unplayed in named.items():
            if unplayed:
                raise InputError(f"{system.source}: {key}: {unplayed[0]} is never run: beside cluster:, the {backend} "
                                 f"backend times every {kind.replace('_', '-')} as NCCL's model does (its ring, tree "
                                 f"or NVLS; cluster.nccl_algo forces one), so it would change nothing; to run it, "
                                 f"play collectives as messages (backend: congestion_aware or packet), or remove {key}")


def plays_custom_collectives(system: SystemConfig) -> bool:
    """Whether ``system`` plays a collective NCCL's model would time as a custom collective of
    its own (for its kind, or for a node), whose messages read the routes' latencies."""
    from simpy_astra.engine.nccl_collectives import TIMED

    return bool(system.per_node_custom) or any(kind in system.custom_implementations for kind in TIMED)
