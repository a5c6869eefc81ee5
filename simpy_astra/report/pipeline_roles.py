"""Which pipeline stage and tensor rank each NPU is, from the communicator groups a generator
named (``tp``, ``dp``, ``pp``, ...): what the plots group their bars by and which NPUs make
one data-parallel replica's Gantt rows (:mod:`simpy_astra.report.plots`)."""

from __future__ import annotations

#: the dimensions whose groups lie within one pipeline stage: an NPU's positions in them say
#: which NPU of its stage it is (``pp`` groups span the stages; Megatron's ``emb`` group joins
#: the first and the last stage, so it says nothing of the others)
STAGE_LOCAL_DIMENSIONS = ("tp", "sp", "cp", "dp", "ep", "edp")


def _places(group_names: dict[int, str], groups: dict[int, tuple[int, ...]],
            npus: int) -> dict[int, dict[str, int]] | None:
    """NPU -> {dimension: its position in its group of that dimension}; None when no group of
    ``groups`` is named."""
    named = {gid: dim for gid, dim in group_names.items() if gid in groups}
    if not named:
        return None
    place: dict[int, dict[str, int]] = {n: {} for n in range(npus)}
    for gid, dim in named.items():
        for pos, member in enumerate(groups[gid]):
            if 0 <= member < npus:
                place[member][dim] = pos
    return place


def _stage_key(where: tuple[tuple[str, int], ...]) -> tuple:
    """What an NPU shares with its peers in the other pipeline stages of its replica
    (``where``: its (dimension, position) pairs)."""
    return tuple(sorted((d, p) for d, p in where if d in STAGE_LOCAL_DIMENSIONS))


def pipeline_layout(group_names: dict[int, str], groups: dict[int, tuple[int, ...]],
                    npus: int) -> tuple[dict[int, tuple[int, int]] | None, list[int] | None]:
    """(roles, replica), from one reading of the communicator groups whose dimension the
    generator named; (None, None) when no group is named.

    roles: NPU -> (pipeline stage, tensor rank). The tensor rank is the position in the NPU's
    ``tp`` group (0 without one); the stage its position in its ``pp`` group or, without pp
    groups (pipelines talk by send and receive), among the NPUs that hold the same position in
    every group of :data:`STAGE_LOCAL_DIMENSIONS`, in id order (both generators number the
    stages' ranks in stage order).

    replica: one data-parallel replica's NPU of tensor rank 0 in each pipeline stage, in stage
    order: NPU 0's replica (NPU 0 and the NPUs of the other stages that hold its position in
    every group of :data:`STAGE_LOCAL_DIMENSIONS`)."""
    place = _places(group_names, groups, npus)
    if place is None:
        return None, None
    # each distinct set of positions keyed once (the replicas' NPUs repeat them), no call per NPU
    wheres = list(map(tuple, map(dict.items, map(place.__getitem__, range(npus)))))
    known = {where: _stage_key(where) for where in set(wheres)}
    keys = list(map(known.__getitem__, wheres))
    stage: dict[int, int] = {}
    if not any(dim == "pp" for dim in group_names.values()):
        alike: dict[tuple, int] = {}
        for n, key in enumerate(keys):  # the k-th NPU of those alike is in stage k
            stage[n] = alike[key] = alike.get(key, -1) + 1
    roles = {n: (where["pp"] if "pp" in where else stage[n] if n in stage else 0,
                 where["tp"] if "tp" in where else 0) for n, where in enumerate(map(place.__getitem__, range(npus)))}
    if npus < 1:
        return roles, None
    by_stage: dict[int, int] = {}
    for n, key in enumerate(keys):
        if key == keys[0]:
            by_stage.setdefault(roles[n][0], n)
    return roles, [by_stage[s] for s in sorted(by_stage)]
